// One endpoint per peer: its RC QP (on the shared CQ and SRQ), its
// connection state machine, send-queue accounting and receive credits.
#pragma once
#include <cassert>
#include <cstdint>
#include <vector>

#include "transport/handles.h"

namespace rdmx {

enum class ConnState : uint8_t {
    kIdle,            // nothing started
    kResolvingAddr,   // active: rdma_resolve_addr issued
    kResolvingRoute,  // active: rdma_resolve_route issued
    kConnecting,      // active: rdma_connect issued
    kAccepting,       // passive: rdma_accept issued
    kBackoff,         // active: a transient failure, retry at retry_at_ns
    kAwaitPeer,       // lazy: our request crossed a lower rank's; its request is coming (connect_rule.h)
    kConnected,       // ESTABLISHED (or COMM_EST notified)
    kDisconnecting,   // rdma_disconnect issued
    kClosed,          // DISCONNECTED seen, resources may go
    kFailed,          // lost for good: requests fail with `error`
};
const char *conn_state_name(ConnState s);

// What a posted WR holds. Rendezvous WRs name their transfer by the engine's
// id (TransportSink::on_rma_done, on_unexposed), never by address: a request
// failed and freed while the device may still complete its WRs is reused, and
// a late completion must then find nothing rather than the new transfer.
struct SqSlot {
    int32_t bounce = -1;     // send pool buffer to release, or -1
    uint64_t cookie = 0;     // rendezvous READ/WRITE: its transfer's id, or 0
    uint32_t bytes = 0;      // bytes that READ/WRITE moves
    uint64_t inv = 0;        // LOCAL_INV revoking a window: the engine's id for it, or 0
    int32_t window = -1;     // and that window's index
    bool empty() const { return bounce < 0 && cookie == 0 && inv == 0; }  // nothing to release at completion
};

// A LOCAL_INV revoking a window, waiting for a send-queue slot.
struct PendingInv {
    uint64_t id = 0;      // the engine's name for it (TransportSink::on_unexposed)
    int32_t window = -1;  // index into Endpoint::mws
};

struct Endpoint {
    int peer = -1;
    bool served = false;          // this transport carries the peer (not ourselves, not another lane)
    bool reported = false;        // the engine knows the connection is lost (it said so, or was told)
    ConnState state = ConnState::kIdle;
    int error = 0;                // rdmx_status_t once failed
    bool disconnect_deferred = false;  // lost while the port was down: DREQ once it is up
    std::string addr;             // peer's address, for messages
    CmIdHandle id;
    ibv_qp *qp = nullptr;         // owned by id
    uint32_t qp_num = 0;
    int attempts = 0;
    uint64_t retry_at_ns = 0;
    // Lazy connection (RDMX_CONNECT=lazy): something here waits for this
    // peer (a send, a receive naming it), and by when it must be connected.
    bool wanted = false;
    uint64_t connect_deadline_ns = 0;
    int refused = 0;              // transport refusals (nobody listening) in a row
    const char *last_event = "none";
    int last_status = 0;

    // Send queue: WR sequence numbers, a ring of what each WR holds.
    uint32_t sq_depth = 0;
    uint32_t sq_posted = 0;       // WRs posted so far
    uint32_t sq_done = 0;         // WRs known complete
    uint32_t unsignaled = 0;
    uint32_t signal_every = 1;    // one SEND in this many is signalled (signal_period of the QP's real depth)
    // What each WR in flight holds; an empty SqSlot (an inline SEND, a
    // credit WRITE) is not written: every slot outside [sq_done, sq_posted)
    // and every empty one inside it stays SqSlot{}.
    std::vector<SqSlot> ring;
    uint32_t sq_held = 0;         // WRs in flight whose slot holds something (release_ring walks only then)
    uint32_t max_rd_atomic = 1;   // negotiated initiator depth for RDMA READ

    // Credits: the peer may send us rx_granted - (messages received) more;
    // we may send tx_granted - tx_consumed more.
    uint32_t tx_consumed = 0;
    uint32_t tx_granted = 0;
    uint32_t tx_window = 0;        // the peer's receive window (its private_data): no grant
                                   // can run further ahead of tx_consumed than this
    bool grant_forged = false;     // the slot held a grant beyond the window: nothing more
    uint64_t forged_grant = 0;     // is sent, and the engine closes the peer
    volatile uint64_t *credit_slot = nullptr;  // peer RDMA-WRITEs cumulative grants here
    uint64_t credit_seen = 0;      // the slot's value when tx_credits last checked it
    uint64_t remote_credit_addr = 0;
    uint32_t remote_credit_rkey = 0;
    uint32_t rx_granted = 0;       // cumulative grants we have made
    uint32_t rx_granted_told = 0;  // last cumulative value the peer was told
    bool owed = false;             // on the transport's list of peers for return_credits to look at
    uint64_t credit_word = 0;      // source of the credit RDMA WRITE (registered)
    uint32_t tx_seq = 0;
    uint32_t rx_seq = 0;
    uint32_t probe_seq = 0;        // keepalive write in flight: its WR sequence number,
    uint32_t probe_done = 0;       // sq_done when the SQ last moved while it waits,
    uint64_t probe_ns = 0;         // and when that was (0: no probe in flight)
    uint32_t keepalive_seen = ~0u; // rx_seq at the last keepalive check

    bool forged_reported = false;  // grant_forged seen by a send: progress closes the peer

    // Type 2 memory windows for rendezvous transfers with this peer, bound
    // and invalidated through this QP's send queue: a window is reused only
    // after its invalidation completed, so its next bind is ordered after it.
    std::vector<MwHandle> mws;
    std::vector<uint8_t> mw_bound;  // per window: bound (not yet revoked) to a transfer
    std::vector<uint32_t> mw_free;
    std::vector<PendingInv> invals; // LOCAL_INVs waiting for send-queue slots, in order

    uint32_t sq_free() const { return sq_depth - (sq_posted - sq_done); }
    // The peer grants one credit per buffer of ours it recycled, so a true
    // cumulative grant is at most tx_consumed + tx_window; a larger one is
    // forged (or the peer is broken). An older one (a write overtaken by a
    // header) is ignored.
    bool grant_plausible(uint64_t cumulative) const {
        const uint32_t g = static_cast<uint32_t>(cumulative);
        return (cumulative >> 32) == 0 &&
               (static_cast<int32_t>(g - tx_granted) <= 0 || g - tx_consumed <= tx_window);
    }
    // Records the WR just posted at sequence sq_posted. Every poster checks
    // sq_free() first: a full ring here would overwrite what a live WR holds
    // (a bounce buffer, a READ to finish) and sq_free() would then wrap.
    void record_wr(const SqSlot &s) {
        if (s.empty()) return record_empty_wr();
        assert(sq_posted - sq_done < sq_depth && "send ring overflow: a WR was posted without a free slot");
        ring[sq_posted & (sq_depth - 1)] = s;
        ++sq_held;
        ++sq_posted;
    }
    // A WR that holds nothing to release at its completion (an inline
    // SEND, a credit or keepalive WRITE): the slot stays empty, unwritten.
    void record_empty_wr() {
        assert(sq_posted - sq_done < sq_depth && "send ring overflow: a WR was posted without a free slot");
        ++sq_posted;
    }
    // Unsignalled SENDs hold their ring slots (and bounce buffers) until a
    // later signalled WR completes: a quarter of the ring the QP really got
    // at most, so a small ring still drains; and no more than
    // kMaxSignalEvery, past which completions saved are noise while the
    // bounce buffers held keep growing.
    static uint32_t signal_period(uint32_t depth) {
        const uint32_t p = depth / kSignalShare;
        return p < 1 ? 1 : p > kMaxSignalEvery ? kMaxSignalEvery : p;
    }
    static constexpr uint32_t kSignalShare = 4;
    static constexpr uint32_t kMaxSignalEvery = 32;
    // The slot is checked only when it changed: a value checked once has
    // been applied (tx_granted only grows past it), so seeing it again is a
    // no-op. (Checked again, a grant written once and then left alone
    // would, 2^31 messages later, look newer than tx_granted and forged.)
    // credit_seen starts at 0 on every connection (ConnManager::
    // record_credits), older than the window a connection starts with.
    uint32_t tx_credits() {
        if (grant_forged) return 0;
        const uint64_t v = *credit_slot;
        if (v != credit_seen) [[unlikely]] {
            if (!grant_plausible(v)) {
                grant_forged = true;
                forged_grant = v;
                return 0;
            }
            credit_seen = v;
            const auto slot = static_cast<uint32_t>(v);
            if (static_cast<int32_t>(slot - tx_granted) > 0) tx_granted = slot;
        }
        return tx_granted - tx_consumed;
    }
    // Header grants; false for an implausible one (the caller closes the peer).
    bool note_grant(uint32_t cumulative) {
        if (!grant_plausible(cumulative)) return false;
        if (static_cast<int32_t>(cumulative - tx_granted) > 0) tx_granted = cumulative;
        return true;
    }
    bool usable() const { return state == ConnState::kConnected; }
    void set_state(ConnState s);
};

}  // namespace rdmx
