// What tools report about a context: rdmx_get_port_info, the RDMA port its
// rc lane uses and its rate (core/port_rate.h), for comparing a measured
// bandwidth with what the link can carry; rdmx_config_text, its effective
// configuration.
#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "core/config.h"
#include "core/log.h"
#include "core/port_rate.h"
#include "protocols/api_internal.h"
#include "protocols/context.h"
#include "transport/port_query.h"

using rdmx::Ctx;
using namespace rdmx::api;

namespace {

template <size_t N>
void copy_str(char (&dst)[N], const std::string &src) {
    std::snprintf(dst, N, "%s", src.c_str());
}

// The rc lane names itself "rc <device>:<port>" (transport.h): the port is
// the number after the last colon.
int port_of(const std::string &lane_name) {
    const size_t colon = lane_name.rfind(':');
    return colon == std::string::npos ? 0 : std::atoi(lane_name.c_str() + colon + 1);
}

// The struct as first published ended at `detail`: callers built against it
// pass that size and get those fields.
constexpr size_t kFirstVersion = offsetof(rdmx_port_info_t, fw_ver);

rdmx_status_t fill_port_info(Ctx *ctx, rdmx_port_info_t *info);

}  // namespace

extern "C" {

void rdmx_port_info_init(rdmx_port_info_t *info) {
    if (info == nullptr) return;
    std::memset(info, 0, sizeof(*info));
    info->struct_size = sizeof(*info);
    info->netdev_mbps = -1;
}

rdmx_status_t rdmx_get_port_info(rdmx_context_h handle, rdmx_port_info_t *info) {
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_get_port_info", handle, &h)) return st;
    Ctx *ctx = h.c;
    if (info == nullptr) RDMX_BAD_ARG("rdmx_get_port_info: info is NULL");
    if (info->struct_size < kFirstVersion)
        RDMX_BAD_ARG("rdmx_get_port_info: info->struct_size is %zu (call rdmx_port_info_init first)",
                     info->struct_size);
    // Every field is written afresh (a struct may be passed again), into a
    // whole struct of today's size, of which the caller gets what its
    // struct_size covers.
    const size_t size = std::min(info->struct_size, sizeof(rdmx_port_info_t));
    rdmx_port_info_t all;
    rdmx_status_t st = fill_port_info(ctx, &all);
    std::memcpy(info, &all, size);
    info->struct_size = size;
    return st;
}

size_t rdmx_config_text(rdmx_context_h handle, char *buf, size_t len) {
    Handle h;
    // A context that failed (a device gone) still has its configuration.
    if (check_handle("rdmx_config_text", handle, &h) == RDMX_ERR_INVALID_ARG) return 0;
    if (buf == nullptr && len != 0) {
        RDMX_ERROR("invalid argument: rdmx_config_text: buf is NULL with len %zu", len);
        return 0;
    }
    std::string text;
    try {
        for (const rdmx::ConfigEntry &e : h.c->cfg.entries) {
            std::string value = e.value;
            std::replace_if(value.begin(), value.end(), [](char ch) { return ch == '\t' || ch == '\n' || ch == '\r'; },
                            ' ');
            text += std::string(e.env) + '\t' + value + '\t' + rdmx::config_source_name(e.source) + '\n';
        }
    } catch (const std::bad_alloc &) {
        RDMX_ERROR("rdmx_config_text: out of memory");
        return 0;
    }
    if (len > 0) {
        const size_t n = std::min(text.size(), len - 1);
        std::memcpy(buf, text.data(), n);
        buf[n] = '\0';
    }
    return text.size();
}

}  // extern "C"

namespace {

rdmx_status_t fill_port_info(Ctx *ctx, rdmx_port_info_t *info) {
    rdmx_port_info_init(info);
    std::string device, lane;
    {
        std::lock_guard<rdmx::SpinLock> g(ctx->lock);
        for (const rdmx::Peer &p : ctx->peers) {
            if (ctx->rc && p.t == ctx->rc.get()) ++info->rc_peers;
            if (ctx->sm && p.t == ctx->sm.get()) ++info->sm_peers;
        }
        if (ctx->rc) {
            device = ctx->rc->device_name();
            lane = ctx->rc->name();
        }
    }
    copy_str(info->kind, rdmx::device_kind_name(rdmx::DeviceKind::kUnknown));
    copy_str(info->source, rdmx::rate_source_name(rdmx::RateSource::kUnknown));
    if (device.empty()) {
        copy_str(info->detail, "no RDMA port in use: every peer of this rank is on its node (shared memory)");
        return RDMX_OK;
    }
    // Read outside the engine's lock: it opens the device for a moment.
    info->port = port_of(lane);
    copy_str(info->device, device);
    rdmx::PortAttrs attrs;
    std::string why;
    if (!rdmx::query_port_attrs(device, static_cast<uint8_t>(info->port), &attrs, &why)) {
        RDMX_WARN("rdmx_get_port_info: %s; the port's rate is unknown", why.c_str());
        copy_str(info->detail, why + "; rate unknown");
        return RDMX_OK;
    }
    const rdmx::PortRate r = rdmx::port_rate(attrs);
    copy_str(info->kind, rdmx::device_kind_name(r.kind));
    copy_str(info->source, rdmx::rate_source_name(r.source));
    copy_str(info->speed, r.speed);
    copy_str(info->detail, r.detail);
    info->signal_gbps = r.signal_gbps;
    info->data_gbps = r.data_gbps;
    info->netdev_mbps = attrs.netdev_mbps;
    copy_str(info->fw_ver, attrs.fw_ver);
    copy_str(info->state, attrs.state);
    info->active_mtu = static_cast<int>(attrs.active_mtu);
    copy_str(info->link_layer, attrs.ethernet ? "Ethernet" : "InfiniBand");
    return RDMX_OK;
}

}  // namespace
