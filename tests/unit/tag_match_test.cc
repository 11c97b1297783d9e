// TagMatcher: MPI matching semantics (oldest posted receive wins, arrival
// order per sender kept, tag spaces never cross), checked directly and
// against a simple reference model on many entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/tag_match.h"

namespace {

using rdmx::kAnySource;
using rdmx::kAnyTag;
using rdmx::MatchBits;
using rdmx::PostedEntry;
using rdmx::TagMatcher;
using rdmx::UnexpEntry;

// Entries carry an id so a test can tell which one came back.
struct Recv : PostedEntry {
    int id = 0;
};
struct Msg : UnexpEntry {
    int id = 0;
};

MatchBits bits(int space, int source, int tag) { return MatchBits{static_cast<uint8_t>(space), source, tag}; }

int id_of(PostedEntry *e) { return e == nullptr ? -1 : static_cast<Recv *>(e)->id; }
int id_of(UnexpEntry *u) { return u == nullptr ? -1 : static_cast<Msg *>(u)->id; }

class TagMatchTest : public ::testing::Test {
protected:
    // The matcher holds 2 x 1024 list heads: keep it off the stack.
    std::unique_ptr<TagMatcher> m = std::make_unique<TagMatcher>();
    std::vector<std::unique_ptr<Recv>> recvs;
    std::vector<std::unique_ptr<Msg>> msgs;

    Recv *post(int space, int source, int tag, int id) {
        recvs.push_back(std::make_unique<Recv>());
        Recv *r = recvs.back().get();
        r->bits = bits(space, source, tag);
        r->id = id;
        m->post(r);
        return r;
    }
    Msg *arrive(int space, int source, int tag, int id) {
        msgs.push_back(std::make_unique<Msg>());
        Msg *u = msgs.back().get();
        u->bits = bits(space, source, tag);
        u->id = id;
        m->add_unexpected(u);
        return u;
    }
    int match(int space, int source, int tag) { return id_of(m->match_arrival(bits(space, source, tag))); }
    int take(int space, int source, int tag) { return id_of(m->find_unexpected(bits(space, source, tag), true)); }
    int peek(int space, int source, int tag) { return id_of(m->find_unexpected(bits(space, source, tag), false)); }
};

TEST_F(TagMatchTest, EmptyMatcherMatchesNothing) {
    EXPECT_EQ(m->posted_count(), 0u);
    EXPECT_EQ(m->unexpected_count(), 0u);
    EXPECT_EQ(match(0, 0, 0), -1);
    EXPECT_EQ(take(0, kAnySource, kAnyTag), -1);
    EXPECT_EQ(take(0, 3, 4), -1);
}

TEST_F(TagMatchTest, SpecificMatchNeedsSpaceSourceAndTag) {
    post(0, 1, 5, 10);
    EXPECT_EQ(match(0, 1, 6), -1) << "other tag";
    EXPECT_EQ(match(0, 2, 5), -1) << "other source";
    EXPECT_EQ(match(1, 1, 5), -1) << "other space";
    EXPECT_EQ(m->posted_count(), 1u);
    EXPECT_EQ(match(0, 1, 5), 10);
    EXPECT_EQ(m->posted_count(), 0u);
    EXPECT_EQ(match(0, 1, 5), -1) << "a matched receive is removed";
}

TEST_F(TagMatchTest, AnySourceMatchesEverySenderOfThatTag) {
    post(0, kAnySource, 5, 1);
    EXPECT_EQ(match(0, 3, 6), -1);
    EXPECT_EQ(match(0, 3, 5), 1);
    post(0, kAnySource, 5, 2);
    EXPECT_EQ(match(0, 7, 5), 2);
    EXPECT_EQ(m->posted_count(), 0u);
}

TEST_F(TagMatchTest, AnyTagMatchesEveryTagOfThatSender) {
    post(0, 3, kAnyTag, 1);
    EXPECT_EQ(match(0, 4, 77), -1);
    EXPECT_EQ(match(0, 3, 77), 1);
    post(0, 3, kAnyTag, 2);
    EXPECT_EQ(match(0, 3, 0), 2);
    EXPECT_EQ(m->posted_count(), 0u);
}

TEST_F(TagMatchTest, BothWildcardsMatchAnythingInTheSpace) {
    post(0, kAnySource, kAnyTag, 1);
    EXPECT_EQ(match(1, 0, 0), -1);
    EXPECT_EQ(match(0, 123, 0x7fffffff), 1);
    EXPECT_EQ(m->posted_count(), 0u);
}

TEST_F(TagMatchTest, OlderWildcardBeatsNewerSpecific) {
    post(0, kAnySource, 5, 1);  // older
    post(0, 1, 5, 2);
    EXPECT_EQ(match(0, 1, 5), 1);
    EXPECT_EQ(match(0, 1, 5), 2);
    EXPECT_EQ(match(0, 1, 5), -1);
}

TEST_F(TagMatchTest, OlderSpecificBeatsNewerWildcard) {
    post(0, 1, 5, 1);  // older
    post(0, kAnySource, kAnyTag, 2);
    post(0, 1, kAnyTag, 3);
    EXPECT_EQ(match(0, 1, 5), 1);
    EXPECT_EQ(match(0, 1, 5), 2);
    EXPECT_EQ(match(0, 1, 5), 3);
    EXPECT_EQ(match(0, 1, 5), -1);
}

TEST_F(TagMatchTest, NonMatchingOlderWildcardDoesNotBlock) {
    post(0, kAnySource, 9, 1);  // older, other tag
    post(0, 2, kAnyTag, 2);     // older, other source
    post(0, 1, 5, 3);
    EXPECT_EQ(match(0, 1, 5), 3);
    EXPECT_EQ(m->posted_count(), 2u);
    EXPECT_EQ(match(0, 2, 9), 1) << "oldest of the two wildcards that both match";
    EXPECT_EQ(match(0, 2, 9), 2);
}

TEST_F(TagMatchTest, IdenticalReceivesMatchInPostOrder) {
    for (int i = 0; i < 5; ++i) post(0, 4, 4, i);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(match(0, 4, 4), i);
}

// A receive posted alone is kept out of the hash until a second one is
// posted; it must then still win over it, match after a cancel of the other,
// and be found by for_each_posted and cancel while alone.
TEST_F(TagMatchTest, LoneReceiveKeepsItsPlaceWhenOthersArrive) {
    post(0, 1, 5, 1);
    EXPECT_EQ(match(0, 1, 6), -1);  // checked directly: no match, still posted
    EXPECT_EQ(m->posted_count(), 1u);
    post(0, kAnySource, 5, 2);       // newer wildcard: the lone one is filed ahead of it
    EXPECT_EQ(match(0, 1, 5), 1);
    EXPECT_EQ(match(0, 1, 5), 2);
    Recv *a = post(0, 2, 7, 3);
    Recv *b = post(0, 2, 7, 4);
    m->cancel(b);
    EXPECT_EQ(match(0, 2, 7), 3);    // the older survivor, filed in its bucket
    EXPECT_EQ(m->posted_count(), 0u);
    (void)a;
    Recv *c = post(1, 3, 8, 5);
    int seen = 0;
    m->for_each_posted([&](PostedEntry *e) {
        ++seen;
        EXPECT_EQ(e, c);
    });
    EXPECT_EQ(seen, 1);
    m->cancel(c);
    EXPECT_EQ(m->posted_count(), 0u);
    EXPECT_EQ(match(1, 3, 8), -1);
    post(1, 3, 8, 6);                // alone again after a cancel of the lone one
    EXPECT_EQ(match(1, 3, 8), 6);
}

TEST_F(TagMatchTest, UnexpectedKeepArrivalOrderPerSender) {
    arrive(0, 1, 5, 1);
    arrive(0, 2, 5, 2);
    arrive(0, 1, 6, 3);
    arrive(0, 1, 5, 4);
    arrive(0, 2, 6, 5);
    EXPECT_EQ(m->unexpected_count(), 5u);
    // Specific: per (source, tag) in arrival order.
    EXPECT_EQ(take(0, 1, 5), 1);
    EXPECT_EQ(take(0, 1, 5), 4);
    EXPECT_EQ(take(0, 1, 5), -1);
    // ANY_TAG from source 2, then ANY_SOURCE of tag 6, then everything.
    EXPECT_EQ(take(0, 2, kAnyTag), 2);
    EXPECT_EQ(take(0, kAnySource, 6), 3);
    EXPECT_EQ(take(0, kAnySource, kAnyTag), 5);
    EXPECT_EQ(m->unexpected_count(), 0u);
}

TEST_F(TagMatchTest, AnySourceAnyTagReturnsArrivalOrder) {
    for (int i = 0; i < 20; ++i) arrive(0, (i * 7) % 5, (i * 3) % 4, i);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(take(0, kAnySource, kAnyTag), i);
}

TEST_F(TagMatchTest, SpecificAndWildcardTakesShareOneQueue) {
    arrive(0, 1, 1, 1);
    arrive(0, 1, 1, 2);
    arrive(0, 1, 1, 3);
    EXPECT_EQ(take(0, 1, 1), 1);
    EXPECT_EQ(take(0, kAnySource, kAnyTag), 2) << "a specific take must unlink from the order list too";
    EXPECT_EQ(take(0, 1, 1), 3) << "a wildcard take must unlink from the bucket too";
    EXPECT_EQ(take(0, kAnySource, kAnyTag), -1);
    EXPECT_EQ(m->unexpected_count(), 0u);
}

TEST_F(TagMatchTest, TagSpacesNeverCrossForUnexpected) {
    arrive(1, 0, 3, 1);
    arrive(2, 0, 3, 2);
    EXPECT_EQ(take(0, kAnySource, kAnyTag), -1);
    EXPECT_EQ(take(0, 0, kAnyTag), -1);
    EXPECT_EQ(take(0, kAnySource, 3), -1);
    EXPECT_EQ(take(0, 0, 3), -1);
    EXPECT_EQ(take(2, kAnySource, kAnyTag), 2);
    EXPECT_EQ(take(1, 0, 3), 1);
}

TEST_F(TagMatchTest, TagSpacesNeverCrossForPosted) {
    post(0, kAnySource, kAnyTag, 1);
    post(0, 0, kAnyTag, 2);
    post(0, 0, 3, 3);
    EXPECT_EQ(match(1, 0, 3), -1);
    EXPECT_EQ(match(2, 0, 3), -1);
    EXPECT_EQ(m->posted_count(), 3u);
    post(1, 0, 3, 4);
    EXPECT_EQ(match(1, 0, 3), 4);
    EXPECT_EQ(match(0, 0, 3), 1);
}

TEST_F(TagMatchTest, CancelRemovesPostedReceive) {
    Recv *a = post(0, 1, 5, 1);
    Recv *w = post(0, kAnySource, 5, 2);
    post(0, 1, 5, 3);
    EXPECT_EQ(m->posted_count(), 3u);
    m->cancel(a);
    EXPECT_EQ(m->posted_count(), 2u);
    m->cancel(a);  // twice is harmless
    EXPECT_EQ(m->posted_count(), 2u);
    m->cancel(w);
    EXPECT_EQ(m->posted_count(), 1u);
    EXPECT_EQ(match(0, 1, 5), 3);
    EXPECT_EQ(match(0, 1, 5), -1);
    EXPECT_EQ(m->posted_count(), 0u);
}

TEST_F(TagMatchTest, CancelOfMatchedReceiveIsANoop) {
    Recv *a = post(0, 1, 5, 1);
    post(0, 1, 5, 2);
    EXPECT_EQ(match(0, 1, 5), 1);
    m->cancel(a);
    EXPECT_EQ(m->posted_count(), 1u);
    EXPECT_EQ(match(0, 1, 5), 2);
}

TEST_F(TagMatchTest, PeekLeavesUnexpectedInPlace) {
    arrive(0, 1, 5, 1);
    arrive(0, 1, 5, 2);
    EXPECT_EQ(peek(0, 1, 5), 1);
    EXPECT_EQ(peek(0, kAnySource, kAnyTag), 1);
    EXPECT_EQ(peek(0, 1, 5), 1);
    EXPECT_EQ(m->unexpected_count(), 2u);
    EXPECT_EQ(take(0, 1, 5), 1);
    EXPECT_EQ(peek(0, kAnySource, 5), 2);
    EXPECT_EQ(m->unexpected_count(), 1u);
}

TEST_F(TagMatchTest, ForEachPostedVisitsAllAndMayCancel) {
    post(0, 1, 1, 1);
    post(0, kAnySource, 2, 2);
    post(1, 1, kAnyTag, 3);
    post(2, 2, 2, 4);
    std::vector<int> seen;
    m->for_each_posted([&](PostedEntry *e) {
        seen.push_back(id_of(e));
        if (e->bits.source == 1) m->cancel(e);
    });
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3, 4}));
    EXPECT_EQ(m->posted_count(), 2u);
    EXPECT_EQ(match(0, 1, 1), -1);
    EXPECT_EQ(match(1, 1, 9), -1);
    EXPECT_EQ(match(0, 5, 2), 2);
    EXPECT_EQ(match(2, 2, 2), 4);
}

// 10,000 receives in 1024 buckets: every bucket holds several keys, so
// matching must compare full bits, not rely on the bucket.
TEST_F(TagMatchTest, TenThousandPostedWithCollisions) {
    constexpr int kN = 10000;
    // 100 sources x 50 tags x 2 duplicates, spread over the three spaces.
    for (int i = 0; i < kN; ++i) {
        int key = i % 5000;
        post(key % 3, key / 50, key % 50, i);
    }
    EXPECT_EQ(m->posted_count(), static_cast<size_t>(kN));
    // Arrivals in a shuffled key order: each key's first arrival gets the
    // first-posted duplicate (i), the second gets i + 5000.
    std::vector<int> keys(5000);
    for (int k = 0; k < 5000; ++k) keys[static_cast<size_t>(k)] = k;
    std::mt19937 rng(12345);
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int k : keys) ASSERT_EQ(match(k % 3, k / 50, k % 50), k) << "key " << k;
    std::shuffle(keys.begin(), keys.end(), rng);
    for (int k : keys) ASSERT_EQ(match(k % 3, k / 50, k % 50), k + 5000) << "key " << k;
    EXPECT_EQ(m->posted_count(), 0u);
    EXPECT_EQ(match(0, 0, 0), -1);
}

TEST_F(TagMatchTest, TenThousandUnexpectedWithCollisions) {
    constexpr int kN = 10000;
    for (int i = 0; i < kN; ++i) arrive(0, i % 37, i % 101, i);
    EXPECT_EQ(m->unexpected_count(), static_cast<size_t>(kN));
    // (source, tag) = (i % 37, i % 101) repeats every 3737 arrivals.
    for (int i = 0; i < 3737; ++i) ASSERT_EQ(take(0, i % 37, i % 101), i);
    // Source 5, ANY_TAG: the survivors from source 5 in arrival order.
    std::vector<int> from5;
    for (int i = 3737; i < kN; ++i)
        if (i % 37 == 5) from5.push_back(i);
    for (int want : from5) ASSERT_EQ(take(0, 5, kAnyTag), want);
    EXPECT_EQ(take(0, 5, kAnyTag), -1);
    // Everything else in arrival order.
    for (int i = 3737; i < kN; ++i) {
        if (i % 37 == 5) continue;
        ASSERT_EQ(take(0, kAnySource, kAnyTag), i);
    }
    EXPECT_EQ(m->unexpected_count(), 0u);
}

// Random operations against a reference: a vector in post (or arrival)
// order, first match wins.
TEST_F(TagMatchTest, RandomOperationsAgreeWithReferenceModel) {
    std::mt19937 rng(2024);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    auto matches = [](const MatchBits &want, const MatchBits &have) {
        return want.space == have.space && (want.source == kAnySource || want.source == have.source) &&
               (want.tag == kAnyTag || want.tag == have.tag);
    };
    std::vector<Recv *> posted;
    std::vector<Msg *> unexp;
    int next_id = 0;
    for (int step = 0; step < 10000; ++step) {
        const int space = pick(3);
        const int src = pick(6);
        const int tag = pick(6);
        switch (pick(5)) {
        case 0: {  // post, sometimes wild
            int s = pick(4) == 0 ? kAnySource : src;
            int t = pick(4) == 0 ? kAnyTag : tag;
            posted.push_back(post(space, s, t, next_id++));
            break;
        }
        case 1: {  // arrival against posted receives
            MatchBits a = bits(space, src, tag);
            int want = -1;
            for (auto it = posted.begin(); it != posted.end(); ++it) {
                if (matches((*it)->bits, a)) {
                    want = (*it)->id;
                    posted.erase(it);
                    break;
                }
            }
            ASSERT_EQ(match(space, src, tag), want) << "step " << step;
            break;
        }
        case 2:  // unexpected arrival
            unexp.push_back(arrive(space, src, tag, next_id++));
            break;
        case 3: {  // receive looking at unexpected messages
            MatchBits w = bits(space, pick(3) == 0 ? kAnySource : src, pick(3) == 0 ? kAnyTag : tag);
            const bool t = pick(2) == 0;
            int want = -1;
            for (auto it = unexp.begin(); it != unexp.end(); ++it) {
                if (matches(w, (*it)->bits)) {
                    want = (*it)->id;
                    if (t) unexp.erase(it);
                    break;
                }
            }
            ASSERT_EQ(id_of(m->find_unexpected(w, t)), want) << "step " << step;
            break;
        }
        case 4:  // cancel a random posted receive
            if (!posted.empty()) {
                size_t i = static_cast<size_t>(pick(static_cast<int>(posted.size())));
                m->cancel(posted[i]);
                posted.erase(posted.begin() + static_cast<long>(i));
            }
            break;
        }
        ASSERT_EQ(m->posted_count(), posted.size());
        ASSERT_EQ(m->unexpected_count(), unexp.size());
    }
}

}  // namespace

namespace {

// Tags a peer picked to share one bucket of an unkeyed matcher spread over
// many under a keyed one: matching stays O(1) for a hostile tag set.
TEST(TagMatchHash, KeyedBucketsCannotBeAimedAt) {
    auto plain = std::make_unique<TagMatcher>();
    std::vector<int> aimed;
    const size_t target = plain->bucket_index(bits(0, 1, 0));
    for (int tag = 0; aimed.size() < 64 && tag < (1 << 24); ++tag)
        if (plain->bucket_index(bits(0, 1, tag)) == target) aimed.push_back(tag);
    ASSERT_EQ(aimed.size(), 64u);
    auto keyed = std::make_unique<TagMatcher>();
    keyed->set_hash_key(0x5eed5eed12345678ull);
    std::vector<size_t> seen;
    for (int tag : aimed) seen.push_back(keyed->bucket_index(bits(0, 1, tag)));
    std::sort(seen.begin(), seen.end());
    size_t distinct = static_cast<size_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
    EXPECT_GT(distinct, 48u);  // 64 random draws from 1,024 buckets: about 62 distinct
}

TEST_F(TagMatchTest, RemoveUnexpectedIfTakesOnePeersMessages) {
    arrive(0, 1, 5, 1);
    arrive(0, 2, 5, 2);
    arrive(1, 1, 6, 3);
    arrive(0, 1, 7, 4);
    std::vector<int> gone;
    m->remove_unexpected_if([](const UnexpEntry *u) { return u->bits.source == 1; },
                            [&](UnexpEntry *u) { gone.push_back(id_of(u)); });
    EXPECT_EQ(gone, (std::vector<int>{1, 4, 3}));  // per space, oldest first
    EXPECT_EQ(m->unexpected_count(), 1u);
    EXPECT_EQ(take(0, kAnySource, kAnyTag), 2);
    EXPECT_EQ(take(0, 1, 5), -1);
}

}  // namespace
