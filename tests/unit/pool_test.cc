// FreeList (core/pool.h): every index is handed out at most once, LIFO
// reuse, exhaustion, re-arming, and the same sequence of indices as the
// std::vector free list that the send pool used before.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/pool.h"

namespace {

using rdmx::FreeList;

TEST(FreeListTest, FreshListHandsOutEveryIndexOnceInOrder) {
    FreeList f(5);
    EXPECT_EQ(f.capacity(), 5u);
    EXPECT_EQ(f.free_count(), 5u);
    for (uint32_t want = 0; want < 5; ++want) {
        uint32_t idx = 99;
        ASSERT_TRUE(f.get(&idx));
        EXPECT_EQ(idx, want);
    }
    EXPECT_EQ(f.free_count(), 0u);
    uint32_t idx = 99;
    EXPECT_FALSE(f.get(&idx)) << "an empty list hands out nothing";
    EXPECT_EQ(idx, 99u) << "a failed get leaves the output alone";
}

TEST(FreeListTest, EmptyAndDefaultListsHandOutNothing) {
    FreeList none;
    FreeList zero(0);
    uint32_t idx = 7;
    EXPECT_FALSE(none.get(&idx));
    EXPECT_FALSE(zero.get(&idx));
    EXPECT_EQ(none.free_count(), 0u);
    EXPECT_EQ(zero.capacity(), 0u);
}

TEST(FreeListTest, LastPutIsFirstReused) {
    FreeList f(4);
    uint32_t a, b, c;
    ASSERT_TRUE(f.get(&a));
    ASSERT_TRUE(f.get(&b));
    ASSERT_TRUE(f.get(&c));
    f.put(a);
    f.put(c);
    EXPECT_EQ(f.free_count(), 3u);
    uint32_t x;
    ASSERT_TRUE(f.get(&x));
    EXPECT_EQ(x, c);
    ASSERT_TRUE(f.get(&x));
    EXPECT_EQ(x, a);
    ASSERT_TRUE(f.get(&x));
    EXPECT_EQ(x, 3u) << "then the never-used index";
    EXPECT_FALSE(f.get(&x)) << "b is still out";
}

TEST(FreeListTest, ResetRearmsWithTheNewCapacity) {
    FreeList f(3);
    uint32_t x;
    ASSERT_TRUE(f.get(&x));
    f.reset(8);
    EXPECT_EQ(f.capacity(), 8u);
    EXPECT_EQ(f.free_count(), 8u);
    ASSERT_TRUE(f.get(&x));
    EXPECT_EQ(x, 0u);
}

// Random get/put traffic against the free list the send pool had before
// (a std::vector used as a stack): the same index at every step, and never
// one that is already out.
TEST(FreeListTest, SameSequenceAsTheVectorFreeList) {
    constexpr uint32_t kCount = 64;
    FreeList f(kCount);
    std::vector<uint32_t> ref;
    for (uint32_t i = kCount; i-- > 0;) ref.push_back(i);
    std::vector<bool> out(kCount, false);
    std::vector<uint32_t> held;
    std::mt19937 rng(12345);
    for (int step = 0; step < 100000; ++step) {
        const bool do_get = held.empty() || (rng() % 3 != 0 && !ref.empty());
        if (do_get) {
            uint32_t idx = 0;
            const bool ok = f.get(&idx);
            ASSERT_EQ(ok, !ref.empty()) << "step " << step;
            if (!ok) continue;
            ASSERT_EQ(idx, ref.back()) << "step " << step;
            ref.pop_back();
            ASSERT_LT(idx, kCount);
            ASSERT_FALSE(out[idx]) << "index " << idx << " handed out twice at step " << step;
            out[idx] = true;
            held.push_back(idx);
        } else {
            const size_t k = rng() % held.size();
            const uint32_t idx = held[k];
            held[k] = held.back();
            held.pop_back();
            out[idx] = false;
            f.put(idx);
            ref.push_back(idx);
        }
        ASSERT_EQ(f.free_count(), ref.size()) << "step " << step;
    }
}

// A put on a full list can only be a double put: debug builds stop there,
// release builds drop it so no buffer is on the list twice.
TEST(FreeListTest, DoublePutOnAFullListIsCaught) {
    FreeList f(2);
#ifdef NDEBUG
    f.put(1);
    EXPECT_EQ(f.free_count(), 2u);
    uint32_t a, b, c;
    ASSERT_TRUE(f.get(&a));
    ASSERT_TRUE(f.get(&b));
    EXPECT_NE(a, b);
    EXPECT_FALSE(f.get(&c));
#else
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(f.put(1), "double put");
#endif
}

}  // namespace
