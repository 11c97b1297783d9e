// Algorithm selection: the one table of thresholds, the RDMX_COLL_<NAME>_ALGO
// environment variables, and an internal (non-exported) hook for tests.
#ifndef RDMX_COLLECTIVES_COLL_SELECT_H
#define RDMX_COLLECTIVES_COLL_SELECT_H

#include <cstddef>
#include <string_view>

namespace rdmx::coll {

enum class Coll : int { Barrier, Bcast, Reduce, Allreduce, ReduceScatter, Allgather, Gather, Scatter, Alltoall };
inline constexpr int kCollCount = 9;

enum class Algo : int {
    Auto = 0,
    Dissemination,
    Binomial,
    ScatterAllgather,
    RecursiveDoubling,
    Ring,
    Rabenseifner,
    RecursiveHalving,
    Bruck,
    Pairwise,
    ReduceScatterGather,
};

inline constexpr size_t KiB = 1024;

/**
 * Every size threshold of the automatic selection. Sizes are in bytes.
 * INITIAL VALUES, to be re-derived from measurements on the test bed (the
 * engine that measures them is not ready yet). Rationale of the defaults:
 * latency-bound algorithms (log p rounds of the whole message) below a few
 * KiB, bandwidth-optimal ones (each rank moves ~2n(p-1)/p) above.
 */
struct Thresholds {
    // allreduce: bytes < small_max -> recursive_doubling. Larger: power-of-two
    // ranks -> rabenseifner; otherwise rabenseifner below ring_min (its fold
    // costs one extra full-message round) and ring from ring_min on.
    size_t allreduce_small_max = 8 * KiB;
    size_t allreduce_ring_min = 512 * KiB;
    // bcast: bytes >= large_min with at least large_min_ranks ranks ->
    // scatter_allgather (van de Geijn), else binomial.
    size_t bcast_large_min = 64 * KiB;
    int bcast_large_min_ranks = 3;
    // reduce: bytes >= large_min (and count >= ranks) -> reduce_scatter_gather.
    size_t reduce_large_min = 256 * KiB;
    // reduce_scatter_block, on the total bytes (ranks x block): power of two ->
    // recursive_halving; otherwise recursive_halving below ring_min, ring above.
    size_t reduce_scatter_ring_min = 512 * KiB;
    // allgather, on the total bytes (ranks x len): below ring_min,
    // recursive_doubling on a power of two and bruck otherwise; ring above.
    size_t allgather_ring_min = 256 * KiB;
    // alltoall: peers in flight per window, wide for small blocks.
    size_t alltoall_small_max = 4 * KiB;
    int alltoall_window_small = 32;
    int alltoall_window_large = 4;
};
inline constexpr Thresholds kThresholds{};

// Automatic or forced choice for a call; never returns Algo::Auto.
Algo select_barrier(int p);
Algo select_bcast(size_t bytes, int p);
Algo select_reduce(size_t bytes, size_t count, int p);
Algo select_allreduce(size_t bytes, size_t count, int p);
Algo select_reduce_scatter(size_t total_bytes, int p);
Algo select_allgather(size_t total_bytes, int p);
Algo select_gather(int p);
Algo select_scatter(int p);
Algo select_alltoall(int p);
int alltoall_window(size_t len, int p);

/** "recursive_doubling", ... ("auto" for Algo::Auto). */
const char *algo_name(Algo a);

// --- Internal hooks for tests (C++ linkage, not exported from librdmx). ---
/**
 * Force `algo` for the collective `coll` ("barrier", "bcast", "reduce",
 * "allreduce", "reduce_scatter", "allgather", "gather", "scatter",
 * "alltoall"); "auto" restores automatic selection. Overrides the
 * environment. Returns false (and changes nothing) for an unknown name.
 */
bool force_algorithm(std::string_view coll, std::string_view algo);
/** Re-read every RDMX_COLL_<NAME>_ALGO variable (normally read once). */
void reload_env();
/** Name of the algorithm currently forced for `coll` ("auto" if none, NULL if coll is unknown). */
const char *forced_algorithm(std::string_view coll);

}  // namespace rdmx::coll

#endif
