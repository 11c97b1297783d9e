// Process-wide state of the MPI layer: where MPI_Init/MPI_Finalize are in
// the process's life, the thread level granted, and rdmx's root context.
#pragma once

#include <rdmx/rdmx.h>

#include <atomic>

#include "abi.h"

namespace rdmx::mpi {

enum class Phase : int { kBefore, kRunning, kFinalized };

struct State {
    std::atomic<Phase> phase{Phase::kBefore};
    int thread_level = MPI_THREAD_SINGLE;   // what MPI_Init_thread granted
    rdmx_context_h world = nullptr;         // rdmx's root context (MPI_COMM_WORLD's)
};

State &state();

inline bool running() { return state().phase.load(std::memory_order_acquire) == Phase::kRunning; }

// The check every call that needs MPI to be running starts with: outside
// MPI_Init..MPI_Finalize it reports MPI_ERR_OTHER naming the call (fatal:
// there is no communicator to return the error on).
int require_running(const char *call);

}  // namespace rdmx::mpi
