// RC progress: poll the CQ and dispatch completions (receives to the
// arrival checks, send-queue completions to the ring), return credits, and
// at a slower pace read CM and async events, probe silent peers and watch
// a downed port. Failures are found here and reported once to the engine.
#include <poll.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "transport/rc_transport.h"

namespace rdmx {

namespace {
constexpr int kPollBatch = 32;
}  // namespace

rdmx_status_t rc_wc_status(ibv_wc_status st) {
    switch (st) {
    case IBV_WC_REM_ACCESS_ERR:      // an rkey or range the peer advertised is bad
    case IBV_WC_REM_INV_REQ_ERR:     // the peer says our request is malformed
    case IBV_WC_REM_INV_RD_REQ_ERR: return RDMX_ERR_PROTOCOL;
    case IBV_WC_LOC_LEN_ERR:         // our own work request or memory is wrong
    case IBV_WC_LOC_PROT_ERR:
    case IBV_WC_LOC_ACCESS_ERR:
    case IBV_WC_MW_BIND_ERR: return RDMX_ERR_INTERNAL;
    case IBV_WC_FATAL_ERR: return RDMX_ERR_DEVICE;
    // Retries exhausted, flushed, remote abort or op error; and
    // LOC_QP_OP_ERR, which Soft-RoCE reports for a packet it could not
    // transmit (link down): the connection cannot carry data any more.
    default: return RDMX_ERR_PEER_LOST;
    }
}

void RcTransport::release_ring(Endpoint &ep, uint32_t upto, bool ok) {
    // RC completes in order: a completion for WR `upto` covers all before it.
    // Nothing held in flight (small messages, inline): empty slots, unwritten.
    if (ep.sq_held == 0) {
        if (static_cast<int32_t>(upto - ep.sq_done) >= 0) ep.sq_done = upto + 1;
        if (!ep.invals.empty()) post_invalidations(ep);
        return;
    }
    while (static_cast<int32_t>(upto - ep.sq_done) >= 0) {
        // The slot is free before anything below posts (a FIN, the next READ):
        // it may take exactly this slot.
        SqSlot &ref = ep.ring[ep.sq_done & (ep.sq_depth - 1)];
        const SqSlot s = ref;
        ++ep.sq_done;
        if (s.empty()) continue;  // nothing to clear or release
        ref = SqSlot{};
        --ep.sq_held;
        if (s.bounce >= 0) send_pool_.put(static_cast<uint32_t>(s.bounce));
        if (s.cookie != 0) sink_->on_rma_done(ep.peer, s.cookie, s.bytes, ok);
        if (s.inv != 0) {
            const auto w = static_cast<size_t>(s.window);
            if (ok && ep.mw_bound[w]) {  // reusable: its next bind is ordered after this on the same SQ
                ep.mw_bound[w] = 0;
                ep.mw_free.push_back(static_cast<uint32_t>(w));
            }
            sink_->on_unexposed(ep.peer, s.inv, ok);
        }
    }
    if (!ep.invals.empty()) post_invalidations(ep);
}

// A failed completion's opcode field is not valid; our ring says what the WR was.
static const char *wr_what(const Endpoint &ep, uint32_t seq) {
    const SqSlot &s = ep.ring[seq & (ep.sq_depth - 1)];
    return s.cookie != 0 ? "RDMA READ/WRITE (rendezvous)" : s.bounce >= 0 ? "SEND" : "inline SEND or credit WRITE";
}

void RcTransport::handle_send_wc(const ibv_wc &wc) {
    uint32_t peer = wrid_peer(wc.wr_id);
    if (peer >= eps_.size()) return;
    Endpoint &ep = eps_[peer];
    bool ok = wc.status == IBV_WC_SUCCESS;
    if (!ok && ep.state != ConnState::kFailed) {
        const rdmx_status_t why = rc_wc_status(wc.status);
        // Flushes follow the first error on a QP: only the first is news.
        if (wc.status != IBV_WC_WR_FLUSH_ERR)
            RDMX_ERROR("send: completion error %s (status %d, vendor_err 0x%x, opcode %d, %s) to peer %d (%s) "
                       "qp 0x%x on %s: its operations fail with \"%s\"", ibv_wc_status_str(wc.status), wc.status,
                       wc.vendor_err, wc.opcode, wr_what(ep, wrid_seq(wc.wr_id)), ep.peer, ep.addr.c_str(),
                       ep.qp_num, dev_.name(), rdmx_strerror(why));
        if (why == RDMX_ERR_DEVICE) {
            release_ring(ep, wrid_seq(wc.wr_id), false);
            return fail_device(why);
        }
        ep.error = why;
        fail_peer(ep.peer, why, ibv_wc_status_str(wc.status));
    }
    release_ring(ep, wrid_seq(wc.wr_id), ok);
}

bool RcTransport::port_active() {
    ibv_port_attr pa{};
    return vx::query_port(dev_.ctx(), dev_.port(), &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
}

// Tells a lost peer's CM (DREQ), except through a port that is down: a
// management datagram sent into a downed Soft-RoCE port can stay pending in
// the kernel forever, and rdma_destroy_id then never returns. The DREQ goes
// out when the port is back (or at finalize).
void RcTransport::disconnect_lost(Endpoint &ep) {
    if (fatal_ == RDMX_OK && !port_active()) {
        ep.disconnect_deferred = true;
        return;
    }
    (void)vx::disconnect(ep.id.get());
}

void RcTransport::send_deferred_disconnects() {
    for (Endpoint &ep : eps_)
        if (ep.disconnect_deferred) {
            ep.disconnect_deferred = false;
            if (ep.id) (void)vx::disconnect(ep.id.get());
        }
}

// The connection is lost for good: it stops carrying anything, and the
// engine hears of it once (the first cause). The connection manager may
// have marked it failed already (a DISCONNECTED event).
void RcTransport::fail_peer(int peer, rdmx_status_t why, const char *reason) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    if (!ep.served || ep.reported) return;
    close_peer(peer, why);
    ep.reported = true;
    sink_->on_peer_failed(peer, static_cast<rdmx_status_t>(ep.error), reason);
}

// The device is gone or broken: nothing on it can complete; every peer on it
// is lost, and the engine stops new operations.
void RcTransport::fail_device(rdmx_status_t why) {
    if (fatal_ != RDMX_OK) return;
    fatal_ = why;
    RDMX_ERROR("device %s failed: every operation on it now fails with \"%s\"", dev_.name(), rdmx_strerror(why));
    for (Endpoint &ep : eps_)
        if (ep.served && ep.state != ConnState::kFailed) {
            ep.error = why;
            ep.set_state(ConnState::kFailed);
            ep.invals.clear();
            if (ep.id) (void)vx::disconnect(ep.id.get());  // the peers hear of it now, not at our finalize
        }
    for (Endpoint &ep : eps_) ep.reported = true;
    live_.clear();
    sink_->on_fatal(why);
}

Endpoint *RcTransport::ep_of_qp(ibv_qp *qp) {
    if (qp == nullptr) return nullptr;
    const int peer = cm_.qpn_to_peer.find(qp->qp_num);
    return peer < 0 ? nullptr : &eps_[static_cast<size_t>(peer)];
}

int RcTransport::poll_batch() {
    ibv_wc wc[kPollBatch];
    int n = vx::poll_cq(iface_.cq(), kPollBatch, wc);
    for (int i = 0; i < n; ++i) {
        if (wr_kind(wc[i].wr_id) == kWrRecv) handle_recv(wc[i]);
        else if (held_peer_ >= 0 && wrid_peer(wc[i].wr_id) == static_cast<uint32_t>(held_peer_))
            hold_wc(wc[i]);
        else handle_send_wc(wc[i]);
    }
    return n;
}

// Completions already queued came from before the failure or disconnect (CM
// messages travel apart from data and may overtake it): deliver them first.
void RcTransport::drain_cq() {
    if (fatal_ != RDMX_OK) return;  // nothing on the device is trusted now
    while (poll_batch() > 0) {
    }
}

void RcTransport::set_cm_hooks() {
    if (hooks_set_) return;
    hooks_set_ = true;
    cm_.on_peer_lost = [this](int peer, rdmx_status_t why, const char *reason) {
        drain_cq();
        fail_peer(peer, why, reason);
    };
    cm_.on_device_removal = [this]() { fail_device(RDMX_ERR_DEVICE); };
}

int RcTransport::progress(bool housekeeping) {
    if (fatal_ != RDMX_OK) return housekeeping ? progress_failed() : 0;
    int n = poll_batch();
    if (n < 0) {
        fail_device(RDMX_ERR_DEVICE);
        return 0;
    }
    // Receive buffers go back in batches (recycle); a failed re-post is retried here.
    if (iface_.flush_due()) (void)flush_srq();
    if (forged_) report_forged();
    if (!owed_.empty()) return_credits();  // only peers granted something since the last look
    if (housekeeping) n += housekeep();
    return n;
}

// Only CM and async events (acked); the data path is left alone.
int RcTransport::progress_failed() {
    int n = cm_.poll_events();
    handle_async();
    return n;
}

// The event channels are read only when poll() says they hold something:
// the usual pass finds both empty, and learning that by reading each
// (rdma_get_cm_event, ibv_get_async_event: two system calls and about 600
// instructions in the libraries) cost more than the one poll.
int RcTransport::housekeep() {
    set_cm_hooks();
    pollfd pf[2] = {{cm_.fd(), POLLIN, 0}, {dev_.ctx()->async_fd, POLLIN, 0}};
    const bool polled = ::poll(pf, 2, 0) >= 0;  // on failure (EINTR, ENOMEM), read both as before
    int n = 0;
    if (!polled || pf[0].revents != 0) n = cm_.poll_events();
    else cm_.log_refusals_due();
    if (lazy_) {
        cm_.tick();
        max_inline_ = dev_.max_inline();  // the smallest any QP got so far (0 before the first)
    }
    if (!polled || pf[1].revents != 0 || vx::async_injected()) handle_async();
    else check_port_down();  // handle_async's timed part, due with or without events
    keepalive();
    return n;
}

// Flattened: an empty poll (most of a spinning wait's) is this call and the
// provider's poll_cq, with nothing between them.
RDMX_HOT_ENTRY int rc_progress(Rc *t, bool housekeeping) {
    return static_cast<RcTransport *>(t)->RcTransport::progress(housekeeping);
}

bool RcTransport::arm() {
    if (fatal_ == RDMX_OK) (void)iface_.arm_cq();
    return true;
}

int RcTransport::fds(pollfd *out, int max, bool data) {
    int n = 0;
    if (n < max) out[n++] = {cm_.fd(), POLLIN, 0};
    if (n < max) out[n++] = {dev_.ctx()->async_fd, POLLIN, 0};
    if (data && n < max) out[n++] = {iface_.channel()->fd, POLLIN, 0};
    return n;
}

void RcTransport::after_sleep() { iface_.drain_channel(); }

}  // namespace rdmx
