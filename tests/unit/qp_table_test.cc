// QpTable: the flat QP-number -> peer table the rc receive path looks up on
// every completion. Checked directly (sequential numbers, clusters that wrap
// around the end, erase from the middle of a cluster) and against
// std::unordered_map over many random inserts and erases.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "transport/qp_table.h"

namespace {

using rdmx::QpTable;

TEST(QpTable, EmptyFindsNothing) {
    QpTable t;
    EXPECT_EQ(t.find(0), -1);
    EXPECT_EQ(t.find(17), -1);
    EXPECT_EQ(t.size(), 0u);
    EXPECT_FALSE(t.erase(17));
}

TEST(QpTable, InsertFindReplaceErase) {
    QpTable t;
    t.insert(0x11, 3);
    t.insert(0, 0);  // QP number 0 is a key like any other
    EXPECT_EQ(t.find(0x11), 3);
    EXPECT_EQ(t.find(0), 0);
    t.insert(0x11, 5);  // a rebuilt connection: same number, new peer
    EXPECT_EQ(t.find(0x11), 5);
    EXPECT_EQ(t.size(), 2u);
    EXPECT_TRUE(t.erase(0x11));
    EXPECT_EQ(t.find(0x11), -1);
    EXPECT_EQ(t.find(0), 0);
    EXPECT_FALSE(t.erase(0x11));
    EXPECT_EQ(t.size(), 1u);
}

// Soft-RoCE and most HCAs hand out QP numbers in sequence.
TEST(QpTable, SequentialNumbersGrowAndStayHalfFull) {
    QpTable t;
    constexpr uint32_t kBase = 0x11;
    constexpr int kPeers = 1000;
    for (int p = 0; p < kPeers; ++p) t.insert(kBase + static_cast<uint32_t>(p), p);
    EXPECT_EQ(t.size(), static_cast<size_t>(kPeers));
    EXPECT_GE(t.capacity(), 2u * kPeers);
    EXPECT_EQ(t.capacity() & (t.capacity() - 1), 0u) << "a power of two: lookups mask, never divide";
    for (int p = 0; p < kPeers; ++p) ASSERT_EQ(t.find(kBase + static_cast<uint32_t>(p)), p);
    EXPECT_EQ(t.find(kBase + kPeers), -1);
    for (int p = 0; p < kPeers; p += 2) ASSERT_TRUE(t.erase(kBase + static_cast<uint32_t>(p)));
    for (int p = 0; p < kPeers; ++p) ASSERT_EQ(t.find(kBase + static_cast<uint32_t>(p)), p % 2 ? p : -1);
}

// Seven numbers with one home slot near the end of a fresh 16-slot table
// (the table's Fibonacci hash, recomputed here) make one cluster that wraps
// around; erasing any member must leave every other one findable.
TEST(QpTable, EraseInsideOneWrappingCluster) {
    QpTable t;
    ASSERT_EQ(t.capacity(), 16u);
    constexpr uint32_t kHome = 14;
    std::vector<uint32_t> keys;
    for (uint32_t k = 1; keys.size() < 7; ++k)
        if ((k * 0x9e3779b9u) >> 28 == kHome) keys.push_back(k);
    for (size_t i = 0; i < keys.size(); ++i) t.insert(keys[i], static_cast<int>(i));
    for (size_t victim = 0; victim < keys.size(); ++victim) {
        QpTable u = t;
        ASSERT_TRUE(u.erase(keys[victim]));
        for (size_t i = 0; i < keys.size(); ++i)
            ASSERT_EQ(u.find(keys[i]), i == victim ? -1 : static_cast<int>(i)) << "victim " << victim;
    }
}

TEST(QpTable, MatchesUnorderedMapUnderRandomChurn) {
    std::mt19937 rng(17);
    QpTable t;
    std::unordered_map<uint32_t, int> ref;
    // A small key range makes collisions, replacements and wrap-around common.
    std::uniform_int_distribution<uint32_t> key(0, 300);
    std::uniform_int_distribution<int> op(0, 2), peer(0, 4095);
    for (int step = 0; step < 200000; ++step) {
        const uint32_t k = step % 3 == 0 ? rng() : key(rng);
        switch (op(rng)) {
        case 0: {
            const int p = peer(rng);
            t.insert(k, p);
            ref[k] = p;
            break;
        }
        case 1: ASSERT_EQ(t.erase(k), ref.erase(k) == 1) << "step " << step; break;
        default: {
            auto it = ref.find(k);
            ASSERT_EQ(t.find(k), it == ref.end() ? -1 : it->second) << "step " << step;
        }
        }
        ASSERT_EQ(t.size(), ref.size());
    }
    for (const auto &[k, p] : ref) ASSERT_EQ(t.find(k), p);
}

}  // namespace
