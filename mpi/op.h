// Reduction operations of the MPI layer: the builtin ops on every predefined
// type MPI allows them on, user ops from MPI_Op_create, and the mapping of
// (op, type) onto rdmx's own reductions where one exists.
#pragma once

#include <rdmx/rdmx.h>

#include <cstdint>

#include "abi.h"

namespace rdmx::mpi {

// False for MPI_OP_NULL, a freed op, or a value that never was an op.
bool op_valid(MPI_Op op);
bool op_builtin(MPI_Op op);
// Builtin ops are all commutative; a user op is what Op_create said.
bool op_commutative(MPI_Op op);
// Short name for messages ("MPI_SUM", "user op 0x98000001").
const char *op_name(MPI_Op op, char *buf, size_t len);

// A builtin op on n items of the predefined type `basic`, packed (items
// back to back; pair types as value then int index, no padding):
// inout[i] = in[i] op inout[i]. MPI_ERR_OP when the op is not defined on
// the type (bitwise on floating types, MINLOC on a scalar, ...).
int op_apply_packed(MPI_Op op, MPI_Datatype basic, const void *in, void *inout, int64_t n);

// Whether op is defined on basic (a predefined type): what the collectives
// check before they move any data, so every rank fails the same way.
bool op_defined_on(MPI_Op op, MPI_Datatype basic);

// A user op's function on count elements of dt in dt's layout.
void op_apply_user(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt);

// inout = in op inout on count elements of dt in dt's layout (what
// MPI_Reduce_local does): user ops on the layout, builtin ops on packed
// copies. Raises MPI_ERR_OP on comm when a builtin op is not defined on dt.
int op_reduce_layout(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt, MPI_Comm comm,
                     const char *call);

// rdmx's op and type for (op, dt) when rdmx's reductions compute the same
// result on dt's layout: count elements of dt are `*items` items of *rdt
// at buf + true_lb. False otherwise (user ops, logical ops, long double,
// complex, non-contiguous types ...).
bool op_to_rdmx(MPI_Op op, MPI_Datatype dt, int count, rdmx_op_t *rop, rdmx_datatype_t *rdt, size_t *items);

}  // namespace rdmx::mpi
