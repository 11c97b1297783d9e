#include "protocols/test_hooks.h"

#include <vector>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

rdmx_status_t hold_send_completions(rdmx_context_h ctx, int peer) {
    if (ctx == nullptr || !ctx->transport) return RDMX_ERR_INVALID_ARG;
    std::lock_guard<SpinLock> g(ctx->lock);
    if (peer < 0 || peer >= ctx->size || peer == ctx->rank || ctx->held_peer >= 0) return RDMX_ERR_INVALID_ARG;
    RDMX_WARN("test hook: holding send completions for peer %d", peer);
    ctx->held_peer = peer;
    return RDMX_OK;
}

void release_send_completions(rdmx_context_h ctx) {
    if (ctx == nullptr || !ctx->transport) return;
    bool notify = false;
    {
        std::lock_guard<SpinLock> g(ctx->lock);
        RDMX_WARN("test hook: releasing %zu held send completions for peer %d", ctx->held_wcs.size(),
                  ctx->held_peer);
        ctx->held_peer = -1;
        std::vector<ibv_wc> held;
        held.swap(ctx->held_wcs);
        for (const ibv_wc &wc : held) handle_send_wc(ctx, wc);
        notify = ctx->notify_pending;
        ctx->notify_pending = false;
    }
    if (notify) notify_waiters(ctx);
}

namespace {

// Bounce buffers and READ/WRITE slots between sq_done and sq_posted.
void count_ring(const Endpoint &ep, std::vector<int> *owners, uint32_t *rdma, std::string *why) {
    *rdma = 0;
    for (uint32_t s = ep.sq_done; s != ep.sq_posted; ++s) {
        const SqSlot &slot = ep.ring[s & (ep.sq_depth - 1)];
        if (slot.cookie != 0) ++*rdma;
        if (slot.bounce < 0) continue;
        int &owner = (*owners)[static_cast<size_t>(slot.bounce)];
        if (owner >= 0 && why->empty())
            *why = "bounce buffer " + std::to_string(slot.bounce) + " held by ring slots of peers " +
                   std::to_string(owner) + " and " + std::to_string(ep.peer);
        owner = ep.peer;
    }
}

}  // namespace

rdmx_status_t check_engine(rdmx_context_h ctx, std::string *why) {
    why->clear();
    if (ctx == nullptr || !ctx->transport) return RDMX_OK;
    std::lock_guard<SpinLock> g(ctx->lock);
    std::vector<int> owners(ctx->send_pool.count(), -1);
    size_t held = 0;
    for (const Endpoint &ep : ctx->eps) {
        if (ep.peer == ctx->rank || ep.ring.empty()) continue;
        const uint32_t used = ep.sq_posted - ep.sq_done;
        if (used > ep.sq_depth) {
            *why = "peer " + std::to_string(ep.peer) + ": " + std::to_string(used) + " WRs outstanding on a ring of " +
                   std::to_string(ep.sq_depth);
            return RDMX_ERR_INTERNAL;
        }
        uint32_t rdma = 0;
        count_ring(ep, &owners, &rdma, why);
        if (why->empty() && ep.usable() && rdma != ep.reads_in_flight)
            *why = "peer " + std::to_string(ep.peer) + ": " + std::to_string(ep.reads_in_flight) +
                   " READ/WRITEs counted in flight, " + std::to_string(rdma) + " in its ring";
        if (!why->empty()) return RDMX_ERR_INTERNAL;
    }
    for (int o : owners) held += o >= 0 ? 1 : 0;
    if (held + ctx->send_pool.free_count() != ctx->send_pool.count()) {
        *why = "bounce buffers do not balance (leaked or shared): " + std::to_string(ctx->send_pool.free_count()) +
               " free, " + std::to_string(held) + " held by ring slots, " + std::to_string(ctx->send_pool.count()) +
               " in all";
        return RDMX_ERR_INTERNAL;
    }
    return RDMX_OK;
}

}  // namespace rdmx
