// Registration-cache lookup (core/rcache.h) with a registrar that hands out
// fake handles, so only the cache's own work is timed: draining the
// memory-release ring, the ordered-map lookup, LRU bookkeeping and, on a
// miss, eviction. One iteration = RegCache::get() + put().
//   BM_RcacheLookup/regions:N/hit:1  a buffer inside one of N cached regions
//   BM_RcacheLookup/regions:N/hit:0  a buffer no region covers: a (fake)
//                                    registration that evicts the oldest
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "core/rcache.h"
#include "micro.h"

namespace {

using rdmx::RegCache;

rdmx_status_t fake_reg(void *, uintptr_t start, size_t, uint32_t, void **h) {
    *h = reinterpret_cast<void *>(start | 1);
    return RDMX_OK;
}
void fake_dereg(void *, void *) {}

void BM_RcacheLookup(benchmark::State &state) {
    const size_t n = static_cast<size_t>(state.range(0));
    const bool hit = state.range(1) != 0;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t base = 0x100000000ull;
    // Room for exactly n two-page regions, so a miss evicts one.
    RegCache cache({&fake_reg, &fake_dereg, nullptr}, n * 2 * page, n);
    RegCache::Region *r = nullptr;
    for (size_t i = 0; i < n; ++i) {
        if (cache.get(reinterpret_cast<void *>(base + i * 4 * page), page + 1, 0, &r) != RDMX_OK)
            return rdmx::micro::fail(state, "filling the cache failed");
        cache.put(r);
    }
    size_t i = 0, next_new = n;
    for (auto _ : state) {
        uintptr_t a = hit ? base + (i++ % n) * 4 * page + 100 : base + (next_new++) * 4 * page;
        if (cache.get(reinterpret_cast<void *>(a), 1000, 0, &r) != RDMX_OK || r->start > a || r->end < a + 1000)
            return rdmx::micro::fail(state, "lookup returned a region that does not cover the buffer");
        cache.put(r);
    }
    const auto &s = cache.stats();
    if (hit ? s.misses != n : s.evictions == 0)
        return rdmx::micro::fail(state, hit ? "hits registered again" : "misses never evicted");
    if (s.regions > n) return rdmx::micro::fail(state, "region bound exceeded");
}
BENCHMARK(BM_RcacheLookup)->ArgNames({"regions", "hit"})->ArgsProduct({{1, 10, 100, 1000, 10000}, {0, 1}});

}  // namespace
