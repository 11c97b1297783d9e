/* C prototypes of the MPI functions (generated: see mpi/gen). */
#ifndef RDMX_MPI_PROTO_H
#define RDMX_MPI_PROTO_H
#endif
