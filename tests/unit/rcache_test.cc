// Registration cache and memory-release hooks, with a fake registrar: no device.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "core/memhooks.h"
#include "core/rcache.h"

namespace rdmx {
namespace {

struct FakeReg {
    struct Mr {
        uintptr_t start;
        size_t len;
        uint32_t access;
    };
    std::set<Mr *> live;
    size_t pinned = 0;
    size_t peak = 0;
    int fail_next = 0;
    static rdmx_status_t reg(void *arg, uintptr_t start, size_t len, uint32_t access, void **h) {
        auto *self = static_cast<FakeReg *>(arg);
        if (self->fail_next != 0) {
            self->fail_next = 0;
            return RDMX_ERR_NO_MEMORY;
        }
        auto *m = new Mr{start, len, access};
        self->live.insert(m);
        self->pinned += len;
        if (self->pinned > self->peak) self->peak = self->pinned;
        *h = m;
        return RDMX_OK;
    }
    static void dereg(void *arg, void *h) {
        auto *self = static_cast<FakeReg *>(arg);
        auto *m = static_cast<Mr *>(h);
        ASSERT_EQ(self->live.erase(m), 1u) << "deregistered twice or never registered";
        self->pinned -= m->len;
        delete m;
    }
    RegCache::Ops ops() { return {&FakeReg::reg, &FakeReg::dereg, this}; }
};

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// A fake address space: addresses are never dereferenced by the cache.
const char *at(size_t page) { return reinterpret_cast<const char *>(0x100000000ull + page * kPage); }

bool covers(const RegCache::Region *r, const void *a, size_t len) {
    auto s = reinterpret_cast<uintptr_t>(a);
    return r->start <= s && r->end >= s + len;
}

TEST(RegCache, RepeatedTransferReusesRegistration) {
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *r1 = nullptr, *r2 = nullptr, *r3 = nullptr;
    ASSERT_EQ(c.get(at(0) + 100, 3 * kPage, 0, &r1), RDMX_OK);
    EXPECT_TRUE(covers(r1, at(0) + 100, 3 * kPage));
    c.put(r1);
    ASSERT_EQ(c.get(at(0) + 100, 3 * kPage, 0, &r2), RDMX_OK);
    ASSERT_EQ(c.get(at(1), kPage, 0, &r3), RDMX_OK);  // a sub-range hits too
    EXPECT_EQ(r1, r2);
    EXPECT_EQ(r1, r3);
    EXPECT_EQ(c.stats().hits, 2u);
    EXPECT_EQ(c.stats().misses, 1u);
    EXPECT_EQ(f.live.size(), 1u);
    c.put(r2);
    c.put(r3);
}

TEST(RegCache, OverlapIsReplacedByUnion) {
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *a = nullptr, *b = nullptr, *u = nullptr;
    ASSERT_EQ(c.get(at(0), 2 * kPage, 0, &a), RDMX_OK);
    c.put(a);
    ASSERT_EQ(c.get(at(4), 2 * kPage, 0, &b), RDMX_OK);
    ASSERT_EQ(c.get(at(1), 4 * kPage, 0, &u), RDMX_OK);  // overlaps both
    EXPECT_TRUE(covers(u, at(0), 6 * kPage));
    EXPECT_EQ(c.stats().regions, 1u);
    EXPECT_EQ(c.stats().merges, 2u);
    EXPECT_EQ(f.live.size(), 2u);  // b is busy: still registered until put
    c.put(b);
    EXPECT_EQ(f.live.size(), 1u);
    c.put(u);
}

TEST(RegCache, EvictsLeastRecentlyUsedWithinBounds) {
    FakeReg f;
    RegCache c(f.ops(), 4 * kPage, 100);
    RegCache::Region *r = nullptr;
    for (size_t i = 0; i < 4; ++i) {
        ASSERT_EQ(c.get(at(10 * i), kPage, 0, &r), RDMX_OK);
        c.put(r);
    }
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);  // touch the oldest: now newest
    c.put(r);
    ASSERT_EQ(c.get(at(50), kPage, 0, &r), RDMX_OK);  // evicts page 10, not 0
    c.put(r);
    EXPECT_EQ(c.stats().evictions, 1u);
    EXPECT_LE(f.pinned, 4 * kPage);
    uint64_t misses = c.stats().misses;
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);
    c.put(r);
    EXPECT_EQ(c.stats().misses, misses);
    ASSERT_EQ(c.get(at(10), kPage, 0, &r), RDMX_OK);
    c.put(r);
    EXPECT_EQ(c.stats().misses, misses + 1);
}

TEST(RegCache, RegionCountBound) {
    FakeReg f;
    RegCache c(f.ops(), 1000 * kPage, 3);
    RegCache::Region *r = nullptr;
    for (size_t i = 0; i < 20; ++i) {
        ASSERT_EQ(c.get(at(2 * i), kPage, 0, &r), RDMX_OK);
        c.put(r);
        EXPECT_LE(c.stats().regions, 3u);
        EXPECT_LE(f.live.size(), 3u);
    }
}

TEST(RegCache, BusyRegionsAreNeverEvictedAndBoundHolds) {
    FakeReg f;
    RegCache c(f.ops(), 2 * kPage, 100);
    RegCache::Region *a = nullptr, *b = nullptr, *t = nullptr;
    ASSERT_EQ(c.get(at(0), kPage, 0, &a), RDMX_OK);
    ASSERT_EQ(c.get(at(2), kPage, 0, &b), RDMX_OK);
    ASSERT_EQ(c.get(at(4), kPage, 0, &t), RDMX_OK);  // no idle region to evict: transient
    EXPECT_FALSE(t->cached);
    EXPECT_LE(c.stats().bytes, 2 * kPage);
    EXPECT_EQ(c.stats().transient_bytes, kPage);
    c.put(t);
    EXPECT_EQ(c.stats().transient_bytes, 0u);
    EXPECT_EQ(f.live.size(), 2u);
    c.put(a);
    c.put(b);
}

TEST(RegCache, OversizeIsTransient) {
    FakeReg f;
    RegCache c(f.ops(), 2 * kPage, 100);
    RegCache::Region *r = nullptr;
    ASSERT_EQ(c.get(at(0), 3 * kPage, 0, &r), RDMX_OK);
    EXPECT_FALSE(r->cached);
    c.put(r);
    EXPECT_TRUE(f.live.empty());
    EXPECT_EQ(c.stats().bytes, 0u);
}

TEST(RegCache, InvalidationDropsIdleNowAndBusyAtPut) {
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *idle = nullptr, *busy = nullptr, *other = nullptr;
    ASSERT_EQ(c.get(at(0), kPage, 0, &idle), RDMX_OK);
    c.put(idle);
    ASSERT_EQ(c.get(at(2), kPage, 0, &busy), RDMX_OK);
    ASSERT_EQ(c.get(at(8), kPage, 0, &other), RDMX_OK);
    c.put(other);
    c.invalidate(reinterpret_cast<uintptr_t>(at(0)) + 5, 2 * kPage);  // touches pages 0..2
    EXPECT_EQ(c.stats().invalidations, 2u);
    EXPECT_EQ(f.live.size(), 2u);  // busy + other
    RegCache::Region *again = nullptr;
    ASSERT_EQ(c.get(at(2), kPage, 0, &again), RDMX_OK);
    EXPECT_NE(again, busy);  // a fresh registration, not the detached one
    c.put(busy);
    c.put(again);
    EXPECT_EQ(f.live.size(), 2u);
}

TEST(RegCache, RegistrationFailureIsReturnedAndNothingLeaks) {
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *r = nullptr;
    f.fail_next = 1;
    EXPECT_EQ(c.get(at(0), kPage, 0, &r), RDMX_ERR_NO_MEMORY);
    EXPECT_EQ(c.stats().regions, 0u);
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);
    c.put(r);
}

TEST(RegCache, RecordedReleaseIsSeenByTheNextGet) {
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *r = nullptr;
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);
    c.put(r);
    memhooks::record(reinterpret_cast<uintptr_t>(at(0)), kPage);
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);
    EXPECT_EQ(c.stats().misses, 2u);
    EXPECT_EQ(c.stats().invalidations, 1u);
    c.put(r);
}

TEST(RegCache, LostReleaseEventsFlushEverything) {
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *r = nullptr;
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);
    c.put(r);
    for (int i = 0; i < 5000; ++i) memhooks::record(0x10, 1);  // more than the ring holds
    ASSERT_EQ(c.get(at(0), kPage, 0, &r), RDMX_OK);
    EXPECT_EQ(c.stats().flushes, 1u);
    EXPECT_EQ(c.stats().misses, 2u);
    c.put(r);
}

// ---- the hooks themselves (real libc calls) ------------------------------

class MemHooks : public ::testing::Test {
protected:
    void SetUp() override {
        const char *why = nullptr;
        if (!memhooks::install(&why)) GTEST_SKIP() << "memory hooks unavailable: " << why;
    }
    // True if some release event since `cur` covers [p, p+len).
    static bool saw(memhooks::Cursor &cur, const void *p, size_t len) {
        return saw(cur, reinterpret_cast<uintptr_t>(p), len);
    }
    static bool saw(memhooks::Cursor &cur, uintptr_t s, size_t len) {
        bool found = false;
        bool ok = cur.drain([&](const memhooks::Range &r) {
            if (r.start <= s && r.start + r.len >= s + len) found = true;
        });
        return found || !ok;
    }
};

TEST_F(MemHooks, MunmapIsSeen) {
    memhooks::Cursor cur;
    void *p = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_FALSE(saw(cur, p, 1 << 20));
    ASSERT_EQ(munmap(p, 1 << 20), 0);
    EXPECT_TRUE(saw(cur, p, 1 << 20));
    EXPECT_EQ(munmap(reinterpret_cast<void *>(1), kPage), -1);  // errors still reach the caller
    EXPECT_EQ(errno, EINVAL);
}

TEST_F(MemHooks, FreeOfALargeBlockIsSeen) {
    memhooks::Cursor cur;
    const size_t len = 64u << 20;  // above any malloc mmap threshold
    auto *p = static_cast<char *>(malloc(len));
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, len);
    const uintptr_t where = reinterpret_cast<uintptr_t>(p);
    free(p);
    EXPECT_TRUE(saw(cur, where, len));
}

TEST_F(MemHooks, MadviseDontneedAndFixedMmapAreSeen) {
    void *p = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    memhooks::Cursor cur;
    ASSERT_EQ(madvise(p, kPage, MADV_DONTNEED), 0);
    EXPECT_TRUE(saw(cur, p, kPage));
    ASSERT_EQ(madvise(p, kPage, MADV_WILLNEED), 0);
    EXPECT_FALSE(saw(cur, p, kPage));
    void *q = mmap(static_cast<char *>(p) + kPage, kPage, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_EQ(q, static_cast<char *>(p) + kPage);
    EXPECT_TRUE(saw(cur, q, kPage));
    ASSERT_EQ(munmap(p, 4 * kPage), 0);
    EXPECT_TRUE(saw(cur, p, 4 * kPage));
    p = mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    void *r = mremap(p, 4 * kPage, 8 * kPage, MREMAP_MAYMOVE);
    ASSERT_NE(r, MAP_FAILED);
    EXPECT_TRUE(saw(cur, p, 4 * kPage));
    ASSERT_EQ(munmap(r, 8 * kPage), 0);
}

TEST_F(MemHooks, ShrinkingBreakIsSeen) {
    void *top = sbrk(0);
    ASSERT_NE(sbrk(static_cast<intptr_t>(4 * kPage)), reinterpret_cast<void *>(-1));
    memhooks::Cursor cur;
    ASSERT_NE(sbrk(-static_cast<intptr_t>(4 * kPage)), reinterpret_cast<void *>(-1));
    EXPECT_EQ(sbrk(0), top);
    EXPECT_TRUE(saw(cur, top, 4 * kPage));
}

// A region registered for one access is never handed out for another, nor
// merged with one: a get sender's REMOTE_READ pages must not become a put
// receiver's REMOTE_WRITE pages (or the other way round) through the cache.
TEST(RegCache, AccessKeysRegions) {
    constexpr uint32_t kRead = 4, kWrite = 2;  // any distinct values: opaque to the cache
    FakeReg f;
    RegCache c(f.ops(), 64 * kPage, 16);
    RegCache::Region *rd = nullptr, *wr = nullptr, *rd2 = nullptr, *wide = nullptr;
    ASSERT_EQ(c.get(at(0), 2 * kPage, kRead, &rd), RDMX_OK);
    ASSERT_EQ(c.get(at(0), 2 * kPage, kWrite, &wr), RDMX_OK);
    EXPECT_NE(rd, wr) << "a REMOTE_READ region was handed out for REMOTE_WRITE";
    EXPECT_EQ(static_cast<FakeReg::Mr *>(rd->handle)->access, kRead);
    EXPECT_EQ(static_cast<FakeReg::Mr *>(wr->handle)->access, kWrite);
    ASSERT_EQ(c.get(at(1), kPage, kRead, &rd2), RDMX_OK);
    EXPECT_EQ(rd2, rd) << "same access, covered range: a hit";
    // Overlapping a write region: only same-access regions are merged.
    ASSERT_EQ(c.get(at(1), 4 * kPage, kWrite, &wide), RDMX_OK);
    EXPECT_EQ(static_cast<FakeReg::Mr *>(wide->handle)->access, kWrite);
    EXPECT_EQ(c.stats().merges, 1u);
    c.put(rd);
    c.put(rd2);
    c.put(wr);
    c.put(wide);
    // Freed memory drops the regions of every access.
    c.invalidate(reinterpret_cast<uintptr_t>(at(0)), 8 * kPage);
    EXPECT_EQ(c.stats().regions, 0u);
    EXPECT_EQ(f.live.size(), 0u);
}

}  // namespace
}  // namespace rdmx
