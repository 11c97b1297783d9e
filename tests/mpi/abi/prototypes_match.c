/* Compiled with MPICH's own mpi.h first, then this library's prototypes:
 * C rejects two declarations of one function with incompatible types, so
 * this compiles only if every declaration of rdmx_mpi_proto.h has MPICH's
 * signature (parameter names aside). */
#include <mpi.h>

/* By its path: -I would let this library's mpi.h shadow MPICH's. */
#include "../../../mpi/include/rdmx_mpi_proto.h"

int main(void)
{
    return 0;
}
