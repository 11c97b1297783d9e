// Collectives that move data without reducing it: Barrier, Bcast,
// Gather(v), Scatter(v), Allgather(v), Alltoall(v,w), with MPI_IN_PLACE
// wherever MPI allows it. Each runs on rdmx's byte collective of the same
// name over the communicator's context; typed buffers are staged as bytes
// (coll.h). rdmx takes no in-place form for gather(v), scatter(v) and
// alltoall(v): there the in-place block is copied into scratch first.
#include <cstring>

#include "coll.h"

using namespace rdmx::mpi;

namespace {

size_t nbytes(int64_t count, const TypeView &v) { return static_cast<size_t>(count) * v.size; }

int mismatch(const Call &k, size_t sent, size_t expected) {
    return err_raise(k.h, MPI_ERR_TRUNCATE, k.name,
                     "this rank sends %zu bytes but its receive signature holds %zu (type signatures differ)", sent,
                     expected);
}

}  // namespace

RDMXMPI_WEAK(Barrier)
RDMXMPI_API int PMPI_Barrier(MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Barrier", &k);
    if (rc != MPI_SUCCESS) return rc;
    const rdmx_status_t st = rdmx_barrier(k.c->ctx);
    return st == RDMX_OK ? MPI_SUCCESS : rdmx_error(k, "rdmx_barrier", st);
}

RDMXMPI_WEAK(Bcast)
RDMXMPI_API int PMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    Call k;
    TypeView v;
    int rc = coll_begin(comm, "MPI_Bcast", &k);
    if (rc == MPI_SUCCESS) rc = check_count(k, count, "count");
    if (rc == MPI_SUCCESS) rc = check_type(k, datatype, &v, "datatype");
    if (rc == MPI_SUCCESS) rc = check_root(k, root);
    if (rc != MPI_SUCCESS) return rc;
    try {
        Tmp tmp;
        const bool is_root = k.c->rank == root;
        void *bytes = is_root ? const_cast<void *>(send_bytes(buffer, count, datatype, v, tmp))
                              : recv_bytes(buffer, count, v, tmp);
        const rdmx_status_t st = rdmx_bcast(k.c->ctx, bytes, nbytes(count, v), root);
        if (st != RDMX_OK) return rdmx_error(k, "rdmx_bcast", st);
        if (!is_root) recv_done(bytes, buffer, count, datatype, v);
        return MPI_SUCCESS;
    } catch (...) {
        return no_mem(k);
    }
}

namespace {

// Gather and Scatter share their checks: the root's side (p blocks of
// rcount/scount elements) and this rank's own block.
struct RootedArgs {
    const void *sendbuf;
    int scount;
    MPI_Datatype stype;
    void *recvbuf;
    int rcount;
    MPI_Datatype rtype;
    int root;
};

int check_rooted(const Call &k, const RootedArgs &a, bool gather, TypeView *sv, TypeView *rv) {
    int rc = check_root(k, a.root);
    const bool is_root = k.c->rank == a.root;
    // The root's many-block side is checked at the root only, like MPI.
    const bool check_send = gather ? !(is_root && a.sendbuf == MPI_IN_PLACE) : true;
    const bool check_recv = gather ? is_root : !(is_root && a.recvbuf == MPI_IN_PLACE);
    if (rc == MPI_SUCCESS && check_send && (gather || is_root)) rc = check_count(k, a.scount, "sendcount");
    if (rc == MPI_SUCCESS && check_send && (gather || is_root)) rc = check_type(k, a.stype, sv, "sendtype");
    if (rc == MPI_SUCCESS && check_recv) rc = check_count(k, a.rcount, "recvcount");
    if (rc == MPI_SUCCESS && check_recv) rc = check_type(k, a.rtype, rv, "recvtype");
    return rc;
}

int gather(const Call &k, const RootedArgs &a) {
    TypeView sv, rv;
    int rc = check_rooted(k, a, true, &sv, &rv);
    if (rc != MPI_SUCCESS) return rc;
    const Comm &c = *k.c;
    const bool is_root = c.rank == a.root;
    Tmp stmp, rtmp;
    const void *mine;
    size_t len;
    if (is_root && a.sendbuf == MPI_IN_PLACE) {   // the root's block is in place: send a copy
        len = nbytes(a.rcount, rv);
        unsigned char *t = stmp.get(len);
        type_pack(at(a.recvbuf, static_cast<MPI_Aint>(c.rank) * a.rcount * rv.extent), a.rcount, a.rtype, t);
        mine = t;
    } else {
        len = nbytes(a.scount, sv);
        mine = send_bytes(a.sendbuf, a.scount, a.stype, sv, stmp);
    }
    if (is_root && len != nbytes(a.rcount, rv)) return mismatch(k, len, nbytes(a.rcount, rv));
    const int64_t total = static_cast<int64_t>(a.rcount) * c.size;
    void *all = is_root ? recv_bytes(a.recvbuf, total, rv, rtmp) : nullptr;
    const rdmx_status_t st = rdmx_gather(c.ctx, mine, len, all, a.root);
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_gather", st);
    if (is_root) recv_done(all, a.recvbuf, total, a.rtype, rv);
    return MPI_SUCCESS;
}

int scatter(const Call &k, const RootedArgs &a) {
    TypeView sv, rv;
    int rc = check_rooted(k, a, false, &sv, &rv);
    if (rc != MPI_SUCCESS) return rc;
    const Comm &c = *k.c;
    const bool is_root = c.rank == a.root;
    Tmp stmp, rtmp;
    const void *all = nullptr;
    if (is_root) all = send_bytes(a.sendbuf, static_cast<int64_t>(a.scount) * c.size, a.stype, sv, stmp);
    const bool in_place = is_root && a.recvbuf == MPI_IN_PLACE;
    const size_t len = is_root ? nbytes(a.scount, sv) : nbytes(a.rcount, rv);
    if (is_root && !in_place && len != nbytes(a.rcount, rv)) return mismatch(k, len, nbytes(a.rcount, rv));
    // In place, the root's block stays where it is: receive it into scratch.
    void *mine = in_place ? rtmp.get(len) : recv_bytes(a.recvbuf, a.rcount, rv, rtmp);
    const rdmx_status_t st = rdmx_scatter(c.ctx, all, len, mine, a.root);
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_scatter", st);
    if (!in_place) recv_done(mine, a.recvbuf, a.rcount, a.rtype, rv);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Gather)
RDMXMPI_API int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, int root, MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Gather", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return gather(k, RootedArgs{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root});
    } catch (...) {
        return no_mem(k);
    }
}

RDMXMPI_WEAK(Scatter)
RDMXMPI_API int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                             MPI_Datatype recvtype, int root, MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Scatter", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return scatter(k, RootedArgs{sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root});
    } catch (...) {
        return no_mem(k);
    }
}

namespace {

int gatherv(const Call &k, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
            const int displs[], MPI_Datatype rtype, int root) {
    const Comm &c = *k.c;
    const bool is_root = c.rank == root;
    const bool in_place = is_root && sendbuf == MPI_IN_PLACE;
    TypeView sv, rv;
    int rc = check_root(k, root);
    if (rc == MPI_SUCCESS && !in_place) rc = check_count(k, scount, "sendcount");
    if (rc == MPI_SUCCESS && !in_place) rc = check_type(k, stype, &sv, "sendtype");
    if (rc == MPI_SUCCESS && is_root) rc = check_counts(k, rcounts, "recvcounts");
    if (rc == MPI_SUCCESS && is_root) rc = check_type(k, rtype, &rv, "recvtype");
    if (rc == MPI_SUCCESS && is_root && displs == nullptr) rc = err_raise(k.h, MPI_ERR_ARG, k.name, "displs is NULL");
    if (rc != MPI_SUCCESS) return rc;
    Tmp stmp, rtmp;
    Blocks b;
    const void *mine;
    size_t len;
    if (in_place) {
        len = nbytes(rcounts[c.rank], rv);
        unsigned char *t = stmp.get(len);
        type_pack(at(recvbuf, static_cast<MPI_Aint>(displs[c.rank]) * rv.extent), rcounts[c.rank], rtype, t);
        mine = t;
    } else {
        len = nbytes(scount, sv);
        mine = send_bytes(sendbuf, scount, stype, sv, stmp);
    }
    if (is_root) {
        if (len != nbytes(rcounts[c.rank], rv)) return mismatch(k, len, nbytes(rcounts[c.rank], rv));
        recv_blocks(recvbuf, rcounts, displs, rv, c.size, rtmp, &b);
    }
    const rdmx_status_t st = rdmx_gatherv(c.ctx, mine, len, is_root ? b.rbase : nullptr, is_root ? b.lens.data() : nullptr,
                                          is_root ? b.offs.data() : nullptr, root);
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_gatherv", st);
    if (is_root) recv_blocks_done(b, recvbuf, rcounts, displs, rtype, rv, c.size, in_place ? c.rank : -1);
    return MPI_SUCCESS;
}

int scatterv(const Call &k, const void *sendbuf, const int scounts[], const int displs[], MPI_Datatype stype,
             void *recvbuf, int rcount, MPI_Datatype rtype, int root) {
    const Comm &c = *k.c;
    const bool is_root = c.rank == root;
    const bool in_place = is_root && recvbuf == MPI_IN_PLACE;
    TypeView sv, rv;
    int rc = check_root(k, root);
    if (rc == MPI_SUCCESS && is_root) rc = check_counts(k, scounts, "sendcounts");
    if (rc == MPI_SUCCESS && is_root) rc = check_type(k, stype, &sv, "sendtype");
    if (rc == MPI_SUCCESS && is_root && displs == nullptr) rc = err_raise(k.h, MPI_ERR_ARG, k.name, "displs is NULL");
    if (rc == MPI_SUCCESS && !in_place) rc = check_count(k, rcount, "recvcount");
    if (rc == MPI_SUCCESS && !in_place) rc = check_type(k, rtype, &rv, "recvtype");
    if (rc != MPI_SUCCESS) return rc;
    Tmp stmp, rtmp;
    Blocks b;
    size_t len = in_place ? 0 : nbytes(rcount, rv);
    if (is_root) {
        send_blocks(sendbuf, scounts, displs, stype, sv, c.size, stmp, &b);
        if (!in_place && b.lens[static_cast<size_t>(c.rank)] != len)
            return mismatch(k, b.lens[static_cast<size_t>(c.rank)], len);
        len = b.lens[static_cast<size_t>(c.rank)];
    }
    void *mine = in_place ? rtmp.get(len) : recv_bytes(recvbuf, rcount, rv, rtmp);
    const rdmx_status_t st = rdmx_scatterv(c.ctx, is_root ? b.base : nullptr, is_root ? b.lens.data() : nullptr,
                                           is_root ? b.offs.data() : nullptr, mine, len, root);
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_scatterv", st);
    if (!in_place) recv_done(mine, recvbuf, rcount, rtype, rv);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Gatherv)
RDMXMPI_API int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                             MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Gatherv", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return gatherv(k, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root);
    } catch (...) {
        return no_mem(k);
    }
}

RDMXMPI_WEAK(Scatterv)
RDMXMPI_API int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Scatterv", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return scatterv(k, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root);
    } catch (...) {
        return no_mem(k);
    }
}

namespace {

int allgather(const Call &k, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
              MPI_Datatype rtype) {
    const Comm &c = *k.c;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    TypeView sv, rv;
    size_t len = 0;
    if (int rc = check_symmetric(k, sendbuf, scount, stype, &sv, rcount, rtype, &rv, &len)) return rc;
    Tmp stmp, rtmp;
    const int64_t total = static_cast<int64_t>(rcount) * c.size;
    void *all = recv_bytes(recvbuf, total, rv, rtmp);
    const void *mine = RDMX_IN_PLACE;
    if (!in_place) {
        mine = send_bytes(sendbuf, scount, stype, sv, stmp);
    } else if (all != nullptr && !direct(rv, total)) {   // put this rank's block where rdmx expects it
        type_pack(at(recvbuf, static_cast<MPI_Aint>(c.rank) * rcount * rv.extent), rcount, rtype,
                  at(all, static_cast<MPI_Aint>(c.rank * len)));
    }
    const rdmx_status_t st = rdmx_allgather(c.ctx, mine, len, all);
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_allgather", st);
    recv_done(all, recvbuf, total, rtype, rv);
    return MPI_SUCCESS;
}

int allgatherv(const Call &k, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int rcounts[],
               const int displs[], MPI_Datatype rtype) {
    const Comm &c = *k.c;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    TypeView sv, rv;
    int rc = check_counts(k, rcounts, "recvcounts");
    if (rc == MPI_SUCCESS) rc = check_type(k, rtype, &rv, "recvtype");
    if (rc == MPI_SUCCESS && displs == nullptr) rc = err_raise(k.h, MPI_ERR_ARG, k.name, "displs is NULL");
    if (rc == MPI_SUCCESS && !in_place) rc = check_count(k, scount, "sendcount");
    if (rc == MPI_SUCCESS && !in_place) rc = check_type(k, stype, &sv, "sendtype");
    if (rc != MPI_SUCCESS) return rc;
    const size_t len = nbytes(rcounts[c.rank], rv);
    if (!in_place && nbytes(scount, sv) != len) return mismatch(k, nbytes(scount, sv), len);
    Tmp stmp, rtmp;
    Blocks b;
    recv_blocks(recvbuf, rcounts, displs, rv, c.size, rtmp, &b);
    const void *mine = RDMX_IN_PLACE;
    if (!in_place) {
        mine = send_bytes(sendbuf, scount, stype, sv, stmp);
    } else if (b.packed && len > 0) {
        type_pack(at(recvbuf, static_cast<MPI_Aint>(displs[c.rank]) * rv.extent), rcounts[c.rank], rtype,
                  at(b.rbase, static_cast<MPI_Aint>(b.offs[static_cast<size_t>(c.rank)])));
    }
    const rdmx_status_t st = rdmx_allgatherv(c.ctx, mine, len, b.rbase, b.lens.data(), b.offs.data());
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_allgatherv", st);
    recv_blocks_done(b, recvbuf, rcounts, displs, rtype, rv, c.size, in_place ? c.rank : -1);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Allgather)
RDMXMPI_API int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Allgather", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return allgather(k, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    } catch (...) {
        return no_mem(k);
    }
}

RDMXMPI_WEAK(Allgatherv)
RDMXMPI_API int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Allgatherv", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return allgatherv(k, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype);
    } catch (...) {
        return no_mem(k);
    }
}

namespace {

int alltoall(const Call &k, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, int rcount,
             MPI_Datatype rtype) {
    const Comm &c = *k.c;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    TypeView sv, rv;
    size_t len = 0;
    if (int rc = check_symmetric(k, sendbuf, scount, stype, &sv, rcount, rtype, &rv, &len)) return rc;
    const int64_t total = static_cast<int64_t>(rcount) * c.size;
    Tmp stmp, rtmp;
    const void *all_out;
    if (in_place) {   // rdmx has no in-place alltoall: send a copy of the buffer
        unsigned char *t = stmp.get(len * static_cast<size_t>(c.size));
        if (total > 0) type_pack(recvbuf, total, rtype, t);
        all_out = t;
    } else {
        all_out = send_bytes(sendbuf, static_cast<int64_t>(scount) * c.size, stype, sv, stmp);
    }
    void *all_in = recv_bytes(recvbuf, total, rv, rtmp);
    const rdmx_status_t st = rdmx_alltoall(c.ctx, all_out, len, all_in);
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_alltoall", st);
    recv_done(all_in, recvbuf, total, rtype, rv);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Alltoall)
RDMXMPI_API int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                              MPI_Datatype recvtype, MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Alltoall", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return alltoall(k, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype);
    } catch (...) {
        return no_mem(k);
    }
}

namespace {

int alltoallv(const Call &k, const void *sendbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
              void *recvbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype) {
    const Comm &c = *k.c;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    TypeView sv, rv;
    int rc = check_counts(k, rcounts, "recvcounts");
    if (rc == MPI_SUCCESS) rc = check_type(k, rtype, &rv, "recvtype");
    if (rc == MPI_SUCCESS && rdispls == nullptr) rc = err_raise(k.h, MPI_ERR_ARG, k.name, "rdispls is NULL");
    if (rc == MPI_SUCCESS && !in_place) rc = check_counts(k, scounts, "sendcounts");
    if (rc == MPI_SUCCESS && !in_place) rc = check_type(k, stype, &sv, "sendtype");
    if (rc == MPI_SUCCESS && !in_place && sdispls == nullptr)
        rc = err_raise(k.h, MPI_ERR_ARG, k.name, "sdispls is NULL");
    if (rc != MPI_SUCCESS) return rc;
    Tmp stmp, rtmp;
    Blocks sb, rb;
    if (in_place) {   // send a packed copy of the receive blocks
        TypeView packed_view = rv;
        packed_view.contiguous = false;   // force a copy: the receive overwrites the source
        send_blocks(recvbuf, rcounts, rdispls, rtype, packed_view, c.size, stmp, &sb);
    } else {
        send_blocks(sendbuf, scounts, sdispls, stype, sv, c.size, stmp, &sb);
    }
    recv_blocks(recvbuf, rcounts, rdispls, rv, c.size, rtmp, &rb);
    const size_t me = static_cast<size_t>(c.rank);
    if (sb.lens[me] != rb.lens[me]) return mismatch(k, sb.lens[me], rb.lens[me]);
    const rdmx_status_t st = rdmx_alltoallv(c.ctx, sb.base, sb.lens.data(), sb.offs.data(), rb.rbase, rb.lens.data(),
                                            rb.offs.data());
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_alltoallv", st);
    recv_blocks_done(rb, recvbuf, rcounts, rdispls, rtype, rv, c.size, -1);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Alltoallv)
RDMXMPI_API int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                               void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                               MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Alltoallv", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return alltoallv(k, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype);
    } catch (...) {
        return no_mem(k);
    }
}

namespace {

// Alltoallw: a type per block and displacements in bytes; every block is
// packed (each has its own layout) and moved by rdmx_alltoallv.
int alltoallw(const Call &k, const void *sendbuf, const int scounts[], const int sdispls[], const MPI_Datatype stypes[],
              void *recvbuf, const int rcounts[], const int rdispls[], const MPI_Datatype rtypes[]) {
    const Comm &c = *k.c;
    const auto p = static_cast<size_t>(c.size);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (in_place) {   // the send side is the receive side
        scounts = rcounts;
        sdispls = rdispls;
        stypes = rtypes;
        sendbuf = recvbuf;
    }
    int rc = check_counts(k, rcounts, "recvcounts");
    if (rc == MPI_SUCCESS) rc = check_counts(k, scounts, "sendcounts");
    if (rc == MPI_SUCCESS && (sdispls == nullptr || rdispls == nullptr || stypes == nullptr || rtypes == nullptr))
        rc = err_raise(k.h, MPI_ERR_ARG, k.name, "a displacement or type array is NULL");
    if (rc != MPI_SUCCESS) return rc;
    std::vector<TypeView> sv(p), rv(p);
    std::vector<size_t> slens(p), soffs(p), rlens(p), roffs(p);
    size_t stotal = 0, rtotal = 0;
    for (size_t j = 0; j < p; ++j) {
        if ((rc = check_type(k, stypes[j], &sv[j], "sendtypes[j]")) != MPI_SUCCESS) return rc;
        if ((rc = check_type(k, rtypes[j], &rv[j], "recvtypes[j]")) != MPI_SUCCESS) return rc;
        slens[j] = nbytes(scounts[j], sv[j]);
        rlens[j] = nbytes(rcounts[j], rv[j]);
        soffs[j] = stotal;
        roffs[j] = rtotal;
        stotal += slens[j];
        rtotal += rlens[j];
    }
    if (slens[static_cast<size_t>(c.rank)] != rlens[static_cast<size_t>(c.rank)])
        return mismatch(k, slens[static_cast<size_t>(c.rank)], rlens[static_cast<size_t>(c.rank)]);
    Tmp stmp, rtmp;
    unsigned char *s = stmp.get(stotal), *r = rtmp.get(rtotal);
    for (size_t j = 0; j < p; ++j)
        if (scounts[j] > 0) type_pack(at(sendbuf, sdispls[j]), scounts[j], stypes[j], s + soffs[j]);
    const rdmx_status_t st = rdmx_alltoallv(c.ctx, s, slens.data(), soffs.data(), r, rlens.data(), roffs.data());
    if (st != RDMX_OK) return rdmx_error(k, "rdmx_alltoallv", st);
    for (size_t j = 0; j < p; ++j)
        if (rcounts[j] > 0) type_unpack(r + roffs[j], rlens[j], at(recvbuf, rdispls[j]), rcounts[j], rtypes[j]);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Alltoallw)
RDMXMPI_API int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                               const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                               const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm) {
    Call k;
    const int rc = coll_begin(comm, "MPI_Alltoallw", &k);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return alltoallw(k, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes);
    } catch (...) {
        return no_mem(k);
    }
}
