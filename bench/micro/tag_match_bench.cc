// Tag matching (core/tag_match.h) with queues already holding `posted`
// receives and `unexp` unexpected messages that the measured message does
// not match, which is how queues look under load. One iteration is one
// message matched to one receive, by the engine's two paths:
//
//   PostThenArrive  the receive comes first: find_unexpected misses, post();
//                   then the message arrives and match_arrival() finds it.
//   ArriveThenPost  the message comes first: match_arrival() misses,
//                   add_unexpected(); then the receive's find_unexpected()
//                   takes it.
//
// wild:0  every receive names its source and tag: hash buckets, so the cost
//         should barely move with depth.
// wild:1  every receive uses ANY_SOURCE: receives sit on the tag space's
//         wildcard list and a wildcard lookup walks the unexpected queue in
//         arrival order, so the cost grows with posted + unexp.
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/micro/micro.h"
#include "core/tag_match.h"

namespace {

using rdmx::kAnySource;
using rdmx::MatchBits;
using rdmx::PostedEntry;
using rdmx::TagMatcher;
using rdmx::UnexpEntry;

// The measured message: source 1, tag 1. Background entries use sources
// 2..65 and tags from 1000 up, so none of them ever matches it.
constexpr MatchBits kArrival{0, 1, 1};
constexpr int kBackgroundTag = 1000;
constexpr int kSources = 64;

struct Queues {
    // 2 x 1024 list heads: on the heap, not the stack.
    std::unique_ptr<TagMatcher> m = std::make_unique<TagMatcher>();
    // Sized once: entries are linked into the matcher and must not move.
    std::vector<PostedEntry> posted;
    std::vector<UnexpEntry> unexp;

    Queues(int64_t n_posted, int64_t n_unexp, bool wild)
        : posted(static_cast<size_t>(n_posted)), unexp(static_cast<size_t>(n_unexp)) {
        for (size_t i = 0; i < posted.size(); ++i) {
            const int n = static_cast<int>(i);
            posted[i].bits = wild ? MatchBits{0, kAnySource, kBackgroundTag + n}
                                  : MatchBits{0, 2 + n % kSources, kBackgroundTag + n / kSources};
            m->post(&posted[i]);
        }
        for (size_t i = 0; i < unexp.size(); ++i) {
            const int n = static_cast<int>(i);
            unexp[i].bits = MatchBits{0, 2 + n % kSources, kBackgroundTag + n / kSources};
            m->add_unexpected(&unexp[i]);
        }
    }
    bool intact() const { return m->posted_count() == posted.size() && m->unexpected_count() == unexp.size(); }
};

MatchBits receive_bits(bool wild) { return wild ? MatchBits{0, kAnySource, kArrival.tag} : kArrival; }

void BM_PostThenArrive(benchmark::State &state) {
    const bool wild = state.range(2) != 0;
    Queues q(state.range(0), state.range(1), wild);
    PostedEntry recv;
    recv.bits = receive_bits(wild);
    for (auto _ : state) {
        if (q.m->find_unexpected(recv.bits, true) != nullptr) {
            rdmx::micro::fail(state, "receive matched a background message");
            break;
        }
        q.m->post(&recv);
        PostedEntry *got = q.m->match_arrival(kArrival);
        benchmark::DoNotOptimize(got);
        if (got != &recv) {
            rdmx::micro::fail(state, "arrival did not match the posted receive");
            break;
        }
    }
    if (!state.error_occurred() && !q.intact()) rdmx::micro::fail(state, "background queues changed");
    state.SetItemsProcessed(state.iterations());
}

void BM_ArriveThenPost(benchmark::State &state) {
    const bool wild = state.range(2) != 0;
    Queues q(state.range(0), state.range(1), wild);
    UnexpEntry msg;
    msg.bits = kArrival;
    const MatchBits want = receive_bits(wild);
    for (auto _ : state) {
        if (q.m->match_arrival(kArrival) != nullptr) {
            rdmx::micro::fail(state, "arrival matched a background receive");
            break;
        }
        q.m->add_unexpected(&msg);
        UnexpEntry *got = q.m->find_unexpected(want, true);
        benchmark::DoNotOptimize(got);
        if (got != &msg) {
            rdmx::micro::fail(state, "receive did not take the unexpected message");
            break;
        }
    }
    if (!state.error_occurred() && !q.intact()) rdmx::micro::fail(state, "background queues changed");
    state.SetItemsProcessed(state.iterations());
}

const std::vector<int64_t> kDepths{1, 10, 100, 1000, 10000};

BENCHMARK(BM_PostThenArrive)->ArgsProduct({kDepths, kDepths, {0, 1}})->ArgNames({"posted", "unexp", "wild"});
BENCHMARK(BM_ArriveThenPost)->ArgsProduct({kDepths, kDepths, {0, 1}})->ArgNames({"posted", "unexp", "wild"});

}  // namespace
