// Argument checks of the collective entry points.
#include "coll_check.h"

#include "coll_reduce_ops.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

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
    if (dt_raw < RDMX_INT8 || dt_raw > RDMX_DOUBLE) {
        fail("dt", "not an rdmx_datatype_t value");
        return 0;
    }
    if (op_raw < RDMX_SUM || op_raw > RDMX_BXOR) {
        fail("op", "not an rdmx_op_t value");
        return 0;
    }
    const auto dt = static_cast<rdmx_datatype_t>(dt_raw);
    const auto op = static_cast<rdmx_op_t>(op_raw);
    if (op_is_bitwise(op) && dt_is_float(dt)) fail("op", "bitwise operation on a floating-point datatype");
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

}  // namespace rdmx::coll
