// Tag matching: posted receives and unexpected messages, MPI semantics.
// Specific (space, source, tag) matches in O(1) expected time through hash
// buckets; wildcard receives live in one list per tag space, and the oldest
// candidate (by post order) wins, so order per sender is kept. Not thread
// safe: the engine serialises calls.
#pragma once
#include <array>
#include <cstdint>

#include "core/ilist.h"

namespace rdmx {

constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;
constexpr unsigned kNumSpaces = 4;        // wire::kMaxSpace + 1
constexpr unsigned kNumPublicSpaces = 3;  // rdmx_tagspace_t; the last is the engine's own
constexpr uint8_t kSpaceEngine = 3;

// What a receive asks for and what a message carries. `comm` keeps
// communicators apart: it is never a wildcard.
struct MatchBits {
    uint8_t space = 0;
    int source = kAnySource;
    int tag = kAnyTag;
    uint32_t comm = 0;
};

struct PostedEntry {
    MatchBits bits;
    uint64_t seq = 0;
    ListNode node;       // in a bucket or in the space's wildcard list
    bool wild = false;
};

struct UnexpEntry {
    MatchBits bits;      // source and tag are always specific here
    uint64_t seq = 0;
    ListNode bucket_node;
    ListNode order_node; // arrival order within the space
};

class TagMatcher {
public:
    static constexpr size_t kBuckets = 1024;

    void post(PostedEntry *e);
    // Removes and returns the oldest posted receive matching an arrival.
    PostedEntry *match_arrival(const MatchBits &arrived);
    void cancel(PostedEntry *e);

    void add_unexpected(UnexpEntry *u);
    // The oldest unexpected message matching a receive's bits; removed if take.
    UnexpEntry *find_unexpected(const MatchBits &want, bool take);

    size_t posted_count() const { return posted_; }
    size_t unexpected_count() const { return unexpected_; }
    // Removes every unexpected message pred(entry) accepts, oldest first,
    // and hands each to dispose (e.g. a closed peer's).
    template <typename Pred, typename Dispose>
    void remove_unexpected_if(Pred &&pred, Dispose &&dispose);
    // Keys the bucket hash: tags a peer chooses cannot be aimed at one
    // bucket (making every match a walk of all of them) without the key.
    // Call while both queues are empty.
    void set_hash_key(uint64_t key) { key_ = key; }
    size_t bucket_index(const MatchBits &b) const { return bucket_of(b); }
    // Walks every posted receive, e.g. to fail them when a peer is lost.
    template <typename F>
    void for_each_posted(F &&f);

private:
    size_t bucket_of(const MatchBits &b) const;
    static bool matches(const MatchBits &want, const MatchBits &have) {
        return want.space == have.space && want.comm == have.comm && (want.source == kAnySource || want.source == have.source) &&
               (want.tag == kAnyTag || want.tag == have.tag);
    }

    std::array<List, kBuckets> posted_buckets_;
    std::array<List, kNumSpaces> posted_wild_;
    std::array<List, kBuckets> unexp_buckets_;
    std::array<List, kNumSpaces> unexp_order_;
    uint64_t key_ = 0;
    uint64_t post_seq_ = 0;
    uint64_t arrival_seq_ = 0;
    size_t posted_ = 0;
    size_t unexpected_ = 0;
    // A receive posted while none was: kept unhashed in solo_ until a
    // second is posted, when it moves to its bucket (ahead of the second,
    // so order holds). An arrival checks it directly: the ping-pong case
    // hashes neither at post nor at arrival. It is on no list: its node
    // points at solo_mark_ (so node.linked() holds, as for any posted
    // receive), two stores where a list's link and unlink were ten.
    ListNode solo_mark_;
    PostedEntry *solo_ = nullptr;
    void file(PostedEntry *e);
};

template <typename F>
void TagMatcher::for_each_posted(F &&f) {
    auto walk = [&](List &l) {
        for (ListNode *n = l.first(); n != nullptr;) {
            ListNode *next = l.next_of(n);
            f(container_of<PostedEntry, &PostedEntry::node>(n));
            n = next;
        }
    };
    if (PostedEntry *s = solo_) f(s);
    for (auto &l : posted_buckets_) walk(l);
    for (auto &l : posted_wild_) walk(l);
}

template <typename Pred, typename Dispose>
void TagMatcher::remove_unexpected_if(Pred &&pred, Dispose &&dispose) {
    for (List &order : unexp_order_) {
        for (ListNode *n = order.first(); n != nullptr;) {
            ListNode *next = order.next_of(n);
            auto *u = container_of<UnexpEntry, &UnexpEntry::order_node>(n);
            if (pred(static_cast<const UnexpEntry *>(u))) {
                List::unlink(&u->bucket_node);
                List::unlink(&u->order_node);
                --unexpected_;
                dispose(u);
            }
            n = next;
        }
    }
}

}  // namespace rdmx
