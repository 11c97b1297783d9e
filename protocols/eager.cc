// Eager protocol and the shared send machinery: small messages go as one
// message on the peer's lane (copied or inlined by the transport, so the
// send completes at post); larger ones start a rendezvous. Sends to a peer
// whose lane has no room wait in order on that peer.
#include <cstring>
#include <mutex>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

// ---- request pool ----------------------------------------------------------

// Request memory is never freed: a finalized context's chunks wait here for
// the next context. So a stale handle (used after finalize, or waited twice)
// always points at a readable request marked `pooled`, and the API reports
// it instead of reading freed memory.
static std::mutex g_retired_mu;
static std::vector<std::unique_ptr<rdmx_request[]>> g_retired;

static std::unique_ptr<rdmx_request[]> take_chunk() {
    {
        std::lock_guard<std::mutex> g(g_retired_mu);
        if (!g_retired.empty()) {
            std::unique_ptr<rdmx_request[]> chunk = std::move(g_retired.back());
            g_retired.pop_back();
            return chunk;
        }
    }
    return std::unique_ptr<rdmx_request[]>(new rdmx_request[kReqChunk]);
}

void req_pool_retire(Ctx *c) {
    for (auto &chunk : c->req_chunks) {
        for (size_t i = 0; i < kReqChunk; ++i) {
            rdmx_request &r = chunk[i];
            rndv_release(c, &r);   // the transports are still open here
            rndv_reset(&r);        // the pool's rule: rendezvous fields clean
            r.link = ListNode{};
            r.node = ListNode{};
            r.ctx = nullptr;
            r.pooled = true;
        }
    }
    std::lock_guard<std::mutex> g(g_retired_mu);
    for (auto &chunk : c->req_chunks) g_retired.push_back(std::move(chunk));
    c->req_chunks.clear();
    c->free_reqs = nullptr;
}

rdmx_request *req_alloc(Ctx *c, ReqKind kind, CommView *comm) {
    if (c->free_reqs == nullptr) {
        c->req_chunks.push_back(take_chunk());
        rdmx_request *chunk = c->req_chunks.back().get();
        for (size_t i = 0; i < kReqChunk; ++i) {
            chunk[i].pool_next = c->free_reqs;
            c->free_reqs = &chunk[i];
        }
    }
    rdmx_request *r = c->free_reqs;
    c->free_reqs = r->pool_next;
    ++c->live_reqs;
    r->pool_next = nullptr;
    r->pooled = false;
    r->ctx = c;
    r->comm = comm;
    ++comm->live_reqs;  // the root's too: one add, not a test
    r->kind = kind;
    r->stage = SendStage::kQueued;
    r->done.store(0, std::memory_order_relaxed);
    r->status = RDMX_OK;
    r->info = {RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    r->matched = false;
    r->sync = false;  // rendezvous fields: clean in the pool (rndv_reset)
    return r;
}

void req_free(Ctx *c, rdmx_request *r) {
    if (r->pooled) {  // the API catches a second wait; this is the engine's own guard
        RDMX_ERROR("internal: request %p freed twice; kept out of the pool", (void *)r);
        return;
    }
    r->pooled = true;
    --c->live_reqs;
    if (r->rndv) {
        rndv_release_mem(c, r);
        rndv_reset(r);
    }
    if (--r->comm->live_reqs == 0 && r->comm->freeing) comm_req_freed(c, r->comm);
    r->pool_next = c->free_reqs;
    c->free_reqs = r;
}

void note_change(Ctx *c) {
    if (!c->engine_mt) {  // nobody else can be waiting: no barrier, no locked add
        c->change_epoch.store(c->change_epoch.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
    }
    c->change_epoch.fetch_add(1, std::memory_order_seq_cst);
    if (c->waiters.load(std::memory_order_seq_cst) > 0) c->notify_pending = true;
}

void req_complete(Ctx *c, rdmx_request *r, rdmx_status_t st) {
    r->status = st;
    r->info.error = st;
    rndv_release(c, r);
    if (!c->engine_mt) {  // the waiter is this thread
        r->done.store(1, std::memory_order_release);
        return;
    }
    // seq_cst on both sides (here and in wait_request): the store of done and
    // the load of waiters must not pass each other, or a waiter that has
    // just registered could sleep through this completion.
    r->done.store(1, std::memory_order_seq_cst);
    if (c->waiters.load(std::memory_order_seq_cst) > 0) c->notify_pending = true;
}

// ---- posting ------------------------------------------------------------

bool can_post(Ctx *c, int peer, size_t body_len, unsigned extra) {
    Peer &p = peer_of(c, peer);
    // Queued control messages go first.
    return p.ctrl_q.empty() && p.t->can_send(peer, body_len, false, extra);
}

bool post_msg(Ctx *c, int peer, wire::MsgType type, uint8_t space, uint32_t comm, int tag, uint64_t length,
              uint64_t cookie, const void *body, size_t body_len, bool ctrl) {
    Peer &p = peer_of(c, peer);
    const bool ok = p.t->send(peer, msg_out(type, space, comm, tag, length, cookie, body, body_len), ctrl);
    // A send to ourselves arrives at once, as a message to a peer would
    // arrive while we wait: matched now, not at the next progress.
    if (ok && p.self) (void)p.t->progress(false);
    return ok;
}

// Posts one queued send if resources allow; false leaves it queued.
static bool try_send(Ctx *c, int peer, rdmx_request *r) {
    if (r->len >= c->rndv_thresh || r->sync) {
        // An exposure may go ahead of the RTS (a window bind): one more slot.
        if (!can_post(c, peer, sizeof(wire::RndvDesc), 1)) return false;
        (void)rndv_send_start(c, peer, r);
        return true;
    }
    if (!can_post(c, peer, r->len)) return false;
    if (post_msg(c, peer, wire::MsgType::kEager, r->space, r->bits.comm, r->tag, r->len, 0, r->buf, r->len)) {
        r->stage = SendStage::kEagerDone;
        req_complete(c, r, RDMX_OK);
    } else {
        req_complete(c, r, peer_failure(peer_of(c, peer)));
    }
    return true;
}

static void stall(Ctx *c, int peer, rdmx_request *r) {
    Peer &p = peer_of(c, peer);
    if (p.pending.empty()) c->stalled.push_back(peer);
    c->deferred = true;
    p.pending.push_back(&r->link);
}

bool send_at_post(Ctx *c, int peer, uint8_t space, uint32_t comm, int tag, const void *buf, size_t len) {
    if (len >= c->rndv_thresh || c->fatal.load(std::memory_order_relaxed) != 0) return false;
    Peer &p = peer_of(c, peer);
    // Queued sends and control messages go first. A peer with either queued
    // is listed in stalled or counted in ctrl_waiting, so c->deferred is set
    // (run_deferred clears it only once both are empty): one test when
    // nothing is queued anywhere.
    const Lane lane = p.lane;  // kNone for a failed peer, or one with no lane
    if (lane == Lane::kNone) return false;
    if (c->deferred && (!p.pending.empty() || !p.ctrl_q.empty())) return false;
    // sm is a final class: through its own type the call is direct (inlined
    // under LTO), as in progress_pass; rc's is direct through
    // rc_try_send_eager, which takes the fields in registers. sm's branch
    // builds its own message: inlined, its fields then stay in registers.
    auto msg = [&] { return msg_out(wire::MsgType::kEager, space, comm, tag, len, 0, buf, len); };
    if (lane == Lane::kSm) return c->sm_lane->try_send(peer, msg()) == Transport::Post::kSent;
    if (lane == Lane::kRc)
        return rc_try_send_eager(c->rc_lane, peer, rc_space_comm(space, comm), tag, buf, len) == Transport::Post::kSent;
    if (p.t->try_send(peer, msg()) != Transport::Post::kSent) return false;
    // A send to ourselves arrives at once (see post_msg).
    if (p.self) (void)p.t->progress(false);
    return true;
}

rdmx_status_t start_send(Ctx *c, rdmx_request *r) {
    if (int f = c->fatal.load(std::memory_order_relaxed)) {  // failed after the API's check
        req_complete(c, r, static_cast<rdmx_status_t>(f));
        return RDMX_OK;
    }
    if (!peer_usable(c, r->peer)) {
        req_complete(c, r, peer_failure(peer_of(c, r->peer)));
        return RDMX_OK;
    }
    // Order per peer: nothing overtakes a queued send.
    if (!peer_of(c, r->peer).pending.empty() || !try_send(c, r->peer, r)) stall(c, r->peer, r);
    return RDMX_OK;
}

void kick_stalled(Ctx *c) {
    for (size_t i = 0; i < c->stalled.size();) {
        const int peer = c->stalled[i];
        Peer &p = peer_of(c, peer);
        while (ListNode *n = p.pending.first()) {
            auto *r = container_of<rdmx_request, &rdmx_request::link>(n);
            if (!peer_usable(c, peer)) break;
            List::unlink(n);  // off the queue first: a failure below fails the queue
            if (!try_send(c, peer, r)) {
                p.pending.push_front(n);
                break;
            }
        }
        if (p.pending.empty()) {
            c->stalled[i] = c->stalled.back();
            c->stalled.pop_back();
        } else {
            ++i;
        }
    }
}

}  // namespace rdmx
