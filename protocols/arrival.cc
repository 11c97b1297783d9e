// Arrivals: every receive completion from the SRQ is checked (the bytes come
// from a peer), credited, then matched or kept as unexpected.
#include <cstdio>
#include <cstring>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

void deliver_eager(Ctx *c, rdmx_request *r, int peer, int tag, const char *data, size_t len) {
    (void)c;
    size_t n = len <= r->len ? len : r->len;
    if (n > 0) std::memcpy(r->buf, data, n);
    r->info = {peer, tag, len, RDMX_OK};
    r->matched = true;
    req_complete(c, r, len > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK);
}

// The SRQ buffer goes back and the sender gets one more credit.
static void recycle(Ctx *c, Endpoint *ep, uint32_t idx) {
    (void)c->iface.repost(idx);
    if (ep != nullptr) {
        ++ep->rx_granted;
        c->credits_dirty = true;
    }
}

// Within RDMX_UNEXPECTED_MAX entries and RDMX_UNEXPECTED_LIMIT bytes an
// unexpected message is copied aside (an RTS keeps only its descriptor) and
// its credit goes back at once. Past either bound it keeps its SRQ buffer
// and its credit until matched: the sender stops after its window. So the
// heap holds at most UNEXPECTED_MAX entries plus one window per peer, however
// many zero-length messages or RTSs arrive; a peer that sends on without
// credits is closed in handle_recv.
static void keep_unexpected(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const char *body, uint32_t idx) {
    auto *u = new Unexp;
    u->bits = {h.space, ep.peer, h.tag};
    u->peer = ep.peer;
    u->type = static_cast<wire::MsgType>(h.type);
    u->len = h.length;
    u->cookie = h.cookie;
    const bool room = c->matcher.unexpected_count() < c->cfg.unexpected_max;
    if (u->type == wire::MsgType::kRts) std::memcpy(&u->desc, body, sizeof(u->desc));
    if (room && u->type == wire::MsgType::kRts) {
        recycle(c, &ep, idx);
    } else if (room && c->unexpected_bytes + h.length <= c->cfg.unexpected_limit) {
        u->data.reset(new char[h.length > 0 ? h.length : 1]);
        if (h.length > 0) std::memcpy(u->data.get(), body, h.length);
        c->unexpected_bytes += h.length;
        recycle(c, &ep, idx);
    } else {
        u->held_buf = static_cast<int32_t>(idx);  // no credit back until matched
        ++c->held_bufs;
    }
    c->matcher.add_unexpected(u);
    note_change(c);
}

void release_unexp(Ctx *c, Unexp *u) {
    if (u->held_buf >= 0) {
        --c->held_bufs;
        Endpoint *ep = u->peer != c->rank ? &c->eps[static_cast<size_t>(u->peer)] : nullptr;
        recycle(c, ep, static_cast<uint32_t>(u->held_buf));
    } else if (u->data) {
        c->unexpected_bytes -= u->len;
    }
    delete u;
}

// A peer that broke the protocol: what it sent before is not trusted either,
// so its unexpected messages go (their held buffers back to the SRQ).
static void close_violator(Ctx *c, Endpoint &ep, const char *what) {
    fail_peer(c, ep.peer, RDMX_ERR_PROTOCOL, what);
    const int peer = ep.peer;
    c->matcher.remove_unexpected_if([peer](const UnexpEntry *u) { return u->bits.source == peer; },
                                    [c](UnexpEntry *u) { release_unexp(c, static_cast<Unexp *>(u)); });
}

static void protocol_violation(Ctx *c, Endpoint &ep, uint32_t idx, const char *what) {
    RDMX_ERROR("protocol: peer %d (%s) qp 0x%x sent a malformed message (%s): closing its connection", ep.peer,
               ep.addr.c_str(), ep.qp_num, what);
    recycle(c, nullptr, idx);
    close_violator(c, ep, what);
}

// Message number `n` (1-based) from a peer that holds rx_granted credits:
// data needs a credit; a control message of a transfer under way (FIN, CTS,
// PutFin) may borrow one past the grant (rndv_send_ctrl), and its buffer,
// recycled at once, pays it back.
static bool within_grant(const Endpoint &ep, const wire::MsgHdr &h) {
    const auto t = static_cast<wire::MsgType>(h.type);
    const bool ctrl = t == wire::MsgType::kFin || t == wire::MsgType::kCts || t == wire::MsgType::kPutFin;
    const uint32_t n = ep.rx_seq + 1;
    return static_cast<int32_t>(ep.rx_granted + (ctrl ? 1u : 0u) - n) >= 0;
}

void credit_forged(Ctx *c, Endpoint &ep) {
    if (ep.state == ConnState::kFailed) return;
    RDMX_ERROR("protocol: peer %d (%s) qp 0x%x wrote a credit grant of 0x%llx into its slot, beyond its window of "
               "%u past the %u messages we sent: closing its connection", ep.peer, ep.addr.c_str(), ep.qp_num,
               static_cast<unsigned long long>(ep.forged_grant), ep.tx_window, ep.tx_consumed);
    close_violator(c, ep, "forged credit grant");
}

static void on_message(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const char *buf, uint32_t len, uint32_t idx) {
    const char *body = buf + sizeof(wire::MsgHdr);
    switch (static_cast<wire::MsgType>(h.type)) {
    case wire::MsgType::kEager:
    case wire::MsgType::kRts: {
        wire::RndvDesc d{};
        bool rts = h.type == static_cast<uint8_t>(wire::MsgType::kRts);
        if (rts && wire::decode_rts(buf, len, h, &d) != wire::DecodeError::kOk)
            return protocol_violation(c, ep, idx, "bad rendezvous descriptor");
        PostedEntry *pe = c->matcher.match_arrival({h.space, ep.peer, h.tag});
        if (pe == nullptr) return keep_unexpected(c, ep, h, body, idx);
        auto *r = static_cast<rdmx_request *>(pe);
        if (rts) rndv_recv_start(c, r, ep.peer, h.tag, d, h.cookie);
        else deliver_eager(c, r, ep.peer, h.tag, body, h.length);
        return recycle(c, &ep, idx);
    }
    case wire::MsgType::kFin: {
        wire::FinBody f{};
        if (wire::decode_fin(buf, len, &f) != wire::DecodeError::kOk)
            return protocol_violation(c, ep, idx, "bad FIN");
        recycle(c, &ep, idx);
        return rndv_on_fin(c, ep, h, f);
    }
    case wire::MsgType::kCts: {
        wire::RndvDesc d{};
        if (wire::decode_cts(buf, len, &d) != wire::DecodeError::kOk)
            return protocol_violation(c, ep, idx, "bad CTS");
        recycle(c, &ep, idx);
        return rndv_on_cts(c, ep, h, d);
    }
    case wire::MsgType::kPutFin: {
        wire::FinBody f{};
        if (wire::decode_fin(buf, len, &f) != wire::DecodeError::kOk)
            return protocol_violation(c, ep, idx, "bad PutFin");
        recycle(c, &ep, idx);
        return rndv_on_put_fin(c, ep, h, f);
    }
    case wire::MsgType::kCredit: return recycle(c, &ep, idx);
    }
}

void handle_recv(Ctx *c, const ibv_wc &wc) {
    const uint32_t idx = static_cast<uint32_t>(wc.wr_id);
    auto it = c->cm.qpn_to_peer.find(wc.qp_num);
    if (wc.status != IBV_WC_SUCCESS) {
        // SRQ receives are not flushed by a QP error: this one names its QP,
        // whose connection is broken (e.g. the peer sent more than a buffer).
        const int peer = it != c->cm.qpn_to_peer.end() ? it->second : -1;
        // A receive too short for what arrived: the peer broke the size limit.
        const rdmx_status_t why = wc.status == IBV_WC_LOC_LEN_ERR ? RDMX_ERR_PROTOCOL : wc_error_status(wc.status);
        RDMX_ERROR("recv: completion error %s (status %d, vendor_err 0x%x, opcode %d) from peer %d qp 0x%x on %s",
                   ibv_wc_status_str(wc.status), wc.status, wc.vendor_err, wc.opcode, peer, wc.qp_num,
                   c->dev.name());
        if (wc.status != IBV_WC_WR_FLUSH_ERR) recycle(c, nullptr, idx);
        if (why == RDMX_ERR_DEVICE) return fail_device(c, why);
        if (peer >= 0) fail_peer(c, peer, why, ibv_wc_status_str(wc.status));
        return;
    }
    if (it == c->cm.qpn_to_peer.end()) {
        RDMX_WARN("recv: %u bytes from unknown qp 0x%x dropped", wc.byte_len, wc.qp_num);
        return recycle(c, nullptr, idx);
    }
    Endpoint &ep = c->eps[static_cast<size_t>(it->second)];
    if (ep.state == ConnState::kAccepting) c->cm.notify_established(ep);
    // A lost peer's earlier messages are still good; a hostile one's are not.
    if (ep.state == ConnState::kFailed && ep.error == RDMX_ERR_PROTOCOL) return recycle(c, nullptr, idx);
    // Only a SEND carries a message: an RDMA WRITE with immediate also takes
    // a shared receive, but its buffer holds stale bytes.
    if (wc.opcode != IBV_WC_RECV) return protocol_violation(c, ep, idx, "RDMA WRITE with immediate, not a SEND");
    if (ep.grant_forged) {  // seen by a send that found no credit; the close is due
        recycle(c, nullptr, idx);
        return credit_forged(c, ep);
    }
    const char *buf = c->iface.recv_buf(idx);
    wire::MsgHdr h{};
    auto de = wire::decode_msg(buf, wc.byte_len, c->eager_limit, &h);
    if (de != wire::DecodeError::kOk) return protocol_violation(c, ep, idx, wire::decode_error_name(de));
    if (h.seq != ep.rx_seq) return protocol_violation(c, ep, idx, "sequence gap");
    if (!within_grant(ep, h)) {
        char why[112];
        std::snprintf(why, sizeof(why), "credit overrun: message %u with %u granted, %zu receive buffers held here",
                      ep.rx_seq + 1, ep.rx_granted, c->held_bufs);
        return protocol_violation(c, ep, idx, why);
    }
    if (!ep.note_grant(h.credits)) return protocol_violation(c, ep, idx, "credit grant beyond its window");
    ++ep.rx_seq;
    on_message(c, ep, h, buf, wc.byte_len, idx);
}

rdmx_status_t start_recv(Ctx *c, rdmx_request *r) {
    if (int f = c->fatal.load(std::memory_order_relaxed)) {  // failed after the API's check
        req_complete(c, r, static_cast<rdmx_status_t>(f));
        return RDMX_OK;
    }
    const MatchBits &want = r->bits;
    if (UnexpEntry *ue = c->matcher.find_unexpected(want, true)) {
        auto *u = static_cast<Unexp *>(ue);
        if (u->self_send != nullptr) {
            deliver_eager(c, r, u->peer, u->bits.tag, static_cast<const char *>(u->self_send->buf), u->len);
            req_complete(c, u->self_send, RDMX_OK);
        } else if (u->type == wire::MsgType::kRts) {
            rndv_recv_start(c, r, u->peer, u->bits.tag, u->desc, u->cookie);
        } else {
            const char *data = u->data ? u->data.get() : c->iface.recv_buf(static_cast<uint32_t>(u->held_buf)) +
                                                             sizeof(wire::MsgHdr);
            deliver_eager(c, r, u->peer, u->bits.tag, data, u->len);
        }
        release_unexp(c, u);
        return RDMX_OK;
    }
    if (r->bits.source >= 0 && r->bits.source != c->rank) {
        const Endpoint &ep = c->eps[static_cast<size_t>(r->bits.source)];
        if (ep.state == ConnState::kFailed) {
            req_complete(c, r, ep_failure(ep));
            return RDMX_OK;
        }
    }
    c->matcher.post(r);
    return RDMX_OK;
}

}  // namespace rdmx
