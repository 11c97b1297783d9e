// Reductions: Reduce, Allreduce, Reduce_scatter_block, Reduce_scatter,
// Scan, Exscan, with MPI_IN_PLACE wherever MPI allows it. rdmx's own
// reductions run them when the (op, type) pair maps onto rdmx's (op.h) and
// the data is laid out as rdmx expects; otherwise the contributions are
// gathered packed and reduced in rank order (coll.h), so user ops that do
// not commute get x0 op x1 op ... op x(p-1).
#include <cstring>

#include "coll.h"

using namespace rdmx::mpi;

namespace {

size_t nbytes(int64_t count, const TypeView &v) { return static_cast<size_t>(count) * v.size; }

int aliased(const Red &r) {
    return err_raise(r.k.h, MPI_ERR_BUFFER, r.k.name, "sendbuf and recvbuf are the same buffer (use MPI_IN_PLACE)");
}

// rdmx's reduction applies: its op and type, and the item count.
struct Native {
    rdmx_op_t op;
    rdmx_datatype_t dt;
    size_t items;
};
bool native(const Red &r, int count, Native *n) { return op_to_rdmx(r.op, r.dt, count, &n->op, &n->dt, &n->items); }

int reduce(const Red &r, const void *sendbuf, void *recvbuf, int count, int root) {
    const Comm &c = *r.k.c;
    const bool is_root = c.rank == root;
    const bool in_place = is_root && sendbuf == MPI_IN_PLACE;
    if (is_root && !in_place && sendbuf == recvbuf && count > 0) return aliased(r);
    if (count == 0) return MPI_SUCCESS;
    Native n;
    if (native(r, count, &n)) {
        const void *src = in_place ? RDMX_IN_PLACE : at(sendbuf, r.v.true_lb);
        const rdmx_status_t st =
            rdmx_reduce(c.ctx, src, is_root ? at(recvbuf, r.v.true_lb) : nullptr, n.items, n.dt, n.op, root);
        return st == RDMX_OK ? MPI_SUCCESS : rdmx_error(r.k, "rdmx_reduce", st);
    }
    Tmp res;
    unsigned char *packed = is_root ? res.get(nbytes(count, r.v)) : nullptr;
    const int rc = reduce_packed(r, in_place ? recvbuf : sendbuf, count, root, packed);
    if (rc == MPI_SUCCESS && is_root) type_unpack(packed, nbytes(count, r.v), recvbuf, count, r.dt);
    return rc;
}

int allreduce(const Red &r, const void *sendbuf, void *recvbuf, int count) {
    const Comm &c = *r.k.c;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (!in_place && sendbuf == recvbuf && count > 0) return aliased(r);
    if (count == 0) return MPI_SUCCESS;
    Native n;
    if (native(r, count, &n)) {
        const void *src = in_place ? RDMX_IN_PLACE : at(sendbuf, r.v.true_lb);
        const rdmx_status_t st = rdmx_allreduce(c.ctx, src, at(recvbuf, r.v.true_lb), n.items, n.dt, n.op);
        return st == RDMX_OK ? MPI_SUCCESS : rdmx_error(r.k, "rdmx_allreduce", st);
    }
    // Reduce at rank 0 in rank order, then broadcast the packed result.
    const size_t bytes = nbytes(count, r.v);
    Tmp res;
    unsigned char *packed = res.get(bytes);
    int rc = reduce_packed(r, in_place ? recvbuf : sendbuf, count, 0, packed);
    if (rc != MPI_SUCCESS) return rc;
    const rdmx_status_t st = rdmx_bcast(c.ctx, packed, bytes, 0);
    if (st != RDMX_OK) return rdmx_error(r.k, "rdmx_bcast of the result", st);
    type_unpack(packed, bytes, recvbuf, count, r.dt);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Reduce)
RDMXMPI_API int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                            MPI_Comm comm) {
    Red r;
    int rc = red_begin(comm, "MPI_Reduce", count, datatype, op, &r);
    if (rc == MPI_SUCCESS) rc = check_root(r.k, root);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return reduce(r, sendbuf, recvbuf, count, root);
    } catch (...) {
        return no_mem(r.k);
    }
}

RDMXMPI_WEAK(Allreduce)
RDMXMPI_API int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm) {
    Red r;
    const int rc = red_begin(comm, "MPI_Allreduce", count, datatype, op, &r);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return allreduce(r, sendbuf, recvbuf, count);
    } catch (...) {
        return no_mem(r.k);
    }
}

namespace {

// Reduce_scatter(_block): the reduction of sum(counts) elements, block j
// (counts[j] elements) to rank j. rdmx_reduce_scatter_block when the op
// maps and the blocks are equal; else a rank-ordered reduction at rank 0
// and a scatterv of the packed result.
int reduce_scatter(const Red &r, const void *sendbuf, void *recvbuf, const int counts[], bool block) {
    const Comm &c = *r.k.c;
    const auto p = static_cast<size_t>(c.size);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    int64_t total = 0;
    for (size_t j = 0; j < p; ++j) total += counts[j];
    if (!in_place && sendbuf == recvbuf && total > 0) return aliased(r);
    if (total == 0) return MPI_SUCCESS;
    const int mine = counts[c.rank];
    // In place, the input is the whole of recvbuf and the result lands at its start.
    const void *src = in_place ? recvbuf : sendbuf;
    Native n;
    if (block && direct(r.v, total) && native(r, mine, &n)) {
        Tmp copy;
        const void *s = at(src, r.v.true_lb);
        if (in_place) {   // rdmx takes no in-place form here
            unsigned char *t = copy.get(nbytes(total, r.v));
            std::memcpy(t, s, nbytes(total, r.v));
            s = t;
        }
        const rdmx_status_t st = rdmx_reduce_scatter_block(c.ctx, s, at(recvbuf, r.v.true_lb), n.items, n.dt, n.op);
        return st == RDMX_OK ? MPI_SUCCESS : rdmx_error(r.k, "rdmx_reduce_scatter_block", st);
    }
    Tmp res, out;
    unsigned char *packed = c.rank == 0 ? res.get(nbytes(total, r.v)) : nullptr;
    const int rc = reduce_packed(r, src, total, 0, packed);
    if (rc != MPI_SUCCESS) return rc;
    std::vector<size_t> lens(p), offs(p);
    size_t off = 0;
    for (size_t j = 0; j < p; ++j) {
        lens[j] = nbytes(counts[j], r.v);
        offs[j] = off;
        off += lens[j];
    }
    unsigned char *block_bytes = out.get(lens[static_cast<size_t>(c.rank)]);
    const rdmx_status_t st = rdmx_scatterv(c.ctx, packed, c.rank == 0 ? lens.data() : nullptr,
                                           c.rank == 0 ? offs.data() : nullptr, block_bytes, lens[static_cast<size_t>(c.rank)], 0);
    if (st != RDMX_OK) return rdmx_error(r.k, "rdmx_scatterv of the result", st);
    if (mine > 0) type_unpack(block_bytes, lens[static_cast<size_t>(c.rank)], recvbuf, mine, r.dt);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Reduce_scatter_block)
RDMXMPI_API int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                          MPI_Op op, MPI_Comm comm) {
    Red r;
    const int rc = red_begin(comm, "MPI_Reduce_scatter_block", recvcount, datatype, op, &r);
    if (rc != MPI_SUCCESS) return rc;
    try {
        const std::vector<int> counts(static_cast<size_t>(r.k.c->size), recvcount);
        return reduce_scatter(r, sendbuf, recvbuf, counts.data(), true);
    } catch (...) {
        return no_mem(r.k);
    }
}

RDMXMPI_WEAK(Reduce_scatter)
RDMXMPI_API int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                    MPI_Op op, MPI_Comm comm) {
    Red r;
    int rc = red_begin(comm, "MPI_Reduce_scatter", 0, datatype, op, &r);
    if (rc == MPI_SUCCESS) rc = check_counts(r.k, recvcounts, "recvcounts");
    if (rc != MPI_SUCCESS) return rc;
    try {
        return reduce_scatter(r, sendbuf, recvbuf, recvcounts, false);
    } catch (...) {
        return no_mem(r.k);
    }
}

namespace {

// Scan (inclusive) and Exscan: rdmx_scan/rdmx_exscan when the op maps;
// else an allgather of the packed contributions and a rank-ordered prefix
// on every rank. Exscan leaves rank 0's recvbuf alone.
int scan(const Red &r, const void *sendbuf, void *recvbuf, int count, bool exclusive) {
    const Comm &c = *r.k.c;
    const bool in_place = sendbuf == MPI_IN_PLACE;
    if (!in_place && sendbuf == recvbuf && count > 0) return aliased(r);
    if (count == 0) return MPI_SUCCESS;
    Native n;
    if (native(r, count, &n)) {
        const void *src = in_place ? RDMX_IN_PLACE : at(sendbuf, r.v.true_lb);
        void *dst = at(recvbuf, r.v.true_lb);
        const rdmx_status_t st = exclusive ? rdmx_exscan(c.ctx, src, dst, n.items, n.dt, n.op)
                                           : rdmx_scan(c.ctx, src, dst, n.items, n.dt, n.op);
        return st == RDMX_OK ? MPI_SUCCESS : rdmx_error(r.k, exclusive ? "rdmx_exscan" : "rdmx_scan", st);
    }
    const size_t bytes = nbytes(count, r.v);
    Tmp stmp, all_tmp, res;
    const void *mine = send_bytes(in_place ? recvbuf : sendbuf, count, r.dt, r.v, stmp);
    unsigned char *all = all_tmp.get(bytes * static_cast<size_t>(c.size));
    const rdmx_status_t st = rdmx_allgather(c.ctx, mine, bytes, all);
    if (st != RDMX_OK) return rdmx_error(r.k, "rdmx_allgather of the contributions", st);
    const int last = exclusive ? c.rank - 1 : c.rank;
    if (last < 0) return MPI_SUCCESS;
    unsigned char *packed = res.get(bytes);
    reduce_ordered(r, count, all, 0, last, packed);
    type_unpack(packed, bytes, recvbuf, count, r.dt);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Scan)
RDMXMPI_API int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                          MPI_Comm comm) {
    Red r;
    const int rc = red_begin(comm, "MPI_Scan", count, datatype, op, &r);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return scan(r, sendbuf, recvbuf, count, false);
    } catch (...) {
        return no_mem(r.k);
    }
}

RDMXMPI_WEAK(Exscan)
RDMXMPI_API int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm) {
    Red r;
    const int rc = red_begin(comm, "MPI_Exscan", count, datatype, op, &r);
    if (rc != MPI_SUCCESS) return rc;
    try {
        return scan(r, sendbuf, recvbuf, count, true);
    } catch (...) {
        return no_mem(r.k);
    }
}
