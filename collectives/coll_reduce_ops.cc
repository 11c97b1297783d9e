// Templated reduction kernel, dispatched once per call on (datatype, op).
#include "coll_reduce_ops.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rdmx::coll {

namespace {

// Integer arithmetic is done in the unsigned type of the promoted operand, so
// that SUM/PROD wrap (well defined) instead of overflowing a signed int.
template <class T>
using Wide = std::make_unsigned_t<decltype(+T{})>;

template <class T>
struct OpSum {
    static T apply(T a, T b) noexcept {
        if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
        else return a + b;
    }
};
template <class T>
struct OpProd {
    static T apply(T a, T b) noexcept {
        if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
        else return a * b;
    }
};
template <class T>
struct OpMin {
    static T apply(T a, T b) noexcept { return b < a ? b : a; }
};
template <class T>
struct OpMax {
    static T apply(T a, T b) noexcept { return a < b ? b : a; }
};
template <class T>
struct OpBand {
    static T apply(T a, T b) noexcept { return static_cast<T>(a & b); }
};
template <class T>
struct OpBor {
    static T apply(T a, T b) noexcept { return static_cast<T>(a | b); }
};
template <class T>
struct OpBxor {
    static T apply(T a, T b) noexcept { return static_cast<T>(a ^ b); }
};

// MINLOC/MAXLOC on a (value, index) struct: the whole winning element is
// kept, padding included, so the result is one of the inputs bit for bit.
template <class P>
struct OpMinloc {
    static P apply(P a, P b) noexcept {
        if (b.v < a.v || (b.v == a.v && b.i < a.i)) return b;
        return a;
    }
};
template <class P>
struct OpMaxloc {
    static P apply(P a, P b) noexcept {
        if (a.v < b.v || (b.v == a.v && b.i < a.i)) return b;
        return a;
    }
};

// memcpy loads/stores: user buffers need not be aligned; compilers turn these
// into plain (vectorisable) moves.
template <class T, class Op>
void combine(std::byte *acc, const std::byte *in, size_t n, bool in_left) noexcept {
    constexpr size_t s = sizeof(T);
    if (in_left) {
        for (size_t i = 0; i < n; ++i) {
            T a, b;
            std::memcpy(&a, acc + i * s, s);
            std::memcpy(&b, in + i * s, s);
            const T r = Op::apply(b, a);
            std::memcpy(acc + i * s, &r, s);
        }
    } else {
        for (size_t i = 0; i < n; ++i) {
            T a, b;
            std::memcpy(&a, acc + i * s, s);
            std::memcpy(&b, in + i * s, s);
            const T r = Op::apply(a, b);
            std::memcpy(acc + i * s, &r, s);
        }
    }
}

template <class T>
void by_op(rdmx_op_t op, std::byte *acc, const std::byte *in, size_t n, bool in_left) noexcept {
    switch (op) {
    case RDMX_SUM: return combine<T, OpSum<T>>(acc, in, n, in_left);
    case RDMX_PROD: return combine<T, OpProd<T>>(acc, in, n, in_left);
    case RDMX_MIN: return combine<T, OpMin<T>>(acc, in, n, in_left);
    case RDMX_MAX: return combine<T, OpMax<T>>(acc, in, n, in_left);
    default: break;
    }
    if constexpr (std::is_integral_v<T>) {
        switch (op) {
        case RDMX_BAND: return combine<T, OpBand<T>>(acc, in, n, in_left);
        case RDMX_BOR: return combine<T, OpBor<T>>(acc, in, n, in_left);
        case RDMX_BXOR: return combine<T, OpBxor<T>>(acc, in, n, in_left);
        default: break;
        }
    }
    // Unreachable: the entry points reject bad ops and bitwise ops on floats.
}

template <class P>
void by_loc_op(rdmx_op_t op, std::byte *acc, const std::byte *in, size_t n, bool in_left) noexcept {
    if (op == RDMX_MINLOC) return combine<P, OpMinloc<P>>(acc, in, n, in_left);
    if (op == RDMX_MAXLOC) return combine<P, OpMaxloc<P>>(acc, in, n, in_left);
    // Unreachable: the entry points take only MINLOC/MAXLOC on pair types.
}

}  // namespace

size_t dt_size(rdmx_datatype_t dt) noexcept {
    switch (dt) {
    case RDMX_INT8: case RDMX_UINT8: return 1;
    case RDMX_INT16: case RDMX_UINT16: return 2;
    case RDMX_INT32: case RDMX_UINT32: case RDMX_FLOAT: return 4;
    case RDMX_INT64: case RDMX_UINT64: case RDMX_DOUBLE: return 8;
    case RDMX_FLOAT_INT: return sizeof(FloatInt);
    case RDMX_DOUBLE_INT: return sizeof(DoubleInt);
    case RDMX_INT_INT: return sizeof(IntInt);
    }
    return 0;
}

bool dt_is_float(rdmx_datatype_t dt) noexcept { return dt == RDMX_FLOAT || dt == RDMX_DOUBLE; }

bool dt_is_pair(rdmx_datatype_t dt) noexcept {
    return dt == RDMX_FLOAT_INT || dt == RDMX_DOUBLE_INT || dt == RDMX_INT_INT;
}

bool op_valid(rdmx_op_t op) noexcept {
    switch (op) {
    case RDMX_SUM: case RDMX_PROD: case RDMX_MIN: case RDMX_MAX:
    case RDMX_BAND: case RDMX_BOR: case RDMX_BXOR: case RDMX_MINLOC: case RDMX_MAXLOC: return true;
    }
    return false;
}

bool op_is_bitwise(rdmx_op_t op) noexcept { return op == RDMX_BAND || op == RDMX_BOR || op == RDMX_BXOR; }

bool op_is_loc(rdmx_op_t op) noexcept { return op == RDMX_MINLOC || op == RDMX_MAXLOC; }

void reduce_local(const ReduceSpec &rs, void *acc_v, const void *in_v, size_t count, bool in_left) noexcept {
    if (count == 0) return;
    auto *acc = static_cast<std::byte *>(acc_v);
    const auto *in = static_cast<const std::byte *>(in_v);
    switch (rs.dt) {
    case RDMX_INT8: return by_op<int8_t>(rs.op, acc, in, count, in_left);
    case RDMX_INT16: return by_op<int16_t>(rs.op, acc, in, count, in_left);
    case RDMX_INT32: return by_op<int32_t>(rs.op, acc, in, count, in_left);
    case RDMX_INT64: return by_op<int64_t>(rs.op, acc, in, count, in_left);
    case RDMX_UINT8: return by_op<uint8_t>(rs.op, acc, in, count, in_left);
    case RDMX_UINT16: return by_op<uint16_t>(rs.op, acc, in, count, in_left);
    case RDMX_UINT32: return by_op<uint32_t>(rs.op, acc, in, count, in_left);
    case RDMX_UINT64: return by_op<uint64_t>(rs.op, acc, in, count, in_left);
    case RDMX_FLOAT: return by_op<float>(rs.op, acc, in, count, in_left);
    case RDMX_DOUBLE: return by_op<double>(rs.op, acc, in, count, in_left);
    case RDMX_FLOAT_INT: return by_loc_op<FloatInt>(rs.op, acc, in, count, in_left);
    case RDMX_DOUBLE_INT: return by_loc_op<DoubleInt>(rs.op, acc, in, count, in_left);
    case RDMX_INT_INT: return by_loc_op<IntInt>(rs.op, acc, in, count, in_left);
    }
}

}  // namespace rdmx::coll
