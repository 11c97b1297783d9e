// Bootstrap: who am I, how many are we, and an allgather of small blobs to
// exchange addresses. Sources: PMIx (Open MPI's mpirun, srun --mpi=pmix),
// PMI-2 and PMI-1 over PMI_FD (srun --mpi=pmi2, MPICH's mpiexec), an
// allgather callback from an application that already has a runtime, or a
// singleton.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/config.h"
#include "rdmx/rdmx.h"

namespace rdmx {

class Bootstrap {
public:
    virtual ~Bootstrap() = default;
    int rank() const { return rank_; }
    int size() const { return size_; }
    int local_rank() const { return local_rank_; }
    // Ranks on our node as the launcher counts them (PMIX_LOCAL_SIZE, PMI's
    // process mapping, the launcher's environment); 0 when it does not say.
    // Sizes what serves local peers (the sm segment's rings); the node a
    // pair shares is decided later, from the exchanged records.
    int local_size() const { return local_size_; }
    virtual const char *name() const = 0;
    // Every rank contributes len bytes; out receives size*len bytes.
    virtual rdmx_status_t allgather(const void *in, void *out, size_t len) = 0;
    // Asks the launcher to end the whole job (rdmx_abort). Returns if it
    // cannot (no launcher, or it does not answer): the caller exits anyway.
    virtual void abort_job(int code, const char *msg) {
        (void)code;
        (void)msg;
    }

protected:
    int rank_ = 0;
    int size_ = 1;
    int local_rank_ = 0;
    int local_size_ = 0;
};

// Picks the callback when the config has one, else what RDMX_BOOTSTRAP says
// or the environment offers (bootstrap.cc), else a singleton.
rdmx_status_t bootstrap_create(const Config &cfg, std::unique_ptr<Bootstrap> *out);

// A launcher's integer variable (a rank, a size, a descriptor): `dflt` when
// unset, empty, negative or not a plain decimal number.
int env_int(const char *name, int dflt);

// A random 64-bit value from the kernel (job key candidates).
uint64_t random_u64();

}  // namespace rdmx
