// Local reduction kernels: the 10 scalar datatypes x 7 ops, and the 3 pair
// datatypes x MINLOC/MAXLOC of the public API.
#ifndef RDMX_COLLECTIVES_COLL_REDUCE_OPS_H
#define RDMX_COLLECTIVES_COLL_REDUCE_OPS_H

#include <rdmx/rdmx.h>

#include <cstddef>

namespace rdmx::coll {

/** Element size of a datatype, 0 if `dt` is not a valid enum value. */
size_t dt_size(rdmx_datatype_t dt) noexcept;
bool dt_is_float(rdmx_datatype_t dt) noexcept;
/** RDMX_FLOAT_INT, RDMX_DOUBLE_INT, RDMX_INT_INT: the (value, index) structs. */
bool dt_is_pair(rdmx_datatype_t dt) noexcept;
bool op_valid(rdmx_op_t op) noexcept;
bool op_is_bitwise(rdmx_op_t op) noexcept;
/** RDMX_MINLOC, RDMX_MAXLOC: the ops of the pair datatypes (and only theirs). */
bool op_is_loc(rdmx_op_t op) noexcept;

/** The C layouts of the pair datatypes (sizeof includes the padding). */
struct FloatInt {
    float v;
    int i;
};
struct DoubleInt {
    double v;
    int i;
};
struct IntInt {
    int v;
    int i;
};

/** What a reduction combines. */
struct ReduceSpec {
    rdmx_datatype_t dt;
    rdmx_op_t op;
    size_t esz;  // dt_size(dt)
};

/**
 * acc[i] = acc[i] (op) in[i]   when in_left is false,
 * acc[i] = in[i] (op) acc[i]   when in_left is true,
 * for i < count. Buffers need no alignment. Integer SUM/PROD wrap modulo
 * 2^bits (computed in unsigned arithmetic: no signed overflow). MIN/MAX keep
 * the left operand on ties. MINLOC/MAXLOC take the extreme value with its
 * index, the lower index on equal values (the same whatever the operand
 * order), the left operand when both fields are equal. The operand order is the caller's: algorithms
 * pass it so that the order of combination is fixed by ranks, never by
 * timing.
 */
void reduce_local(const ReduceSpec &rs, void *acc, const void *in, size_t count, bool in_left) noexcept;

}  // namespace rdmx::coll

#endif
