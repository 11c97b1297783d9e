// Arrivals: every message a transport delivers (its header already checked
// there) has its body checked here, then is matched against posted receives
// or kept as unexpected, within bounds.
#include <cstdio>
#include <cstring>

#include "core/copy.h"
#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

void deliver_eager(Ctx *c, rdmx_request *r, int peer, int tag, const char *data, size_t len) {
    (void)c;
    size_t n = len <= r->len ? len : r->len;
    copy_bytes(r->buf, data, n);
    r->info = {peer, tag, len, RDMX_OK};
    r->matched = true;
    req_complete(c, r, len > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK);
}

// Within RDMX_UNEXPECTED_MAX entries and RDMX_UNEXPECTED_LIMIT bytes an
// unexpected message is copied aside (an RTS keeps only its descriptor) and
// its buffer (with the credit behind it) goes back at once. Past either
// bound it keeps its transport buffer until matched: the sender stops after
// its window. So the heap holds at most UNEXPECTED_MAX entries plus one
// window per peer, however many zero-length messages or RTSs arrive; a peer
// that sends on without credits is closed by its transport.
// Returns true when the buffer is kept.
// `d`: an RTS's descriptor as decoded (the bytes may sit in memory the peer
// can still write: shared memory; they are read once, by the decoder);
// nullptr for an eager message.
RDMX_SLOW_PATH
static bool keep_unexpected(Ctx *c, int peer, const wire::MsgHdr &h, const char *body, const wire::RndvDesc *d,
                            uint64_t token) {
    auto *u = new Unexp;
    u->bits = {h.space, peer, h.tag, h.comm};
    u->peer = peer;
    u->type = static_cast<wire::MsgType>(h.type);
    u->len = h.length;
    u->cookie = h.cookie;
    const bool room = c->matcher.unexpected_count() < c->cfg.unexpected_max;
    const bool rts = d != nullptr;
    bool kept = false;
    if (rts) u->desc = *d;
    if (rts && room) {
        // the descriptor is all an RTS needs
    } else if (!rts && room && c->unexpected_bytes + h.length <= c->cfg.unexpected_limit) {
        u->data.reset(new char[h.length > 0 ? h.length : 1]);
        if (h.length > 0) std::memcpy(u->data.get(), body, h.length);
        c->unexpected_bytes += h.length;
    } else {
        u->held = kept = true;  // no credit back until matched
        u->token = token;
        u->held_data = body;
        ++c->held_bufs;
    }
    c->matcher.add_unexpected(u);
    note_change(c);
    return kept;
}

void release_unexp(Ctx *c, Unexp *u) {
    if (u->held) {
        --c->held_bufs;
        Peer &p = peer_of(c, u->peer);
        if (p.t != nullptr) p.t->release(u->peer, u->token);
    } else if (u->data) {
        c->unexpected_bytes -= u->len;
    }
    delete u;
}

// A peer that broke the protocol: what it sent before is not trusted either,
// so its unexpected messages go (their held buffers back to its transport).
void drop_unexpected_of(Ctx *c, int peer) {
    c->matcher.remove_unexpected_if([peer](const UnexpEntry *u) { return u->bits.source == peer; },
                                    [c](UnexpEntry *u) { release_unexp(c, static_cast<Unexp *>(u)); });
}

RDMX_SLOW_PATH static void protocol_violation(Ctx *c, int peer, const char *what) {
    RDMX_ERROR("protocol: peer %d (%s) sent a malformed message (%s): closing its connection", peer,
               peer_of(c, peer).t->peer_addr(peer), what);
    fail_peer(c, peer, RDMX_ERR_PROTOCOL, what);
}

// One checked message from `peer` (its transport checked the header).
// true: the engine keeps the buffer (unexpected, held).
static bool on_message(Ctx *c, int peer, const wire::MsgHdr &h, const char *buf, uint32_t len, uint64_t token) {
    const char *body = buf + sizeof(wire::MsgHdr);
    // The small-message path first, tested alone (not through the switch's
    // jump table): nothing decoded beyond the header.
    if (h.type == static_cast<uint8_t>(wire::MsgType::kEager)) [[likely]] {
        PostedEntry *pe = c->matcher.match_arrival({h.space, peer, h.tag, h.comm});
        if (pe == nullptr) return keep_unexpected(c, peer, h, body, nullptr, token);
        deliver_eager(c, static_cast<rdmx_request *>(pe), peer, h.tag, body, h.length);
        return false;
    }
    switch (static_cast<wire::MsgType>(h.type)) {
    case wire::MsgType::kEager: return false;  // above
    case wire::MsgType::kRts: {
        wire::RndvDesc d{};
        if (wire::decode_rts(buf, len, h, &d) != wire::DecodeError::kOk) {
            protocol_violation(c, peer, "bad rendezvous descriptor");
            return false;
        }
        PostedEntry *pe = c->matcher.match_arrival({h.space, peer, h.tag, h.comm});
        if (pe == nullptr) return keep_unexpected(c, peer, h, body, &d, token);
        rndv_recv_start(c, static_cast<rdmx_request *>(pe), peer, h.tag, d, h.cookie);
        return false;
    }
    case wire::MsgType::kFin:
    case wire::MsgType::kPutFin: {
        wire::FinBody f{};
        const bool fin = h.type == static_cast<uint8_t>(wire::MsgType::kFin);
        if (wire::decode_fin(buf, len, &f) != wire::DecodeError::kOk)
            protocol_violation(c, peer, fin ? "bad FIN" : "bad PutFin");
        else if (fin) rndv_on_fin(c, peer, h, f);
        else rndv_on_put_fin(c, peer, h, f);
        return false;
    }
    case wire::MsgType::kCts: {
        wire::RndvDesc d{};
        if (wire::decode_cts(buf, len, &d) != wire::DecodeError::kOk) protocol_violation(c, peer, "bad CTS");
        else rndv_on_cts(c, peer, h, d);
        return false;
    }
    case wire::MsgType::kCredit: return false;
    case wire::MsgType::kAbort: comm_on_abort(c, peer, h.tag); return false;
    }
    return false;
}

void recv_unexpected(Ctx *c, rdmx_request *r, Unexp *u) {
    if (u->type == wire::MsgType::kRts) {
        rndv_recv_start(c, r, u->peer, u->bits.tag, u->desc, u->cookie);
    } else {
        deliver_eager(c, r, u->peer, u->bits.tag, u->data ? u->data.get() : u->held_data, u->len);
    }
    release_unexp(c, u);
}

rdmx_status_t start_recv(Ctx *c, rdmx_request *r) {
    if (int f = c->fatal.load(std::memory_order_relaxed)) {  // failed after the API's check
        req_complete(c, r, static_cast<rdmx_status_t>(f));
        return RDMX_OK;
    }
    const MatchBits &want = r->bits;
    if (UnexpEntry *ue = c->matcher.find_unexpected(want, true)) {
        recv_unexpected(c, r, static_cast<Unexp *>(ue));
        return RDMX_OK;
    }
    if (r->bits.source >= 0) {
        const Peer &p = peer_of(c, r->bits.source);
        if (p.failed) {
            req_complete(c, r, peer_failure(p));
            return RDMX_OK;
        }
        if (p.t != nullptr && p.t->on_demand()) p.t->reach(r->bits.source);  // connect now: a dead peer fails it
    }
    c->matcher.post(r);
    return RDMX_OK;
}

}  // namespace rdmx

// Every arrival from every transport comes here, in per-peer order. A
// message from a peer the engine has closed for breaking the protocol is
// dropped (a lost peer's earlier messages are still good). The transports'
// upcall for every message: flattened like the API's entry points (the
// matcher and the completion inline here; see core/hot.h).
RDMX_HOT_ENTRY
bool rdmx_context::on_arrival(int peer, const rdmx::wire::MsgHdr &h, const char *buf, uint32_t len, uint64_t token) {
    const rdmx::Peer &p = rdmx::peer_of(this, peer);
    if (p.failed && p.error == RDMX_ERR_PROTOCOL) return false;
    return rdmx::on_message(this, peer, h, buf, len, token);
}

// rc's arrivals (transport.h): a direct call, inlined into rc_progress.
bool rdmx::engine_on_arrival(TransportSink *engine, int peer, const wire::MsgHdr &h, const char *buf, uint32_t len,
                             uint64_t token) {
    return static_cast<rdmx_context *>(engine)->rdmx_context::on_arrival(peer, h, buf, len, token);
}
