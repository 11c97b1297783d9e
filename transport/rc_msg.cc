// RC messages: a SEND carrying a wire::MsgHdr (inline when it fits, else
// from a bounce buffer), credits granted on every header and by an 8-byte
// RDMA WRITE into the peer's credit slot, and arrivals from the shared SRQ
// checked like any bytes from the wire (header, sequence, credits) before
// the engine sees them.
#include <cstdio>
#include <cstring>

#include "core/log.h"
#include "transport/rc_transport.h"

namespace rdmx {

// Data needs a credit and leaves one send-queue slot for credit writes; a
// control message of a transfer under way may borrow one credit past the
// grant (the peer's SRQ holds more buffers than all credits granted).
bool RcTransport::can_send(int peer, size_t body_len, bool ctrl, unsigned extra) {
    return room(eps_[static_cast<size_t>(peer)], body_len, ctrl, extra);
}

bool RcTransport::room(Endpoint &ep, size_t body_len, bool ctrl, unsigned extra) {
    if (lazy_ && !ep.usable()) {  // not connected yet: start it; the engine queues the send meanwhile
        cm_.want(ep);
        return false;
    }
    if (!ctrl && ep.tx_credits() == 0) {
        if (ep.grant_forged && !ep.forged_reported) {
            ep.forged_reported = true;
            forged_ = true;  // progress closes the peer (no upcall from here)
        }
        return false;
    }
    if (ep.sq_free() < (ctrl ? 1u : 2u) + extra) return false;
    return sizeof(wire::MsgHdr) + body_len <= max_inline_ || send_pool_.free_count() > 0;
}

bool RcTransport::send(int peer, const MsgOut &m, bool ctrl) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    if (ctrl && ep.tx_credits() == 0) ++ep.tx_granted;
    return post_msg(ep, m);
}

// The engine's send fast path: room checked and the message posted on one
// endpoint lookup, without the second call through the Transport table.
Transport::Post RcTransport::try_send(int peer, const MsgOut &m) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    if (!room(ep, m.body_len, false, 0)) return Post::kNoRoom;
    return post_msg(ep, m) ? Post::kSent : Post::kFailed;
}

// Flattened: the credit check and the post are one function, and the
// message is built here, where try_send inlines: its fields stay in registers.
RDMX_HOT_ENTRY Transport::Post rc_try_send_eager(Rc *t, int peer, uint64_t space_comm, int32_t tag, const void *buf,
                                                 size_t len) {
    const auto space = static_cast<uint8_t>(space_comm >> 32);
    const auto comm = static_cast<uint32_t>(space_comm);
    return static_cast<RcTransport *>(t)->RcTransport::try_send(
        peer, msg_out(wire::MsgType::kEager, space, comm, tag, len, 0, buf, len));
}

// The header goes into the inline SEND's template (version, flags and
// reserved are set once); a bounce copy takes it from there.
bool RcTransport::post_msg(Endpoint &ep, const MsgOut &m) {
    wire::MsgHdr &h = isend_.hdr;
    h.type = static_cast<uint8_t>(m.type);
    h.space = m.space;
    h.tag = m.tag;
    h.credits = ep.rx_granted;
    h.seq = ep.tx_seq;
    h.length = m.length;
    h.cookie = m.cookie;
    h.comm = m.comm;
    if (sizeof(h) + m.body_len > max_inline_) return post_bounced(ep, m);
    ibv_send_wr *const wr = &isend_.wr;
    if (m.body_len <= kGatherMax) {  // one gather entry: header and body together
        copy_bytes(isend_.tail, m.body, m.body_len);
        isend_.sge[0].length = static_cast<uint32_t>(sizeof(h) + m.body_len);
        wr->num_sge = 1;
    } else {
        isend_.sge[0].length = sizeof(h);
        isend_.sge[1].addr = reinterpret_cast<uint64_t>(m.body);
        isend_.sge[1].length = static_cast<uint32_t>(m.body_len);
        wr->num_sge = 2;
    }
    // Selective signalling: one WR per the QP's period. An inline SEND holds
    // no buffer, so the pool's level (post_bounced) does not concern it.
    wr->send_flags = IBV_SEND_INLINE;
    if (++ep.unsignaled >= ep.signal_every) {
        wr->send_flags |= IBV_SEND_SIGNALED;
        ep.unsignaled = 0;
    }
    return post_wr(ep, wr, SqSlot{});
}

// Out of line, so the inline path's frame does not carry this one's WR.
// While bounce buffers run low every bounce SEND is signalled: RC completes
// in order, so the last one's completion frees all the buffers before it,
// and the unsignalled inline SENDs after it hold none.
bool RcTransport::post_bounced(Endpoint &ep, const MsgOut &m) {
    const wire::MsgHdr &h = isend_.hdr;
    uint32_t idx = 0;
    if (!send_pool_.get(&idx)) return false;
    char *b = send_pool_.buf(idx);
    std::memcpy(b, &h, sizeof(h));
    if (m.body_len > 0) std::memcpy(b + sizeof(h), m.body, m.body_len);
    ibv_sge sge{reinterpret_cast<uint64_t>(b), static_cast<uint32_t>(sizeof(h) + m.body_len), send_pool_.lkey()};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    if (++ep.unsignaled >= ep.signal_every || send_pool_.free_count() < low_bounce_) {
        wr.send_flags = IBV_SEND_SIGNALED;
        ep.unsignaled = 0;
    }
    SqSlot slot{};
    slot.bounce = static_cast<int32_t>(idx);
    return post_wr(ep, &wr, slot);
}

bool RcTransport::post_wr(Endpoint &ep, ibv_send_wr *wr, const SqSlot &slot) {
    wr->wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, wr, &bad)) {
        if (slot.bounce >= 0) send_pool_.put(static_cast<uint32_t>(slot.bounce));
        RDMX_ERROR("eager: ibv_post_send to peer %d (%s) qp 0x%x failed: %s", ep.peer, ep.addr.c_str(), ep.qp_num,
                   strerror(e));
        fail_peer(ep.peer, RDMX_ERR_PEER_LOST, "post_send failed");
        return false;
    }
    ep.record_wr(slot);
    ++ep.tx_seq;
    ++ep.tx_consumed;
    ep.rx_granted_told = ep.rx_granted;
    return true;
}

// Grants travel on every header; a peer that only receives gets them by an
// 8-byte inline RDMA WRITE once half its window is owed. Runs on every
// progress call, so it looks only at the peers granted something since it
// last looked (owed_), and keeps those whose write waits for an SQ slot.
void RcTransport::return_credits() {
    if (owed_.empty()) return;  // the common case on every progress pass
    size_t keep = 0;
    // By index: a failure reported from here may re-enter and append.
    for (size_t i = 0; i < owed_.size(); ++i) {
        Endpoint &ep = eps_[static_cast<size_t>(owed_[i])];
        const bool due = ep.served && ep.usable() && ep.rx_granted - ep.rx_granted_told >= credit_write_at();
        if (due && ep.sq_free() < 1) {
            owed_[keep++] = ep.peer;  // retried when a completion frees a slot
            continue;
        }
        ep.owed = false;
        if (due) write_credits(ep);
    }
    owed_.resize(keep);
}

void RcTransport::write_credits(Endpoint &ep) {
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
        fail_peer(ep.peer, RDMX_ERR_PEER_LOST, "credit write failed");
        return;
    }
    ep.record_empty_wr();
    ep.unsignaled = 0;
    ep.rx_granted_told = ep.rx_granted;
}

// The SRQ buffer goes back and the sender gets one more credit, once the
// buffer is on the SRQ again: buffers wait for a batch of re-posts, unless
// the sender's grant runs low (below what return_credits would write for),
// so no peer waits on credits parked in a partial batch.
void RcTransport::recycle(Endpoint *ep, uint32_t idx) {
    bool due = iface_.repost(idx, ep != nullptr ? ep->peer : -1);
    if (ep != nullptr && static_cast<int32_t>(ep->rx_granted - ep->rx_seq) < static_cast<int32_t>(credit_write_at()))
        due = true;
    if (due) (void)flush_srq();
}

rdmx_status_t RcTransport::flush_srq() {
    return iface_.flush([this](int32_t peer, uint32_t n) {
        Endpoint &ep = eps_[static_cast<size_t>(peer)];
        if (ep.state == ConnState::kFailed) return;  // failed while its buffers waited: nobody uses the credits
        ep.rx_granted += n;
        owe(ep);
    });
}

void RcTransport::owe(Endpoint &ep) {
    if (ep.owed) return;
    ep.owed = true;
    owed_.push_back(ep.peer);
}

void RcTransport::release(int peer, uint64_t token) {
    Endpoint *ep = peer >= 0 && static_cast<size_t>(peer) < eps_.size() ? &eps_[static_cast<size_t>(peer)] : nullptr;
    // A failed peer's buffers go back without a credit nobody will use.
    recycle(ep != nullptr && ep->state != ConnState::kFailed ? ep : nullptr, static_cast<uint32_t>(token));
}

void RcTransport::violation(Endpoint &ep, uint32_t idx, const char *what) {
    RDMX_ERROR("protocol: peer %d (%s) qp 0x%x sent a malformed message (%s): closing its connection", ep.peer,
               ep.addr.c_str(), ep.qp_num, what);
    recycle(nullptr, idx);
    fail_peer(ep.peer, RDMX_ERR_PROTOCOL, what);
}

void RcTransport::credit_forged(Endpoint &ep) {
    if (ep.state == ConnState::kFailed) return;
    RDMX_ERROR("protocol: peer %d (%s) qp 0x%x wrote a credit grant of 0x%llx into its slot, beyond its window of "
               "%u past the %u messages we sent: closing its connection", ep.peer, ep.addr.c_str(), ep.qp_num,
               static_cast<unsigned long long>(ep.forged_grant), ep.tx_window, ep.tx_consumed);
    fail_peer(ep.peer, RDMX_ERR_PROTOCOL, "forged credit grant");
}

void RcTransport::report_forged() {
    forged_ = false;
    for (Endpoint &ep : eps_)
        if (ep.grant_forged) credit_forged(ep);
}

namespace {
// Message number `n` (1-based) from a peer that holds rx_granted credits:
// data needs a credit; a control message of a transfer under way (FIN, CTS,
// PutFin) may borrow one past the grant, and its buffer, recycled at once,
// pays it back.
constexpr uint32_t type_bit(wire::MsgType t) { return 1u << static_cast<uint8_t>(t); }
constexpr uint32_t kBorrowing = type_bit(wire::MsgType::kFin) | type_bit(wire::MsgType::kCts) |
                                type_bit(wire::MsgType::kPutFin);
bool within_grant(const Endpoint &ep, const wire::MsgHdr &h) {
    // One bit test, not three compares (decode_msg let only known types, all below 32, through).
    const bool ctrl = (kBorrowing >> (h.type & 31u) & 1u) != 0;
    const uint32_t n = ep.rx_seq + 1;
    return static_cast<int32_t>(ep.rx_granted + (ctrl ? 1u : 0u) - n) >= 0;
}
}  // namespace

void RcTransport::handle_recv(const ibv_wc &wc) {
    const uint32_t idx = static_cast<uint32_t>(wc.wr_id);
    iface_.consumed();
    const int peer = cm_.qpn_to_peer.find(wc.qp_num);
    if (wc.status != IBV_WC_SUCCESS) {
        // SRQ receives are not flushed by a QP error: this one names its QP,
        // whose connection is broken (e.g. the peer sent more than a buffer).
        // A receive too short for what arrived: the peer broke the size limit.
        const rdmx_status_t why = wc.status == IBV_WC_LOC_LEN_ERR ? RDMX_ERR_PROTOCOL : rc_wc_status(wc.status);
        RDMX_ERROR("recv: completion error %s (status %d, vendor_err 0x%x, opcode %d) from peer %d qp 0x%x on %s",
                   ibv_wc_status_str(wc.status), wc.status, wc.vendor_err, wc.opcode, peer, wc.qp_num, dev_.name());
        if (wc.status != IBV_WC_WR_FLUSH_ERR) recycle(nullptr, idx);
        if (why == RDMX_ERR_DEVICE) return fail_device(why);
        if (peer >= 0) fail_peer(peer, why, ibv_wc_status_str(wc.status));
        return;
    }
    if (peer < 0) {
        RDMX_WARN("recv: %u bytes from unknown qp 0x%x dropped", wc.byte_len, wc.qp_num);
        return recycle(nullptr, idx);
    }
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    if (ep.state != ConnState::kConnected) [[unlikely]] {  // one test for the usual case
        if (ep.state == ConnState::kAccepting) cm_.notify_established(ep);
        // A lost peer's earlier messages are still good; a hostile one's are not.
        if (ep.state == ConnState::kFailed && ep.error == RDMX_ERR_PROTOCOL) return recycle(nullptr, idx);
    }
    // Only a SEND carries a message: an RDMA WRITE with immediate also takes
    // a shared receive, but its buffer holds stale bytes.
    if (wc.opcode != IBV_WC_RECV) return violation(ep, idx, "RDMA WRITE with immediate, not a SEND");
    if (ep.grant_forged) {  // seen by a send that found no credit; the close is due
        recycle(nullptr, idx);
        return credit_forged(ep);
    }
    check_message(ep, wc, idx);
}

void RcTransport::check_message(Endpoint &ep, const ibv_wc &wc, uint32_t idx) {
    const char *buf = iface_.recv_buf(idx);
    wire::MsgHdr h;  // decode_msg fills it whole, or fails and it is not read
    auto de = wire::decode_msg(buf, wc.byte_len, p_.eager_limit, &h);
    if (de != wire::DecodeError::kOk) return violation(ep, idx, wire::decode_error_name(de));
    if (h.seq != ep.rx_seq) return violation(ep, idx, "sequence gap");
    if (!within_grant(ep, h)) {
        char why[112];
        std::snprintf(why, sizeof(why), "credit overrun: message %u with %u granted", ep.rx_seq + 1, ep.rx_granted);
        return violation(ep, idx, why);
    }
    if (!ep.note_grant(h.credits)) return violation(ep, idx, "credit grant beyond its window");
    ++ep.rx_seq;
    // Given back at once unless kept (a credit too, unless the engine
    // closed the peer over this very message).
    if (!engine_on_arrival(sink_, ep.peer, h, buf, wc.byte_len, idx))
        recycle(ep.state != ConnState::kFailed ? &ep : nullptr, idx);
}

}  // namespace rdmx
