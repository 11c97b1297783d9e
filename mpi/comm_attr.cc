// Communicator attributes. This first version keeps none: no attribute can
// be set yet, so there is nothing to copy or delete.
#include "comm.h"

namespace rdmx::mpi {

struct CommAttrs {};

int comm_attrs_copy(MPI_Comm, Comm *, MPI_Comm, Comm *to)
{
    to->attrs = nullptr;
    return MPI_SUCCESS;
}

int comm_attrs_clear(MPI_Comm, Comm *c)
{
    delete c->attrs;
    c->attrs = nullptr;
    return MPI_SUCCESS;
}

}  // namespace rdmx::mpi
