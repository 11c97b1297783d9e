// Shared parts of the MPI layer's collectives: argument checks, staging of
// typed buffers as bytes, and ordered reductions of packed contributions.
#include <cstdlib>
#include <cstring>

#include "coll.h"

namespace rdmx::mpi {

int coll_begin(MPI_Comm comm, const char *name, Call *call) {
    call->h = comm;
    call->name = name;
    call->c = comm_get(comm);
    if (call->c == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_COMM, name, "invalid communicator 0x%x (null, freed, or not a communicator)",
                         static_cast<unsigned>(comm));
    return MPI_SUCCESS;
}

int check_count(const Call &k, int count, const char *what) {
    if (count >= 0) return MPI_SUCCESS;
    return err_raise(k.h, MPI_ERR_COUNT, k.name, "negative %s %d", what, count);
}

int check_type(const Call &k, MPI_Datatype dt, TypeView *v, const char *what) {
    if (!type_view(dt, v))
        return err_raise(k.h, MPI_ERR_TYPE, k.name, "invalid %s 0x%x", what, static_cast<unsigned>(dt));
    if (!v->committed)
        return err_raise(k.h, MPI_ERR_TYPE, k.name, "%s 0x%x is not committed", what, static_cast<unsigned>(dt));
    return MPI_SUCCESS;
}

int check_root(const Call &k, int root) {
    if (root >= 0 && root < k.c->size) return MPI_SUCCESS;
    return err_raise(k.h, MPI_ERR_ROOT, k.name, "invalid root %d in a communicator of size %d", root, k.c->size);
}

int check_symmetric(const Call &k, const void *sendbuf, int scount, MPI_Datatype stype, TypeView *sv, int rcount,
                    MPI_Datatype rtype, TypeView *rv, size_t *len_p) {
    const bool in_place = sendbuf == MPI_IN_PLACE;
    int rc = check_count(k, rcount, "recvcount");
    if (rc == MPI_SUCCESS) rc = check_type(k, rtype, rv, "recvtype");
    if (rc == MPI_SUCCESS && !in_place) rc = check_count(k, scount, "sendcount");
    if (rc == MPI_SUCCESS && !in_place) rc = check_type(k, stype, sv, "sendtype");
    if (rc != MPI_SUCCESS) return rc;
    *len_p = static_cast<size_t>(rcount) * rv->size;
    const size_t sent = static_cast<size_t>(scount) * sv->size;
    if (!in_place && sent != *len_p)
        return err_raise(k.h, MPI_ERR_TRUNCATE, k.name,
                         "this rank sends %zu bytes but its receive signature holds %zu (type signatures differ)", sent,
                         *len_p);
    return MPI_SUCCESS;
}

int check_counts(const Call &k, const int counts[], const char *what) {
    if (counts == nullptr) return err_raise(k.h, MPI_ERR_ARG, k.name, "%s is NULL", what);
    for (int i = 0; i < k.c->size; ++i)
        if (counts[i] < 0) return err_raise(k.h, MPI_ERR_COUNT, k.name, "%s[%d] = %d is negative", what, i, counts[i]);
    return MPI_SUCCESS;
}

int rdmx_error(const Call &k, const char *what, rdmx_status_t st) {
    return err_raise(k.h, err_from_rdmx(st), k.name, "%s failed: %s", what, rdmx_strerror(st));
}

int no_mem(const Call &k) { return err_raise(k.h, MPI_ERR_NO_MEM, k.name, "out of memory"); }

bool direct(const TypeView &v, int64_t count) {
    return v.contiguous && (count <= 1 || static_cast<size_t>(v.extent) == v.size);
}

bool direct_v(const TypeView &v) { return v.contiguous && static_cast<size_t>(v.extent) == v.size; }

const void *send_bytes(const void *buf, int64_t count, MPI_Datatype dt, const TypeView &v, Tmp &tmp) {
    if (count == 0 || v.size == 0) return buf;
    if (direct(v, count)) return at(buf, v.true_lb);
    unsigned char *p = tmp.get(static_cast<size_t>(count) * v.size);
    type_pack(buf, count, dt, p);
    return p;
}

void *recv_bytes(void *buf, int64_t count, const TypeView &v, Tmp &tmp) {
    if (count == 0 || v.size == 0) return buf;
    if (direct(v, count)) return at(buf, v.true_lb);
    return tmp.get(static_cast<size_t>(count) * v.size);
}

void recv_done(const void *bytes, void *buf, int64_t count, MPI_Datatype dt, const TypeView &v) {
    if (count == 0 || v.size == 0 || direct(v, count)) return;
    type_unpack(bytes, static_cast<size_t>(count) * v.size, buf, count, dt);
}

namespace {

// Lengths (and, packed, consecutive offsets) of per-rank blocks.
size_t layout_blocks(const int counts[], const int displs[], const TypeView &v, int p, bool packed, Blocks *b) {
    b->lens.resize(static_cast<size_t>(p));
    b->offs.resize(static_cast<size_t>(p));
    b->packed = packed;
    size_t total = 0;
    for (int j = 0; j < p; ++j) {
        const auto u = static_cast<size_t>(j);
        b->lens[u] = static_cast<size_t>(counts[j]) * v.size;
        b->offs[u] = packed ? total : static_cast<size_t>(static_cast<MPI_Aint>(displs[j]) * v.extent);
        total += b->lens[u];
    }
    return total;
}

}  // namespace

void send_blocks(const void *buf, const int counts[], const int displs[], MPI_Datatype dt, const TypeView &v,
                 int p, Tmp &tmp, Blocks *b) {
    const bool packed = !direct_v(v);
    const size_t total = layout_blocks(counts, displs, v, p, packed, b);
    if (!packed) {
        b->base = at(buf, v.true_lb);
        return;
    }
    unsigned char *t = tmp.get(total);
    for (int j = 0; j < p; ++j)
        if (counts[j] > 0) type_pack(at(buf, static_cast<MPI_Aint>(displs[j]) * v.extent), counts[j], dt, t + b->offs[static_cast<size_t>(j)]);
    b->base = t;
}

void recv_blocks(void *buf, const int counts[], const int displs[], const TypeView &v, int p, Tmp &tmp, Blocks *b) {
    const bool packed = !direct_v(v);
    const size_t total = layout_blocks(counts, displs, v, p, packed, b);
    b->rbase = packed ? static_cast<void *>(tmp.get(total)) : static_cast<void *>(at(buf, v.true_lb));
}

void recv_blocks_done(const Blocks &b, void *buf, const int counts[], const int displs[], MPI_Datatype dt,
                      const TypeView &v, int p, int skip) {
    if (!b.packed) return;
    for (int j = 0; j < p; ++j) {
        if (j == skip || counts[j] == 0) continue;
        type_unpack(at(b.rbase, static_cast<MPI_Aint>(b.offs[static_cast<size_t>(j)])), b.lens[static_cast<size_t>(j)],
                    at(buf, static_cast<MPI_Aint>(displs[j]) * v.extent), counts[j], dt);
    }
}

// ---- reductions -----------------------------------------------------------------

int red_begin(MPI_Comm comm, const char *name, int count, MPI_Datatype dt, MPI_Op op, Red *r) {
    int rc = coll_begin(comm, name, &r->k);
    if (rc == MPI_SUCCESS) rc = check_count(r->k, count, "count");
    if (rc == MPI_SUCCESS) rc = check_type(r->k, dt, &r->v, "datatype");
    if (rc != MPI_SUCCESS) return rc;
    r->dt = dt;
    r->op = op;
    if (!op_valid(op)) return err_raise(comm, MPI_ERR_OP, name, "invalid op 0x%x", static_cast<unsigned>(op));
    if (!op_builtin(op)) return MPI_SUCCESS;   // a user op takes any type
    int64_t per = 0;
    const MPI_Datatype basic = type_basic(dt, &per);
    char nb[32];
    if (basic == MPI_DATATYPE_NULL || !op_defined_on(op, basic))
        return err_raise(comm, MPI_ERR_OP, name, "%s is not defined on datatype 0x%x", op_name(op, nb, sizeof nb),
                         static_cast<unsigned>(dt));
    return MPI_SUCCESS;
}

namespace {

// count elements of dt in dt's layout, in scratch memory: what a user
// op's function expects. Returns the buffer address MPI would pass.
void *layout_scratch(const Red &r, int64_t count, Tmp &mem) {
    MPI_Aint tlb = 0, text = 0;
    PMPI_Type_get_true_extent(r.dt, &tlb, &text);
    const MPI_Aint ext = r.v.extent < 0 ? -r.v.extent : r.v.extent;
    const MPI_Aint span = (count > 0 ? (count - 1) * ext : 0) + text;
    unsigned char *m = mem.get(static_cast<size_t>(span > 0 ? span : 1));
    // Element 0's data starts at buf + tlb; with a negative extent the
    // later elements lie below it.
    return m - tlb + (r.v.extent < 0 ? (count - 1) * ext : 0);
}

}  // namespace

void reduce_ordered(const Red &r, int64_t count, const unsigned char *all, int first, int last, unsigned char *out) {
    const size_t bytes = static_cast<size_t>(count) * r.v.size;
    const auto x = [&](int i) { return all + static_cast<size_t>(i) * bytes; };
    std::memcpy(out, x(last), bytes);
    if (op_builtin(r.op)) {
        int64_t per = 0;
        const MPI_Datatype basic = type_basic(r.dt, &per);
        for (int i = last - 1; i >= first; --i) op_apply_packed(r.op, basic, x(i), out, count * per);
        return;
    }
    // out = x[i] op out, from the highest rank down: rank order for ops
    // that do not commute.
    const int n = static_cast<int>(count);
    if (direct(r.v, count)) {
        for (int i = last - 1; i >= first; --i)
            op_apply_user(r.op, x(i) - r.v.true_lb, out - r.v.true_lb, n, r.dt);
        return;
    }
    Tmp acc_mem, in_mem;
    void *acc = layout_scratch(r, count, acc_mem);
    void *in = layout_scratch(r, count, in_mem);
    type_unpack(out, bytes, acc, count, r.dt);
    for (int i = last - 1; i >= first; --i) {
        type_unpack(x(i), bytes, in, count, r.dt);
        op_apply_user(r.op, in, acc, n, r.dt);
    }
    type_pack(acc, count, r.dt, out);
}

int reduce_packed(const Red &r, const void *src, int64_t count, int root, unsigned char *packed) {
    const Comm &c = *r.k.c;
    rdmx_op_t rop;
    rdmx_datatype_t rdt;
    size_t items = 0;
    if (direct(r.v, count) && op_to_rdmx(r.op, r.dt, static_cast<int>(count), &rop, &rdt, &items)) {
        const rdmx_status_t st = rdmx_reduce(c.ctx, at(src, r.v.true_lb), c.rank == root ? packed : nullptr, items, rdt, rop, root);
        return st == RDMX_OK ? MPI_SUCCESS : rdmx_error(r.k, "rdmx_reduce", st);
    }
    const size_t bytes = static_cast<size_t>(count) * r.v.size;
    Tmp send_tmp, all_tmp;
    const void *mine = send_bytes(src, count, r.dt, r.v, send_tmp);
    unsigned char *all = c.rank == root ? all_tmp.get(bytes * static_cast<size_t>(c.size)) : nullptr;
    const rdmx_status_t st = rdmx_gather(c.ctx, mine, bytes, all, root);
    if (st != RDMX_OK) return rdmx_error(r.k, "rdmx_gather of the contributions", st);
    if (c.rank == root) reduce_ordered(r, count, all, 0, c.size - 1, packed);
    return MPI_SUCCESS;
}

}  // namespace rdmx::mpi
