#include "transport/device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstring>
#include <sstream>
#include <vector>

#include "core/log.h"

namespace rdmx {

std::string sockaddr_str(const sockaddr_in &a) {
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
    return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

namespace {

struct DeviceList {
    ibv_device **list = nullptr;
    int n = 0;
    DeviceList() { list = ibv_get_device_list(&n); }
    ~DeviceList() {
        if (list) ibv_free_device_list(list);
    }
};

// RoCE GID tables hold the netdev's IPv4 addresses as ::ffff:a.b.c.d.
bool port_ipv4(ibv_context *ctx, uint8_t port, int gid_tbl_len, in_addr *out) {
    for (int i = 0; i < gid_tbl_len && i < 64; ++i) {
        ibv_gid gid;
        if (vx::query_gid(ctx, port, i, &gid) != 0) continue;
        static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(gid.raw, prefix, 12) == 0) {
            std::memcpy(&out->s_addr, gid.raw + 12, 4);
            return true;
        }
    }
    return false;
}

// Looks for name (or any device when empty) with an active port holding an IPv4.
bool find_port(const std::string &want, int want_port, DeviceChoice *out, std::string *why) {
    DeviceList dl;
    if (dl.list == nullptr || dl.n == 0) {
        *why = "no RDMA devices (ibv_devices lists none; is rdma_rxe/the NIC driver loaded?)";
        return false;
    }
    for (int d = 0; d < dl.n; ++d) {
        const char *dn = ibv_get_device_name(dl.list[d]);
        if (!want.empty() && want != dn) continue;
        ibv_context *ctx = ibv_open_device(dl.list[d]);
        if (ctx == nullptr) continue;
        ibv_device_attr da{};
        if (vx::query_device(ctx, &da) == 0) {
            for (int p = 1; p <= da.phys_port_cnt; ++p) {
                if (want_port > 0 && p != want_port) continue;
                ibv_port_attr pa{};
                if (vx::query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) continue;
                if (pa.state != IBV_PORT_ACTIVE) {
                    *why = std::string(dn) + ":" + std::to_string(p) + " is not ACTIVE (" +
                           ibv_port_state_str(pa.state) + ")";
                    continue;
                }
                if (!port_ipv4(ctx, static_cast<uint8_t>(p), pa.gid_tbl_len, &out->addr.sin_addr)) {
                    *why = std::string(dn) + ":" + std::to_string(p) + " has no IPv4 address in its GID table";
                    continue;
                }
                out->name = dn;
                out->port = static_cast<uint8_t>(p);
                ibv_close_device(ctx);
                return true;
            }
        }
        ibv_close_device(ctx);
    }
    if (why->empty()) *why = want.empty() ? "no device with an active port" : "device " + want + " not found";
    return false;
}

bool resolve_ifaddr(const std::string &s, in_addr *out) {
    if (inet_pton(AF_INET, s.c_str(), out) == 1) return true;
    ifaddrs *ifa = nullptr;
    if (getifaddrs(&ifa) != 0) return false;
    bool ok = false;
    for (ifaddrs *i = ifa; i != nullptr && !ok; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && s == i->ifa_name) {
            *out = reinterpret_cast<sockaddr_in *>(i->ifa_addr)->sin_addr;
            ok = true;
        }
    }
    freeifaddrs(ifa);
    return ok;
}

std::string pick_from_list(const std::string &list, int local_rank) {
    std::vector<std::string> items;
    std::stringstream ss(list);
    for (std::string it; std::getline(ss, it, ',');)
        if (!it.empty()) items.push_back(it);
    if (items.empty()) return "";
    return items[static_cast<size_t>(local_rank < 0 ? 0 : local_rank) % items.size()];
}

}  // namespace

rdmx_status_t select_device(const Config &cfg, int local_rank, DeviceChoice *out) {
    out->addr.sin_family = AF_INET;
    std::string dev = pick_from_list(cfg.device, local_rank);
    int port = 0;
    if (auto colon = dev.find(':'); colon != std::string::npos) {
        port = std::atoi(dev.c_str() + colon + 1);
        dev.resize(colon);
    }
    std::string why;
    bool found = find_port(dev, port, out, &why);
    if (!cfg.ifaddr.empty()) {
        std::string ifa = pick_from_list(cfg.ifaddr, local_rank);
        if (!resolve_ifaddr(ifa, &out->addr.sin_addr)) {
            RDMX_ERROR("device: RDMX_IFADDR=%s is neither an IPv4 address nor an interface with one", ifa.c_str());
            return RDMX_ERR_INVALID_ARG;
        }
        return RDMX_OK;  // rdma_cm picks the device behind that address
    }
    if (!found) {
        RDMX_ERROR("device: no usable RDMA port%s%s: %s (hint: ibv_devinfo; set RDMX_DEVICE=dev[:port])",
                   dev.empty() ? "" : " on ", dev.c_str(), why.c_str());
        return RDMX_ERR_NO_DEVICE;
    }
    return RDMX_OK;
}

rdmx_status_t Device::open(ibv_context *ctx, uint8_t port) {
    ctx_ = ctx;
    port_ = port;
    name_ = ibv_get_device_name(ctx->device);
    if (int e = vx::query_device(ctx, &attr_)) {
        RDMX_ERROR("device %s: ibv_query_device failed: %s", name(), strerror(e));
        return RDMX_ERR_DEVICE;
    }
    if (int e = vx::query_port(ctx, port, &port_attr_)) {
        RDMX_ERROR("device %s:%u: ibv_query_port failed: %s", name(), port, strerror(e));
        return RDMX_ERR_DEVICE;
    }
    if (port_attr_.state != IBV_PORT_ACTIVE) {
        RDMX_ERROR("device %s:%u: port is %s, not ACTIVE (hint: check the link, `rdma link`)", name(), port,
                   ibv_port_state_str(port_attr_.state));
        return RDMX_ERR_NO_DEVICE;
    }
    // Async events are read from the progress loop, which must never block.
    if (int e = vx::set_nonblock(ctx->async_fd)) {
        RDMX_ERROR("device %s: cannot make the async event fd non-blocking: %s", name(), strerror(e));
        return RDMX_ERR_DEVICE;
    }
    ibv_pd *pd = nullptr;
    if (int e = vx::alloc_pd(ctx, &pd)) {
        RDMX_ERROR("device %s: ibv_alloc_pd failed: %s", name(), strerror(e));
        return RDMX_ERR_DEVICE;
    }
    pd_.reset(pd);
    return RDMX_OK;
}

}  // namespace rdmx
