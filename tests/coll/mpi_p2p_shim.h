// Test-only hooks of the MPI point-to-point shim (not part of the rdmx API).
#ifndef RDMX_TESTS_COLL_MPI_P2P_SHIM_H
#define RDMX_TESTS_COLL_MPI_P2P_SHIM_H

#include <rdmx/rdmx.h>

namespace rdmx_shim {
/** The nth request completion from now (1 = the next one) reports `status`
 *  although the operation itself completed; 0 disarms. */
void fail_completion(long nth, rdmx_status_t status);
/** Requests created and not yet freed. */
long live_requests();
}  // namespace rdmx_shim

#endif
