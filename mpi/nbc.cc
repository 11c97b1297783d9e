// Nonblocking collectives. Ibarrier, Ibcast, Iallgather, Ialltoall,
// Ialltoallv run on rdmx's nonblocking collectives (rdmx_ibarrier ...)
// wrapped in an MPI request (request_from_rdmx); typed data that is not
// laid out as bytes is packed into scratch the request owns and unpacked
// when it completes. Iallreduce and Ireduce do the same when the (op,
// type) pair maps onto rdmx's reductions.
//
// Every other form (user ops and unmapped types in Iallreduce/Ireduce,
// and Igather(v), Iscatter(v), Iallgatherv, Ireduce_scatter(_block),
// Iscan, Iexscan, Ialltoallw) runs the blocking collective at the call and
// returns a request that is already complete: correct results, but no
// overlap, and a program that relies on the call returning before its
// peers join it can wait forever (docs/mpi.md says so).
#include <memory>

#include "coll.h"
#include "request.h"

using namespace rdmx::mpi;

namespace {

// Scratch that lives as long as the request.
struct Scratch {
    Tmp send, recv;
    Blocks sb, rb;
    std::vector<int> counts, displs;
};

int start(const Call &k, rdmx_status_t st, rdmx_request_h r, MPI_Request *request, const char *what, OnComplete done) {
    if (st != RDMX_OK) return rdmx_error(k, what, st);
    try {
        *request = request_from_rdmx(r, k.h, std::move(done));
    } catch (...) {
        return no_mem(k);
    }
    if (*request == MPI_REQUEST_NULL) return err_raise(k.h, MPI_ERR_INTERN, k.name, "no request handle left");
    return MPI_SUCCESS;
}

// A request that is complete already: the blocking collective ran (rc).
int completed(MPI_Comm comm, const char *name, int rc, MPI_Request *request) {
    if (rc != MPI_SUCCESS) return rc;   // the blocking call raised it already
    Call k;
    if (coll_begin(comm, name, &k) != MPI_SUCCESS) return MPI_ERR_COMM;
    rdmx_request_h r = nullptr;
    rdmx_status_t st = rdmx_greq_start(k.c->ctx, &r);
    if (st == RDMX_OK) st = rdmx_greq_complete(r, RDMX_OK);
    return start(k, st, r, request, "rdmx_greq_start", nullptr);
}

}  // namespace

RDMXMPI_WEAK(Ibarrier)
RDMXMPI_API int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Ibarrier", &k);
    if (rc != MPI_SUCCESS) return rc;
    rdmx_request_h r = nullptr;
    const rdmx_status_t st = rdmx_ibarrier(k.c->ctx, &r);   // before r is read: argument order is unspecified
    return start(k, st, r, request, "rdmx_ibarrier", nullptr);
}

RDMXMPI_WEAK(Ibcast)
RDMXMPI_API int PMPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                            MPI_Request *request) {
    Call k;
    TypeView v;
    int rc = coll_begin(comm, "MPI_Ibcast", &k);
    if (rc == MPI_SUCCESS) rc = check_count(k, count, "count");
    if (rc == MPI_SUCCESS) rc = check_type(k, datatype, &v, "datatype");
    if (rc == MPI_SUCCESS) rc = check_root(k, root);
    if (rc != MPI_SUCCESS) return rc;
    try {
        auto s = std::make_shared<Scratch>();
        const bool is_root = k.c->rank == root;
        void *bytes = is_root ? const_cast<void *>(send_bytes(buffer, count, datatype, v, s->send))
                              : recv_bytes(buffer, count, v, s->recv);
        rdmx_request_h r = nullptr;
        const rdmx_status_t st = rdmx_ibcast(k.c->ctx, bytes, static_cast<size_t>(count) * v.size, root, &r);
        OnComplete done = nullptr;
        if (!is_root && !direct(v, count))
            done = [s, bytes, buffer, count, datatype, v, hold = TypeRef(datatype)](const rdmx_msg_info_t &, MPI_Status *) {
                recv_done(bytes, buffer, count, datatype, v);
                return MPI_SUCCESS;
            };
        else
            done = [s](const rdmx_msg_info_t &, MPI_Status *) { return MPI_SUCCESS; };
        return start(k, st, r, request, "rdmx_ibcast", std::move(done));
    } catch (...) {
        return no_mem(k);
    }
}

RDMXMPI_WEAK(Iallgather)
RDMXMPI_API int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    Call k;
    TypeView sv, rv;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    int rc = coll_begin(comm, "MPI_Iallgather", &k);
    size_t len = 0;
    if (rc == MPI_SUCCESS) rc = check_symmetric(k, sendbuf, sendcount, sendtype, &sv, recvcount, recvtype, &rv, &len);
    if (rc != MPI_SUCCESS) return rc;
    try {
        auto s = std::make_shared<Scratch>();
        const int64_t total = static_cast<int64_t>(recvcount) * k.c->size;
        void *all = recv_bytes(recvbuf, total, rv, s->recv);
        const void *mine = RDMX_IN_PLACE;
        if (!in_place)
            mine = send_bytes(sendbuf, sendcount, sendtype, sv, s->send);
        else if (all != nullptr && !direct(rv, total))
            type_pack(at(recvbuf, static_cast<MPI_Aint>(k.c->rank) * recvcount * rv.extent), recvcount, recvtype,
                      at(all, static_cast<MPI_Aint>(static_cast<size_t>(k.c->rank) * len)));
        rdmx_request_h r = nullptr;
        const rdmx_status_t st = rdmx_iallgather(k.c->ctx, mine, len, all, &r);
        OnComplete done = [s, all, recvbuf, total, recvtype, rv, hold = TypeRef(recvtype)](const rdmx_msg_info_t &, MPI_Status *) {
            recv_done(all, recvbuf, total, recvtype, rv);
            return MPI_SUCCESS;
        };
        return start(k, st, r, request, "rdmx_iallgather", std::move(done));
    } catch (...) {
        return no_mem(k);
    }
}

RDMXMPI_WEAK(Ialltoall)
RDMXMPI_API int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    Call k;
    TypeView sv, rv;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    int rc = coll_begin(comm, "MPI_Ialltoall", &k);
    size_t len = 0;
    if (rc == MPI_SUCCESS) rc = check_symmetric(k, sendbuf, sendcount, sendtype, &sv, recvcount, recvtype, &rv, &len);
    if (rc != MPI_SUCCESS) return rc;
    try {
        auto s = std::make_shared<Scratch>();
        const int64_t total = static_cast<int64_t>(recvcount) * k.c->size;
        const void *out;
        if (in_place) {   // rdmx has no in-place alltoall: send a copy
            unsigned char *t = s->send.get(len * static_cast<size_t>(k.c->size));
            if (total > 0) type_pack(recvbuf, total, recvtype, t);
            out = t;
        } else {
            out = send_bytes(sendbuf, static_cast<int64_t>(sendcount) * k.c->size, sendtype, sv, s->send);
        }
        void *in = recv_bytes(recvbuf, total, rv, s->recv);
        rdmx_request_h r = nullptr;
        const rdmx_status_t st = rdmx_ialltoall(k.c->ctx, out, len, in, &r);
        OnComplete done = [s, in, recvbuf, total, recvtype, rv, hold = TypeRef(recvtype)](const rdmx_msg_info_t &, MPI_Status *) {
            recv_done(in, recvbuf, total, recvtype, rv);
            return MPI_SUCCESS;
        };
        return start(k, st, r, request, "rdmx_ialltoall", std::move(done));
    } catch (...) {
        return no_mem(k);
    }
}

RDMXMPI_WEAK(Ialltoallv)
RDMXMPI_API int PMPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    Call k;
    TypeView sv, rv;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    int rc = coll_begin(comm, "MPI_Ialltoallv", &k);
    if (rc == MPI_SUCCESS) rc = check_counts(k, recvcounts, "recvcounts");
    if (rc == MPI_SUCCESS) rc = check_type(k, recvtype, &rv, "recvtype");
    if (rc == MPI_SUCCESS && !in_place) rc = check_counts(k, sendcounts, "sendcounts");
    if (rc == MPI_SUCCESS && !in_place) rc = check_type(k, sendtype, &sv, "sendtype");
    if (rc == MPI_SUCCESS && (rdispls == nullptr || (!in_place && sdispls == nullptr)))
        rc = err_raise(k.h, MPI_ERR_ARG, k.name, "a displacement array is NULL");
    if (rc != MPI_SUCCESS) return rc;
    try {
        const int p = k.c->size;
        auto s = std::make_shared<Scratch>();
        if (in_place) {
            TypeView copy_view = rv;
            copy_view.contiguous = false;   // force a copy: the receive overwrites the source
            send_blocks(recvbuf, recvcounts, rdispls, recvtype, copy_view, p, s->send, &s->sb);
        } else {
            send_blocks(sendbuf, sendcounts, sdispls, sendtype, sv, p, s->send, &s->sb);
        }
        recv_blocks(recvbuf, recvcounts, rdispls, rv, p, s->recv, &s->rb);
        const auto me = static_cast<size_t>(k.c->rank);
        if (s->sb.lens[me] != s->rb.lens[me])
            return err_raise(k.h, MPI_ERR_TRUNCATE, k.name, "this rank's own block: %zu bytes sent, %zu expected",
                             s->sb.lens[me], s->rb.lens[me]);
        s->counts.assign(recvcounts, recvcounts + p);
        s->displs.assign(rdispls, rdispls + p);
        rdmx_request_h r = nullptr;
        const rdmx_status_t st = rdmx_ialltoallv(k.c->ctx, s->sb.base, s->sb.lens.data(), s->sb.offs.data(), s->rb.rbase,
                                                 s->rb.lens.data(), s->rb.offs.data(), &r);
        OnComplete done = [s, recvbuf, recvtype, rv, p, hold = TypeRef(recvtype)](const rdmx_msg_info_t &, MPI_Status *) {
            recv_blocks_done(s->rb, recvbuf, s->counts.data(), s->displs.data(), recvtype, rv, p, -1);
            return MPI_SUCCESS;
        };
        return start(k, st, r, request, "rdmx_ialltoallv", std::move(done));
    } catch (...) {
        return no_mem(k);
    }
}

extern "C" int PMPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
extern "C" int PMPI_Reduce(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);

RDMXMPI_WEAK(Iallreduce)
RDMXMPI_API int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm, MPI_Request *request) {
    static constexpr const char *kCall = "MPI_Iallreduce";
    Red r;
    const int rc = red_begin(comm, kCall, count, datatype, op, &r);
    if (rc != MPI_SUCCESS) return rc;
    rdmx_op_t rop;
    rdmx_datatype_t rdt;
    size_t items = 0;
    if (count == 0 || !op_to_rdmx(op, datatype, count, &rop, &rdt, &items))
        return completed(comm, kCall, PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm), request);
    if (sendbuf == recvbuf)
        return err_raise(comm, MPI_ERR_BUFFER, kCall, "sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)");
    const void *src = sendbuf == MPI_IN_PLACE ? RDMX_IN_PLACE : at(sendbuf, r.v.true_lb);
    rdmx_request_h q = nullptr;
    const rdmx_status_t st = rdmx_iallreduce(r.k.c->ctx, src, at(recvbuf, r.v.true_lb), items, rdt, rop, &q);
    return start(r.k, st, q, request, "rdmx_iallreduce", nullptr);
}

RDMXMPI_WEAK(Ireduce)
RDMXMPI_API int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                             MPI_Comm comm, MPI_Request *request) {
    static constexpr const char *kCall = "MPI_Ireduce";
    Red r;
    int rc = red_begin(comm, kCall, count, datatype, op, &r);
    if (rc == MPI_SUCCESS) rc = check_root(r.k, root);
    if (rc != MPI_SUCCESS) return rc;
    rdmx_op_t rop;
    rdmx_datatype_t rdt;
    size_t items = 0;
    if (count == 0 || !op_to_rdmx(op, datatype, count, &rop, &rdt, &items))
        return completed(comm, kCall, PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm), request);
    const bool is_root = r.k.c->rank == root;
    if (is_root && sendbuf == recvbuf)
        return err_raise(comm, MPI_ERR_BUFFER, kCall, "sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)");
    const void *src = is_root && sendbuf == MPI_IN_PLACE ? RDMX_IN_PLACE : at(sendbuf, r.v.true_lb);
    rdmx_request_h q = nullptr;
    const rdmx_status_t st =
        rdmx_ireduce(r.k.c->ctx, src, is_root ? at(recvbuf, r.v.true_lb) : nullptr, items, rdt, rop, root, &q);
    return start(r.k, st, q, request, "rdmx_ireduce", nullptr);
}

// ---- the rest: the blocking collective, then a completed request -------------

extern "C" {
int PMPI_Gather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Gatherv(const void *, int, MPI_Datatype, void *, const int[], const int[], MPI_Datatype, int, MPI_Comm);
int PMPI_Scatter(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Scatterv(const void *, const int[], const int[], MPI_Datatype, void *, int, MPI_Datatype, int, MPI_Comm);
int PMPI_Allgatherv(const void *, int, MPI_Datatype, void *, const int[], const int[], MPI_Datatype, MPI_Comm);
int PMPI_Reduce_scatter(const void *, void *, const int[], MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Reduce_scatter_block(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Scan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Exscan(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int PMPI_Alltoallw(const void *, const int[], const int[], const MPI_Datatype[], void *, const int[], const int[],
                   const MPI_Datatype[], MPI_Comm);
}

RDMXMPI_WEAK(Igather)
RDMXMPI_API int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Igather",
                     PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm), request);
}

RDMXMPI_WEAK(Igatherv)
RDMXMPI_API int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                              MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Igatherv",
                     PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm),
                     request);
}

RDMXMPI_WEAK(Iscatter)
RDMXMPI_API int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                              MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Iscatter",
                     PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm), request);
}

RDMXMPI_WEAK(Iscatterv)
RDMXMPI_API int PMPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                               MPI_Request *request) {
    return completed(comm, "MPI_Iscatterv",
                     PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm),
                     request);
}

RDMXMPI_WEAK(Iallgatherv)
RDMXMPI_API int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Request *request) {
    return completed(comm, "MPI_Iallgatherv",
                     PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm),
                     request);
}

RDMXMPI_WEAK(Ireduce_scatter)
RDMXMPI_API int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                     MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Ireduce_scatter",
                     PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm), request);
}

RDMXMPI_WEAK(Ireduce_scatter_block)
RDMXMPI_API int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                           MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Ireduce_scatter_block",
                     PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm), request);
}

RDMXMPI_WEAK(Iscan)
RDMXMPI_API int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Iscan", PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm), request);
}

RDMXMPI_WEAK(Iexscan)
RDMXMPI_API int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm, MPI_Request *request) {
    return completed(comm, "MPI_Iexscan", PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm), request);
}

RDMXMPI_WEAK(Ialltoallw)
RDMXMPI_API int PMPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                                MPI_Request *request) {
    return completed(comm, "MPI_Ialltoallw",
                     PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                                    comm),
                     request);
}
