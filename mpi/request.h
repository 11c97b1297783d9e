// Requests of the MPI layer: an MPI_Request handle names a Request, which
// wraps what completes it (an rdmx request, a generalized request, a
// persistent operation's current instance) and what must happen on
// completion (unpack a non-contiguous receive, free temporaries, fill the
// status).
#pragma once

#include <rdmx/rdmx.h>

#include <functional>

#include "abi.h"

namespace rdmx::mpi {

// Completion hook: runs once, after the rdmx request completed and before
// the MPI request reports completion. It may rewrite the status (count in
// bytes of the MPI type, error) and returns an MPI error code (MPI_SUCCESS).
using OnComplete = std::function<int(const rdmx_msg_info_t &info, MPI_Status *status)>;

// An MPI request completed by the rdmx request r (a nonblocking collective,
// a send or a receive); comm names the communicator whose error handler
// applies. Ownership of r passes to the MPI request.
MPI_Request request_from_rdmx(rdmx_request_h r, MPI_Comm comm, OnComplete on_complete);

}  // namespace rdmx::mpi
