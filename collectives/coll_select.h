// Algorithm selection: the one table of thresholds, the RDMX_COLL_<NAME>_ALGO
// environment variables, and an internal (non-exported) hook for tests.
#ifndef RDMX_COLLECTIVES_COLL_SELECT_H
#define RDMX_COLLECTIVES_COLL_SELECT_H

#include <cstddef>
#include <string_view>

namespace rdmx::coll {

enum class Coll : int {
    Barrier, Bcast, Reduce, Allreduce, ReduceScatter, Allgather, Gather, Scatter, Alltoall,
    Scan, Exscan, Allgatherv, Gatherv, Scatterv, Alltoallv,
};
inline constexpr int kCollCount = 15;

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
    Linear,
};

inline constexpr size_t KiB = 1024;

/**
 * Every size threshold of the automatic selection. Sizes are in bytes.
 * Derived from forced-algorithm sweeps on the Soft-RoCE test bed (3 and 4
 * ranks, 1 KiB to 4 MiB, medians of 3 interleaved runs; the table is in
 * docs/collectives.md). Rank counts the bed cannot run meaningfully (8 and
 * more on its 2 vCPUs) follow the algorithms' cost models instead.
 */
struct Thresholds {
    // allreduce: recursive_doubling below small_max (power-of-two ranks) or
    // small_max_nonpow2 (others), or when count < ranks. Above: power of two
    // -> rabenseifner; otherwise rabenseifner below ring_min, ring from it.
    // Measured crossovers: 8-16 KiB at 4 ranks; at 3 ranks recursive
    // doubling led to 128 KiB and ring from 256 KiB (rabenseifner, with its
    // extra fold round, never led).
    size_t allreduce_small_max = 16 * KiB;
    size_t allreduce_small_max_nonpow2 = 128 * KiB;
    size_t allreduce_ring_min = 256 * KiB;
    // bcast: bytes >= large_min with at least large_min_ranks ranks ->
    // scatter_allgather (van de Geijn), else binomial. Binomial led at every
    // size on 3 and 4 ranks (log2 p <= 2 rounds of the whole message); the
    // scatter pays off once the tree is deeper.
    size_t bcast_large_min = 512 * KiB;
    int bcast_large_min_ranks = 8;
    // reduce: bytes >= large_min (count >= ranks, ranks > 2) ->
    // reduce_scatter_gather. Measured: from 1 MiB at 3 ranks, binomial still
    // ahead at 4 MiB on 4 ranks.
    size_t reduce_large_min = 2048 * KiB;
    // reduce_scatter_block, on the total bytes (ranks x block): power of two ->
    // recursive_halving; otherwise recursive_halving below ring_min, ring
    // above (ring led from 2 KiB blocks at 3 ranks).
    size_t reduce_scatter_ring_min = 2 * KiB;
    // allgather: power of two -> recursive_doubling (it led at 4 ranks up to
    // 4 MiB blocks, and moves what ring moves in log2 p rounds instead of
    // p - 1). Otherwise, on the total bytes (ranks x len): bruck below
    // ring_min, ring above (crossover between 6 and 12 KiB at 3 ranks).
    size_t allgather_ring_min = 8 * KiB;
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
Algo select_scan(int p);
Algo select_exscan(int p);
Algo select_allgatherv(int p);
Algo select_gatherv(int p);
Algo select_scatterv(int p);
Algo select_alltoallv(int p);

/** "recursive_doubling", ... ("auto" for Algo::Auto). */
const char *algo_name(Algo a);

// --- Internal hooks for tests (C++ linkage, not exported from librdmx). ---
/**
 * Force `algo` for the collective `coll` ("barrier", "bcast", "reduce",
 * "allreduce", "reduce_scatter", "allgather", "gather", "scatter",
 * "alltoall", "scan", "exscan", "allgatherv", "gatherv", "scatterv",
 * "alltoallv"); "auto" restores automatic selection. Overrides the
 * environment. Returns false (and changes nothing) for an unknown name.
 */
bool force_algorithm(std::string_view coll, std::string_view algo);
/** Re-read every RDMX_COLL_<NAME>_ALGO variable (normally read once). */
void reload_env();
/** Name of the algorithm currently forced for `coll` ("auto" if none, NULL if coll is unknown). */
const char *forced_algorithm(std::string_view coll);

}  // namespace rdmx::coll

#endif
