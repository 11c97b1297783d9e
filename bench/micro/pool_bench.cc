// The send-buffer free list (core/pool.h, FreeList, used by the engine's
// send pool through transport/memory.h's Slab), next to the std::vector
// stack the pool used before, as a reference.
//
//   GetPut/<pool>           one buffer taken and given back: a ping-pong
//                           sender with one message in flight
//   Burst/<pool>/burst:N    N buffers taken, then all N given back: a
//                           sender streaming a window of N messages
// Time per iteration covers 2 (resp. 2N) operations; `op` is per get or put.
#include <cstdint>
#include <vector>

#include "bench/micro/micro.h"
#include "core/pool.h"

namespace {

constexpr uint32_t kPoolSize = 1024;  // the engine's default send pool is of this order

// The pool's earlier free list, kept here only to compare against.
class VectorFreeList {
public:
    explicit VectorFreeList(uint32_t count) {
        free_.reserve(count);
        for (uint32_t i = count; i-- > 0;) free_.push_back(i);
    }
    bool get(uint32_t *idx) {
        if (free_.empty()) return false;
        *idx = free_.back();
        free_.pop_back();
        return true;
    }
    void put(uint32_t idx) { free_.push_back(idx); }
    size_t free_count() const { return free_.size(); }

private:
    std::vector<uint32_t> free_;
};

void per_op(benchmark::State &state, int64_t ops_per_iter) {
    state.counters["op"] = benchmark::Counter(static_cast<double>(state.iterations() * ops_per_iter),
                                              benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The pool's address escapes and memory is clobbered every iteration, so
// the compiler cannot fold a get and the put that undoes it into nothing.
template <typename Pool>
void BM_GetPut(benchmark::State &state) {
    Pool pool(kPoolSize);
    benchmark::DoNotOptimize(&pool);
    for (auto _ : state) {
        uint32_t idx = kPoolSize;
        if (!pool.get(&idx)) {
            rdmx::micro::fail(state, "get failed on a full pool");
            break;
        }
        benchmark::DoNotOptimize(idx);
        pool.put(idx);
        benchmark::ClobberMemory();
    }
    if (!state.error_occurred() && pool.free_count() != kPoolSize) rdmx::micro::fail(state, "buffers lost");
    per_op(state, 2);
}

template <typename Pool>
void BM_Burst(benchmark::State &state) {
    const auto n = static_cast<uint32_t>(state.range(0));
    Pool pool(kPoolSize);
    benchmark::DoNotOptimize(&pool);
    std::vector<uint32_t> held(n);
    for (auto _ : state) {
        for (uint32_t i = 0; i < n; ++i) {
            if (!pool.get(&held[i])) {
                rdmx::micro::fail(state, "get failed before the pool ran dry");
                return;
            }
        }
        benchmark::DoNotOptimize(held.data());
        for (uint32_t i = 0; i < n; ++i) pool.put(held[i]);
        benchmark::ClobberMemory();
    }
    if (pool.free_count() != kPoolSize) rdmx::micro::fail(state, "buffers lost");
    per_op(state, 2 * static_cast<int64_t>(n));
}

BENCHMARK_TEMPLATE(BM_GetPut, rdmx::FreeList);
BENCHMARK_TEMPLATE(BM_GetPut, VectorFreeList);
BENCHMARK_TEMPLATE(BM_Burst, rdmx::FreeList)->Arg(16)->Arg(256)->ArgName("burst");
BENCHMARK_TEMPLATE(BM_Burst, VectorFreeList)->Arg(16)->Arg(256)->ArgName("burst");

}  // namespace
