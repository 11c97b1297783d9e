// Rendezvous (get): the sender exposes exactly the message's bytes to the
// one receiving peer (Transport::expose, for remote read) and advertises
// them in an RTS; the receiver, once matched, pulls them with gets straight
// into the user's buffer, in chunks of at most the lane's rma_chunk() with
// as many in flight as the lane has room for (RDMX_RNDV_READS on rc), then
// sends FIN. The sender then revokes the exposure and completes.
// Put (rndv_put.cc) is the mirror: the receiver exposes, the sender writes.
// How a lane exposes memory (a registration, a memory window, nothing at all
// for shared memory) is its transport's business; the engine only keeps the
// XferMem the transport filled and gives it back.
#include <algorithm>
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

namespace {
constexpr uint64_t kWatchdogPeriodNs = 1'000'000'000;

void unlink_req(rdmx_request *r) {
    if (r->link.linked()) List::unlink(&r->link);
}
}  // namespace

// Gives back what a finished (or failed) transfer held.
void rndv_release_mem(Ctx *c, rdmx_request *r) {
    if (r->mem.reg == nullptr && r->mem.cached == nullptr && r->mem.window < 0) return;
    Peer &p = peer_of(c, r->peer);
    if (p.t != nullptr) p.t->release_mem(r->peer, &r->mem);
    r->exposed = false;
}

void rndv_reset(rdmx_request *r) {
    r->rndv = false;
    r->cookie = 0;
    r->mem = XferMem{};
    r->exposed = false;
    r->fin_status = RDMX_OK;
    r->put = false;
    r->xfer_id = 0;
    r->sq_id = 0;
    r->remote = {};
    r->rd_issued = r->rd_done = r->copy_len = 0;
}

// ---- sender --------------------------------------------------------------

rdmx_status_t rndv_send_start(Ctx *c, int peer, rdmx_request *r) {
    r->rndv = true;
    Transport *t = peer_of(c, peer).t;
    // Put exposes nothing: the receiver answers with a CTS naming its buffer.
    r->put = t->prefer_put();
    wire::RndvDesc d{reinterpret_cast<uint64_t>(r->buf), r->len, 0, r->put ? wire::kDescPut : 0};
    // A synchronous send of no bytes exposes nothing: the receiver reads nothing.
    if (!r->put && r->len != 0) {
        rdmx_status_t st = t->expose(peer, r->buf, r->len, Access::kRemoteRead, &r->mem, &d.rkey);
        if (st != RDMX_OK) {
            rndv_release(c, r);
            req_complete(c, r, st);
            return st;
        }
        r->exposed = true;
    }
    r->cookie = c->next_cookie++;
    c->rndv_sends[r->cookie] = r;
    r->stage = SendStage::kRtsSent;  // before the post: a send to ourselves may finish inside it
    if (!post_msg(c, peer, wire::MsgType::kRts, r->space, r->bits.comm, r->tag, r->len, r->cookie, &d, sizeof(d))) {
        c->rndv_sends.erase(r->cookie);
        req_complete(c, r, peer_failure(peer_of(c, peer)));
        return RDMX_ERR_PEER_LOST;
    }
    return RDMX_OK;
}

// Revokes the exposure of a delivered transfer, then completes it with
// fin_status. A revocation that takes time (a memory window's LOCAL_INV)
// keeps the request in rndv_invs, where a peer or device failure finds it.
void rndv_revoke(Ctx *c, int peer, rdmx_request *r) {
    Peer &p = peer_of(c, peer);
    if (r->exposed && !p.failed && p.t != nullptr) {
        r->sq_id = c->next_cookie++;
        c->rndv_invs[r->sq_id] = r;
        r->stage = SendStage::kInvalidating;
        if (!p.t->unexpose(peer, &r->mem, r->sq_id)) return;  // on_unexposed completes it
        c->rndv_invs.erase(r->sq_id);
    }
    r->stage = SendStage::kDone;
    req_complete(c, r, r->fin_status);
}

// The FIN names a transfer by cookie: it must be one we advertised to this peer.
void rndv_on_fin(Ctx *c, int peer, const wire::MsgHdr &h, const wire::FinBody &f) {
    auto it = c->rndv_sends.find(h.cookie);
    if (it == c->rndv_sends.end() || it->second->peer != peer) {
        RDMX_ERROR("rndv: peer %d sent FIN for transfer %llu it was never offered: closing its connection", peer,
                   static_cast<unsigned long long>(h.cookie));
        fail_peer(c, peer, RDMX_ERR_PROTOCOL, "FIN for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_sends.erase(it);
    r->fin_status = f.status == 0 || f.status == RDMX_ERR_TRUNCATE ? RDMX_OK : RDMX_ERR_PEER_LOST;
    rndv_revoke(c, peer, r);
}

// ---- control messages ----------------------------------------------------

// Control messages of a transfer already under way (FIN, CTS, PutFin) must
// not wait behind queued sends: they go even at zero credits (the peer's
// receive side holds more buffers than all credits granted,
// docs/design/protocols.md). They do need room on the lane: without it (a
// send ring full of sends and READs, or this called from a completion that
// freed nothing for it) they wait in the peer's ctrl_q, in order, and go as
// completions free room.
static_assert(sizeof(wire::RndvDesc) <= sizeof(CtrlMsg::body) && sizeof(wire::FinBody) <= sizeof(CtrlMsg::body));

// Posts m if the lane has room; false: it must wait.
static bool post_ctrl(Ctx *c, int peer, const CtrlMsg &m) {
    if (!peer_of(c, peer).t->can_send(peer, m.body_len, true)) return false;
    // A failed post fails the peer, which drops the queue: nothing to retry.
    (void)post_msg(c, peer, static_cast<wire::MsgType>(m.type), 0, 0, 0, m.length, m.cookie, m.body, m.body_len, true);
    return true;
}

void rndv_queue_ctrl(Ctx *c, int peer, const CtrlMsg &m) {
    Peer &p = peer_of(c, peer);
    if (p.ctrl_q.empty()) ++c->ctrl_waiting;
    c->deferred = true;
    p.ctrl_q.push_back(m);
}

void rndv_send_ctrl(Ctx *c, int peer, wire::MsgType type, uint64_t length, uint64_t cookie, const void *body,
                    size_t body_len, bool ahead) {
    if (!peer_usable(c, peer)) return;
    CtrlMsg m;
    m.type = static_cast<uint8_t>(type);
    m.body_len = static_cast<uint8_t>(body_len);
    m.length = length;
    m.cookie = cookie;
    if (body_len > 0) std::memcpy(m.body, body, body_len);
    if ((!ahead && !peer_of(c, peer).ctrl_q.empty()) || !post_ctrl(c, peer, m)) rndv_queue_ctrl(c, peer, m);
}

// Sends what waits in the peer's ctrl_q, in order, while room allows.
void rndv_post_ctrl(Ctx *c, int peer) {
    Peer &p = peer_of(c, peer);
    while (p.ctrl_head < p.ctrl_q.size() && peer_usable(c, peer)) {
        const CtrlMsg m = p.ctrl_q[p.ctrl_head];  // a copy: what runs below may queue more
        if (!(m.expose != 0 ? rndv_put_expose_queued(c, peer, m.expose) : post_ctrl(c, peer, m))) return;
        if (p.ctrl_q.empty()) return;  // that post failed the peer, which dropped the queue
        ++p.ctrl_head;
    }
    rndv_drop_ctrl(c, peer);
}

void rndv_drop_ctrl(Ctx *c, int peer) {
    Peer &p = peer_of(c, peer);
    if (p.ctrl_q.empty()) return;
    p.ctrl_q.clear();  // keeps its capacity: the next backlog allocates nothing
    p.ctrl_head = 0;
    --c->ctrl_waiting;
}

// ---- receiver ------------------------------------------------------------

static void send_fin(Ctx *c, int peer, uint64_t cookie, int32_t status) {
    wire::FinBody f{status, 0};
    rndv_send_ctrl(c, peer, wire::MsgType::kFin, 0, cookie, &f, sizeof(f));
}

static void finish_recv(Ctx *c, rdmx_request *r, rdmx_status_t st) {
    send_fin(c, r->peer, r->cookie, st == RDMX_OK ? 0 : st);
    unlink_req(r);
    req_complete(c, r, st != RDMX_OK ? st : (r->remote.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK));
}

void rndv_recv_start(Ctx *c, rdmx_request *r, int peer, int tag, const wire::RndvDesc &d, uint64_t cookie) {
    r->rndv = true;
    r->matched = true;
    r->peer = peer;
    r->remote = d;
    r->cookie = cookie;
    r->info = {peer, tag, static_cast<size_t>(d.length), RDMX_OK};
    r->copy_len = d.length < r->len ? static_cast<size_t>(d.length) : r->len;
    r->rd_issued = r->rd_done = 0;
    // An RTS kept as unexpected can outlive its sender's connection: its
    // data can never move now, and no peer failure will come to fail it.
    if (!peer_usable(c, peer)) {
        req_complete(c, r, peer_failure(peer_of(c, peer)));
        return;
    }
    if (d.flags & wire::kDescPut) return rndv_put_recv_start(c, peer, r);
    if (r->copy_len == 0) {
        send_fin(c, peer, cookie, 0);
        req_complete(c, r, d.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK);
        return;
    }
    // Our gets land here.
    rdmx_status_t st = peer_of(c, peer).t->prepare_local(r->buf, r->copy_len, true, &r->mem);
    if (st != RDMX_OK) {
        rndv_release(c, r);
        send_fin(c, peer, cookie, st);
        req_complete(c, r, st);
        return;
    }
    rndv_move_data(c, peer, r);
}

// ---- moving the data -----------------------------------------------------

// Get: the receiver reads the sender's buffer. Put: the sender writes the
// receiver's. Either way `r` moves copy_len bytes between r->buf and
// r->remote in chunks, as many in flight as the lane has room for.
void rndv_move_data(Ctx *c, int peer, rdmx_request *r) {
    Peer &p = peer_of(c, peer);
    r->sq_id = c->next_cookie++;  // fresh: a late completion of an earlier use of r finds nothing
    c->rndv_xfers[r->sq_id] = r;
    if (p.rma_in_flight == 0 && p.rma.empty()) p.rma_progress_ns = now_ns();  // the watchdog's start
    p.rma.push_back(&r->link);
    rndv_issue(c, peer);
}

static bool post_chunk(Ctx *c, int peer, rdmx_request *r) {
    Peer &p = peer_of(c, peer);
    size_t n = r->copy_len - r->rd_issued;
    const size_t chunk = p.t->rma_chunk();
    if (n > chunk) n = chunk;
    char *local = static_cast<char *>(r->buf) + r->rd_issued;
    const uint64_t raddr = r->remote.addr + r->rd_issued;
    const bool ok = r->kind == ReqKind::kRecv
                        ? p.t->get(peer, local, r->mem, raddr, r->remote.rkey, n, r->sq_id)
                        : p.t->put(peer, local, r->mem, raddr, r->remote.rkey, n, r->sq_id);
    if (!ok) return false;
    ++p.rma_in_flight;
    p.rma_progress_ns = now_ns();
    r->rd_issued += n;
    return true;
}

// Issues what the peer's queued transfers still need while the lane has
// room; a transfer whose gets/puts are all out waits on rma_done.
void rndv_issue(Ctx *c, int peer) {
    Peer &p = peer_of(c, peer);
    while (ListNode *n = p.rma.first()) {
        auto *r = container_of<rdmx_request, &rdmx_request::link>(n);
        const bool read = r->kind == ReqKind::kRecv;
        while (r->rd_issued < r->copy_len && p.t->rma_room(peer, read, p.rma_in_flight) > 0) {
            if (!post_chunk(c, peer, r)) {  // the transport failed the peer: it fails r too
                if (c->rndv_xfers.erase(r->sq_id) != 0) {
                    unlink_req(r);
                    req_complete(c, r, RDMX_ERR_PEER_LOST);
                }
                return fail_peer(c, peer, RDMX_ERR_PEER_LOST, "get/put post failed");
            }
        }
        if (r->rd_issued < r->copy_len) {  // out of room: wait for completions
            if (std::find(c->rma_waiting.begin(), c->rma_waiting.end(), peer) == c->rma_waiting.end())
                c->rma_waiting.push_back(peer);
            c->deferred = true;
            return;
        }
        List::unlink(n);  // all issued: wait for them
        p.rma_done.push_back(n);
    }
}

}  // namespace rdmx

// `id` names the transfer, not the request: one failed (its peer lost) while
// its gets/puts were still in flight is gone from rndv_xfers, and their late
// completions or flushes change nothing, even once its request is reused.
void rdmx_context::on_rma_done(int peer, uint64_t id, uint32_t bytes, bool ok) {
    using namespace rdmx;
    Peer &p = peer_of(this, peer);
    --p.rma_in_flight;  // counted per get/put, whether or not its transfer still exists
    p.rma_progress_ns = now_ns();
    auto it = rndv_xfers.find(id);
    if (it == rndv_xfers.end()) return;
    rdmx_request *r = it->second;
    if (!ok) {
        rndv_xfers.erase(it);
        unlink_req(r);
        req_complete(this, r, peer_failure(p));
        return;
    }
    r->rd_done += bytes;
    if (r->rd_done == r->copy_len) {
        rndv_xfers.erase(it);
        if (r->kind == ReqKind::kRecv) {
            finish_recv(this, r, RDMX_OK);
        } else {
            unlink_req(r);
            rndv_put_written(this, peer, r);
        }
    }
    if (!p.rma.empty()) rndv_issue(this, peer);
}

void rdmx_context::on_unexposed(int peer, uint64_t id, bool ok) {
    (void)peer;
    (void)ok;  // a failed revocation ended access anyway (the transport destroyed it)
    auto it = rndv_invs.find(id);
    if (it == rndv_invs.end()) return;  // completed already: its peer or the device failed first
    rdmx_request *r = it->second;
    rndv_invs.erase(it);
    r->stage = SendStage::kDone;
    r->exposed = false;
    rdmx::req_complete(this, r, r->fin_status);
}

namespace rdmx {

// Gets or puts in flight (or queued for room) that make no progress for
// RDMX_PEER_TIMEOUT mean the connection is stuck below us (a transport that
// stopped retrying, or a lost completion): fail the peer instead of waiting
// forever.
void rndv_watchdog(Ctx *c) {
    // The cadence on the cycle counter (no system call at each housekeeping
    // pass); the stall limit itself on now_ns, as rma_progress_ns is.
    const uint64_t tick = fast_ns();
    if (tick - c->watchdog_ns < kWatchdogPeriodNs) return;
    c->watchdog_ns = tick;
    const uint64_t now = now_ns(), limit = static_cast<uint64_t>(c->cfg.peer_timeout * 1e9);
    for (size_t i = 0; i < c->peers.size(); ++i) {
        Peer &p = c->peers[i];
        if ((p.rma_in_flight == 0 && p.rma.empty()) || p.failed || now - p.rma_progress_ns < limit) continue;
        RDMX_ERROR("rndv: %u get/put(s) with peer %zu (%s, %s) made no progress for %.0f s (RDMX_PEER_TIMEOUT): "
                   "failing the connection", p.rma_in_flight, i, p.t->name(), p.t->peer_addr(static_cast<int>(i)),
                   c->cfg.peer_timeout);
        fail_peer(c, static_cast<int>(i), RDMX_ERR_PEER_LOST, "get/put stalled");
    }
}

// Completes (and forgets) every transfer in `m` that involves `peer`; how many.
static size_t fail_transfers(Ctx *c, std::unordered_map<uint64_t, rdmx_request *> &m, int peer, rdmx_status_t why) {
    size_t n = 0;
    for (auto it = m.begin(); it != m.end();) {
        if (it->second->peer != peer) {
            ++it;
            continue;
        }
        unlink_req(it->second);
        req_complete(c, it->second, why);
        it = m.erase(it);
        ++n;
    }
    return n;
}

// Delivered (FIN or PutFin seen) but never revoked: the transfer itself
// succeeded, and rndv_release lets the transport destroy the exposure.
static void fail_revocations(Ctx *c, int peer) {
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

size_t rndv_fail_peer(Ctx *c, int peer, rdmx_status_t why) {
    rndv_drop_ctrl(c, peer);
    fail_revocations(c, peer);
    return fail_transfers(c, c->rndv_sends, peer, why) + fail_transfers(c, c->rndv_puts, peer, why) +
           fail_transfers(c, c->rndv_xfers, peer, why);
}

}  // namespace rdmx
