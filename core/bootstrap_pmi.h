// PMI-1 / PMI-2 bootstrap over the launcher's PMI_FD socket (MPICH's hydra
// mpiexec, Slurm's srun --mpi=pmi2). See bootstrap_pmi.cc.
#pragma once
#include <memory>

#include "core/bootstrap.h"

namespace rdmx {

// version 1 or 2. One session per process: later calls reuse the first.
rdmx_status_t pmi_bootstrap_create(const Config &cfg, int version, std::unique_ptr<Bootstrap> *out);
// A session of its own on `fd` (tests: a fake launcher on a socketpair),
// finalized when *out is destroyed. `rank` and `size` stand for PMI-1's
// PMI_RANK and PMI_SIZE (PMI-2 asks the launcher for both).
rdmx_status_t pmi_bootstrap_open(int fd, int version, double timeout, int rank, int size,
                                 std::unique_ptr<Bootstrap> *out);

}  // namespace rdmx
