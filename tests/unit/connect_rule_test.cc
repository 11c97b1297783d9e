// The crossing rule for connections made on demand (transport/connect_rule.h):
// the verdicts one by one, and the property the rule exists for: when two
// ranks dial each other at once, exactly one of the two requests is
// accepted, and it is the lower rank's.
#include <gtest/gtest.h>

#include "transport/connect_rule.h"

namespace {

using rdmx::connect_mode_flags;
using rdmx::connect_modes_clash;
using rdmx::judge_request;
using rdmx::PeerConn;
using rdmx::RequestVerdict;

constexpr PeerConn kAll[] = {PeerConn::kNone, PeerConn::kDialing, PeerConn::kAwaiting, PeerConn::kAccepting,
                             PeerConn::kUp};

bool accepts(RequestVerdict v) { return v == RequestVerdict::kAccept || v == RequestVerdict::kAcceptDropOwn; }

TEST(ConnectRule, MeshOnlyTheLowerRankDials) {
    for (PeerConn s : kAll) {
        if (s == PeerConn::kUp) continue;
        EXPECT_EQ(judge_request(false, 3, 1, s), RequestVerdict::kAccept);
        EXPECT_EQ(judge_request(false, 3, 5, s), RequestVerdict::kRejectDirection);
    }
    EXPECT_EQ(judge_request(false, 3, 1, PeerConn::kUp), RequestVerdict::kRejectDuplicate);
}

TEST(ConnectRule, LazyAcceptsEitherDirectionWhenNotDialing) {
    for (PeerConn s : {PeerConn::kNone, PeerConn::kAwaiting, PeerConn::kAccepting}) {
        EXPECT_EQ(judge_request(true, 3, 1, s), RequestVerdict::kAccept);
        EXPECT_EQ(judge_request(true, 3, 5, s), RequestVerdict::kAccept);
    }
}

TEST(ConnectRule, LazyCrossedLowerRankWins) {
    // The higher rank (5) drops its own attempt for the lower rank's request.
    EXPECT_EQ(judge_request(true, 5, 3, PeerConn::kDialing), RequestVerdict::kAcceptDropOwn);
    // The lower rank (3) refuses the higher rank's request as crossed.
    EXPECT_EQ(judge_request(true, 3, 5, PeerConn::kDialing), RequestVerdict::kRejectCrossed);
}

TEST(ConnectRule, ConnectedPairRefusesMore) {
    for (bool lazy : {false, true}) {
        EXPECT_EQ(judge_request(lazy, 3, 1, PeerConn::kUp), RequestVerdict::kRejectDuplicate);
        EXPECT_EQ(judge_request(lazy, 1, 3, PeerConn::kUp), RequestVerdict::kRejectDuplicate);
    }
}

// Both ranks of every pair dial at once, and each sees the other's request
// while its own is in flight: exactly one request is accepted (the lower
// rank's), the other is refused as crossed, never as a failure.
TEST(ConnectRule, CrossedConnectsEndWithOneConnection) {
    for (int lo = 0; lo < 16; ++lo)
        for (int hi = lo + 1; hi < 16; ++hi) {
            const RequestVerdict at_hi = judge_request(true, hi, lo, PeerConn::kDialing);  // lo's request reaches hi
            const RequestVerdict at_lo = judge_request(true, lo, hi, PeerConn::kDialing);  // hi's request reaches lo
            EXPECT_TRUE(accepts(at_hi)) << lo << "->" << hi;
            EXPECT_EQ(at_lo, RequestVerdict::kRejectCrossed) << hi << "->" << lo;
        }
}

// One side's request arrives after the other already accepted (it had not
// started yet): the late one must not be accepted twice.
TEST(ConnectRule, LateRequestAfterAcceptIsSuperseded) {
    // hi accepted lo's request (kAccepting), then lo retries: newest wins (accept, old dropped).
    EXPECT_EQ(judge_request(true, 5, 3, PeerConn::kAccepting), RequestVerdict::kAccept);
    // hi was told kCrossed and waits: lo's request is accepted.
    EXPECT_EQ(judge_request(true, 5, 3, PeerConn::kAwaiting), RequestVerdict::kAccept);
}

// Each rank publishes its resolved mode beside its rc address; a rank that
// sees a peer publish the other mode refuses the job in rdmx_init.
TEST(ConnectRule, DisagreeingModesClash) {
    for (bool lazy : {false, true}) {
        EXPECT_FALSE(connect_modes_clash(lazy, connect_mode_flags(lazy)));
        EXPECT_TRUE(connect_modes_clash(lazy, connect_mode_flags(!lazy)));
        EXPECT_TRUE(connect_modes_clash(!lazy, connect_mode_flags(lazy)));  // both sides see it
    }
    EXPECT_NE(connect_mode_flags(true), 0u);
    EXPECT_NE(connect_mode_flags(false), 0u);
}

// A peer that states no mode (a raw test peer filling the record by hand) is
// not judged, nor are bits outside the mode's.
TEST(ConnectRule, UnstatedModeIsNotJudged) {
    for (bool lazy : {false, true}) {
        EXPECT_FALSE(connect_modes_clash(lazy, 0));
        EXPECT_FALSE(connect_modes_clash(lazy, static_cast<uint16_t>(~rdmx::kConnectModeMask)));
        EXPECT_FALSE(connect_modes_clash(lazy, static_cast<uint16_t>(connect_mode_flags(lazy) | 0x100)));
    }
}

}  // namespace
