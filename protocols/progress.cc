// Progress: poll the CQ, dispatch completions, push queued sends, return
// credits, and look at CM and async events. A progress thread (default)
// spins for RDMX_SPIN_US, then blocks on the completion channel, the CM
// channel and the async fd, so many ranks on few cores still progress.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"
#include "protocols/placement_glue.h"

namespace rdmx {

static void release_ring(Ctx *c, Endpoint &ep, uint32_t upto, bool ok) {
    // RC completes in order: a completion for WR `upto` covers all before it.
    while (static_cast<int32_t>(upto - ep.sq_done) >= 0) {
        SqSlot &s = ep.ring[ep.sq_done & (ep.sq_depth - 1)];
        if (s.bounce >= 0) c->send_pool.put(static_cast<uint32_t>(s.bounce));
        if (s.cookie != 0) rndv_on_read_done(c, s.cookie, s.bytes, ok);
        s = SqSlot{};
        ++ep.sq_done;
    }
}

void handle_send_wc(Ctx *c, const ibv_wc &wc) {
    uint32_t peer = wrid_peer(wc.wr_id);
    if (peer >= c->eps.size()) return;
    Endpoint &ep = c->eps[peer];
    bool ok = wc.status == IBV_WC_SUCCESS;
    if (!ok && ep.state != ConnState::kFailed && wc.status != IBV_WC_WR_FLUSH_ERR) {
        RDMX_ERROR("send: completion error %s (status %d, vendor_err 0x%x, opcode %d) to peer %d (%s) qp 0x%x",
                   ibv_wc_status_str(wc.status), wc.status, wc.vendor_err, wc.opcode, ep.peer, ep.addr.c_str(),
                   ep.qp_num);
    }
    if (!ok && ep.state != ConnState::kFailed) {
        rdmx_status_t why = wc.status == IBV_WC_REM_ACCESS_ERR || wc.status == IBV_WC_LOC_PROT_ERR
                                ? RDMX_ERR_PROTOCOL
                                : RDMX_ERR_PEER_LOST;
        ep.error = why;
        ep.set_state(ConnState::kFailed);
        fail_peer(c, ep.peer, why, ibv_wc_status_str(wc.status));
    }
    release_ring(c, ep, wrid_seq(wc.wr_id), ok);
}

void fail_peer(Ctx *c, int peer, rdmx_status_t why, const char *reason) {
    Endpoint &ep = c->eps[static_cast<size_t>(peer)];
    if (ep.error == 0) ep.error = why;
    if (ep.state != ConnState::kFailed) {
        RDMX_WARN("peer %d (%s) lost: %s; its operations fail with \"%s\"", peer, ep.addr.c_str(), reason,
                  rdmx_strerror(why));
        ep.set_state(ConnState::kFailed);
        if (ep.id) (void)vx::disconnect(ep.id.get());
    }
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

void fail_device(Ctx *c, rdmx_status_t why) {
    if (c->fatal.exchange(why) != 0) return;
    RDMX_ERROR("device %s failed: every operation on it now fails with \"%s\"", c->dev.name(), rdmx_strerror(why));
    for (Endpoint &ep : c->eps)
        if (ep.peer != c->rank) fail_peer(c, ep.peer, why, "device failure");
    c->matcher.for_each_posted([&](PostedEntry *pe) {
        c->matcher.cancel(pe);
        req_complete(c, static_cast<rdmx_request *>(pe), why);
    });
}

static Endpoint *ep_of_qp(Ctx *c, ibv_qp *qp) {
    if (qp == nullptr) return nullptr;
    auto it = c->cm.qpn_to_peer.find(qp->qp_num);
    return it == c->cm.qpn_to_peer.end() ? nullptr : &c->eps[static_cast<size_t>(it->second)];
}

static void handle_async(Ctx *c) {
    ibv_async_event ev;
    while (vx::get_async_event(c->dev.ctx(), &ev) == 0) {
        Endpoint *ep = nullptr;
        switch (ev.event_type) {
        case IBV_EVENT_COMM_EST:  // data beat ESTABLISHED: let the CM know
            if ((ep = ep_of_qp(c, ev.element.qp)) != nullptr) c->cm.notify_established(*ep);
            break;
        case IBV_EVENT_QP_FATAL:
        case IBV_EVENT_QP_REQ_ERR:
        case IBV_EVENT_QP_ACCESS_ERR:
            if ((ep = ep_of_qp(c, ev.element.qp)) != nullptr)
                fail_peer(c, ep->peer, RDMX_ERR_PEER_LOST, ibv_event_type_str(ev.event_type));
            break;
        case IBV_EVENT_SRQ_LIMIT_REACHED:
            RDMX_WARN("async: SRQ low watermark reached on %s (receives re-posted late?); re-armed", c->dev.name());
            (void)c->iface.arm_limit();
            break;
        case IBV_EVENT_CQ_ERR:
        case IBV_EVENT_DEVICE_FATAL: fail_device(c, RDMX_ERR_DEVICE); break;
        case IBV_EVENT_PORT_ERR:
            RDMX_ERROR("async: %s port %d went down (link down?): connections fail as their QPs time out",
                       c->dev.name(), ev.element.port_num);
            break;
        default: RDMX_INFO("async: %s on %s", ibv_event_type_str(ev.event_type), c->dev.name()); break;
        }
        vx::ack_async_event(&ev);
    }
}

// Polls one batch of completions and dispatches them; negative on CQ failure.
static int poll_batch(Ctx *c) {
    ibv_wc wc[32];
    int n = vx::poll_cq(c->iface.cq(), 32, wc);
    for (int i = 0; i < n; ++i) {
        if (wr_kind(wc[i].wr_id) == kWrRecv) handle_recv(c, wc[i]);
        else handle_send_wc(c, wc[i]);
    }
    return n;
}

// Completions already queued came from before the disconnect (CM messages
// travel apart from data and may overtake it): deliver them first.
static void drain_cq(Ctx *c) {
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

int progress_locked(Ctx *c) {
    if (!c->transport) return 0;
    int n = poll_batch(c);
    if (n < 0) {
        fail_device(c, RDMX_ERR_DEVICE);
        return 0;
    }
    int total = n;
    (void)c->iface.flush();
    if (!c->stalled.empty()) kick_stalled(c);
    return_credits(c);
    if ((++c->poll_calls & 63) == 0 || n == 0) {
        if (!c->cm.on_peer_lost) set_peer_lost_hooks(c);
        total += c->cm.poll_events();
        handle_async(c);
    }
    return total;
}

void notify_waiters(Ctx *c) {
    std::lock_guard<std::mutex> g(c->wait_mu);
    c->wait_cv.notify_all();
}

int progress(Ctx *c, bool block_ok) {
    if (!block_ok) {
        if (!c->lock.try_lock()) return 0;
    } else {
        c->lock.lock();
    }
    int n = progress_locked(c);
    bool notify = c->notify_pending;
    c->notify_pending = false;
    c->lock.unlock();
    if (notify) notify_waiters(c);
    return n;
}

// Arms the CQ, re-checks (closing the race), then sleeps on every fd.
static void block_on_fds(Ctx *c, int timeout_ms) {
    if (!c->transport) {
        pollfd wfd{c->wake_fd, POLLIN, 0};
        (void)poll(&wfd, 1, timeout_ms);
        return;
    }
    c->lock.lock();
    (void)c->iface.arm_cq();
    int n = progress_locked(c);
    bool stalled = !c->stalled.empty();
    bool notify = c->notify_pending;
    c->notify_pending = false;
    c->lock.unlock();
    if (notify) notify_waiters(c);
    if (n > 0) return;
    pollfd fds[4] = {{c->iface.channel()->fd, POLLIN, 0}, {c->cm.fd(), POLLIN, 0},
                     {c->dev.ctx()->async_fd, POLLIN, 0}, {c->wake_fd, POLLIN, 0}};
    (void)poll(fds, c->wake_fd >= 0 ? 4 : 3, stalled ? 1 : timeout_ms);
    c->iface.drain_channel();
    if (fds[3].revents & POLLIN) {
        uint64_t v;
        ssize_t r = read(c->wake_fd, &v, sizeof(v));
        (void)r;
    }
}

void wait_request(Ctx *c, rdmx_request *r) {
    const uint64_t spin_ns = static_cast<uint64_t>(c->cfg.spin_us) * 1000ull;
    uint64_t start = now_ns();
    const bool caller = c->cfg.progress == RDMX_PROGRESS_CALLER;
    while (r->done.load(std::memory_order_acquire) == 0) {
        if (now_ns() - start < spin_ns) {
            progress(c, false);
            continue;
        }
        if (caller) {
            block_on_fds(c, 1);
            continue;
        }
        c->waiters.fetch_add(1);
        {
            std::unique_lock<std::mutex> lk(c->wait_mu);
            c->wait_cv.wait_for(lk, std::chrono::milliseconds(1),
                                [&] { return r->done.load(std::memory_order_seq_cst) != 0; });
        }
        c->waiters.fetch_sub(1);
        progress(c, false);
    }
}

static void progress_main(Ctx *c) {
    apply_progress_placement(c);
    const uint64_t spin_ns = static_cast<uint64_t>(c->cfg.spin_us) * 1000ull;
    uint64_t last_busy = now_ns();
    while (!c->stop.load(std::memory_order_acquire)) {
        if (progress(c, false) > 0) {
            last_busy = now_ns();
            continue;
        }
        if (now_ns() - last_busy < spin_ns) {
            __builtin_ia32_pause();
            continue;
        }
        block_on_fds(c, 100);
        last_busy = now_ns();
    }
}

void start_progress_thread(Ctx *c) {
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->stop.store(false);
    if (c->cfg.progress == RDMX_PROGRESS_THREAD) c->progress_thread = std::thread(progress_main, c);
}

void stop_progress_thread(Ctx *c) {
    c->stop.store(true, std::memory_order_release);
    if (c->wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->wake_fd, &one, sizeof(one));
        (void)w;
    }
    if (c->progress_thread.joinable()) c->progress_thread.join();
    if (c->wake_fd >= 0) close(c->wake_fd);
    c->wake_fd = -1;
}

}  // namespace rdmx
