// Rendezvous put: the sender's RTS asks for a CTS (kDescPut). The matched
// receiver exposes exactly the bytes that fit its buffer for REMOTE_WRITE to
// that peer (a type 2 window on the cached MR, or a registration for the
// transfer) and answers CTS {addr, length, rkey}; the sender checks the CTS
// against the transfer it offered, WRITEs the data from its own (locally
// registered) buffer, and once every WRITE completed sends PutFin and
// completes. The receiver revokes the window on PutFin, then completes.
// Stages: rndv_send_start (RTS) -> rndv_put_recv_start (CTS) -> rndv_on_cts
// (WRITEs) -> rndv_put_written (PutFin) -> rndv_on_put_fin.
#include <cstring>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

static rdmx_status_t expose_for_write(Ctx *c, Endpoint &ep, rdmx_request *r, wire::RndvDesc *d) {
    d->addr = reinterpret_cast<uint64_t>(r->buf);
    d->length = r->copy_len;
    if (r->copy_len == 0) {
        d->addr = 0;
        return RDMX_OK;
    }
    if (c->rndv_mw &&
        rndv_bind_window(c, ep, r, r->copy_len, IBV_ACCESS_REMOTE_WRITE, &d->rkey))
        return RDMX_OK;
    rndv_release(c, r);
    // Remote write only: the sender writes, it never reads here.
    if (c->rcache && !c->rndv_mw &&
        c->rcache->get(r->buf, r->copy_len, IBV_ACCESS_REMOTE_WRITE, &r->region) == RDMX_OK) {
        d->rkey = static_cast<ibv_mr *>(r->region->handle)->rkey;
        return RDMX_OK;
    }
    rdmx_status_t st = register_memory(c->dev.pd(), c->dev.name(), r->buf, r->copy_len,
                                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &r->mr);
    if (st == RDMX_OK) d->rkey = r->mr->rkey;
    return st;
}

// ahead: called for the head of ep.ctrl_q, with two SQ slots free.
static void expose_and_cts(Ctx *c, Endpoint &ep, rdmx_request *r, bool ahead) {
    wire::RndvDesc d{};
    rdmx_status_t st = expose_for_write(c, ep, r, &d);
    if (st != RDMX_OK) {  // tell the sender, which then fails its send too
        c->rndv_puts.erase(r->xfer_id);
        wire::FinBody f{st, 0};
        rndv_send_ctrl(c, ep, wire::MsgType::kFin, 0, r->cookie, &f, sizeof(f));
        req_complete(c, r, st);
        return;
    }
    rndv_send_ctrl(c, ep, wire::MsgType::kCts, r->xfer_id, r->cookie, &d, sizeof(d), ahead);
}

void rndv_put_recv_start(Ctx *c, Endpoint &ep, rdmx_request *r) {
    r->xfer_id = c->next_cookie++;
    c->rndv_puts[r->xfer_id] = r;  // from now on a peer failure finds it
    // A window bind takes a send-queue slot ahead of the CTS: without two
    // free (or behind queued control messages) both wait their turn there.
    if (c->rndv_mw && r->copy_len > 0 && (!ep.ctrl_q.empty() || ep.sq_free() < 2)) {
        CtrlMsg m;
        m.type = static_cast<uint8_t>(wire::MsgType::kCts);
        m.expose = r->xfer_id;
        return rndv_queue_ctrl(c, ep, m);
    }
    expose_and_cts(c, ep, r, false);
}

// A put receive queued by rndv_put_recv_start; false: still no room.
bool rndv_put_expose_queued(Ctx *c, Endpoint &ep, uint64_t id) {
    auto it = c->rndv_puts.find(id);
    if (it == c->rndv_puts.end()) return true;  // failed meanwhile: nothing to expose
    if (ep.sq_free() < 2) return false;
    expose_and_cts(c, ep, it->second, true);
    return true;
}

// A CTS must name a put we offered this peer and are still waiting on, and
// may not ask for more than the message holds.
void rndv_on_cts(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::RndvDesc &d) {
    auto it = c->rndv_sends.find(h.cookie);
    const bool offered = it != c->rndv_sends.end() && it->second->peer == ep.peer && it->second->put;
    if (!offered || d.length > it->second->len) {
        RDMX_ERROR("rndv: peer %d sent a CTS for transfer %llu asking for %llu bytes%s: closing its connection",
                   ep.peer, static_cast<unsigned long long>(h.cookie), static_cast<unsigned long long>(d.length),
                   offered ? ", more than the message holds" : ", a put it was never offered");
        fail_peer(c, ep.peer, RDMX_ERR_PROTOCOL, offered ? "CTS longer than the message" : "CTS for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_sends.erase(it);
    r->xfer_id = h.length;
    r->remote = d;
    r->copy_len = static_cast<size_t>(d.length);
    r->rd_issued = r->rd_done = 0;
    if (r->copy_len == 0) return rndv_put_written(c, ep, r);
    // Our WRITEs' source: no remote access. Pages the cache cannot take (read
    // only) or no cache: this transfer alone, with read access only.
    rdmx_status_t st = c->rcache ? c->rcache->get(r->buf, r->copy_len, 0, &r->region) : RDMX_ERR_NO_MEMORY;
    if (st != RDMX_OK) st = register_memory(c->dev.pd(), c->dev.name(), r->buf, r->copy_len, 0, &r->mr);
    if (st != RDMX_OK) {
        wire::FinBody f{st, 0};
        rndv_send_ctrl(c, ep, wire::MsgType::kPutFin, 0, r->xfer_id, &f, sizeof(f));
        req_complete(c, r, st);
        return;
    }
    rndv_move_data(c, ep, r);
}

// Every WRITE completed, so the data is placed: the buffer is the user's again.
void rndv_put_written(Ctx *c, Endpoint &ep, rdmx_request *r) {
    wire::FinBody f{0, 0};
    rndv_send_ctrl(c, ep, wire::MsgType::kPutFin, 0, r->xfer_id, &f, sizeof(f));
    r->stage = SendStage::kDone;
    req_complete(c, r, RDMX_OK);
}

void rndv_on_put_fin(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::FinBody &f) {
    auto it = c->rndv_puts.find(h.cookie);
    if (it == c->rndv_puts.end() || it->second->peer != ep.peer) {
        RDMX_ERROR("rndv: peer %d sent PutFin for receive %llu it was never offered: closing its connection",
                   ep.peer, static_cast<unsigned long long>(h.cookie));
        fail_peer(c, ep.peer, RDMX_ERR_PROTOCOL, "PutFin for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_puts.erase(it);
    r->fin_status = f.status != 0 ? RDMX_ERR_PEER_LOST
                    : r->remote.length > r->len ? RDMX_ERR_TRUNCATE
                                                : RDMX_OK;
    if (r->mw >= 0 && ep.usable()) return rndv_invalidate(c, ep, r);
    req_complete(c, r, r->fin_status);
}

}  // namespace rdmx
