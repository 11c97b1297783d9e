// Reduction operations: the builtin ops on packed items of every predefined
// type MPI defines them on, user ops (MPI_Op_create), MPI_Op_free,
// MPI_Op_commutative, MPI_Reduce_local, and the (op, type) pairs that map
// onto rdmx's own reductions.
#include "op.h"

#include <complex>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "datatype.h"
#include "errors.h"

namespace rdmx::mpi {
namespace {

constexpr unsigned kUserOpKind = 0x98000000u;   // MPICH's kind bits of a run-time op
constexpr unsigned kIndexMask = 0x03ffffffu;
constexpr MPI_Op kFirstBuiltin = MPI_MAX;
constexpr MPI_Op kLastBuiltin = MPI_NO_OP;

struct UserOp {
    MPI_User_function *fn = nullptr;
    bool commute = true;
    bool live = false;
};

struct OpTable {
    std::mutex mu;
    std::vector<UserOp> ops;
};
OpTable &table() {
    static OpTable t;
    return t;
}

bool user_index(MPI_Op op, size_t *idx) {
    const auto u = static_cast<unsigned>(op);
    if ((u & ~kIndexMask) != kUserOpKind) return false;
    *idx = u & kIndexMask;
    return true;
}

bool user_op(MPI_Op op, UserOp *out) {
    size_t i;
    if (!user_index(op, &i)) return false;
    OpTable &t = table();
    std::lock_guard lk(t.mu);
    if (i >= t.ops.size() || !t.ops[i].live) return false;
    *out = t.ops[i];
    return true;
}

// Items may sit at any byte offset in packed data (pairs are value then
// int with no padding), so every load and store goes through memcpy.
template <class T> T load(const unsigned char *p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <class T> void store(unsigned char *p, T v) { std::memcpy(p, &v, sizeof v); }

template <class T, class F> void each(const void *in, void *io, int64_t n, F f) {
    auto *a = static_cast<const unsigned char *>(in);
    auto *b = static_cast<unsigned char *>(io);
    for (int64_t i = 0; i < n; ++i, a += sizeof(T), b += sizeof(T)) store<T>(b, f(load<T>(a), load<T>(b)));
}

enum class Cls { SInt, UInt, Float, Complex, Bool, Byte };

// Integers: arithmetic in the unsigned type so that overflow wraps (as
// MPICH's does) instead of being undefined.
template <class T> int integer_op(MPI_Op op, const void *in, void *io, int64_t n, bool dry) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
    case MPI_SUM: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(static_cast<U>(x) + static_cast<U>(y)); }); return MPI_SUCCESS;
    case MPI_PROD: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(static_cast<U>(x) * static_cast<U>(y)); }); return MPI_SUCCESS;
    case MPI_MIN: if (!dry) each<T>(in, io, n, [](T x, T y) { return x < y ? x : y; }); return MPI_SUCCESS;
    case MPI_MAX: if (!dry) each<T>(in, io, n, [](T x, T y) { return x > y ? x : y; }); return MPI_SUCCESS;
    case MPI_LAND: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x && y); }); return MPI_SUCCESS;
    case MPI_LOR: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x || y); }); return MPI_SUCCESS;
    case MPI_LXOR: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(!x != !y); }); return MPI_SUCCESS;
    case MPI_BAND: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x & y); }); return MPI_SUCCESS;
    case MPI_BOR: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x | y); }); return MPI_SUCCESS;
    case MPI_BXOR: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x ^ y); }); return MPI_SUCCESS;
    default: return MPI_ERR_OP;
    }
}

template <class T> int float_op(MPI_Op op, const void *in, void *io, int64_t n, bool dry) {
    switch (op) {
    case MPI_SUM: if (!dry) each<T>(in, io, n, [](T x, T y) { return x + y; }); return MPI_SUCCESS;
    case MPI_PROD: if (!dry) each<T>(in, io, n, [](T x, T y) { return x * y; }); return MPI_SUCCESS;
    case MPI_MIN: if (!dry) each<T>(in, io, n, [](T x, T y) { return x < y ? x : y; }); return MPI_SUCCESS;
    case MPI_MAX: if (!dry) each<T>(in, io, n, [](T x, T y) { return x > y ? x : y; }); return MPI_SUCCESS;
    default: return MPI_ERR_OP;
    }
}

template <class T> int complex_op(MPI_Op op, const void *in, void *io, int64_t n, bool dry) {
    switch (op) {
    case MPI_SUM: if (!dry) each<T>(in, io, n, [](T x, T y) { return x + y; }); return MPI_SUCCESS;
    case MPI_PROD: if (!dry) each<T>(in, io, n, [](T x, T y) { return x * y; }); return MPI_SUCCESS;
    default: return MPI_ERR_OP;
    }
}

// C_BOOL, CXX_BOOL and Fortran's LOGICAL: the logical ops only.
template <class T> int logical_op(MPI_Op op, const void *in, void *io, int64_t n, bool dry) {
    switch (op) {
    case MPI_LAND: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x && y); }); return MPI_SUCCESS;
    case MPI_LOR: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(x || y); }); return MPI_SUCCESS;
    case MPI_LXOR: if (!dry) each<T>(in, io, n, [](T x, T y) { return static_cast<T>(!x != !y); }); return MPI_SUCCESS;
    default: return MPI_ERR_OP;
    }
}

int byte_op(MPI_Op op, const void *in, void *io, int64_t n, bool dry) {
    if (op != MPI_BAND && op != MPI_BOR && op != MPI_BXOR) return MPI_ERR_OP;
    return integer_op<unsigned char>(op, in, io, n, dry);
}

// MINLOC/MAXLOC on packed (value, index) pairs; ties keep the lower index.
template <class V, class I> int pair_op(MPI_Op op, const void *in, void *io, int64_t n, bool dry) {
    if (op != MPI_MINLOC && op != MPI_MAXLOC) return MPI_ERR_OP;
    if (dry) return MPI_SUCCESS;
    const bool min = op == MPI_MINLOC;
    auto *a = static_cast<const unsigned char *>(in);
    auto *b = static_cast<unsigned char *>(io);
    constexpr size_t kStride = sizeof(V) + sizeof(I);
    for (int64_t i = 0; i < n; ++i, a += kStride, b += kStride) {
        const V av = load<V>(a), bv = load<V>(b);
        const I ai = load<I>(a + sizeof(V)), bi = load<I>(b + sizeof(V));
        if (min ? av < bv : av > bv) {
            store<V>(b, av);
            store<I>(b + sizeof(V), ai);
        } else if (av == bv && ai < bi) {
            store<I>(b + sizeof(V), ai);
        }
    }
    return MPI_SUCCESS;
}

using LDComplex = std::complex<long double>;

// One switch over every predefined type an op may apply to.
int dispatch(MPI_Op op, MPI_Datatype t, const void *in, void *io, int64_t n, bool dry) {
    switch (t) {
    case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_INT8_T: case MPI_INTEGER1:
        return integer_op<int8_t>(op, in, io, n, dry);
    case MPI_UNSIGNED_CHAR: case MPI_UINT8_T: return integer_op<uint8_t>(op, in, io, n, dry);
    case MPI_SHORT: case MPI_INT16_T: case MPI_INTEGER2: return integer_op<int16_t>(op, in, io, n, dry);
    case MPI_UNSIGNED_SHORT: case MPI_UINT16_T: return integer_op<uint16_t>(op, in, io, n, dry);
    case MPI_INT: case MPI_INT32_T: case MPI_INTEGER: case MPI_INTEGER4: case MPI_WCHAR:
        return integer_op<int32_t>(op, in, io, n, dry);
    case MPI_UNSIGNED: case MPI_UINT32_T: return integer_op<uint32_t>(op, in, io, n, dry);
    case MPI_LONG: case MPI_LONG_LONG_INT: case MPI_INT64_T: case MPI_INTEGER8: case MPI_AINT:
    case MPI_OFFSET: case MPI_COUNT:
        return integer_op<int64_t>(op, in, io, n, dry);
    case MPI_UNSIGNED_LONG: case MPI_UNSIGNED_LONG_LONG: case MPI_UINT64_T:
        return integer_op<uint64_t>(op, in, io, n, dry);
    case MPI_BYTE: return byte_op(op, in, io, n, dry);
    case MPI_FLOAT: case MPI_REAL: case MPI_REAL4: return float_op<float>(op, in, io, n, dry);
    case MPI_DOUBLE: case MPI_DOUBLE_PRECISION: case MPI_REAL8: return float_op<double>(op, in, io, n, dry);
    case MPI_LONG_DOUBLE: case MPI_REAL16: return float_op<long double>(op, in, io, n, dry);
    case MPI_C_FLOAT_COMPLEX: case MPI_COMPLEX: case MPI_COMPLEX8: case MPI_CXX_FLOAT_COMPLEX:
        return complex_op<std::complex<float>>(op, in, io, n, dry);
    case MPI_C_DOUBLE_COMPLEX: case MPI_DOUBLE_COMPLEX: case MPI_COMPLEX16: case MPI_CXX_DOUBLE_COMPLEX:
        return complex_op<std::complex<double>>(op, in, io, n, dry);
    case MPI_C_LONG_DOUBLE_COMPLEX: case MPI_COMPLEX32: case MPI_CXX_LONG_DOUBLE_COMPLEX:
        return complex_op<LDComplex>(op, in, io, n, dry);
    case MPI_C_BOOL: case MPI_CXX_BOOL: return logical_op<uint8_t>(op, in, io, n, dry);
    case MPI_LOGICAL: return logical_op<int32_t>(op, in, io, n, dry);
    case MPI_FLOAT_INT: return pair_op<float, int32_t>(op, in, io, n, dry);
    case MPI_DOUBLE_INT: return pair_op<double, int32_t>(op, in, io, n, dry);
    case MPI_LONG_INT: return pair_op<int64_t, int32_t>(op, in, io, n, dry);
    case MPI_SHORT_INT: return pair_op<int16_t, int32_t>(op, in, io, n, dry);
    case MPI_2INT: case MPI_2INTEGER: return pair_op<int32_t, int32_t>(op, in, io, n, dry);
    case MPI_LONG_DOUBLE_INT: return pair_op<long double, int32_t>(op, in, io, n, dry);
    case MPI_2REAL: return pair_op<float, float>(op, in, io, n, dry);
    case MPI_2DOUBLE_PRECISION: return pair_op<double, double>(op, in, io, n, dry);
    default: return MPI_ERR_OP;
    }
}

// rdmx's scalar type for a predefined integer or floating type.
bool rdmx_scalar(MPI_Datatype t, rdmx_datatype_t *out, bool *is_float) {
    *is_float = false;
    switch (t) {
    case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_INT8_T: case MPI_INTEGER1: *out = RDMX_INT8; return true;
    case MPI_UNSIGNED_CHAR: case MPI_UINT8_T: case MPI_BYTE: *out = RDMX_UINT8; return true;
    case MPI_SHORT: case MPI_INT16_T: case MPI_INTEGER2: *out = RDMX_INT16; return true;
    case MPI_UNSIGNED_SHORT: case MPI_UINT16_T: *out = RDMX_UINT16; return true;
    case MPI_INT: case MPI_INT32_T: case MPI_INTEGER: case MPI_INTEGER4: *out = RDMX_INT32; return true;
    case MPI_UNSIGNED: case MPI_UINT32_T: *out = RDMX_UINT32; return true;
    case MPI_LONG: case MPI_LONG_LONG_INT: case MPI_INT64_T: case MPI_INTEGER8: case MPI_AINT:
    case MPI_OFFSET: case MPI_COUNT:
        *out = RDMX_INT64;
        return true;
    case MPI_UNSIGNED_LONG: case MPI_UNSIGNED_LONG_LONG: case MPI_UINT64_T: *out = RDMX_UINT64; return true;
    case MPI_FLOAT: case MPI_REAL: case MPI_REAL4: *is_float = true; *out = RDMX_FLOAT; return true;
    case MPI_DOUBLE: case MPI_DOUBLE_PRECISION: case MPI_REAL8: *is_float = true; *out = RDMX_DOUBLE; return true;
    default: return false;
    }
}

bool rdmx_op_of(MPI_Op op, rdmx_op_t *out) {
    switch (op) {
    case MPI_SUM: *out = RDMX_SUM; return true;
    case MPI_PROD: *out = RDMX_PROD; return true;
    case MPI_MIN: *out = RDMX_MIN; return true;
    case MPI_MAX: *out = RDMX_MAX; return true;
    case MPI_BAND: *out = RDMX_BAND; return true;
    case MPI_BOR: *out = RDMX_BOR; return true;
    case MPI_BXOR: *out = RDMX_BXOR; return true;
    case MPI_MINLOC: *out = RDMX_MINLOC; return true;
    case MPI_MAXLOC: *out = RDMX_MAXLOC; return true;
    default: return false;
    }
}

// The predefined pair types whose C layout is rdmx's pair struct.
bool rdmx_pair(MPI_Datatype t, rdmx_datatype_t *out) {
    switch (t) {
    case MPI_FLOAT_INT: *out = RDMX_FLOAT_INT; return true;
    case MPI_DOUBLE_INT: *out = RDMX_DOUBLE_INT; return true;
    case MPI_2INT: case MPI_2INTEGER: *out = RDMX_INT_INT; return true;
    default: return false;
    }
}

}  // namespace

bool op_builtin(MPI_Op op) { return op >= kFirstBuiltin && op <= kLastBuiltin; }

bool op_valid(MPI_Op op) {
    UserOp u;
    return op_builtin(op) || user_op(op, &u);
}

bool op_commutative(MPI_Op op) {
    UserOp u;
    return op_builtin(op) || !user_op(op, &u) || u.commute;
}

const char *op_name(MPI_Op op, char *buf, size_t len) {
    static const char *const kNames[] = {"MPI_MAX", "MPI_MIN", "MPI_SUM", "MPI_PROD", "MPI_LAND",
                                         "MPI_BAND", "MPI_LOR", "MPI_BOR", "MPI_LXOR", "MPI_BXOR",
                                         "MPI_MINLOC", "MPI_MAXLOC", "MPI_REPLACE", "MPI_NO_OP"};
    if (op_builtin(op)) return kNames[op - kFirstBuiltin];
    std::snprintf(buf, len, "user op 0x%x", static_cast<unsigned>(op));
    return buf;
}

int op_apply_packed(MPI_Op op, MPI_Datatype basic, const void *in, void *inout, int64_t n) {
    return dispatch(op, basic, in, inout, n, false);
}

bool op_defined_on(MPI_Op op, MPI_Datatype basic) {
    return dispatch(op, basic, nullptr, nullptr, 0, true) == MPI_SUCCESS;
}

void op_apply_user(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt) {
    UserOp u;
    if (!user_op(op, &u)) return;
    int len = count;
    MPI_Datatype t = dt;
    // MPI's C binding takes a non-const invec; the function must not write it.
    u.fn(const_cast<void *>(in), inout, &len, &t);
}

bool op_to_rdmx(MPI_Op op, MPI_Datatype dt, int count, rdmx_op_t *rop, rdmx_datatype_t *rdt, size_t *items) {
    if (!rdmx_op_of(op, rop)) return false;
    const bool loc = *rop == RDMX_MINLOC || *rop == RDMX_MAXLOC;
    if (rdmx_pair(dt, rdt)) {   // a predefined pair type: its layout is rdmx's struct
        *items = static_cast<size_t>(count);
        return loc;
    }
    if (loc) return false;
    TypeView v;
    if (!type_view(dt, &v) || !v.contiguous || (count > 1 && static_cast<size_t>(v.extent) != v.size)) return false;
    int64_t per = 0;
    const MPI_Datatype basic = type_basic(dt, &per);
    bool is_float = false;
    if (basic == MPI_DATATYPE_NULL || !rdmx_scalar(basic, rdt, &is_float)) return false;
    const bool bitwise = *rop == RDMX_BAND || *rop == RDMX_BOR || *rop == RDMX_BXOR;
    if (bitwise && is_float) return false;
    if (basic == MPI_BYTE && !bitwise) return false;   // MPI defines only bitwise ops on bytes
    *items = static_cast<size_t>(count) * static_cast<size_t>(per);
    return true;
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

RDMXMPI_WEAK(Op_create)
RDMXMPI_API int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op) {
    if (user_fn == nullptr || op == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Op_create", "%s is NULL",
                         user_fn == nullptr ? "the user function" : "the op pointer");
    try {
        OpTable &t = table();
        std::lock_guard lk(t.mu);
        size_t i = 0;
        while (i < t.ops.size() && t.ops[i].live) ++i;   // reuse freed slots
        if (i > kIndexMask) return err_raise(MPI_COMM_NULL, MPI_ERR_INTERN, "MPI_Op_create", "too many user ops");
        if (i == t.ops.size()) t.ops.emplace_back();
        t.ops[i] = UserOp{user_fn, commute != 0, true};
        *op = static_cast<MPI_Op>(kUserOpKind | static_cast<unsigned>(i));
        return MPI_SUCCESS;
    } catch (...) {
        return err_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, "MPI_Op_create", "out of memory");
    }
}

RDMXMPI_WEAK(Op_free)
RDMXMPI_API int PMPI_Op_free(MPI_Op *op) {
    size_t i;
    if (op == nullptr || !user_index(*op, &i))
        return err_raise(MPI_COMM_NULL, MPI_ERR_OP, "MPI_Op_free", "0x%x is not a user op (builtin ops cannot be freed)",
                         op ? static_cast<unsigned>(*op) : 0u);
    OpTable &t = table();
    std::lock_guard lk(t.mu);
    if (i >= t.ops.size() || !t.ops[i].live)
        return err_raise(MPI_COMM_NULL, MPI_ERR_OP, "MPI_Op_free", "op 0x%x was freed already", static_cast<unsigned>(*op));
    t.ops[i].live = false;
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Op_commutative)
RDMXMPI_API int PMPI_Op_commutative(MPI_Op op, int *commute) {
    if (!op_valid(op))
        return err_raise(MPI_COMM_NULL, MPI_ERR_OP, "MPI_Op_commutative", "invalid op 0x%x", static_cast<unsigned>(op));
    *commute = op_commutative(op) ? 1 : 0;
    return MPI_SUCCESS;
}

namespace rdmx::mpi {

// inout = in op inout on count elements of dt in dt's layout: user ops run
// on the layout; builtin ops on packed copies (the layout may have holes or
// padding, pairs included).
int op_reduce_layout(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt, MPI_Comm comm,
                     const char *call) {
    if (!op_builtin(op)) {
        op_apply_user(op, in, inout, count, dt);
        return MPI_SUCCESS;
    }
    TypeView v;
    type_view(dt, &v);
    int64_t per = 0;
    const MPI_Datatype basic = type_basic(dt, &per);
    char nb[32];
    if (basic == MPI_DATATYPE_NULL || !op_defined_on(op, basic))
        return err_raise(comm, MPI_ERR_OP, call, "%s is not defined on datatype 0x%x", op_name(op, nb, sizeof nb),
                         static_cast<unsigned>(dt));
    const int64_t items = count * per;
    if (v.contiguous && (count <= 1 || static_cast<size_t>(v.extent) == v.size)) {
        return op_apply_packed(op, basic, static_cast<const char *>(in) + v.true_lb,
                               static_cast<char *>(inout) + v.true_lb, items);
    }
    const size_t bytes = v.size * static_cast<size_t>(count);
    auto a = std::make_unique<unsigned char[]>(bytes), b = std::make_unique<unsigned char[]>(bytes);
    type_pack(in, count, dt, a.get());
    type_pack(inout, count, dt, b.get());
    const int rc = op_apply_packed(op, basic, a.get(), b.get(), items);
    type_unpack(b.get(), bytes, inout, count, dt);
    return rc;
}

}  // namespace rdmx::mpi

RDMXMPI_WEAK(Reduce_local)
RDMXMPI_API int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op) {
    static constexpr const char *kCall = "MPI_Reduce_local";
    TypeView v;
    if (count < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_COUNT, kCall, "negative count %d", count);
    if (!type_view(datatype, &v) || !v.committed)
        return err_raise(MPI_COMM_NULL, MPI_ERR_TYPE, kCall, "invalid or uncommitted datatype 0x%x",
                         static_cast<unsigned>(datatype));
    if (!op_valid(op)) return err_raise(MPI_COMM_NULL, MPI_ERR_OP, kCall, "invalid op 0x%x", static_cast<unsigned>(op));
    if (count == 0) return MPI_SUCCESS;
    try {
        return op_reduce_layout(op, inbuf, inoutbuf, count, datatype, MPI_COMM_NULL, kCall);
    } catch (...) {
        return err_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, kCall, "out of memory");
    }
}
