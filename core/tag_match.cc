#include "core/tag_match.h"

namespace rdmx {

// A multiplicative hash alone is linear: tags differing by a multiple of a
// known stride land together. The key enters before a final mix (the
// murmur3 finaliser), so without it no tag set can be aimed at one bucket.
size_t TagMatcher::bucket_of(const MatchBits &b) const {
    uint64_t h = (static_cast<uint64_t>(b.space) << 56) ^ (static_cast<uint64_t>(static_cast<uint32_t>(b.source)) << 24) ^
                 static_cast<uint32_t>(b.tag) ^ (static_cast<uint64_t>(b.comm) * 0xc2b2ae3d27d4eb4full);
    h = (h ^ key_) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return static_cast<size_t>(h) & (kBuckets - 1);
}

void TagMatcher::file(PostedEntry *e) {
    if (e->wild) posted_wild_[e->bits.space].push_back(&e->node);
    else posted_buckets_[bucket_of(e->bits)].push_back(&e->node);
}

void TagMatcher::post(PostedEntry *e) {
    e->seq = post_seq_++;
    e->wild = e->bits.source == kAnySource || e->bits.tag == kAnyTag;
    if (solo_ != nullptr) {  // a second receive: the first goes to its bucket, ahead of it
        file(solo_);         // (its node pointed at solo_mark_ only: no list to leave)
        solo_ = nullptr;
    }
    if (posted_ == 0) {
        e->node.prev = e->node.next = &solo_mark_;
        solo_ = e;
    } else {
        file(e);
    }
    ++posted_;
}

PostedEntry *TagMatcher::match_arrival(const MatchBits &arrived) {
    if (posted_ == 0) return nullptr;  // no hash for a message nobody waits for yet
    if (solo_ != nullptr) {  // the only receive posted: no hash, no walk
        if (!matches(solo_->bits, arrived)) return nullptr;
        PostedEntry *e = solo_;
        e->node = ListNode{};
        solo_ = nullptr;
        --posted_;
        return e;
    }
    PostedEntry *best = nullptr;
    List &bucket = posted_buckets_[bucket_of(arrived)];
    for (ListNode *n = bucket.first(); n != nullptr; n = bucket.next_of(n)) {
        auto *e = container_of<PostedEntry, &PostedEntry::node>(n);
        if (matches(e->bits, arrived)) {
            best = e;
            break;
        }
    }
    List &wild = posted_wild_[arrived.space];
    for (ListNode *n = wild.first(); n != nullptr; n = wild.next_of(n)) {
        auto *e = container_of<PostedEntry, &PostedEntry::node>(n);
        if (best != nullptr && e->seq > best->seq) break;
        if (matches(e->bits, arrived)) {
            best = e;
            break;
        }
    }
    if (best != nullptr) {
        List::unlink(&best->node);
        --posted_;
    }
    return best;
}

void TagMatcher::cancel(PostedEntry *e) {
    if (!e->node.linked()) return;
    if (e == solo_) {
        e->node = ListNode{};
        solo_ = nullptr;
    } else {
        List::unlink(&e->node);
    }
    --posted_;
}

void TagMatcher::add_unexpected(UnexpEntry *u) {
    u->seq = arrival_seq_++;
    unexp_buckets_[bucket_of(u->bits)].push_back(&u->bucket_node);
    unexp_order_[u->bits.space].push_back(&u->order_node);
    ++unexpected_;
}

UnexpEntry *TagMatcher::find_unexpected(const MatchBits &want, bool take) {
    if (unexpected_ == 0) return nullptr;  // the common case of a receive posted ahead: no hash
    UnexpEntry *found = nullptr;
    if (want.source != kAnySource && want.tag != kAnyTag) {
        List &bucket = unexp_buckets_[bucket_of(want)];
        for (ListNode *n = bucket.first(); n != nullptr && found == nullptr; n = bucket.next_of(n)) {
            auto *u = container_of<UnexpEntry, &UnexpEntry::bucket_node>(n);
            if (matches(want, u->bits)) found = u;
        }
    } else {
        List &order = unexp_order_[want.space];
        for (ListNode *n = order.first(); n != nullptr && found == nullptr; n = order.next_of(n)) {
            auto *u = container_of<UnexpEntry, &UnexpEntry::order_node>(n);
            if (matches(want, u->bits)) found = u;
        }
    }
    if (found != nullptr && take) {
        List::unlink(&found->bucket_node);
        List::unlink(&found->order_node);
        --unexpected_;
    }
    return found;
}

}  // namespace rdmx
