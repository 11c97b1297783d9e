// The sm transport's receive side, as templates over the sink: the engine
// calls progress_with() with itself (rdmx_context, a final class), so each
// arrival's on_arrival is a direct call that inlines into the engine's
// flattened wait; SmTransport::progress() instantiates it with the
// TransportSink interface for everyone else. Included by sm.cc and by the
// engine's progress pass only.
#pragma once
#include <cstdint>

#include "core/clock.h"
#include "core/wire.h"
#include "transport/sm.h"
#include "transport/sm_shm.h"

namespace rdmx {

constexpr int kSmPollBudget = 64;  // slots one ring may deliver per progress pass

// A delivered slot's release token: the peer's local index above the slot
// count modulo 2^48 (release() rebuilds the count within [tail, next)).
constexpr unsigned kSmTokenSlotBits = 48;
constexpr uint64_t kSmTokenSlotMask = (uint64_t{1} << kSmTokenSlotBits) - 1;
inline uint64_t sm_token_of(uint32_t peer_index, uint64_t slot) {
    return (uint64_t{peer_index} << kSmTokenSlotBits) | (slot & kSmTokenSlotMask);
}

// Delivers what the peer published in its ring to us, in order. Every value
// read from the ring is read once, checked, then used.
template <class Sink> int SmTransport::poll_ring(Peer &pe, Sink &sink) {
    const uint64_t head = pe.in_ring->head.load(std::memory_order_acquire);
    if (head == pe.in_next) return 0;
    if (head < pe.in_next || head - pe.in_tail > lay_.nslots) {
        violation(pe, "ring head %llu outside [%llu, %llu]", static_cast<unsigned long long>(head),
                  static_cast<unsigned long long>(pe.in_next),
                  static_cast<unsigned long long>(pe.in_tail + lay_.nslots));
        return 0;
    }
    int n = 0;
    while (pe.in_next < head && n < kSmPollBudget && pe.state == PeerState::kUp) {
        const uint64_t slot = pe.in_next;
        const char *s = pe.in_slots + (slot & lay_.slot_mask) * lay_.slot_size;
        sm::SlotHdr sh;
        if (sm::ShmError e = sm::decode_slot(s, lay_.slot_size, &sh); e != sm::ShmError::kOk) {
            violation(pe, "slot %llu: %s", static_cast<unsigned long long>(slot), sm::shm_error_name(e));
            return n;
        }
        const char *body = s + sizeof(sm::SlotHdr);
        pe.held[slot & lay_.slot_mask] = 1;
        ++pe.in_next;
        ++n;
        if (static_cast<sm::SlotKind>(sh.kind) == sm::SlotKind::kPipeReq) {
            sm::PipeReq r;
            if (sm::ShmError e = sm::decode_pipe_req(body, sh.len, p_.rma_chunk, &r); e != sm::ShmError::kOk)
                violation(pe, "pipelined request: %s", sm::shm_error_name(e));
            else
                serve_request(pe, r);
            give_back(pe, slot, false);
            continue;
        }
        wire::MsgHdr h;
        if (wire::DecodeError e = wire::decode_msg(body, sh.len, p_.eager_limit, &h); e != wire::DecodeError::kOk) {
            violation(pe, "message in slot %llu: %s", static_cast<unsigned long long>(slot), wire::decode_error_name(e));
            return n;
        }
        if (h.seq != pe.recv_seq) {
            violation(pe, "message sequence %u, expected %u", h.seq, pe.recv_seq);
            return n;
        }
        ++pe.recv_seq;
        if (!sink.on_arrival(pe.rank, h, body, sh.len, sm_token_of(pe.idx, slot))) give_back(pe, slot, false);
    }
    publish_tail(pe);
    return n;
}

// The copy pumps and the completion report are called only when they have
// work (tested here, inline): an idle or small-message pass costs the ring
// polls alone.
template <class Sink> int SmTransport::progress_with(Sink &sink, bool housekeeping) {
    int n = done_.empty() ? 0 : report_done();
    const double now = housekeeping ? static_cast<double>(now_ns()) * 1e-9 : 0;
    for (Peer *p : remote_) {
        Peer &pe = *p;
        if (pe.state != PeerState::kUp) continue;
        n += poll_ring(pe, sink);
        if (pe.served.active && pe.state == PeerState::kUp) n += pump_served(pe);
        if (!pe.ops.empty() && pe.state == PeerState::kUp) n += pump_requester(pe, now);
        if (housekeeping && pe.state == PeerState::kUp) housekeep(pe, now);
    }
    if (failures_pending_) report_failures();
    if (!done_.empty()) n += report_done();
    return n;
}

}  // namespace rdmx
