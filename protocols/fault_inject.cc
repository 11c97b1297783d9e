#include "protocols/fault_inject.h"

#include <unistd.h>

#include "protocols/context.h"

namespace rdmx {

rdmx_status_t inject_async_event(rdmx_context_h ctx, const char *event, int peer) {
    if (ctx == nullptr || event == nullptr || !ctx->rc) return RDMX_ERR_INVALID_ARG;
    {
        std::lock_guard<SpinLock> g(ctx->lock);
        if (rdmx_status_t st = ctx->rc->inject_async_event(event, peer)) return st;
    }
    if (ctx->wake_fd >= 0) {  // a sleeping progress thread looks at once
        uint64_t one = 1;
        ssize_t w = write(ctx->wake_fd, &one, sizeof(one));
        (void)w;
    }
    return RDMX_OK;
}

}  // namespace rdmx
