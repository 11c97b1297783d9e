// Errors of the MPI layer: every failing call ends in err_raise, which
// invokes the communicator's error handler (MPI_ERRORS_ARE_FATAL by default:
// one line naming the call and the reason, then abort of the job) and
// returns the error code the call must return under MPI_ERRORS_RETURN.
#pragma once

#include <rdmx/rdmx.h>

#include "abi.h"

namespace rdmx::mpi {

// `call` is the MPI function's name ("MPI_Send"); the message says what was
// wrong ("invalid rank 7 in a communicator of size 4"). comm may be
// MPI_COMM_NULL: the handler of MPI_COMM_WORLD (or, before init, fatal) applies.
int err_raise(MPI_Comm comm, int code, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

// The MPI error class for an rdmx status (TRUNCATE -> MPI_ERR_TRUNCATE,
// PEER_LOST -> MPIX_ERR_PROC_FAILED, ...).
int err_from_rdmx(rdmx_status_t st);

// What every function outside the supported set does: raise
// MPI_ERR_UNSUPPORTED_OPERATION on MPI_COMM_WORLD, naming the call.
int err_unsupported(const char *call);

}  // namespace rdmx::mpi
