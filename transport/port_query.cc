// Reading a port's rate inputs (transport/port_query.h).
#include "transport/port_query.h"

#include <infiniband/verbs.h>

#include <cstring>
#include <fstream>

#include "transport/verbs_shim.h"

namespace rdmx {

namespace {

// The first line of a sysfs attribute, "" when it cannot be read.
std::string read_line(const std::string &path) {
    std::ifstream f(path);
    std::string s;
    if (f) std::getline(f, s);
    return s;
}

// RoCE: the netdev behind the port's GID 0 (the kernel lists it per GID).
std::string roce_netdev(const std::string &device, uint8_t port) {
    return read_line("/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) + "/gid_attrs/ndevs/0");
}

// enum ibv_mtu (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5) in bytes; 0 unknown.
uint32_t mtu_bytes(ibv_mtu m) {
    constexpr uint32_t kSmallestMtu = 256;
    return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? kSmallestMtu << (m - IBV_MTU_256) : 0;
}

}  // namespace

int netdev_speed_mbps(const std::string &ifname, const std::string &sysfs) {
    if (ifname.empty() || ifname.find('/') != std::string::npos) return -1;
    const std::string s = read_line(sysfs + "/class/net/" + ifname + "/speed");
    char *end = nullptr;
    const long v = std::strtol(s.c_str(), &end, 10);
    constexpr long kMaxMbps = 100L * 1000 * 1000;  // beyond any link: a garbled file
    return end != s.c_str() && v > 0 && v < kMaxMbps ? static_cast<int>(v) : -1;
}

bool query_port_attrs(const std::string &device, uint8_t port, PortAttrs *out, std::string *why) {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    ibv_context *ctx = nullptr;
    for (int d = 0; list != nullptr && d < n && ctx == nullptr; ++d)
        if (device == ibv_get_device_name(list[d])) ctx = ibv_open_device(list[d]);
    if (list != nullptr) ibv_free_device_list(list);
    out->device = device;
    if (ctx == nullptr) {
        *why = "device " + device + " not found or cannot be opened";
        return false;
    }
    ibv_device_attr da{};
    ibv_port_attr pa{};
    int e = vx::query_device(ctx, &da);
    if (e == 0) {
        out->vendor_id = da.vendor_id;
        out->fw_ver = std::string(da.fw_ver, strnlen(da.fw_ver, sizeof(da.fw_ver)));
    }
    if (e == 0) e = vx::query_port(ctx, port, &pa);
    ibv_close_device(ctx);
    if (e != 0) {
        *why = "device " + device + ":" + std::to_string(port) + ": " + std::strerror(e);
        return false;
    }
    out->state = ibv_port_state_str(pa.state);
    out->active_mtu = mtu_bytes(pa.active_mtu);
    out->active_speed = pa.active_speed;
    out->active_width = pa.active_width;
    out->ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
    if (out->ethernet) {
        out->netdev = roce_netdev(device, port);
        out->netdev_mbps = netdev_speed_mbps(out->netdev);
    }
    return true;
}

}  // namespace rdmx
