// Reading a port's rate inputs from a device (verbs and sysfs); the rate
// itself comes from core/port_rate.h. Verbs-free, so protocols/ includes it
// under the poison headers.
#pragma once
#include <cstdint>
#include <string>

#include "core/port_rate.h"

namespace rdmx {

// The port's speed, width and link layer (ibv_query_port), the device's
// vendor id (ibv_query_device) and, on RoCE, the netdev behind GID 0 with its
// speed. false with *why when the device or port cannot be read.
bool query_port_attrs(const std::string &device, uint8_t port, PortAttrs *out, std::string *why);

// /sys/class/net/<ifname>/speed in Mb/s under `sysfs` (normally "/sys"); -1
// when the file is missing or says the speed is unknown (virtual NICs
// report -1 or fail the read).
int netdev_speed_mbps(const std::string &ifname, const std::string &sysfs = "/sys");

}  // namespace rdmx
