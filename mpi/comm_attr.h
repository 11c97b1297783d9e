// Attributes of communicators (comm_attr.cc): what Comm_dup, Comm_free and
// MPI_Finalize need of them.
#pragma once

#include "comm.h"

namespace rdmx::mpi {

// Run the copy callbacks of every attribute of `from` (handle old) and cache
// what they return on `to` (handle nu). MPI_SUCCESS or the first failing
// callback's code (then the attributes already copied stay on `to`, and
// comm_attrs_clear removes them).
int comm_attrs_copy(MPI_Comm old, Comm *from, MPI_Comm nu, Comm *to);

// Run the delete callbacks of every attribute of c (handle `handle`), in
// the reverse order of setting, and free c's attribute table. MPI_SUCCESS
// or the first failing callback's code.
int comm_attrs_clear(MPI_Comm handle, Comm *c);

}  // namespace rdmx::mpi
