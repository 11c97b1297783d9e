// Test hooks of the RC transport (reached through protocols/test_hooks.h and
// fault_inject.h): held send completions, a self-check of the send rings and
// bounce buffers, and synthetic asynchronous events.
#include <cstring>

#include "core/log.h"
#include "transport/rc_transport.h"

namespace rdmx {

rdmx_status_t RcTransport::hold_send_completions(int peer) {
    if (peer < 0 || static_cast<size_t>(peer) >= eps_.size() || !eps_[static_cast<size_t>(peer)].served ||
        held_peer_ >= 0)
        return RDMX_ERR_INVALID_ARG;
    RDMX_WARN("test hook: holding send completions for peer %d", peer);
    held_peer_ = peer;
    return RDMX_OK;
}

void RcTransport::release_send_completions() {
    RDMX_WARN("test hook: releasing %zu held send completions for peer %d", held_wcs_.size(), held_peer_);
    held_peer_ = -1;
    std::vector<ibv_wc> held;
    held.swap(held_wcs_);
    for (const ibv_wc &wc : held) handle_send_wc(wc);
}

namespace {

// Bounce buffers and READ/WRITE slots between sq_done and sq_posted; the
// slots that hold something must be sq_held many, and every slot outside
// them empty (release_ring skips the walk when nothing is held).
void count_ring(const Endpoint &ep, std::vector<int> *owners, uint32_t *rdma, std::string *why) {
    *rdma = 0;
    uint32_t held = 0;
    for (uint32_t s = ep.sq_posted; s != ep.sq_done + ep.sq_depth; ++s)
        if (!ep.ring[s & (ep.sq_depth - 1)].empty() && why->empty())
            *why = "peer " + std::to_string(ep.peer) + ": send ring slot " + std::to_string(s & (ep.sq_depth - 1)) +
                   " holds something with no WR in flight";
    for (uint32_t s = ep.sq_done; s != ep.sq_posted; ++s) {
        const SqSlot &slot = ep.ring[s & (ep.sq_depth - 1)];
        held += slot.empty() ? 0 : 1;
        if (slot.cookie != 0) ++*rdma;
        if (slot.bounce < 0) continue;
        int &owner = (*owners)[static_cast<size_t>(slot.bounce)];
        if (owner >= 0 && why->empty())
            *why = "bounce buffer " + std::to_string(slot.bounce) + " held by ring slots of peers " +
                   std::to_string(owner) + " and " + std::to_string(ep.peer);
        owner = ep.peer;
    }
    if (held != ep.sq_held && why->empty())
        *why = "peer " + std::to_string(ep.peer) + ": " + std::to_string(held) + " send ring slots hold something, " +
               std::to_string(ep.sq_held) + " counted";
}

}  // namespace

rdmx_status_t RcTransport::check(const std::vector<uint32_t> &rma_in_flight, std::string *why) {
    std::vector<int> owners(send_pool_.count(), -1);
    size_t held = 0;
    for (const Endpoint &ep : eps_) {
        if (!ep.served || ep.ring.empty()) continue;
        const uint32_t used = ep.sq_posted - ep.sq_done;
        if (used > ep.sq_depth) {
            *why = "peer " + std::to_string(ep.peer) + ": " + std::to_string(used) + " WRs outstanding on a ring of " +
                   std::to_string(ep.sq_depth);
            return RDMX_ERR_INTERNAL;
        }
        uint32_t rdma = 0;
        count_ring(ep, &owners, &rdma, why);
        const uint32_t counted = rma_in_flight[static_cast<size_t>(ep.peer)];
        if (why->empty() && ep.usable() && rdma != counted)
            *why = "peer " + std::to_string(ep.peer) + ": " + std::to_string(counted) +
                   " READ/WRITEs counted in flight, " + std::to_string(rdma) + " in its ring";
        if (!why->empty()) return RDMX_ERR_INTERNAL;
    }
    for (int o : owners) held += o >= 0 ? 1 : 0;
    if (held + send_pool_.free_count() != send_pool_.count()) {
        *why = "bounce buffers do not balance (leaked or shared): " + std::to_string(send_pool_.free_count()) +
               " free, " + std::to_string(held) + " held by ring slots, " + std::to_string(send_pool_.count()) +
               " in all";
        return RDMX_ERR_INTERNAL;
    }
    return RDMX_OK;
}

namespace {

struct Named {
    const char *name;
    ibv_event_type type;
};
constexpr Named kEvents[] = {
    {"qp_fatal", IBV_EVENT_QP_FATAL},         {"qp_req_err", IBV_EVENT_QP_REQ_ERR},
    {"qp_access_err", IBV_EVENT_QP_ACCESS_ERR}, {"cq_err", IBV_EVENT_CQ_ERR},
    {"srq_err", IBV_EVENT_SRQ_ERR},           {"srq_limit", IBV_EVENT_SRQ_LIMIT_REACHED},
    {"device_fatal", IBV_EVENT_DEVICE_FATAL}, {"port_err", IBV_EVENT_PORT_ERR},
    {"port_active", IBV_EVENT_PORT_ACTIVE},   {"lid_change", IBV_EVENT_LID_CHANGE},
};

}  // namespace

rdmx_status_t RcTransport::inject_async_event(const char *event, int peer) {
    const Named *n = nullptr;
    for (const Named &e : kEvents)
        if (std::strcmp(e.name, event) == 0) n = &e;
    if (n == nullptr) return RDMX_ERR_INVALID_ARG;
    ibv_async_event ev{};
    ev.event_type = n->type;
    switch (ev.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        if (peer < 0 || static_cast<size_t>(peer) >= eps_.size() || !eps_[static_cast<size_t>(peer)].served)
            return RDMX_ERR_INVALID_ARG;
        ev.element.qp = eps_[static_cast<size_t>(peer)].qp;
        if (ev.element.qp == nullptr) return RDMX_ERR_INVALID_ARG;
        break;
    case IBV_EVENT_CQ_ERR: ev.element.cq = iface_.cq(); break;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: ev.element.srq = iface_.srq(); break;
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_LID_CHANGE: ev.element.port_num = dev_.port(); break;
    default: break;
    }
    RDMX_WARN("inject: synthetic %s on %s (peer %d)", ibv_event_type_str(ev.event_type), dev_.name(), peer);
    vx::inject_async_event(dev_.ctx(), ev);
    return RDMX_OK;
}

}  // namespace rdmx

namespace rdmx {

void RcTransport::fill_stats(rdmx_stats_t *stats) const {
    stats->rcache_enabled = rcache_ != nullptr;
    stats->rndv_windows = rndv_mw_;
    stats->rc_connections = 0;
    for (int peer : live_) stats->rc_connections += eps_[static_cast<size_t>(peer)].usable();
    if (!rcache_) return;
    const RegCache::Stats &s = rcache_->stats();
    stats->rcache_hits = s.hits;
    stats->rcache_misses = s.misses;
    stats->rcache_evictions = s.evictions;
    stats->rcache_invalidations = s.invalidations + s.flushes;
    stats->rcache_bytes = s.bytes;
    stats->rcache_peak_bytes = s.peak_bytes;
    stats->rcache_max_bytes = rcache_->max_bytes();
    stats->rcache_transient_bytes = s.transient_bytes;
}

}  // namespace rdmx
