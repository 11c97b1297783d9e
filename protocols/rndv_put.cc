// Rendezvous put: the sender's RTS asks for a CTS (kDescPut). The matched
// receiver exposes exactly the bytes that fit its buffer to that peer for
// remote write (Transport::expose) and answers CTS {addr, length, key}; the
// sender checks the CTS against the transfer it offered, puts the data from
// its own buffer, and once every put completed sends PutFin and completes.
// The receiver revokes the exposure on PutFin, then completes.
// Stages: rndv_send_start (RTS) -> rndv_put_recv_start (CTS) -> rndv_on_cts
// (puts) -> rndv_put_written (PutFin) -> rndv_on_put_fin.
#include <cstring>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

static rdmx_status_t expose_for_write(Ctx *c, int peer, rdmx_request *r, wire::RndvDesc *d) {
    d->addr = reinterpret_cast<uint64_t>(r->buf);
    d->length = r->copy_len;
    if (r->copy_len == 0) {
        d->addr = 0;
        return RDMX_OK;
    }
    rdmx_status_t st = peer_of(c, peer).t->expose(peer, r->buf, r->copy_len, Access::kRemoteWrite, &r->mem, &d->rkey);
    if (st == RDMX_OK) r->exposed = true;
    else rndv_release(c, r);
    return st;
}

// ahead: called for the head of the peer's ctrl_q.
static void expose_and_cts(Ctx *c, int peer, rdmx_request *r, bool ahead) {
    wire::RndvDesc d{};
    rdmx_status_t st = expose_for_write(c, peer, r, &d);
    if (st != RDMX_OK) {  // tell the sender, which then fails its send too
        c->rndv_puts.erase(r->xfer_id);
        wire::FinBody f{st, 0};
        rndv_send_ctrl(c, peer, wire::MsgType::kFin, 0, r->cookie, &f, sizeof(f));
        req_complete(c, r, st);
        return;
    }
    rndv_send_ctrl(c, peer, wire::MsgType::kCts, r->xfer_id, r->cookie, &d, sizeof(d), ahead);
}

void rndv_put_recv_start(Ctx *c, int peer, rdmx_request *r) {
    r->xfer_id = c->next_cookie++;
    c->rndv_puts[r->xfer_id] = r;  // from now on a peer failure finds it
    // An exposure that takes room on the lane (a window bind) goes ahead of
    // the CTS: without room (or behind queued control messages) both wait
    // their turn there.
    Peer &p = peer_of(c, peer);
    if (r->copy_len > 0 && (!p.ctrl_q.empty() || !p.t->can_expose(peer))) {
        CtrlMsg m;
        m.type = static_cast<uint8_t>(wire::MsgType::kCts);
        m.expose = r->xfer_id;
        return rndv_queue_ctrl(c, peer, m);
    }
    expose_and_cts(c, peer, r, false);
}

// A put receive queued by rndv_put_recv_start; false: still no room.
bool rndv_put_expose_queued(Ctx *c, int peer, uint64_t id) {
    auto it = c->rndv_puts.find(id);
    if (it == c->rndv_puts.end()) return true;  // failed meanwhile: nothing to expose
    if (!peer_of(c, peer).t->can_expose(peer)) return false;
    expose_and_cts(c, peer, it->second, true);
    return true;
}

// A CTS must name a put we offered this peer and are still waiting on, and
// may not ask for more than the message holds.
void rndv_on_cts(Ctx *c, int peer, const wire::MsgHdr &h, const wire::RndvDesc &d) {
    auto it = c->rndv_sends.find(h.cookie);
    const bool offered = it != c->rndv_sends.end() && it->second->peer == peer && it->second->put;
    if (!offered || d.length > it->second->len) {
        RDMX_ERROR("rndv: peer %d sent a CTS for transfer %llu asking for %llu bytes%s: closing its connection", peer,
                   static_cast<unsigned long long>(h.cookie), static_cast<unsigned long long>(d.length),
                   offered ? ", more than the message holds" : ", a put it was never offered");
        fail_peer(c, peer, RDMX_ERR_PROTOCOL, offered ? "CTS longer than the message" : "CTS for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_sends.erase(it);
    r->xfer_id = h.length;
    r->remote = d;
    r->copy_len = static_cast<size_t>(d.length);
    r->rd_issued = r->rd_done = 0;
    if (r->copy_len == 0) return rndv_put_written(c, peer, r);
    // Our puts' source: read only.
    rdmx_status_t st = peer_of(c, peer).t->prepare_local(r->buf, r->copy_len, false, &r->mem);
    if (st != RDMX_OK) {
        rndv_release(c, r);
        wire::FinBody f{st, 0};
        rndv_send_ctrl(c, peer, wire::MsgType::kPutFin, 0, r->xfer_id, &f, sizeof(f));
        req_complete(c, r, st);
        return;
    }
    rndv_move_data(c, peer, r);
}

// Every put completed, so the data is placed: the buffer is the user's again.
void rndv_put_written(Ctx *c, int peer, rdmx_request *r) {
    wire::FinBody f{0, 0};
    rndv_send_ctrl(c, peer, wire::MsgType::kPutFin, 0, r->xfer_id, &f, sizeof(f));
    r->stage = SendStage::kDone;
    req_complete(c, r, RDMX_OK);
}

void rndv_on_put_fin(Ctx *c, int peer, const wire::MsgHdr &h, const wire::FinBody &f) {
    auto it = c->rndv_puts.find(h.cookie);
    if (it == c->rndv_puts.end() || it->second->peer != peer) {
        RDMX_ERROR("rndv: peer %d sent PutFin for receive %llu it was never offered: closing its connection", peer,
                   static_cast<unsigned long long>(h.cookie));
        fail_peer(c, peer, RDMX_ERR_PROTOCOL, "PutFin for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_puts.erase(it);
    r->fin_status = f.status != 0 ? RDMX_ERR_PEER_LOST : r->remote.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK;
    rndv_revoke(c, peer, r);
}

}  // namespace rdmx
