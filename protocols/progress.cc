// Progress: poll the CQ, dispatch completions, push queued sends, return
// credits, and look at CM and async events. A progress thread (default)
// spins for RDMX_SPIN_US, then blocks on the completion channel, the CM
// channel and the async fd, so many ranks on few cores still progress.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <future>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"
#include "protocols/placement_glue.h"

namespace rdmx {

// How long the progress thread sleeps while the application drives progress,
// and so how soon after the application's last call it takes over.
constexpr int kDelegatedSleepMs = 10;
// How often a spinning caller also reads CM and async events and runs the
// watchdogs: a disconnect or port event is noticed within a millisecond.
constexpr uint64_t kHousekeepingNs = 1'000'000;

static void release_ring(Ctx *c, Endpoint &ep, uint32_t upto, bool ok) {
    // RC completes in order: a completion for WR `upto` covers all before it.
    while (static_cast<int32_t>(upto - ep.sq_done) >= 0) {
        // The slot is free before anything below posts (a FIN, the next READ):
        // it may take exactly this slot.
        SqSlot &ref = ep.ring[ep.sq_done & (ep.sq_depth - 1)];
        const SqSlot s = ref;
        ref = SqSlot{};
        ++ep.sq_done;
        if (s.bounce >= 0) c->send_pool.put(static_cast<uint32_t>(s.bounce));
        if (s.cookie != 0) {  // counted per WR, whether or not its transfer still exists
            --ep.reads_in_flight;
            ep.read_progress_ns = now_ns();
            rndv_on_read_done(c, s.cookie, s.bytes, ok);
        }
        if (s.inv != 0) rndv_on_invalidated(c, ep, s.inv, ok);
    }
    // Control messages first: transfers under way finish before new work starts.
    if (!ep.ctrl_q.empty()) rndv_post_ctrl(c, ep);
    if (!ep.invals.empty()) rndv_post_invalidations(c, ep);
    // A transfer queued for SQ slots (eager sends filled the queue) waits for
    // these: no READ/WRITE of its own may be in flight to retry it.
    if (!ep.reads.empty()) rndv_issue_reads(c, ep);
}

// Control messages queued for want of a bounce buffer (any connection's
// completions return those), or of a slot on a ring that just drained.
static void post_waiting_ctrl(Ctx *c) {
    for (Endpoint &ep : c->eps)
        if (!ep.ctrl_q.empty()) rndv_post_ctrl(c, ep);
}

// What a failed work completion means for the operations on that QP.
rdmx_status_t wc_error_status(ibv_wc_status st) {
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

// A failed completion's opcode field is not valid; our ring says what the WR was.
static const char *wr_what(const Endpoint &ep, uint32_t seq) {
    const SqSlot &s = ep.ring[seq & (ep.sq_depth - 1)];
    return s.cookie != 0 ? "RDMA READ (rendezvous)" : s.bounce >= 0 ? "SEND" : "inline SEND or credit WRITE";
}

void handle_send_wc(Ctx *c, const ibv_wc &wc) {
    uint32_t peer = wrid_peer(wc.wr_id);
    if (peer >= c->eps.size()) return;
    Endpoint &ep = c->eps[peer];
    bool ok = wc.status == IBV_WC_SUCCESS;
    if (!ok && ep.state != ConnState::kFailed) {
        const rdmx_status_t why = wc_error_status(wc.status);
        // Flushes follow the first error on a QP: only the first is news.
        if (wc.status != IBV_WC_WR_FLUSH_ERR)
            RDMX_ERROR("send: completion error %s (status %d, vendor_err 0x%x, opcode %d, %s) to peer %d (%s) "
                       "qp 0x%x on %s: its operations fail with \"%s\"", ibv_wc_status_str(wc.status), wc.status,
                       wc.vendor_err, wc.opcode, wr_what(ep, wrid_seq(wc.wr_id)), ep.peer, ep.addr.c_str(),
                       ep.qp_num, c->dev.name(), rdmx_strerror(why));
        if (why == RDMX_ERR_DEVICE) {
            release_ring(c, ep, wrid_seq(wc.wr_id), false);
            return fail_device(c, why);
        }
        ep.error = why;
        fail_peer(c, ep.peer, why, ibv_wc_status_str(wc.status));
    }
    release_ring(c, ep, wrid_seq(wc.wr_id), ok);
}

static bool port_active(Ctx *c) {
    ibv_port_attr pa{};
    return vx::query_port(c->dev.ctx(), c->dev.port(), &pa) == 0 && pa.state == IBV_PORT_ACTIVE;
}

// Tells a lost peer's CM (DREQ), except through a port that is down: a
// management datagram sent into a downed Soft-RoCE port can stay pending in
// the kernel forever, and rdma_destroy_id then never returns. The DREQ goes
// out when the port is back (or at finalize).
static void disconnect_lost(Ctx *c, Endpoint &ep) {
    if (c->fatal.load(std::memory_order_relaxed) == 0 && !port_active(c)) {
        ep.disconnect_deferred = true;
        return;
    }
    (void)vx::disconnect(ep.id.get());
}

static void send_deferred_disconnects(Ctx *c) {
    for (Endpoint &ep : c->eps)
        if (ep.disconnect_deferred) {
            ep.disconnect_deferred = false;
            if (ep.id) (void)vx::disconnect(ep.id.get());
        }
}

void fail_peer(Ctx *c, int peer, rdmx_status_t why, const char *reason) {
    Endpoint &ep = c->eps[static_cast<size_t>(peer)];
    if (ep.error == 0) ep.error = why;
    if (ep.state != ConnState::kFailed) {
        RDMX_WARN("peer %d (%s) lost: %s; its operations fail with \"%s\"", peer, ep.addr.c_str(), reason,
                  rdmx_strerror(static_cast<rdmx_status_t>(ep.error)));
        ep.set_state(ConnState::kFailed);
        if (ep.id) disconnect_lost(c, ep);
        note_change(c);
    }
    why = static_cast<rdmx_status_t>(ep.error);  // the first cause names every later failure
    while (ListNode *n = ep.pending.pop_front()) req_complete(c, container_of<rdmx_request, &rdmx_request::link>(n), why);
    rndv_fail_peer(c, peer, why);
    // Receives naming this peer can never match now; wildcards stay posted.
    c->matcher.for_each_posted([&](PostedEntry *pe) {
        if (pe->bits.source == peer) {
            c->matcher.cancel(pe);
            req_complete(c, static_cast<rdmx_request *>(pe), why);
        }
    });
}

// The device is gone or broken: nothing on it can complete, and no new
// operation starts (the API returns c->fatal). Pending requests, wildcard
// receives and sends to ourselves waiting for a receive fail now, so no
// wait can hang.
void fail_device(Ctx *c, rdmx_status_t why) {
    if (c->fatal.exchange(why) != 0) return;
    RDMX_ERROR("device %s failed: every operation on it now fails with \"%s\"", c->dev.name(), rdmx_strerror(why));
    for (Endpoint &ep : c->eps) {
        if (ep.peer == c->rank) continue;
        if (ep.state != ConnState::kFailed) ep.error = why;
        fail_peer(c, ep.peer, why, "device failure");
    }
    c->stalled.clear();  // their queues were failed above
    c->matcher.for_each_posted([&](PostedEntry *pe) {
        c->matcher.cancel(pe);
        req_complete(c, static_cast<rdmx_request *>(pe), why);
    });
    for (uint8_t s = 0; s < kNumSpaces; ++s) {
        while (UnexpEntry *ue = c->matcher.find_unexpected({s, c->rank, kAnyTag}, true)) {
            auto *u = static_cast<Unexp *>(ue);
            if (u->self_send != nullptr) req_complete(c, u->self_send, why);
            release_unexp(c, u);
        }
    }
}

static Endpoint *ep_of_qp(Ctx *c, ibv_qp *qp) {
    if (qp == nullptr) return nullptr;
    auto it = c->cm.qpn_to_peer.find(qp->qp_num);
    return it == c->cm.qpn_to_peer.end() ? nullptr : &c->eps[static_cast<size_t>(it->second)];
}

// Completions already queued came from before the failure or disconnect (CM
// messages travel apart from data and may overtake it): deliver them first.
static void drain_cq(Ctx *c);

static void on_qp_event(Ctx *c, const ibv_async_event &ev) {
    Endpoint *ep = ep_of_qp(c, ev.element.qp);
    if (ep == nullptr) {
        RDMX_WARN("async: %s on %s for qp 0x%x, which no connection uses (already closed)",
                  ibv_event_type_str(ev.event_type), c->dev.name(), ev.element.qp ? ev.element.qp->qp_num : 0);
        return;
    }
    // Access and request errors mean the peer sent what it must not; a fatal
    // QP error means the connection is gone.
    rdmx_status_t why = ev.event_type == IBV_EVENT_QP_FATAL ? RDMX_ERR_PEER_LOST : RDMX_ERR_PROTOCOL;
    RDMX_ERROR("async: %s on %s qp 0x%x (peer %d, %s): its operations fail with \"%s\"",
               ibv_event_type_str(ev.event_type), c->dev.name(), ep->qp_num, ep->peer, ep->addr.c_str(),
               rdmx_strerror(why));
    drain_cq(c);
    fail_peer(c, ep->peer, why, ibv_event_type_str(ev.event_type));
}

static void on_port_event(Ctx *c, const ibv_async_event &ev) {
    if (ev.element.port_num != c->dev.port()) return;
    if (ev.event_type == IBV_EVENT_PORT_ERR) {
        RDMX_ERROR("async: %s port %d went down (link down?): connections with data in flight fail when their "
                   "transport retries run out; if the port stays down %.0f s (RDMX_PEER_TIMEOUT) every connection "
                   "on it is declared lost", c->dev.name(), ev.element.port_num, c->cfg.peer_timeout);
        if (c->port_down_ns == 0) c->port_down_ns = now_ns();
    } else if (c->port_down_ns != 0) {
        RDMX_WARN("async: %s port %d is ACTIVE again after %.1f s", c->dev.name(), ev.element.port_num,
                  static_cast<double>(now_ns() - c->port_down_ns) * 1e-9);
        c->port_down_ns = 0;
    }
    if (ev.event_type == IBV_EVENT_PORT_ACTIVE) send_deferred_disconnects(c);
}

// A port that stays down past the peer timeout takes every connection on it.
static void check_port_down(Ctx *c) {
    if (c->port_down_ns == 0 || now_ns() - c->port_down_ns < static_cast<uint64_t>(c->cfg.peer_timeout * 1e9))
        return;
    ibv_port_attr pa{};
    int e = vx::query_port(c->dev.ctx(), c->dev.port(), &pa);
    c->port_down_ns = 0;
    if (e == 0 && pa.state == IBV_PORT_ACTIVE) {
        RDMX_WARN("async: %s port %d is ACTIVE again (its PORT_ACTIVE event was missed)", c->dev.name(),
                  c->dev.port());
        return;
    }
    RDMX_ERROR("async: %s port %d still %s after %.0f s (RDMX_PEER_TIMEOUT): every connection on it is lost",
               c->dev.name(), c->dev.port(), e == 0 ? ibv_port_state_str(pa.state) : strerror(e), c->cfg.peer_timeout);
    for (Endpoint &ep : c->eps)
        if (ep.peer != c->rank && ep.state != ConnState::kFailed) fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "port down");
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
static bool probe_unanswered(Ctx *c, Endpoint &ep, uint64_t now) {
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
    if (now - ep.probe_ns < static_cast<uint64_t>(c->cfg.peer_timeout * 1e9)) return false;
    RDMX_ERROR("keepalive: peer %d (%s) qp 0x%x: a keepalive write has waited %.0f s (RDMX_PEER_TIMEOUT) with "
               "nothing on the send queue completing (SQ %u posted, %u complete): the connection is dead below us",
               ep.peer, ep.addr.c_str(), ep.qp_num, c->cfg.peer_timeout, ep.sq_posted, ep.sq_done);
    fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "keepalive write unacknowledged");
    return true;
}

static void keepalive(Ctx *c) {
    const uint64_t now = now_ns();
    if (now < c->keepalive_ns) return;
    c->keepalive_ns = now + static_cast<uint64_t>(c->cfg.peer_timeout * 0.5e9);
    c->keepalive_seen.resize(c->eps.size(), ~0u);
    std::vector<Endpoint *> probed;
    for (Endpoint &ep : c->eps) {
        uint32_t &seen = c->keepalive_seen[static_cast<size_t>(ep.peer)];
        if (ep.peer == c->rank || !ep.usable() || probe_unanswered(c, ep, now)) continue;
        if (ep.rx_seq != seen) {
            seen = ep.rx_seq;
            ep.probe_ns = 0;
            continue;
        }
        if (ep.probe_ns != 0) continue;  // one probe at a time
        ep.rx_granted_told = ep.rx_granted - c->credits;  // owed a full window: return_credits writes now
        RDMX_DEBUG("keepalive: peer %d (%s) silent for %.0f s or more: probing with a credit write (SQ %u free)",
                   ep.peer, ep.addr.c_str(), c->cfg.peer_timeout * 0.5, ep.sq_free());
        probed.push_back(&ep);
    }
    if (probed.empty()) return;
    c->credits_dirty = true;
    return_credits(c);
    for (Endpoint *ep : probed)
        if (ep->usable() && ep->rx_granted_told == ep->rx_granted) {  // posted: the newest WR
            ep->probe_seq = ep->sq_posted - 1;
            ep->probe_done = ep->sq_done;
            ep->probe_ns = now;
        }
}

static void dispatch_async(Ctx *c, const ibv_async_event &ev) {
    switch (ev.event_type) {
    case IBV_EVENT_COMM_EST:  // data beat ESTABLISHED: let the CM know
        if (Endpoint *ep = ep_of_qp(c, ev.element.qp)) c->cm.notify_established(*ep);
        return;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR: return on_qp_event(c, ev);
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        RDMX_WARN("async: SRQ low watermark reached on %s (receives re-posted late?); re-armed", c->dev.name());
        (void)c->iface.arm_limit();
        return;
    case IBV_EVENT_CQ_ERR:  // overrun or a broken CQ: completions are lost
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_DEVICE_FATAL:
        RDMX_ERROR("async: %s on %s: the device cannot be used any more (release it with rdmx_finalize)",
                   ibv_event_type_str(ev.event_type), c->dev.name());
        return fail_device(c, RDMX_ERR_DEVICE);
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE: return on_port_event(c, ev);
    case IBV_EVENT_QP_LAST_WQE_REACHED:  // follows a QP error on an SRQ QP: nothing more to do
        RDMX_DEBUG("async: %s on %s", ibv_event_type_str(ev.event_type), c->dev.name());
        return;
    default: RDMX_INFO("async: %s on %s", ibv_event_type_str(ev.event_type), c->dev.name()); return;
    }
}

// Every event is acked right after it is handled: destroying a QP or CQ
// waits for the acks of the events that named it.
static void handle_async(Ctx *c) {
    ibv_async_event ev;
    while (vx::get_async_event(c->dev.ctx(), &ev) == 0) {
        dispatch_async(c, ev);
        vx::ack_async_event(&ev);
    }
    check_port_down(c);
}

// Polls one batch of completions and dispatches them; negative on CQ failure.
static int poll_batch(Ctx *c) {
    ibv_wc wc[32];
    int n = vx::poll_cq(c->iface.cq(), 32, wc);
    for (int i = 0; i < n; ++i) {
        if (wr_kind(wc[i].wr_id) == kWrRecv) handle_recv(c, wc[i]);
        else if (c->held_peer >= 0 && wrid_peer(wc[i].wr_id) == static_cast<uint32_t>(c->held_peer))
            c->held_wcs.push_back(wc[i]);  // test hook: a slow flush
        else handle_send_wc(c, wc[i]);
    }
    return n;
}

static void drain_cq(Ctx *c) {
    if (c->fatal.load(std::memory_order_relaxed) != 0) return;  // nothing on the device is trusted now
    while (poll_batch(c) > 0) {
    }
}

static void set_peer_lost_hooks(Ctx *c) {
    c->cm.on_peer_lost = [c](int peer, rdmx_status_t why) {
        drain_cq(c);
        fail_peer(c, peer, why, "disconnected");
    };
    c->cm.on_device_removal = [c]() { fail_device(c, RDMX_ERR_DEVICE); };
}

// After a device failure only CM and async events are read (and acked);
// the data path of a removed or broken device is left alone.
static int progress_fatal(Ctx *c) {
    if (!c->cm.on_peer_lost) set_peer_lost_hooks(c);
    int n = c->cm.poll_events();
    handle_async(c);
    return n;
}

int progress_locked(Ctx *c, bool housekeeping) {
    if (!c->transport || c->closed) return 0;
    if (c->fatal.load(std::memory_order_relaxed) != 0) return progress_fatal(c);
    int n = poll_batch(c);
    if (n < 0) {
        fail_device(c, RDMX_ERR_DEVICE);
        return 0;
    }
    int total = n;
    (void)c->iface.flush();
    if (c->ctrl_waiting > 0) post_waiting_ctrl(c);
    if (!c->stalled.empty()) kick_stalled(c);
    return_credits(c);
    // CM and async events (each a read(2) that mostly finds nothing), the
    // watchdogs: every kHousekeepingNs, or when about to sleep. Not on every
    // idle poll: a waiting caller spins through here, and a system call per
    // spin (several microseconds emulated) showed up in small-message
    // latency; every 64th poll still cost 2-3% of a spinning wait.
    if (((++c->poll_calls & 15) == 0 && fast_ns() >= c->housekeeping_ns) || housekeeping) {
        c->housekeeping_ns = fast_ns() + kHousekeepingNs;
        if (!c->cm.on_peer_lost) set_peer_lost_hooks(c);
        total += c->cm.poll_events();
        handle_async(c);
        rndv_watchdog(c);
        keepalive(c);
    }
    return total;
}

void notify_waiters(Ctx *c) {
    std::lock_guard<std::mutex> g(c->wait_mu);
    c->wait_cv.notify_all();
}

// With the engine lock held: progress, then release the lock and wake the
// waiters whose requests completed. *stalled (if given): sends were queued.
static int progress_unlock(Ctx *c, bool housekeeping, bool *stalled = nullptr) {
    int n = progress_locked(c, housekeeping);
    if (stalled != nullptr) *stalled = !c->stalled.empty();
    bool notify = c->notify_pending;
    c->notify_pending = false;
    c->lock.unlock();
    log_flush_deferred();  // lines found under the lock (refused connect requests), written outside it
    if (notify) notify_waiters(c);
    return n;
}

static void drain_wake_fd(Ctx *c) {
    uint64_t v;
    ssize_t r = read(c->wake_fd, &v, sizeof(v));
    (void)r;
}

int progress(Ctx *c, bool block_ok) {
    if (!block_ok) {
        if (!c->lock.try_lock()) return 0;
    } else {
        c->lock.lock();
    }
    return progress_unlock(c, false);
}

// Arms the CQ, re-checks (closing the race), then sleeps on the fds: the
// completion channel unless `cq` is false, the CM and async fds, and the
// wake-up eventfd only for the progress thread (`wake`), whose stop signal it
// carries.
static void block_on_fds(Ctx *c, int timeout_ms, bool cq, bool wake) {
    if (!c->transport) {
        pollfd wfd{c->wake_fd, POLLIN, 0};
        (void)poll(&wfd, 1, timeout_ms);
        return;
    }
    c->lock.lock();
    if (cq && c->fatal.load(std::memory_order_relaxed) == 0) (void)c->iface.arm_cq();
    bool stalled = false;
    if (progress_unlock(c, true, &stalled) > 0) return;
    pollfd fds[4];
    nfds_t nfds = 0;
    fds[nfds++] = {c->cm.fd(), POLLIN, 0};
    fds[nfds++] = {c->dev.ctx()->async_fd, POLLIN, 0};
    if (cq) fds[nfds++] = {c->iface.channel()->fd, POLLIN, 0};
    const bool with_wake = wake && c->wake_fd >= 0;
    if (with_wake) fds[nfds++] = {c->wake_fd, POLLIN, 0};
    (void)poll(fds, nfds, stalled ? 1 : timeout_ms);
    if (cq) c->iface.drain_channel();
    if (with_wake && (fds[nfds - 1].revents & POLLIN)) drain_wake_fd(c);
}

// Thread mode, after the spin: one waiting thread sleeps on the completion
// channel and drives progress itself when it fires (one wake-up per
// completion instead of the progress thread's followed by this thread's);
// any other waiter sleeps on the condition variable, woken by whoever
// completes a request while it is registered.
template <class Done> static void sleep_until(Ctx *c, Done done) {
    bool expected = false;
    if (c->cq_waiter.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        while (!done()) block_on_fds(c, 1, true, false);
        c->cq_waiter.store(false, std::memory_order_release);
        return;
    }
    c->waiters.fetch_add(1);
    {
        std::unique_lock<std::mutex> lk(c->wait_mu);
        c->wait_cv.wait_for(lk, std::chrono::milliseconds(1), done);
    }
    c->waiters.fetch_sub(1);
    progress(c, false);
}

// Work that goes on without the application calling in: queued sends,
// rendezvous transfers, receives waiting for data.
static bool background_work(Ctx *c) {
    std::lock_guard<SpinLock> g(c->lock);
    return !c->stalled.empty() || !c->rndv_sends.empty() || !c->rndv_xfers.empty() || !c->rndv_puts.empty() ||
           !c->rndv_invs.empty() || c->ctrl_waiting > 0 || c->matcher.posted_count() > 0;
}

WaitScope::WaitScope(Ctx *ctx) : c(ctx) {
    note_app_call(c);
    c->app_waiting.fetch_add(1, std::memory_order_acq_rel);
}

// The last waiter leaving hands progress back to the progress thread at once
// when something is still in flight (it may be asleep for kDelegatedSleepMs).
WaitScope::~WaitScope() {
    if (c->app_waiting.fetch_sub(1, std::memory_order_acq_rel) != 1 || c->wake_fd < 0 ||
        c->cfg.progress != RDMX_PROGRESS_THREAD || !background_work(c))
        return;
    uint64_t one = 1;
    ssize_t w = write(c->wake_fd, &one, sizeof(one));
    (void)w;
}

// Spins (driving progress) for RDMX_SPIN_US, then sleeps; never returns
// before done() holds. done() must load with seq_cst (see req_complete).
// The spin is timed with fast_ns() (the TSC), every 16th spin: where the
// clocksource is not the TSC (HPET in an emulated guest) clock_gettime is a
// system call, and reading it while spinning took an eighth of the wait.
template <class Done> static void wait_until(Ctx *c, Done done) {
    if (done()) return;
    const uint64_t spin_ns = static_cast<uint64_t>(c->cfg.spin_us) * 1000ull;
    const uint64_t start = fast_ns();
    const bool caller = c->cfg.progress == RDMX_PROGRESS_CALLER;
    WaitScope waiting(c);
    bool spinning = spin_ns > 0;
    for (unsigned spins = 1; !done(); ++spins) {
        if (spinning) {
            progress(c, false);
            if ((spins & 15) == 0 && fast_ns() - start >= spin_ns) spinning = false;
        } else if (caller) {
            block_on_fds(c, 1, true, false);
        } else {
            sleep_until(c, done);
        }
    }
}

void wait_request(Ctx *c, rdmx_request *r) {
    wait_until(c, [r] { return r->done.load(std::memory_order_seq_cst) != 0; });
}

void wait_change(Ctx *c, uint64_t seen) {
    wait_until(c, [c, seen] { return c->change_epoch.load(std::memory_order_seq_cst) != seen; });
}

void wait_any(Ctx *c, rdmx_request *const *reqs, size_t n) {
    wait_until(c, [reqs, n] {
        for (size_t i = 0; i < n; ++i)
            if (reqs[i] != nullptr && reqs[i]->done.load(std::memory_order_seq_cst) != 0) return true;
        return false;
    });
}

// While the application drives progress (a thread waits, or it called in
// during the last sleep): sleep on the CM, async and wake-up fds, and take
// the engine lock only when the CM or async fd fired. Polling the CQ here
// too would make this thread run beside the application's whenever
// completions flow; on two emulated CPUs with two ranks that cost a sixth of
// the 8-byte message rate (docs/design/protocols.md).
// Returns true when kicked through the wake-up fd (see WaitScope): work is in
// flight and nobody waits, so this thread should take over at once.
static bool sleep_delegated(Ctx *c) {
    if (!c->transport) {
        block_on_fds(c, 1, false, true);
        return false;
    }
    pollfd fds[3] = {{c->cm.fd(), POLLIN, 0}, {c->dev.ctx()->async_fd, POLLIN, 0}, {c->wake_fd, POLLIN, 0}};
    const nfds_t nfds = c->wake_fd >= 0 ? 3 : 2;
    if (poll(fds, nfds, kDelegatedSleepMs) <= 0) return false;
    const bool kicked = nfds == 3 && (fds[2].revents & POLLIN);
    if (kicked) drain_wake_fd(c);
    if ((fds[0].revents | fds[1].revents) & POLLIN) {
        c->lock.lock();
        (void)progress_unlock(c, true);
    }
    return kicked;
}

// One thread per process drives progress at a time: two per rank (the
// application's and this one) on a busy or emulated machine fight for the
// CPUs the transport itself needs (on Soft-RoCE, the kernel's packet work).
// So while the application drives progress (it waits, or has called in
// during the last kDelegatedSleepMs) this thread sleeps on the CM, async and
// wake-up fds only (sleep_delegated). It takes over when a whole sleep
// passes without a call (the application computes) or when the last waiter
// leaves work in flight (kick); then it spins a tenth of RDMX_SPIN_US after
// its last completion and sleeps on every fd, the completion channel too.
static void progress_main(Ctx *c, std::promise<void> *placed) {
    apply_progress_placement(c);
    placed->set_value();
    const uint64_t spin_ns = static_cast<uint64_t>(c->cfg.spin_us) * 100ull;
    uint64_t last_busy = fast_ns();
    uint32_t seen = c->app_calls.load(std::memory_order_relaxed);
    unsigned spins = 0;
    while (!c->stop.load(std::memory_order_acquire)) {
        const uint32_t calls = c->app_calls.load(std::memory_order_relaxed);
        if (c->app_waiting.load(std::memory_order_acquire) > 0 || calls != seen) {
            seen = calls;
            const bool kicked = sleep_delegated(c);
            if (kicked) seen = c->app_calls.load(std::memory_order_relaxed);
            last_busy = fast_ns();
            continue;
        }
        if (progress(c, false) > 0) {
            last_busy = fast_ns();
            continue;
        }
        if ((++spins & 15) != 0 || fast_ns() - last_busy < spin_ns) {
            __builtin_ia32_pause();
            continue;
        }
        block_on_fds(c, 100, true, true);
        last_busy = fast_ns();
    }
}

void start_progress_thread(Ctx *c) {
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->stop.store(false);
    if (c->cfg.progress != RDMX_PROGRESS_THREAD) return;
    // Placement loads the machine's topology (hundreds of milliseconds of
    // CPU under emulation): done before rdmx_init returns, so it does not
    // compete with the application's first messages. (It did: a 20-iteration
    // warm-up left 8-byte latency 3x what it was after 3,000.)
    std::promise<void> placed;
    std::future<void> done = placed.get_future();
    c->progress_thread = std::thread(progress_main, c, &placed);
    done.wait();
}

void stop_progress_thread(Ctx *c) {
    c->stop.store(true, std::memory_order_release);
    if (c->wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->wake_fd, &one, sizeof(one));
        (void)w;
    }
    if (c->progress_thread.joinable()) c->progress_thread.join();
    // The eventfd stays open until the context is freed: threads still
    // waiting while finalize runs read wake_fd (see ~rdmx_context).
}

}  // namespace rdmx
