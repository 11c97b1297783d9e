// Communicators of the MPI layer: an MPI_Comm handle names a Comm, which
// wraps an rdmx communicator (a derived rdmx_context_h) and carries what MPI
// adds on top: the error handler, the name, the group and the attributes.
#pragma once

#include <rdmx/rdmx.h>

#include <string>
#include <vector>

#include "abi.h"

namespace rdmx::mpi {

struct CommAttrs;   // the attribute table (comm.cc)

struct Comm {
    rdmx_context_h ctx = nullptr;         // rdmx's communicator (world: the root context)
    int rank = 0;
    int size = 0;
    MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
    std::vector<int> world_ranks;         // member i is world rank world_ranks[i] (the group)
    std::string name;
    CommAttrs *attrs = nullptr;           // owned; null until the first attribute is set
};

// The Comm a handle names; nullptr for MPI_COMM_NULL, a freed communicator,
// or a value that never was a communicator handle.
Comm *comm_get(MPI_Comm handle);

// Give a new Comm (owning ctx) a handle (MPI_COMM_NULL when the table is
// full); comm_release frees the rdmx communicator (unless it is the world's
// root context), the Comm and the handle. Clear the attributes first.
MPI_Comm comm_register(Comm *comm);
void comm_release(MPI_Comm handle);

// MPI_COMM_WORLD over rdmx's root context and MPI_COMM_SELF (a split of it):
// called once by MPI_Init/Init_thread after rdmx_init; comm_teardown frees
// every communicator still registered, before rdmx_finalize.
int comm_setup(rdmx_context_h world);
void comm_teardown();

// Attributes (comm_attr.cc): copy callbacks run by MPI_Comm_dup (from -> to),
// delete callbacks by MPI_Comm_free and MPI_Finalize; both return an MPI code.
int comm_attrs_copy(MPI_Comm old_handle, Comm *from, MPI_Comm new_handle, Comm *to);
int comm_attrs_clear(MPI_Comm handle, Comm *c);
// Frees what comm_attrs_clear left behind (a delete callback failed) without
// running callbacks: for a communicator that goes anyway (MPI_Finalize, a
// failed dup), so its table is not leaked.
void comm_attrs_drop(Comm *c);

}  // namespace rdmx::mpi
