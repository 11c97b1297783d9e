// RC housekeeping: asynchronous device events (QP errors, port up and down,
// SRQ watermark, device failure), a port that stays down, and keepalive
// probes of silent peers.
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "transport/rc_transport.h"

namespace rdmx {

void RcTransport::on_qp_event(const ibv_async_event &ev) {
    Endpoint *ep = ep_of_qp(ev.element.qp);
    if (ep == nullptr) {
        RDMX_WARN("async: %s on %s for qp 0x%x, which no connection uses (already closed)",
                  ibv_event_type_str(ev.event_type), dev_.name(), ev.element.qp ? ev.element.qp->qp_num : 0);
        return;
    }
    // Access and request errors mean the peer sent what it must not; a fatal
    // QP error means the connection is gone.
    rdmx_status_t why = ev.event_type == IBV_EVENT_QP_FATAL ? RDMX_ERR_PEER_LOST : RDMX_ERR_PROTOCOL;
    RDMX_ERROR("async: %s on %s qp 0x%x (peer %d, %s): its operations fail with \"%s\"",
               ibv_event_type_str(ev.event_type), dev_.name(), ep->qp_num, ep->peer, ep->addr.c_str(),
               rdmx_strerror(why));
    drain_cq();
    fail_peer(ep->peer, why, ibv_event_type_str(ev.event_type));
}

void RcTransport::on_port_event(const ibv_async_event &ev) {
    if (ev.element.port_num != dev_.port()) return;
    if (ev.event_type == IBV_EVENT_PORT_ERR) {
        RDMX_ERROR("async: %s port %d went down (link down?): connections with data in flight fail when their "
                   "transport retries run out; if the port stays down %.0f s (RDMX_PEER_TIMEOUT) every connection "
                   "on it is declared lost", dev_.name(), ev.element.port_num, cfg_.peer_timeout);
        if (port_down_ns_ == 0) port_down_ns_ = now_ns();
    } else if (port_down_ns_ != 0) {
        RDMX_WARN("async: %s port %d is ACTIVE again after %.1f s", dev_.name(), ev.element.port_num,
                  static_cast<double>(now_ns() - port_down_ns_) * 1e-9);
        port_down_ns_ = 0;
    }
    if (ev.event_type == IBV_EVENT_PORT_ACTIVE) send_deferred_disconnects();
}

// A port that stays down past the peer timeout takes every connection on it.
void RcTransport::check_port_down() {
    if (port_down_ns_ == 0 || now_ns() - port_down_ns_ < static_cast<uint64_t>(cfg_.peer_timeout * 1e9)) return;
    ibv_port_attr pa{};
    int e = vx::query_port(dev_.ctx(), dev_.port(), &pa);
    port_down_ns_ = 0;
    if (e == 0 && pa.state == IBV_PORT_ACTIVE) {
        RDMX_WARN("async: %s port %d is ACTIVE again (its PORT_ACTIVE event was missed)", dev_.name(), dev_.port());
        return;
    }
    RDMX_ERROR("async: %s port %d still %s after %.0f s (RDMX_PEER_TIMEOUT): every connection on it is lost",
               dev_.name(), dev_.port(), e == 0 ? ibv_port_state_str(pa.state) : strerror(e), cfg_.peer_timeout);
    for (Endpoint &ep : eps_)
        if (ep.served && ep.state != ConnState::kFailed) fail_peer(ep.peer, RDMX_ERR_PEER_LOST, "port down");
}

// A connection can be half open: the peer failed it (its disconnect lost on
// a dead link, or its node gone without a word) while we, idle, never
// learned. A peer silent for half the peer timeout gets a credit write (it
// carries nothing new, so it is harmless). On a dead connection the
// transport should fail that write when its retries run out; where it does
// not (Soft-RoCE on Linux 6.1 retransmits forever to a bond's stale
// address), a probe waiting while its send queue completes nothing for
// RDMX_PEER_TIMEOUT loses the peer here. (Progress, not age: a probe queued
// behind a long rendezvous backlog is fine while that backlog moves.)
bool RcTransport::probe_unanswered(Endpoint &ep, uint64_t now) {
    if (ep.probe_ns == 0) return false;
    if (static_cast<int32_t>(ep.sq_done - ep.probe_seq) > 0) {  // acknowledged: the connection works
        ep.probe_ns = 0;
        return false;
    }
    if (ep.sq_done != ep.probe_done) {
        ep.probe_done = ep.sq_done;
        ep.probe_ns = now;
        return false;
    }
    if (now - ep.probe_ns < static_cast<uint64_t>(cfg_.peer_timeout * 1e9)) return false;
    RDMX_ERROR("keepalive: peer %d (%s) qp 0x%x: a keepalive write has waited %.0f s (RDMX_PEER_TIMEOUT) with "
               "nothing on the send queue completing (SQ %u posted, %u complete): the connection is dead below us",
               ep.peer, ep.addr.c_str(), ep.qp_num, cfg_.peer_timeout, ep.sq_posted, ep.sq_done);
    fail_peer(ep.peer, RDMX_ERR_PEER_LOST, "keepalive write unacknowledged");
    return true;
}

void RcTransport::keepalive() {
    // The cadence on the cycle counter: this runs at every housekeeping pass
    // (each millisecond), and clock_gettime is a system call where the clock
    // source has no fast path (an emulated guest). Deadlines below use now_ns.
    const uint64_t tick = fast_ns();
    if (tick < keepalive_ns_) return;
    keepalive_ns_ = tick + static_cast<uint64_t>(cfg_.peer_timeout * 0.5e9);
    const uint64_t now = now_ns();
    std::vector<Endpoint *> probed;
    // A copy: a peer lost here (and any the engine closes on hearing it)
    // leaves live_ while we walk. Twice per RDMX_PEER_TIMEOUT, so cheap.
    const std::vector<int> peers = live_;
    for (int peer : peers) {
        Endpoint &ep = eps_[static_cast<size_t>(peer)];
        if (!ep.usable() || probe_unanswered(ep, now)) continue;
        if (ep.rx_seq != ep.keepalive_seen) {
            ep.keepalive_seen = ep.rx_seq;
            ep.probe_ns = 0;
            continue;
        }
        if (ep.probe_ns != 0) continue;  // one probe at a time
        ep.rx_granted_told = ep.rx_granted - credits_;  // owed a full window: return_credits writes now
        owe(ep);
        RDMX_DEBUG("keepalive: peer %d (%s) silent for %.0f s or more: probing with a credit write (SQ %u free)",
                   ep.peer, ep.addr.c_str(), cfg_.peer_timeout * 0.5, ep.sq_free());
        probed.push_back(&ep);
    }
    if (probed.empty()) return;
    return_credits();
    for (Endpoint *ep : probed)
        if (ep->usable() && ep->rx_granted_told == ep->rx_granted) {  // posted: the newest WR
            ep->probe_seq = ep->sq_posted - 1;
            ep->probe_done = ep->sq_done;
            ep->probe_ns = now;
        }
}

void RcTransport::dispatch_async(const ibv_async_event &ev) {
    switch (ev.event_type) {
    case IBV_EVENT_COMM_EST:  // data beat ESTABLISHED: let the CM know
        if (Endpoint *ep = ep_of_qp(ev.element.qp)) cm_.notify_established(*ep);
        return;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR: return on_qp_event(ev);
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        RDMX_WARN("async: SRQ low watermark reached on %s (receives re-posted late?); re-armed", dev_.name());
        (void)flush_srq();  // whatever waits for a batch goes back now
        (void)iface_.arm_limit();
        return;
    case IBV_EVENT_CQ_ERR:  // overrun or a broken CQ: completions are lost
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        RDMX_ERROR("async: %s on %s: the device cannot be used any more (release it with rdmx_finalize)",
                   ibv_event_type_str(ev.event_type), dev_.name());
        return fail_device(RDMX_ERR_DEVICE);
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE: return on_port_event(ev);
    case IBV_EVENT_QP_LAST_WQE_REACHED:  // follows a QP error on an SRQ QP: nothing more to do
        RDMX_DEBUG("async: %s on %s", ibv_event_type_str(ev.event_type), dev_.name());
        return;
    default: RDMX_INFO("async: %s on %s", ibv_event_type_str(ev.event_type), dev_.name()); return;
    }
}

// Every event is acked right after it is handled: destroying a QP or CQ
// waits for the acks of the events that named it.
void RcTransport::handle_async() {
    ibv_async_event ev;
    while (vx::get_async_event(dev_.ctx(), &ev) == 0) {
        dispatch_async(ev);
        vx::ack_async_event(&ev);
    }
    check_port_down();
}

}  // namespace rdmx
