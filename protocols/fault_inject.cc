#include "protocols/fault_inject.h"

#include <unistd.h>

#include <cstring>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

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

// Fills the element the event names; false when it has none to name.
bool fill_element(Ctx *c, ibv_async_event *ev, int peer) {
    switch (ev->event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
        if (peer < 0 || peer >= c->size || peer == c->rank) return false;
        ev->element.qp = c->eps[static_cast<size_t>(peer)].qp;
        return ev->element.qp != nullptr;
    case IBV_EVENT_CQ_ERR: ev->element.cq = c->iface.cq(); return true;
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: ev->element.srq = c->iface.srq(); return true;
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_LID_CHANGE: ev->element.port_num = c->dev.port(); return true;
    default: return true;
    }
}

}  // namespace

rdmx_status_t inject_async_event(rdmx_context_h ctx, const char *event, int peer) {
    if (ctx == nullptr || event == nullptr || !ctx->transport) return RDMX_ERR_INVALID_ARG;
    ibv_async_event ev{};
    bool known = false;
    for (const Named &n : kEvents)
        if (std::strcmp(n.name, event) == 0) {
            ev.event_type = n.type;
            known = true;
        }
    if (!known) return RDMX_ERR_INVALID_ARG;
    {
        std::lock_guard<SpinLock> g(ctx->lock);
        if (!fill_element(ctx, &ev, peer)) return RDMX_ERR_INVALID_ARG;
        RDMX_WARN("inject: synthetic %s on %s (peer %d)", ibv_event_type_str(ev.event_type), ctx->dev.name(), peer);
        vx::inject_async_event(ctx->dev.ctx(), ev);
    }
    if (ctx->wake_fd >= 0) {  // a sleeping progress thread looks at once
        uint64_t one = 1;
        ssize_t w = write(ctx->wake_fd, &one, sizeof(one));
        (void)w;
    }
    return RDMX_OK;
}

}  // namespace rdmx
