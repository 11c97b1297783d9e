// Argument checks of the collective entry points.
#include "coll_check.h"

#include "coll_reduce_ops.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace rdmx::coll {

namespace {

// The integer a C caller passed for an enum parameter, without an enum load.
template <class E>
int raw_enum(const E &e) noexcept {
    static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

}  // namespace

void Args::fail(const char *arg, const char *why) noexcept {
    if (st_ != RDMX_OK) return;
    st_ = RDMX_ERR_INVALID_ARG;
    std::fprintf(stderr, "rdmx: %s: invalid argument '%s': %s\n", fn_, arg, why);
}

Comm Args::comm(rdmx_context_h ctx) noexcept {
    Comm c;
    if (!ok()) return c;
    c.ctx = ctx;
    c.rank = rdmx_rank(ctx);
    c.size = rdmx_size(ctx);
    if (ctx == nullptr || c.rank < 0 || c.size <= 0 || c.rank >= c.size) fail("ctx", "not a valid context");
    return c;
}

size_t Args::dt_op(const rdmx_datatype_t &dt_in, const rdmx_op_t &op_in) noexcept {
    if (!ok()) return 0;
    const int dt_raw = raw_enum(dt_in), op_raw = raw_enum(op_in);
    if (dt_raw < RDMX_INT8 || dt_raw > RDMX_INT_INT) {
        fail("dt", "not an rdmx_datatype_t value");
        return 0;
    }
    if (op_raw < RDMX_SUM || op_raw > RDMX_MAXLOC) {
        fail("op", "not an rdmx_op_t value");
        return 0;
    }
    const auto dt = static_cast<rdmx_datatype_t>(dt_raw);
    const auto op = static_cast<rdmx_op_t>(op_raw);
    if (op_is_bitwise(op) && dt_is_float(dt)) fail("op", "bitwise operation on a floating-point datatype");
    else if (op_is_loc(op) && !dt_is_pair(dt)) fail("op", "MINLOC/MAXLOC need a pair datatype (RDMX_FLOAT_INT, ...)");
    else if (!op_is_loc(op) && dt_is_pair(dt)) fail("op", "a pair datatype takes MINLOC/MAXLOC only");
    return ok() ? dt_size(dt) : 0;
}

size_t Args::bytes(const char *name, size_t n, size_t esz) noexcept {
    if (!ok()) return 0;
    if (esz != 0 && n > std::numeric_limits<size_t>::max() / esz) {
        fail(name, "size in bytes overflows size_t");
        return 0;
    }
    return n * esz;
}

void Args::buffer(const char *name, const void *p, size_t bytes, bool in_place_ok) noexcept {
    if (!ok()) return;
    if (is_in_place(p)) {
        if (!in_place_ok) fail(name, "RDMX_IN_PLACE is not allowed here");
    } else if (p == nullptr && bytes != 0) {
        fail(name, "NULL buffer with a nonzero size");
    }
}

void Args::root(int root, int p) noexcept {
    if (ok() && (root < 0 || root >= p)) fail("root", "out of range 0..size-1");
}

size_t Args::reduce_to_root(const Comm &c, const void *sendbuf, const void *recvbuf, size_t count,
                            const rdmx_datatype_t &dt, const rdmx_op_t &op, int root, size_t *bytes_p) noexcept {
    const size_t esz = dt_op(dt, op);
    const size_t bytes = this->bytes("count", count, esz);
    this->root(root, c.size);
    const bool is_root = ok() && c.rank == root;
    // RDMX_IN_PLACE is the root's form; recvbuf matters at the root only.
    buffer("sendbuf", sendbuf, bytes, /*in_place_ok=*/is_root);
    if (is_root) {
        buffer("recvbuf", recvbuf, bytes);
        disjoint("sendbuf", sendbuf, bytes, "recvbuf", recvbuf, bytes);
    }
    *bytes_p = bytes;
    return esz;
}

size_t Args::reduce_to_all(const void *sendbuf, const void *recvbuf, size_t count, const rdmx_datatype_t &dt,
                           const rdmx_op_t &op, size_t *bytes_p) noexcept {
    const size_t esz = dt_op(dt, op);
    const size_t bytes = this->bytes("count", count, esz);
    buffer("sendbuf", sendbuf, bytes, /*in_place_ok=*/true);
    buffer("recvbuf", recvbuf, bytes);
    disjoint("sendbuf", sendbuf, bytes, "recvbuf", recvbuf, bytes);
    *bytes_p = bytes;
    return esz;
}

void Args::disjoint(const char *a_name, const void *a, size_t a_len, const char *b_name, const void *b,
                    size_t b_len) noexcept {
    if (!ok() || a_len == 0 || b_len == 0 || a == nullptr || b == nullptr || is_in_place(a) || is_in_place(b))
        return;
    const auto pa = reinterpret_cast<std::uintptr_t>(a), pb = reinterpret_cast<std::uintptr_t>(b);
    if (pa < pb + b_len && pb < pa + a_len) {
        char why[96];
        std::snprintf(why, sizeof why, "overlaps '%s' (use RDMX_IN_PLACE where it is allowed)", b_name);
        fail(a_name, why);
    }
}

void Args::blocks(const char *buf_name, const void *buf, const char *lens_name, const size_t *lens,
                  const char *displs_name, const size_t *displs, int n) noexcept {
    if (!ok()) return;
    if (lens == nullptr) return fail(lens_name, "NULL array");
    if (displs == nullptr) return fail(displs_name, "NULL array");
    size_t any = 0;  // nonzero iff some length is
    for (int j = 0; j < n; ++j) {
        if (displs[j] > std::numeric_limits<size_t>::max() - lens[j])
            return fail(displs_name, "a block's end (displacement + length) overflows size_t");
        any |= lens[j];
    }
    buffer(buf_name, buf, any);
}

void Args::own_block(const char *lens_name, const size_t *lens, int rank, size_t len) noexcept {
    if (ok() && lens[rank] != len)
        fail(lens_name, "the entry of this rank differs from the length it sends to itself");
}

namespace {

struct Span {
    std::uintptr_t begin, end;
    bool recv;
};

void add_spans(std::vector<Span> &v, const void *base, const size_t *lens, const size_t *displs, int n, bool recv) {
    if (lens == nullptr || base == nullptr || is_in_place(base)) return;
    const auto b = reinterpret_cast<std::uintptr_t>(base);
    for (int j = 0; j < n; ++j) {
        const size_t off = displs != nullptr ? displs[j] : 0;
        if (lens[j] != 0) v.push_back(Span{b + off, b + off + lens[j], recv});
    }
}

}  // namespace

// Sorted by start, a block overlaps an earlier one exactly when it starts
// before the furthest end seen so far (kept apart for send and receive
// blocks, since two send blocks may overlap).
void Args::disjoint_blocks(const char *send_name, const void *send, const size_t *slens, const size_t *sdispls,
                           int sn, const char *recv_name, const void *recv, const size_t *rlens,
                           const size_t *rdispls, int rn) {
    if (!ok()) return;
    std::vector<Span> v;
    v.reserve(static_cast<size_t>(sn) + static_cast<size_t>(rn));
    add_spans(v, send, slens, sdispls, sn, false);
    add_spans(v, recv, rlens, rdispls, rn, true);
    std::sort(v.begin(), v.end(), [](const Span &a, const Span &b) { return a.begin < b.begin; });
    std::uintptr_t send_end = 0, recv_end = 0;
    for (const Span &s : v) {
        if (s.begin < recv_end) {
            char why[96];
            std::snprintf(why, sizeof why, "a block overlaps a block of '%s'", recv_name);
            return fail(s.recv ? recv_name : send_name, why);
        }
        if (s.recv && s.begin < send_end) {
            char why[96];
            std::snprintf(why, sizeof why, "a block overlaps '%s' (use RDMX_IN_PLACE where it is allowed)", send_name);
            return fail(recv_name, why);
        }
        (s.recv ? recv_end : send_end) = std::max(s.recv ? recv_end : send_end, s.end);
    }
}

}  // namespace rdmx::coll
