// Algorithm selection by message size and rank count, and forcing through
// RDMX_COLL_<NAME>_ALGO (read once, thread-safe) or the internal test hook.
#include "coll_select.h"

#include "coll_internal.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace rdmx::coll {

namespace {

struct CollSpec {
    const char *name;  // as given to force_algorithm()
    const char *env;   // the environment variable
    std::array<Algo, 3> algos;
    int n_algos;
};

constexpr std::array<CollSpec, kCollCount> kSpecs = {{
    {"barrier", "RDMX_COLL_BARRIER_ALGO", {Algo::Dissemination}, 1},
    {"bcast", "RDMX_COLL_BCAST_ALGO", {Algo::Binomial, Algo::ScatterAllgather}, 2},
    {"reduce", "RDMX_COLL_REDUCE_ALGO", {Algo::Binomial, Algo::ReduceScatterGather}, 2},
    {"allreduce", "RDMX_COLL_ALLREDUCE_ALGO", {Algo::RecursiveDoubling, Algo::Ring, Algo::Rabenseifner}, 3},
    {"reduce_scatter", "RDMX_COLL_REDUCE_SCATTER_ALGO", {Algo::RecursiveHalving, Algo::Ring}, 2},
    {"allgather", "RDMX_COLL_ALLGATHER_ALGO", {Algo::RecursiveDoubling, Algo::Bruck, Algo::Ring}, 3},
    {"gather", "RDMX_COLL_GATHER_ALGO", {Algo::Binomial}, 1},
    {"scatter", "RDMX_COLL_SCATTER_ALGO", {Algo::Binomial}, 1},
    {"alltoall", "RDMX_COLL_ALLTOALL_ALGO", {Algo::Pairwise}, 1},
    {"scan", "RDMX_COLL_SCAN_ALGO", {Algo::RecursiveDoubling}, 1},
    {"exscan", "RDMX_COLL_EXSCAN_ALGO", {Algo::RecursiveDoubling}, 1},
    {"allgatherv", "RDMX_COLL_ALLGATHERV_ALGO", {Algo::Ring}, 1},
    {"gatherv", "RDMX_COLL_GATHERV_ALGO", {Algo::Linear}, 1},
    {"scatterv", "RDMX_COLL_SCATTERV_ALGO", {Algo::Linear}, 1},
    {"alltoallv", "RDMX_COLL_ALLTOALLV_ALGO", {Algo::Pairwise}, 1},
}};

struct State {
    std::array<std::atomic<int>, kCollCount> forced{};  // Algo values, 0 = Auto
    std::mutex reload_mu;
};

int coll_index(std::string_view name) {
    for (int i = 0; i < kCollCount; ++i)
        if (name == kSpecs[i].name) return i;
    return -1;
}

// Algo for `value` among the collective's algorithms; -1 if unknown.
int parse_algo(const CollSpec &spec, std::string_view value) {
    if (value.empty() || value == "auto") return static_cast<int>(Algo::Auto);
    for (int i = 0; i < spec.n_algos; ++i)
        if (value == algo_name(spec.algos[i])) return static_cast<int>(spec.algos[i]);
    return -1;
}

void report_bad_env(const CollSpec &spec, const char *value) {
    std::string allowed = "auto";
    for (int i = 0; i < spec.n_algos; ++i) allowed.append(", ").append(algo_name(spec.algos[i]));
    std::fprintf(stderr, "rdmx: %s=\"%s\" is not a known algorithm (allowed: %s); using automatic selection\n",
                 spec.env, value, allowed.c_str());
}

void load_env(State &s) {
    for (int i = 0; i < kCollCount; ++i) {
        const char *v = std::getenv(kSpecs[i].env);
        int a = v ? parse_algo(kSpecs[i], v) : 0;
        if (a < 0) {
            report_bad_env(kSpecs[i], v);
            a = 0;
        }
        s.forced[i].store(a, std::memory_order_relaxed);
    }
}

State &state() {
    static State s;
    static const bool loaded = (load_env(s), true);  // once, thread-safe
    (void)loaded;
    return s;
}

Algo forced(Coll c) {
    return static_cast<Algo>(state().forced[static_cast<int>(c)].load(std::memory_order_relaxed));
}

}  // namespace

const char *algo_name(Algo a) {
    switch (a) {
    case Algo::Auto: return "auto";
    case Algo::Dissemination: return "dissemination";
    case Algo::Binomial: return "binomial";
    case Algo::ScatterAllgather: return "scatter_allgather";
    case Algo::RecursiveDoubling: return "recursive_doubling";
    case Algo::Ring: return "ring";
    case Algo::Rabenseifner: return "rabenseifner";
    case Algo::RecursiveHalving: return "recursive_halving";
    case Algo::Bruck: return "bruck";
    case Algo::Pairwise: return "pairwise";
    case Algo::ReduceScatterGather: return "reduce_scatter_gather";
    case Algo::Linear: return "linear";
    }
    return "?";
}

Algo select_barrier(int) {
    return Algo::Dissemination;
}

Algo select_bcast(size_t bytes, int p) {
    if (Algo f = forced(Coll::Bcast); f != Algo::Auto) return f;
    const auto &t = kThresholds;
    return bytes >= t.bcast_large_min && p >= t.bcast_large_min_ranks ? Algo::ScatterAllgather : Algo::Binomial;
}

Algo select_reduce(size_t bytes, size_t count, int p) {
    if (Algo f = forced(Coll::Reduce); f != Algo::Auto) return f;
    const bool large = bytes >= kThresholds.reduce_large_min && count >= static_cast<size_t>(p);
    return large && p > 2 ? Algo::ReduceScatterGather : Algo::Binomial;
}

Algo select_allreduce(size_t bytes, size_t count, int p) {
    if (Algo f = forced(Coll::Allreduce); f != Algo::Auto) return f;
    const auto &t = kThresholds;
    const size_t small_max = is_pow2(p) ? t.allreduce_small_max : t.allreduce_small_max_nonpow2;
    if (bytes < small_max || count < static_cast<size_t>(p)) return Algo::RecursiveDoubling;
    if (is_pow2(p) || bytes < t.allreduce_ring_min) return Algo::Rabenseifner;
    return Algo::Ring;
}

Algo select_reduce_scatter(size_t total_bytes, int p) {
    if (Algo f = forced(Coll::ReduceScatter); f != Algo::Auto) return f;
    if (is_pow2(p) || total_bytes < kThresholds.reduce_scatter_ring_min) return Algo::RecursiveHalving;
    return Algo::Ring;
}

Algo select_allgather(size_t total_bytes, int p) {
    if (Algo f = forced(Coll::Allgather); f != Algo::Auto) return f;
    if (is_pow2(p)) return Algo::RecursiveDoubling;
    return total_bytes >= kThresholds.allgather_ring_min ? Algo::Ring : Algo::Bruck;
}

Algo select_gather(int) { return Algo::Binomial; }
Algo select_scatter(int) { return Algo::Binomial; }
Algo select_alltoall(int) { return Algo::Pairwise; }

int alltoall_window(size_t len, int p) {
    const auto &t = kThresholds;
    const int w = len <= t.alltoall_small_max ? t.alltoall_window_small : t.alltoall_window_large;
    return p - 1 < w ? (p > 1 ? p - 1 : 1) : w;
}

// Single-algorithm collectives: the selection point exists so that a second
// algorithm slots in like the others' (and the variable is parsed the same).
Algo select_scan(int) { return Algo::RecursiveDoubling; }
Algo select_exscan(int) { return Algo::RecursiveDoubling; }
Algo select_allgatherv(int) { return Algo::Ring; }
Algo select_gatherv(int) { return Algo::Linear; }
Algo select_scatterv(int) { return Algo::Linear; }
Algo select_alltoallv(int) { return Algo::Pairwise; }

bool force_algorithm(std::string_view coll, std::string_view algo) {
    const int i = coll_index(coll);
    if (i < 0) return false;
    const int a = parse_algo(kSpecs[i], algo);
    if (a < 0) return false;
    state().forced[i].store(a, std::memory_order_relaxed);
    return true;
}

void reload_env() {
    State &s = state();
    std::lock_guard<std::mutex> lock(s.reload_mu);
    load_env(s);
}

const char *forced_algorithm(std::string_view coll) {
    const int i = coll_index(coll);
    if (i < 0) return nullptr;
    return algo_name(static_cast<Algo>(state().forced[i].load(std::memory_order_relaxed)));
}

}  // namespace rdmx::coll
