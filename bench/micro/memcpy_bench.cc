// One core's memcpy bandwidth: the physical limit a shared-memory transport
// is held against (scripts/perf/native.sh prints each bandwidth's ratio to
// it). A transport moves a message of S bytes with at least one copy, so no
// transport can beat one core copying S bytes from one buffer to another.
//
//   Memcpy/S   memcpy of S bytes between two buffers allocated once, as a
//              benchmark loop reuses its message buffer: from 64 KiB (in
//              L2) to 64 MiB (beyond the last-level cache)
// Bandwidth is `bytes_per_second` (B/s, S per iteration). Pin the process to
// one core (taskset) for a stable figure.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "bench/micro/micro.h"

namespace {

constexpr std::byte kFill{0x5a};  // source pattern, checked in the destination

void BM_Memcpy(benchmark::State &state) {
    const auto size = static_cast<size_t>(state.range(0));
    std::vector<std::byte> src(size, kFill);
    std::vector<std::byte> dst(size);  // zeroed, so every page is mapped before timing
    for (auto _ : state) {
        std::memcpy(dst.data(), src.data(), size);
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    // A copy that did not happen must not pass as a fast one.
    if (state.iterations() > 0 && (dst.front() != kFill || dst.back() != kFill || dst[size / 2] != kFill)) {
        rdmx::micro::fail(state, "destination does not hold the source's bytes");
        return;
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(size));
}

constexpr int64_t kMinSize = int64_t{64} << 10;
constexpr int64_t kMaxSize = int64_t{64} << 20;
constexpr int kSizeStep = 2;  // every power of two between them

BENCHMARK(BM_Memcpy)->Name("Memcpy")->RangeMultiplier(kSizeStep)->Range(kMinSize, kMaxSize);

}  // namespace
