// rdmx-micro's main(): benchmark_main's, plus a nonzero exit status when a
// benchmark's self-check failed or the filter selected nothing (a typo in a
// filter would otherwise pass as an empty, successful run).
#include <atomic>
#include <cstdio>

#include "bench/micro/micro.h"

namespace rdmx::micro {

namespace {
std::atomic<int> g_failures{0};
}

void fail(benchmark::State &state, const char *what) {
    g_failures.fetch_add(1, std::memory_order_relaxed);
    state.SkipWithError(what);
}

}  // namespace rdmx::micro

int main(int argc, char **argv) {
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    const size_t ran = benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    if (ran == 0) {
        std::fprintf(stderr, "rdmx-micro: no benchmark matched the filter (see --benchmark_list_tests)\n");
        return 1;
    }
    const int failed = rdmx::micro::g_failures.load();
    if (failed > 0) {
        std::fprintf(stderr, "rdmx-micro: %d benchmark self-check(s) failed (ERROR OCCURRED above)\n", failed);
        return 1;
    }
    return 0;
}
