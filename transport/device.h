// Device choice and the per-context device object (attributes, PD).
#pragma once
#include <netinet/in.h>

#include <string>

#include "core/config.h"
#include "transport/handles.h"

namespace rdmx {

struct DeviceChoice {
    std::string name;     // "" when only an address was given
    uint8_t port = 1;
    sockaddr_in addr{};   // where this rank listens (port 0 = any)
};

// RDMX_DEVICE (a device, device:port, or a comma list picked by local rank),
// else the first ACTIVE port with an IPv4 address in its GID table.
// RDMX_IFADDR (an address or interface name) overrides the address.
rdmx_status_t select_device(const Config &cfg, int local_rank, DeviceChoice *out);

class Device {
public:
    // ctx belongs to rdma_cm (the listening id's verbs); we own the PD.
    rdmx_status_t open(ibv_context *ctx, uint8_t port);
    ibv_context *ctx() const { return ctx_; }
    ibv_pd *pd() const { return pd_.get(); }
    uint8_t port() const { return port_; }
    const ibv_device_attr &attr() const { return attr_; }
    const ibv_port_attr &port_attr() const { return port_attr_; }
    // Type 2 memory windows (bound per QP through the send queue).
    bool has_mw2() const { return (attr_.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0; }
    const char *name() const { return name_.c_str(); }
    uint32_t max_inline() const { return max_inline_; }
    void set_max_inline(uint32_t v) { max_inline_ = v; }

private:
    ibv_context *ctx_ = nullptr;
    uint8_t port_ = 1;
    ibv_device_attr attr_{};
    ibv_port_attr port_attr_{};
    std::string name_;
    uint32_t max_inline_ = 0;
    PdHandle pd_;
};

std::string sockaddr_str(const sockaddr_in &a);

}  // namespace rdmx
