// A port's rate from what ibv_query_port reports: the InfiniBand speed and
// width codes give the signalling rate (lanes x per-lane rate) and, after the
// line encoding, the data rate a payload can use. On RoCE the netdev's speed
// (/sys/class/net/<if>/speed) is the data rate itself and wins when known.
// Pure and verbs-free (the codes are plain integers here), so rdmx-info, the
// library and the unit tests share one table; transport/port_query.h reads
// the attributes from a device.
#pragma once

#include <cstdint>
#include <string>

namespace rdmx {

// What kind of device a port belongs to: only real hardware has a rate worth
// comparing a measurement with (Soft-RoCE and siw report a made-up one).
enum class DeviceKind : uint8_t { kUnknown, kHardware, kSoftRoce, kSiw };
const char *device_kind_name(DeviceKind k);  // "unknown", "hardware", "soft-roce", "siw"

// Vendor ids the kernel's software devices report (ibv_device_attr.vendor_id).
inline constexpr uint32_t kVendorSoftRoce = 0xffffff;  // rdma_rxe
inline constexpr uint32_t kVendorSiw = 0x626d74;       // siw ("bmt")

// The inputs, as the device reports them.
struct PortAttrs {
    std::string device;          // "mlx5_0", "rxe0"
    uint32_t vendor_id = 0;      // 0: not known
    uint32_t active_speed = 0;   // ibv_port_attr.active_speed (or active_speed_ex where the library has it)
    uint8_t active_width = 0;    // ibv_port_attr.active_width
    bool ethernet = false;       // link layer Ethernet: RoCE
    std::string netdev;          // RoCE: the netdev behind GID 0, "" unknown
    int netdev_mbps = -1;        // its /sys/class/net/<if>/speed; -1 (or 0) unknown, as on virtual NICs
    // What an administrator compares across hosts (not used for the rate).
    std::string fw_ver;          // ibv_device_attr.fw_ver, "" unknown
    std::string state;           // ibv_port_state_str: "active", "down", ...
    uint32_t active_mtu = 0;     // bytes (ibv_port_attr.active_mtu); 0 unknown
};

// One InfiniBand lane speed (the IBTA names; the codes are ibv_port_attr's).
struct LaneSpeed {
    uint32_t code;
    const char *name;        // "EDR"
    double signal_gbps;      // per-lane signalling rate
    double data_gbps;        // per-lane data rate after encoding (and FEC for PAM4 speeds)
    const char *encoding;
};
const LaneSpeed *lane_speed(uint32_t code);  // nullptr: a code this table does not know
int lane_count(uint8_t width_code);          // 1, 2, 4, 8, 12; 0 for an unknown code

enum class RateSource : uint8_t { kUnknown, kIbPort, kNetdev };
const char *rate_source_name(RateSource s);  // "unknown", "ibv_query_port", "netdev"

struct PortRate {
    DeviceKind kind = DeviceKind::kUnknown;
    RateSource source = RateSource::kUnknown;
    double signal_gbps = 0;  // lanes x per-lane signalling rate (0: unknown)
    double data_gbps = 0;    // what payload can use after encoding (0: unknown)
    int lanes = 0;           // 0 for a rate taken from the netdev
    std::string speed;       // "4x EDR", "100000 Mb/s Ethernet", "" unknown
    std::string detail;      // one sentence: where the figures came from, why unknown
    bool known() const { return data_gbps > 0; }
};

DeviceKind device_kind(const std::string &device, uint32_t vendor_id);
PortRate port_rate(const PortAttrs &a);

}  // namespace rdmx
