#include "protocols/test_hooks.h"

#include <vector>

#include "protocols/context.h"

namespace rdmx {

rdmx_status_t hold_send_completions(rdmx_context_h ctx, int peer) {
    if (ctx == nullptr || !ctx->rc) return RDMX_ERR_INVALID_ARG;
    std::lock_guard<SpinLock> g(ctx->lock);
    if (peer < 0 || peer >= ctx->size || ctx->peers[static_cast<size_t>(peer)].t != ctx->rc.get())
        return RDMX_ERR_INVALID_ARG;
    return ctx->rc->hold_send_completions(peer);
}

void release_send_completions(rdmx_context_h ctx) {
    if (ctx == nullptr || !ctx->rc) return;
    bool notify = false;
    {
        std::lock_guard<SpinLock> g(ctx->lock);
        ctx->rc->release_send_completions();
        notify = ctx->notify_pending;
        ctx->notify_pending = false;
    }
    if (notify) notify_waiters(ctx);
}

uint64_t delegated_timeouts(rdmx_context_h ctx) {
    return ctx == nullptr ? 0 : ctx->delegated_timeouts.load(std::memory_order_relaxed);
}

unsigned spin_floor_us(rdmx_context_h ctx) {
    return ctx == nullptr ? 0 : static_cast<unsigned>(ctx->spin_floor_ns / 1000);
}

uint64_t wait_sleeps(rdmx_context_h ctx) {
    return ctx == nullptr ? 0 : ctx->wait_sleeps.load(std::memory_order_relaxed);
}

rdmx_status_t check_engine(rdmx_context_h ctx, std::string *why) {
    why->clear();
    if (ctx == nullptr || !ctx->rc) return RDMX_OK;
    std::lock_guard<SpinLock> g(ctx->lock);
    std::vector<uint32_t> in_flight(ctx->peers.size());
    for (size_t i = 0; i < ctx->peers.size(); ++i) in_flight[i] = ctx->peers[i].rma_in_flight;
    return ctx->rc->check(in_flight, why);
}

}  // namespace rdmx
