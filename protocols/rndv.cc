// Rendezvous (get): the sender exposes exactly the message's bytes for
// REMOTE_READ to the one receiving peer and advertises them in an RTS; the
// receiver, once matched, pulls them with RDMA READ straight into the user's
// buffer, in chunks of at most RDMX_RNDV_CHUNK (and max_msg_sz) with at most
// RDMX_RNDV_READS (and the negotiated initiator depth) in flight, then sends
// FIN. The sender then revokes the exposure and completes.
//
// Exposure: with the registration cache and type 2 memory windows (opt-in,
// RDMX_RNDV_WINDOWS=1), the buffer's cached MR carries no remote access; a
// window bound to this peer's QP over exactly the message grants
// REMOTE_READ, and is invalidated (a signalled LOCAL_INV) before the send
// completes. Without windows but with the cache (the default), the sender's
// cached MR carries REMOTE_READ (never REMOTE_WRITE): whole pages, possibly
// merged with neighbouring sends, valid until evicted or the memory is
// freed, for any peer that learnt its rkey. Without the cache, exactly the
// message is registered for REMOTE_READ for the transfer only.
// Receivers' READ destinations use the cache with local access only.
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

namespace {
void unlink_req(rdmx_request *r) {
    if (r->link.linked()) List::unlink(&r->link);
}

size_t default_rcache_bytes() {
    size_t ram = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bound = ram / 4;
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < bound)
        bound = static_cast<size_t>(rl.rlim_cur / 2);
    return bound;
}
}  // namespace

void rndv_setup(Ctx *c) {
    c->rndv_reads = c->cfg.rndv_reads;
    c->rndv_chunk = c->cfg.rndv_chunk_for(c->max_msg);
    c->rndv_put = c->cfg.rndv_uses_put(c->dev.attr().vendor_id);
    const char *why = "RDMX_RCACHE=0";
    if (c->cfg.rcache != 0 && memhooks::install(&why)) {
        // Windows are opt-in (RDMX_RNDV_WINDOWS=1): Soft RoCE's type 2
        // windows fail under retransmission (bind errors and stalled
        // transfers, docs/design/protocols.md), and they have not yet run on
        // a device where they work. `auto` is off until a test there passes.
        c->rndv_mw = c->dev.has_mw2() && c->cfg.rndv_windows == 1;
        // Every registration gets local write plus what its use needs (the
        // cache keys on it): see the access arguments of rcache->get.
        c->registrar = MrRegistrar{c->dev.pd(), c->dev.name(), IBV_ACCESS_LOCAL_WRITE};
        size_t bytes = c->cfg.rcache_max != 0 ? c->cfg.rcache_max : default_rcache_bytes();
        c->rcache = std::make_unique<RegCache>(RegCache::Ops{&MrRegistrar::reg, &MrRegistrar::dereg, &c->registrar},
                                               bytes, c->cfg.rcache_max_regions);
        RDMX_INFO("rndv: %s protocol; registration cache on (%zu MiB, %u regions); buffers exposed through %s",
                  c->rndv_put ? "put" : "get", bytes >> 20, c->cfg.rcache_max_regions,
                  c->rndv_mw ? "type 2 memory windows" : "the cached registrations");
    } else {
        RDMX_INFO("rndv: %s protocol; registration cache off (%s): every transfer registers its buffer",
                  c->rndv_put ? "put" : "get", why);
    }
}

// Gives back what a finished (or failed) transfer held. A window still
// bound here was never invalidated (the peer failed): destroy it.
void rndv_release(Ctx *c, rdmx_request *r) {
    r->mr.reset();
    if (r->mw >= 0) {
        Endpoint &ep = c->eps[static_cast<size_t>(r->peer)];
        ep.mws[static_cast<size_t>(r->mw)].reset();
        r->mw = -1;
    }
    if (r->region != nullptr) {
        c->rcache->put(r->region);
        r->region = nullptr;
    }
}

// ---- sender --------------------------------------------------------------

static ibv_mw *take_window(Ctx *c, Endpoint &ep, int32_t *idx) {
    while (!ep.mw_free.empty()) {
        uint32_t i = ep.mw_free.back();
        ep.mw_free.pop_back();
        if (ep.mws[i]) {
            *idx = static_cast<int32_t>(i);
            return ep.mws[i].get();
        }
    }
    ibv_mw *mw = nullptr;
    if (int e = vx::alloc_mw(c->dev.pd(), IBV_MW_TYPE_2, &mw)) {
        RDMX_WARN("rndv: ibv_alloc_mw on %s failed: %s; exposing by registration instead", c->dev.name(),
                  strerror(e));
        return nullptr;
    }
    ep.mws.emplace_back(mw);
    *idx = static_cast<int32_t>(ep.mws.size() - 1);
    return mw;
}

// Binds a window over exactly [r->buf, r->buf + len) with `access`, usable
// by this QP (this peer) only.
bool rndv_bind_window(Ctx *c, Endpoint &ep, rdmx_request *r, size_t len, int access, uint32_t *rkey) {
    if (c->rcache->get(r->buf, len, IBV_ACCESS_MW_BIND, &r->region) != RDMX_OK) return false;
    int32_t idx = -1;
    ibv_mw *mw = take_window(c, ep, &idx);
    if (mw == nullptr) return false;  // rndv_release puts the region back
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.opcode = IBV_WR_BIND_MW;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info.mr = static_cast<ibv_mr *>(r->region->handle);
    wr.bind_mw.bind_info.addr = reinterpret_cast<uint64_t>(r->buf);
    wr.bind_mw.bind_info.length = len;
    wr.bind_mw.bind_info.mw_access_flags = static_cast<unsigned>(access);
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: binding a memory window for %zu bytes to peer %d qp 0x%x failed: %s", len, ep.peer,
                   ep.qp_num, strerror(e));
        ep.mw_free.push_back(static_cast<uint32_t>(idx));
        return false;
    }
    mw->rkey = wr.bind_mw.rkey;  // type 2 keys are the consumer's to track
    ep.record_wr(SqSlot{});
    r->mw = idx;
    *rkey = mw->rkey;
    return true;
}

static rdmx_status_t expose(Ctx *c, Endpoint &ep, rdmx_request *r, uint32_t *rkey) {
    if (c->rndv_mw && rndv_bind_window(c, ep, r, r->len, IBV_ACCESS_REMOTE_READ, rkey)) return RDMX_OK;
    rndv_release(c, r);
    // Remote read only: the receiver pulls, it never writes here.
    if (c->rcache && !c->rndv_mw && c->rcache->get(r->buf, r->len, IBV_ACCESS_REMOTE_READ, &r->region) == RDMX_OK) {
        *rkey = static_cast<ibv_mr *>(r->region->handle)->rkey;
        return RDMX_OK;
    }
    rdmx_status_t st = register_memory(c->dev.pd(), c->dev.name(), r->buf, r->len, IBV_ACCESS_REMOTE_READ, &r->mr);
    if (st == RDMX_OK) *rkey = r->mr->rkey;
    return st;
}

rdmx_status_t rndv_send_start(Ctx *c, Endpoint &ep, rdmx_request *r) {
    // Put exposes nothing: the receiver answers with a CTS naming its buffer.
    wire::RndvDesc d{reinterpret_cast<uint64_t>(r->buf), r->len, 0, c->rndv_put ? wire::kDescPut : 0};
    r->put = c->rndv_put;
    rdmx_status_t st = r->put ? RDMX_OK : expose(c, ep, r, &d.rkey);
    if (st != RDMX_OK) {
        req_complete(c, r, st);
        return st;
    }
    r->cookie = c->next_cookie++;
    c->rndv_sends[r->cookie] = r;
    if (!post_msg(c, ep, wire::MsgType::kRts, r->space, r->tag, r->len, r->cookie, &d, sizeof(d), false)) {
        c->rndv_sends.erase(r->cookie);
        req_complete(c, r, ep_failure(ep));
        return RDMX_ERR_PEER_LOST;
    }
    r->stage = SendStage::kRtsSent;
    return RDMX_OK;
}

static void post_invalidation(Ctx *c, Endpoint &ep, rdmx_request *r) {
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = ep.mws[static_cast<size_t>(r->mw)]->rkey;
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: invalidating the window of a %zu-byte transfer with peer %d qp 0x%x failed: %s", r->len, ep.peer,
                   ep.qp_num, strerror(e));
        c->rndv_invs.erase(r->sq_id);
        req_complete(c, r, r->fin_status);  // rndv_release destroys the window: access ends anyway
        return;
    }
    ep.record_wr(SqSlot{-1, 0, 0, r->sq_id});
    ep.unsignaled = 0;
}

// Revokes the window with a signalled LOCAL_INV; the request completes (with
// fin_status) when it does. Until then it is in rndv_invs, where a peer or
// device failure finds it; without an SQ slot to spare it also waits on
// ep.invals.
void rndv_invalidate(Ctx *c, Endpoint &ep, rdmx_request *r) {
    r->sq_id = c->next_cookie++;
    c->rndv_invs[r->sq_id] = r;
    if (ep.sq_free() < 2) {
        ep.invals.push_back(&r->link);
        return;
    }
    post_invalidation(c, ep, r);
}

void rndv_post_invalidations(Ctx *c, Endpoint &ep) {
    while (ep.sq_free() >= 2) {
        ListNode *n = ep.invals.pop_front();
        if (n == nullptr) return;
        post_invalidation(c, ep, container_of<rdmx_request, &rdmx_request::link>(n));
    }
}

void rndv_on_invalidated(Ctx *c, Endpoint &ep, uint64_t id, bool ok) {
    auto it = c->rndv_invs.find(id);
    if (it == c->rndv_invs.end()) return;  // completed already: its peer or the device failed first
    rdmx_request *r = it->second;
    c->rndv_invs.erase(it);
    if (ok) {  // reusable: its next bind is ordered after this on the same SQ
        ep.mw_free.push_back(static_cast<uint32_t>(r->mw));
        r->mw = -1;
    }
    r->stage = SendStage::kDone;
    req_complete(c, r, r->fin_status);
}

// The FIN names a transfer by cookie: it must be one we advertised to this peer.
void rndv_on_fin(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::FinBody &f) {
    auto it = c->rndv_sends.find(h.cookie);
    if (it == c->rndv_sends.end() || it->second->peer != ep.peer) {
        RDMX_ERROR("rndv: peer %d sent FIN for transfer %llu it was never offered: closing its connection", ep.peer,
                   static_cast<unsigned long long>(h.cookie));
        fail_peer(c, ep.peer, RDMX_ERR_PROTOCOL, "FIN for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_sends.erase(it);
    r->fin_status = f.status == 0 || f.status == RDMX_ERR_TRUNCATE ? RDMX_OK : RDMX_ERR_PEER_LOST;
    if (r->mw >= 0 && ep.usable()) {
        r->stage = SendStage::kInvalidating;
        return rndv_invalidate(c, ep, r);
    }
    r->stage = SendStage::kDone;
    req_complete(c, r, r->fin_status);
}

// Control messages of a transfer already under way (FIN, CTS, PutFin) must
// not wait behind queued sends: they go even at zero credits (the peer's SRQ
// holds more buffers than all credits granted, docs/design/protocols.md).
// They do need a send-queue slot: without one (the ring full of sends and
// READs, or this called from a completion that freed nothing for it) they
// wait in ep.ctrl_q, in order, and go as completions free slots.
static_assert(sizeof(wire::RndvDesc) <= sizeof(CtrlMsg::body) && sizeof(wire::FinBody) <= sizeof(CtrlMsg::body));

// Posts m if the send queue has a slot (and a bounce buffer, if m does not
// fit inline); false: it must wait.
static bool post_ctrl(Ctx *c, Endpoint &ep, const CtrlMsg &m) {
    if (ep.sq_free() < 1) return false;
    if (sizeof(wire::MsgHdr) + m.body_len > c->max_inline && c->send_pool.free_count() == 0) return false;
    if (ep.tx_credits() == 0) ++ep.tx_granted;
    // A failed post fails the peer, which drops the queue: nothing to retry.
    (void)post_msg(c, ep, static_cast<wire::MsgType>(m.type), 0, 0, m.length, m.cookie, m.body, m.body_len, false);
    return true;
}

void rndv_queue_ctrl(Ctx *c, Endpoint &ep, const CtrlMsg &m) {
    if (ep.ctrl_q.empty()) ++c->ctrl_waiting;
    ep.ctrl_q.push_back(m);
}

void rndv_send_ctrl(Ctx *c, Endpoint &ep, wire::MsgType type, uint64_t length, uint64_t cookie, const void *body,
                    size_t body_len, bool ahead) {
    if (!ep.usable()) return;
    CtrlMsg m;
    m.type = static_cast<uint8_t>(type);
    m.body_len = static_cast<uint8_t>(body_len);
    m.length = length;
    m.cookie = cookie;
    if (body_len > 0) std::memcpy(m.body, body, body_len);
    if ((!ahead && !ep.ctrl_q.empty()) || !post_ctrl(c, ep, m)) rndv_queue_ctrl(c, ep, m);
}

// Sends what waits in ep.ctrl_q, in order, while slots allow.
void rndv_post_ctrl(Ctx *c, Endpoint &ep) {
    while (ep.ctrl_head < ep.ctrl_q.size() && ep.usable()) {
        const CtrlMsg m = ep.ctrl_q[ep.ctrl_head];  // a copy: what runs below may queue more
        if (!(m.expose != 0 ? rndv_put_expose_queued(c, ep, m.expose) : post_ctrl(c, ep, m))) return;
        if (ep.ctrl_q.empty()) return;  // that post failed the peer, which dropped the queue
        ++ep.ctrl_head;
    }
    rndv_drop_ctrl(c, ep);
}

void rndv_drop_ctrl(Ctx *c, Endpoint &ep) {
    if (ep.ctrl_q.empty()) return;
    ep.ctrl_q.clear();  // keeps its capacity: the next backlog allocates nothing
    ep.ctrl_head = 0;
    --c->ctrl_waiting;
}

static void send_fin(Ctx *c, Endpoint &ep, uint64_t cookie, int32_t status) {
    wire::FinBody f{status, 0};
    rndv_send_ctrl(c, ep, wire::MsgType::kFin, 0, cookie, &f, sizeof(f));
}

static void finish_recv(Ctx *c, rdmx_request *r, rdmx_status_t st) {
    Endpoint &ep = c->eps[static_cast<size_t>(r->peer)];
    send_fin(c, ep, r->cookie, st == RDMX_OK ? 0 : st);
    unlink_req(r);
    req_complete(c, r, st != RDMX_OK ? st : (r->remote.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK));
}

void rndv_recv_start(Ctx *c, rdmx_request *r, int peer, int tag, const wire::RndvDesc &d, uint64_t cookie) {
    r->matched = true;
    r->peer = peer;
    r->remote = d;
    r->cookie = cookie;
    r->info = {peer, tag, static_cast<size_t>(d.length), RDMX_OK};
    r->copy_len = d.length < r->len ? static_cast<size_t>(d.length) : r->len;
    r->rd_issued = r->rd_done = 0;
    if (peer == c->rank) return;  // self transfers never get here
    Endpoint &ep = c->eps[static_cast<size_t>(peer)];
    // An RTS kept as unexpected can outlive its sender's connection: its
    // data can never move now, and no peer failure will come to fail it.
    if (!ep.usable()) {
        req_complete(c, r, ep_failure(ep));
        return;
    }
    if (d.flags & wire::kDescPut) return rndv_put_recv_start(c, ep, r);
    if (r->copy_len == 0) {
        send_fin(c, ep, cookie, 0);
        req_complete(c, r, d.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK);
        return;
    }
    // Our READs land here: local write only. Pages the cache cannot take (or no
    // cache): this transfer alone, logged if that fails too.
    rdmx_status_t st = c->rcache ? c->rcache->get(r->buf, r->copy_len, 0, &r->region) : RDMX_ERR_NO_MEMORY;
    if (st != RDMX_OK)
        st = register_memory(c->dev.pd(), c->dev.name(), r->buf, r->copy_len, IBV_ACCESS_LOCAL_WRITE, &r->mr);
    if (st != RDMX_OK) {
        send_fin(c, ep, cookie, st);
        req_complete(c, r, st);
        return;
    }
    rndv_move_data(c, ep, r);
}

// Get: the receiver READs the sender's buffer. Put: the sender WRITEs the
// receiver's. Either way `r` moves copy_len bytes between r->buf and
// r->remote in chunks, at most RDMX_RNDV_READS per peer in flight (and, for
// READs, the negotiated initiator depth).
void rndv_move_data(Ctx *c, Endpoint &ep, rdmx_request *r) {
    r->sq_id = c->next_cookie++;  // fresh: a late completion of an earlier use of r finds nothing
    c->rndv_xfers[r->sq_id] = r;
    if (ep.reads_in_flight == 0 && ep.reads.empty()) ep.read_progress_ns = now_ns();  // the watchdog's start
    ep.reads.push_back(&r->link);
    rndv_issue_reads(c, ep);
}

static bool post_rdma(Ctx *c, Endpoint &ep, rdmx_request *r) {
    size_t n = r->copy_len - r->rd_issued;
    if (n > c->rndv_chunk) n = c->rndv_chunk;
    uint32_t lkey = r->region != nullptr ? static_cast<ibv_mr *>(r->region->handle)->lkey : r->mr->lkey;
    ibv_sge sge{reinterpret_cast<uint64_t>(r->buf) + r->rd_issued, static_cast<uint32_t>(n), lkey};
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = r->kind == ReqKind::kRecv ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = r->remote.addr + r->rd_issued;
    wr.wr.rdma.rkey = r->remote.rkey;
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: RDMA %s of %zu bytes with peer %d qp 0x%x failed to post: %s",
                   r->kind == ReqKind::kRecv ? "READ" : "WRITE", n, ep.peer, ep.qp_num, strerror(e));
        return false;
    }
    ep.record_wr(SqSlot{-1, r->sq_id, static_cast<uint32_t>(n)});
    ep.unsignaled = 0;
    ++ep.reads_in_flight;
    ep.read_progress_ns = now_ns();
    r->rd_issued += n;
    return true;
}

void rndv_issue_reads(Ctx *c, Endpoint &ep) {
    while (ListNode *n = ep.reads.first()) {
        auto *r = container_of<rdmx_request, &rdmx_request::link>(n);
        const uint32_t cap = r->kind == ReqKind::kRecv && ep.max_rd_atomic < c->rndv_reads ? ep.max_rd_atomic
                                                                                            : c->rndv_reads;
        while (r->rd_issued < r->copy_len && ep.reads_in_flight < cap && ep.sq_free() > 2) {
            if (!post_rdma(c, ep, r)) {
                c->rndv_xfers.erase(r->sq_id);
                unlink_req(r);
                req_complete(c, r, RDMX_ERR_PEER_LOST);
                return fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "RDMA post failed");
            }
        }
        if (r->rd_issued < r->copy_len) return;  // out of slots: wait for completions
        List::unlink(n);                          // all issued: wait for them
        ep.reads_done.push_back(n);
    }
}

// `id` names the transfer, not the request: one failed (its peer lost) while
// its READs were still on the wire is gone from rndv_xfers, and their late
// completions or flushes change nothing, even once its request is reused.
void rndv_on_read_done(Ctx *c, uint64_t id, uint32_t bytes, bool ok) {
    auto it = c->rndv_xfers.find(id);
    if (it == c->rndv_xfers.end()) return;
    rdmx_request *r = it->second;
    Endpoint &ep = c->eps[static_cast<size_t>(r->peer)];
    if (!ok) {
        c->rndv_xfers.erase(it);
        unlink_req(r);
        req_complete(c, r, ep_failure(ep));
        return;
    }
    r->rd_done += bytes;
    if (r->rd_done == r->copy_len) {
        c->rndv_xfers.erase(it);
        if (r->kind == ReqKind::kRecv) {
            finish_recv(c, r, RDMX_OK);
        } else {
            unlink_req(r);
            rndv_put_written(c, ep, r);
        }
    }
    rndv_issue_reads(c, ep);
}

// READs or WRITEs in flight (or queued for SQ slots) that make no progress
// for RDMX_PEER_TIMEOUT mean the connection is stuck below us (a transport
// that stopped retrying, or a lost completion): fail the peer instead of
// waiting forever.
void rndv_watchdog(Ctx *c) {
    const uint64_t now = now_ns(), limit = static_cast<uint64_t>(c->cfg.peer_timeout * 1e9);
    if (now - c->watchdog_ns < 1000000000ull) return;
    c->watchdog_ns = now;
    for (Endpoint &ep : c->eps) {
        if ((ep.reads_in_flight == 0 && ep.reads.empty()) || ep.state == ConnState::kFailed ||
            now - ep.read_progress_ns < limit)
            continue;
        RDMX_ERROR("rndv: %u RDMA READ/WRITE(s) with peer %d (%s) qp 0x%x made no progress for %.0f s (RDMX_PEER_TIMEOUT); "
                   "SQ %u posted, %u complete: failing the connection", ep.reads_in_flight, ep.peer, ep.addr.c_str(),
                   ep.qp_num, c->cfg.peer_timeout, ep.sq_posted, ep.sq_done);
        fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "RDMA READ/WRITE stalled");
    }
}

// Completes (and forgets) every transfer in `m` that involves `peer`.
static void fail_transfers(Ctx *c, std::unordered_map<uint64_t, rdmx_request *> &m, int peer, rdmx_status_t why) {
    for (auto it = m.begin(); it != m.end();) {
        if (it->second->peer != peer) {
            ++it;
            continue;
        }
        unlink_req(it->second);
        req_complete(c, it->second, why);
        it = m.erase(it);
    }
}

// Delivered (FIN or PutFin seen) but never revoked: the transfer itself
// succeeded, and rndv_release destroys the window. Their LOCAL_INV may be
// queued (ep.invals), in flight, or never to complete (the device failed and
// its CQ is not polled any more): all complete here.
static void fail_invalidations(Ctx *c, int peer) {
    for (auto it = c->rndv_invs.begin(); it != c->rndv_invs.end();) {
        rdmx_request *r = it->second;
        if (r->peer != peer) {
            ++it;
            continue;
        }
        it = c->rndv_invs.erase(it);
        unlink_req(r);
        r->stage = SendStage::kDone;
        req_complete(c, r, r->fin_status);
    }
}

void rndv_fail_peer(Ctx *c, int peer, rdmx_status_t why) {
    rndv_drop_ctrl(c, c->eps[static_cast<size_t>(peer)]);
    fail_invalidations(c, peer);
    fail_transfers(c, c->rndv_sends, peer, why);
    fail_transfers(c, c->rndv_puts, peer, why);
    fail_transfers(c, c->rndv_xfers, peer, why);
}

}  // namespace rdmx
