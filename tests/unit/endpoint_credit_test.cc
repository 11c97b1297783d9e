// Endpoint's send credits: the grants a peer RDMA-WRITEs into our credit
// slot (tx_credits) and carries on headers (note_grant), the window check
// that exposes a forged grant, and a grant left alone in the slot while the
// counters wrap past 2^31.
#include <gtest/gtest.h>

#include <cstdint>

#include "transport/endpoint.h"

namespace {

using rdmx::Endpoint;

constexpr uint32_t kWindow = 64;

// An endpoint as ConnManager::record_credits leaves it, over `slot`.
void connect(Endpoint *ep, volatile uint64_t *slot) {
    ep->credit_slot = slot;
    ep->tx_window = kWindow;
    ep->tx_granted = kWindow;
    ep->tx_consumed = 0;
    ep->credit_seen = 0;
    ep->grant_forged = false;
}

TEST(EndpointCredits, WindowAtStartThenSlotGrants) {
    volatile uint64_t slot = 0;
    Endpoint ep;
    connect(&ep, &slot);
    EXPECT_EQ(ep.tx_credits(), kWindow);
    ep.tx_consumed = kWindow;
    EXPECT_EQ(ep.tx_credits(), 0u);
    slot = kWindow + 10;  // the peer recycled ten buffers
    EXPECT_EQ(ep.tx_credits(), 10u);
    slot = kWindow + 5;   // an older write, overtaken: ignored
    EXPECT_EQ(ep.tx_credits(), 10u);
    EXPECT_FALSE(ep.grant_forged);
}

TEST(EndpointCredits, ForgedGrantStopsSending) {
    volatile uint64_t slot = 0;
    Endpoint ep;
    connect(&ep, &slot);
    slot = kWindow + kWindow + 1;  // more than the window past what we sent
    EXPECT_EQ(ep.tx_credits(), 0u);
    EXPECT_TRUE(ep.grant_forged);
    EXPECT_EQ(ep.forged_grant, kWindow + kWindow + 1);
    slot = kWindow;  // nothing the peer writes afterwards counts
    EXPECT_EQ(ep.tx_credits(), 0u);

    Endpoint high;
    connect(&high, &slot);
    slot = uint64_t{1} << 32;  // beyond 32 bits: forged whatever the counters say
    EXPECT_EQ(high.tx_credits(), 0u);
    EXPECT_TRUE(high.grant_forged);
}

// The peer wrote a grant once and then carried every later one on headers
// (a ping-pong: both sides send). 2^31 messages later the slot's old value
// compares as newer than tx_granted; it was applied long ago and must still
// count for nothing, not as a forged grant that closes the connection.
TEST(EndpointCredits, OldSlotValueSurvivesCounterWrap) {
    volatile uint64_t slot = 0;
    Endpoint ep;
    connect(&ep, &slot);
    ep.tx_consumed = 3;
    slot = kWindow + 3;  // the peer recycled the three we sent
    EXPECT_EQ(ep.tx_credits(), kWindow);
    const uint32_t sent = (uint32_t{1} << 31) + 100;
    ep.tx_consumed = sent;
    ep.tx_granted = sent + 20;  // where the headers' grants, one by one, have brought it
    EXPECT_EQ(ep.tx_credits(), 20u);
    EXPECT_FALSE(ep.grant_forged);
    // A new write is checked again, against the counters as they are now.
    slot = sent + 30;
    EXPECT_EQ(ep.tx_credits(), 30u);
    slot = sent + kWindow + 1;
    EXPECT_EQ(ep.tx_credits(), 0u);
    EXPECT_TRUE(ep.grant_forged);
}

}  // namespace
