// Eager protocol and the shared send machinery: small messages are copied
// (or inlined) into one SEND carrying a wire::MsgHdr; arrivals are matched
// against posted receives or kept as unexpected, within a bound, with
// credits as back-pressure.
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
            r.mr.reset();          // the PD is still open here
            r.region = nullptr;    // the cache deregisters its own regions
            r.mw = -1;
            r.link = ListNode{};
            r.node = ListNode{};
            r.self_peer = nullptr;
            r.ctx = nullptr;
            r.pooled = true;
        }
    }
    std::lock_guard<std::mutex> g(g_retired_mu);
    for (auto &chunk : c->req_chunks) g_retired.push_back(std::move(chunk));
    c->req_chunks.clear();
    c->free_reqs = nullptr;
}

rdmx_request *req_alloc(Ctx *c, ReqKind kind) {
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
    r->kind = kind;
    r->stage = SendStage::kQueued;
    r->done.store(0, std::memory_order_relaxed);
    r->status = RDMX_OK;
    r->info = {RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    r->matched = false;
    r->cookie = 0;
    r->rd_issued = r->rd_done = r->copy_len = 0;
    r->mw = -1;
    r->fin_status = RDMX_OK;
    r->sq_id = 0;
    r->self_peer = nullptr;
    return r;
}

void req_free(Ctx *c, rdmx_request *r) {
    if (r->pooled) {  // the API catches a second wait; this is the engine's own guard
        RDMX_ERROR("internal: request %p freed twice; kept out of the pool", (void *)r);
        return;
    }
    r->pooled = true;
    --c->live_reqs;
    rndv_release(c, r);
    r->pool_next = c->free_reqs;
    c->free_reqs = r;
}

void note_change(Ctx *c) {
    c->change_epoch.fetch_add(1, std::memory_order_seq_cst);
    if (c->waiters.load(std::memory_order_seq_cst) > 0) c->notify_pending = true;
}

void req_complete(Ctx *c, rdmx_request *r, rdmx_status_t st) {
    r->status = st;
    r->info.error = st;
    rndv_release(c, r);
    // seq_cst on both sides (here and in wait_request): the store of done and
    // the load of waiters must not pass each other, or a waiter that has
    // just registered could sleep through this completion.
    r->done.store(1, std::memory_order_seq_cst);
    if (c->waiters.load(std::memory_order_seq_cst) > 0) c->notify_pending = true;
}

// ---- posting ------------------------------------------------------------

bool can_post(Ctx *c, Endpoint &ep, size_t body_len) {
    // Queued control messages go first; one SQ slot stays for credit writes.
    if (!ep.ctrl_q.empty() || ep.tx_credits() == 0 || ep.sq_free() < 2) return false;
    return sizeof(wire::MsgHdr) + body_len <= c->max_inline || c->send_pool.free_count() > 0;
}

bool post_msg(Ctx *c, Endpoint &ep, wire::MsgType type, uint8_t space, int tag, uint64_t length, uint64_t cookie,
              const void *body, size_t body_len, bool signal) {
    wire::MsgHdr h{wire::kVersion, static_cast<uint8_t>(type), space, 0, tag, ep.rx_granted, ep.tx_seq, length,
                   cookie};
    ibv_sge sge[2];
    ibv_send_wr wr{};
    SqSlot slot{};
    const size_t total = sizeof(h) + body_len;
    if (total <= c->max_inline) {
        sge[0] = {reinterpret_cast<uint64_t>(&h), sizeof(h), 0};
        sge[1] = {reinterpret_cast<uint64_t>(body), static_cast<uint32_t>(body_len), 0};
        wr.num_sge = body_len > 0 ? 2 : 1;
        wr.send_flags = IBV_SEND_INLINE;
    } else {
        uint32_t idx = 0;
        if (!c->send_pool.get(&idx)) return false;
        char *b = c->send_pool.buf(idx);
        std::memcpy(b, &h, sizeof(h));
        if (body_len > 0) std::memcpy(b + sizeof(h), body, body_len);
        sge[0] = {reinterpret_cast<uint64_t>(b), static_cast<uint32_t>(total), c->send_pool.lkey()};
        wr.num_sge = 1;
        slot.bounce = static_cast<int32_t>(idx);
    }
    // Selective signalling: every 16th WR (fewer on a small ring), or when
    // bounce buffers run low.
    if (signal || ++ep.unsignaled >= ep.signal_every() || c->send_pool.free_count() < 32) {
        wr.send_flags |= IBV_SEND_SIGNALED;
        ep.unsignaled = 0;
    }
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.sg_list = sge;
    wr.opcode = IBV_WR_SEND;
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        if (slot.bounce >= 0) c->send_pool.put(static_cast<uint32_t>(slot.bounce));
        RDMX_ERROR("eager: ibv_post_send to peer %d (%s) qp 0x%x failed: %s", ep.peer, ep.addr.c_str(), ep.qp_num,
                   strerror(e));
        fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "post_send failed");
        return false;
    }
    ep.record_wr(slot);
    ++ep.tx_seq;
    ++ep.tx_consumed;
    ep.rx_granted_told = ep.rx_granted;
    return true;
}

// Posts one queued send if resources allow; false leaves it queued.
static bool try_send(Ctx *c, Endpoint &ep, rdmx_request *r) {
    if (r->len >= c->rndv_thresh) {
        // A window bind goes ahead of the RTS: one more SQ slot.
        if (!can_post(c, ep, sizeof(wire::RndvDesc)) || ep.sq_free() < 3) return false;
        (void)rndv_send_start(c, ep, r);
        return true;
    }
    if (!can_post(c, ep, r->len)) return false;
    if (post_msg(c, ep, wire::MsgType::kEager, r->space, r->tag, r->len, 0, r->buf, r->len, false)) {
        r->stage = SendStage::kEagerDone;
        req_complete(c, r, RDMX_OK);
    } else {
        req_complete(c, r, ep_failure(ep));
    }
    return true;
}

static void stall(Ctx *c, Endpoint &ep, rdmx_request *r) {
    if (ep.pending.empty()) c->stalled.push_back(ep.peer);
    ep.pending.push_back(&r->link);
}

// A send to ourselves: matched locally, copied once.
static rdmx_status_t self_send(Ctx *c, rdmx_request *r) {
    MatchBits bits{r->space, c->rank, r->tag};
    if (PostedEntry *pe = c->matcher.match_arrival(bits)) {
        auto *rr = static_cast<rdmx_request *>(pe);
        deliver_eager(c, rr, c->rank, r->tag, static_cast<const char *>(r->buf), r->len);
        req_complete(c, r, RDMX_OK);
        return RDMX_OK;
    }
    auto *u = new Unexp;
    u->bits = bits;
    u->peer = c->rank;
    u->len = r->len;
    if (r->len <= c->eager_limit) {  // buffered like any eager message: the send completes now
        u->data.reset(new char[r->len > 0 ? r->len : 1]);
        if (r->len > 0) std::memcpy(u->data.get(), r->buf, r->len);
        c->unexpected_bytes += r->len;
        req_complete(c, r, RDMX_OK);
    } else {
        u->type = wire::MsgType::kRts;
        u->self_send = r;
    }
    c->matcher.add_unexpected(u);
    note_change(c);
    return RDMX_OK;
}

rdmx_status_t start_send(Ctx *c, rdmx_request *r) {
    if (int f = c->fatal.load(std::memory_order_relaxed)) {  // failed after the API's check
        req_complete(c, r, static_cast<rdmx_status_t>(f));
        return RDMX_OK;
    }
    if (r->peer == c->rank) return self_send(c, r);
    Endpoint &ep = c->eps[static_cast<size_t>(r->peer)];
    if (!ep.usable()) {
        req_complete(c, r, ep_failure(ep));
        return RDMX_OK;
    }
    // Order per peer: nothing overtakes a queued send.
    if (!ep.pending.empty() || !try_send(c, ep, r)) stall(c, ep, r);
    return RDMX_OK;
}

void kick_stalled(Ctx *c) {
    for (size_t i = 0; i < c->stalled.size();) {
        Endpoint &ep = c->eps[static_cast<size_t>(c->stalled[i])];
        if (ep.grant_forged) credit_forged(c, ep);  // fails its queue: left empty below
        while (ListNode *n = ep.pending.first()) {
            auto *r = container_of<rdmx_request, &rdmx_request::link>(n);
            if (!ep.usable()) break;
            List::unlink(n);  // off the queue first: a failure below fails the queue
            if (!try_send(c, ep, r)) {
                ep.pending.push_front(n);
                break;
            }
        }
        if (ep.pending.empty()) {
            c->stalled[i] = c->stalled.back();
            c->stalled.pop_back();
        } else {
            ++i;
        }
    }
}

// Grants travel on every header; a peer that only receives gets them by an
// 8-byte inline RDMA WRITE once half its window is owed. Runs on every
// progress call, so it looks at the peers only after a new grant (or while
// a write waits for an SQ slot).
void return_credits(Ctx *c) {
    if (!c->credits_dirty) return;
    c->credits_dirty = false;
    for (Endpoint &ep : c->eps) {
        if (!ep.usable() || ep.rx_granted - ep.rx_granted_told < (c->credits + 1) / 2) continue;
        if (ep.sq_free() < 1) {
            c->credits_dirty = true;  // retried when a completion frees a slot
            continue;
        }
        ep.credit_word = ep.rx_granted;
        ibv_sge sge{reinterpret_cast<uint64_t>(&ep.credit_word), 8, 0};
        ibv_send_wr wr{};
        wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = ep.remote_credit_addr;
        wr.wr.rdma.rkey = ep.remote_credit_rkey;
        ibv_send_wr *bad = nullptr;
        if (int e = vx::post_send(ep.qp, &wr, &bad)) {
            RDMX_ERROR("credits: RDMA WRITE to peer %d qp 0x%x failed: %s", ep.peer, ep.qp_num, strerror(e));
            fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "credit write failed");
            continue;
        }
        ep.record_wr(SqSlot{});
        ep.unsignaled = 0;
        ep.rx_granted_told = ep.rx_granted;
    }
}

}  // namespace rdmx
