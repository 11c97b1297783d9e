// The port rate table and the rule that picks a rate (core/port_rate.h).
#include "core/port_rate.h"

#include <cstdio>

namespace rdmx {

namespace {

// Per-lane rates. Up to QDR the line code is 8b/10b (data = 0.8 x signal);
// FDR10, FDR and EDR use 64b/66b. HDR, NDR and XDR signal PAM4 with forward
// error correction on top of 64b/66b; their data rates are the nominal 50,
// 100 and 200 Gb/s per lane that the link carries after both.
constexpr double k8b10b = 8.0 / 10.0;
constexpr double k64b66b = 64.0 / 66.0;
constexpr LaneSpeed kLaneSpeeds[] = {
    {1, "SDR", 2.5, 2.5 * k8b10b, "8b/10b"},
    {2, "DDR", 5.0, 5.0 * k8b10b, "8b/10b"},
    {4, "QDR", 10.0, 10.0 * k8b10b, "8b/10b"},
    {8, "FDR10", 10.3125, 10.3125 * k64b66b, "64b/66b"},
    {16, "FDR", 14.0625, 14.0625 * k64b66b, "64b/66b"},
    {32, "EDR", 25.78125, 25.78125 * k64b66b, "64b/66b"},
    {64, "HDR", 53.125, 50.0, "64b/66b + FEC, PAM4"},
    {128, "NDR", 106.25, 100.0, "64b/66b + FEC, PAM4"},
    {256, "XDR", 212.5, 200.0, "64b/66b + FEC, PAM4"},
};

// ibv_port_attr.active_width codes and the lanes they stand for.
struct Width {
    uint8_t code;
    int lanes;
};
constexpr Width kWidths[] = {{1, 1}, {16, 2}, {2, 4}, {4, 8}, {8, 12}};

constexpr double kMbpsPerGbps = 1000.0;

std::string gbps(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g Gb/s", v);
    return b;
}

std::string kind_note(DeviceKind k) {
    switch (k) {
    case DeviceKind::kSoftRoce: return " (Soft-RoCE: software over a netdev; the figure is not a line rate)";
    case DeviceKind::kSiw: return " (siw: software iWARP over TCP; the figure is not a line rate)";
    case DeviceKind::kUnknown:
    case DeviceKind::kHardware: break;
    }
    return "";
}

}  // namespace

const char *device_kind_name(DeviceKind k) {
    switch (k) {
    case DeviceKind::kHardware: return "hardware";
    case DeviceKind::kSoftRoce: return "soft-roce";
    case DeviceKind::kSiw: return "siw";
    case DeviceKind::kUnknown: break;
    }
    return "unknown";
}

const char *rate_source_name(RateSource s) {
    switch (s) {
    case RateSource::kIbPort: return "ibv_query_port";
    case RateSource::kNetdev: return "netdev";
    case RateSource::kUnknown: break;
    }
    return "unknown";
}

const LaneSpeed *lane_speed(uint32_t code) {
    for (const LaneSpeed &s : kLaneSpeeds)
        if (s.code == code) return &s;
    return nullptr;
}

int lane_count(uint8_t width_code) {
    for (const Width &w : kWidths)
        if (w.code == width_code) return w.lanes;
    return 0;
}

// The vendor id is what the kernel's software drivers set; the name prefix
// is the convention of `rdma link add rxe0 type rxe` and covers a device
// whose attributes could not be read.
DeviceKind device_kind(const std::string &device, uint32_t vendor_id) {
    if (vendor_id == kVendorSoftRoce || device.rfind("rxe", 0) == 0) return DeviceKind::kSoftRoce;
    if (vendor_id == kVendorSiw || device.rfind("siw", 0) == 0) return DeviceKind::kSiw;
    return vendor_id != 0 ? DeviceKind::kHardware : DeviceKind::kUnknown;
}

PortRate port_rate(const PortAttrs &a) {
    PortRate r;
    r.kind = device_kind(a.device, a.vendor_id);
    const std::string note = kind_note(r.kind);
    // On RoCE the kernel derives speed and width from the netdev's speed
    // anyway (rounded to the nearest IB pair); the netdev's own figure is
    // exact, and it is already a data rate (Ethernet's coding is below it).
    if (a.ethernet && a.netdev_mbps > 0) {
        r.source = RateSource::kNetdev;
        r.data_gbps = r.signal_gbps = a.netdev_mbps / kMbpsPerGbps;
        r.speed = std::to_string(a.netdev_mbps) + " Mb/s Ethernet";
        r.detail = "netdev " + a.netdev + " speed (/sys/class/net/" + a.netdev + "/speed): " + gbps(r.data_gbps) + note;
        return r;
    }
    const LaneSpeed *s = lane_speed(a.active_speed);
    const int lanes = lane_count(a.active_width);
    const std::string roce_why =
        a.ethernet ? (a.netdev.empty() ? "RoCE port without a known netdev; "
                                       : "netdev " + a.netdev + " reports no speed (virtual NIC?); ")
                   : "";
    if (s == nullptr || lanes == 0) {
        r.detail = roce_why + "ibv_query_port active_speed " + std::to_string(a.active_speed) + ", active_width " +
                   std::to_string(a.active_width) + ": " + (s == nullptr ? "speed" : "width") +
                   " code not in the table, rate unknown" + note;
        return r;
    }
    r.source = RateSource::kIbPort;
    r.lanes = lanes;
    r.signal_gbps = s->signal_gbps * lanes;
    r.data_gbps = s->data_gbps * lanes;
    r.speed = std::to_string(lanes) + "x " + s->name;
    r.detail = roce_why + "ibv_query_port: " + r.speed + " (" + gbps(s->signal_gbps) + " per lane, " + s->encoding +
               "): " + gbps(r.signal_gbps) + " signalling, " + gbps(r.data_gbps) + " data" + note;
    return r;
}

}  // namespace rdmx
