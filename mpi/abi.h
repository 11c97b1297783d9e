// The MPICH ABI's linkage rules, shared by every file of the MPI layer.
//
// Every MPI function is defined once, as PMPI_<name>, and MPI_<name> is a
// weak alias of it: the MPI standard's profiling interface. A tool linked
// before this library (or LD_PRELOADed) defines MPI_<name> strongly, wins,
// and reaches the library through PMPI_<name>.
//
//   RDMXMPI_WEAK(Send)
//   RDMXMPI_API int PMPI_Send(const void *buf, ...) { ... }
//
// No C++ exception may cross a C entry point: an entry point that can throw
// (allocation) catches and reports MPI_ERR_NO_MEM or MPI_ERR_INTERN.
#pragma once

#include <mpi.h>

#define RDMXMPI_PRAGMA(x) _Pragma(#x)
#define RDMXMPI_WEAK(name) RDMXMPI_PRAGMA(weak MPI_##name = PMPI_##name)
#define RDMXMPI_API extern "C" __attribute__((visibility("default")))
