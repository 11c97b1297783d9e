// The port rate table (core/port_rate.h) and the sysfs netdev speed reader
// (transport/port_query.h), on made-up attributes: no device needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/port_rate.h"
#include "transport/port_query.h"

namespace {

using rdmx::DeviceKind;
using rdmx::PortAttrs;
using rdmx::RateSource;

// ibv_port_attr codes (infiniband/verbs.h; kept as numbers: core is verbs-free).
constexpr uint32_t kSdr = 1, kDdr = 2, kQdr = 4, kFdr10 = 8, kFdr = 16, kEdr = 32, kHdr = 64, kNdr = 128,
                   kXdr = 256;
constexpr uint8_t kW1x = 1, kW4x = 2, kW8x = 4, kW12x = 8, kW2x = 16;
constexpr uint32_t kMellanox = 0x02c9;

PortAttrs ib(uint32_t speed, uint8_t width) {
    PortAttrs a;
    a.device = "mlx5_0";
    a.vendor_id = kMellanox;
    a.active_speed = speed;
    a.active_width = width;
    return a;
}

TEST(PortRate, LaneTableMatchesTheIbSpeeds) {
    struct Want {
        uint32_t code;
        const char *name;
        double signal, data;
    };
    const Want want[] = {{kSdr, "SDR", 2.5, 2.0},          {kDdr, "DDR", 5.0, 4.0},
                         {kQdr, "QDR", 10.0, 8.0},         {kFdr10, "FDR10", 10.3125, 10.0},
                         {kFdr, "FDR", 14.0625, 13.6364},  {kEdr, "EDR", 25.78125, 25.0},
                         {kHdr, "HDR", 53.125, 50.0},      {kNdr, "NDR", 106.25, 100.0},
                         {kXdr, "XDR", 212.5, 200.0}};
    for (const Want &w : want) {
        const rdmx::LaneSpeed *s = rdmx::lane_speed(w.code);
        ASSERT_NE(s, nullptr) << w.name;
        EXPECT_STREQ(s->name, w.name);
        EXPECT_DOUBLE_EQ(s->signal_gbps, w.signal) << w.name;
        EXPECT_NEAR(s->data_gbps, w.data, 1e-3) << w.name;
    }
    EXPECT_EQ(rdmx::lane_speed(0), nullptr);
    EXPECT_EQ(rdmx::lane_speed(3), nullptr);
    EXPECT_EQ(rdmx::lane_speed(512), nullptr);
}

TEST(PortRate, WidthCodes) {
    EXPECT_EQ(rdmx::lane_count(kW1x), 1);
    EXPECT_EQ(rdmx::lane_count(kW2x), 2);
    EXPECT_EQ(rdmx::lane_count(kW4x), 4);
    EXPECT_EQ(rdmx::lane_count(kW8x), 8);
    EXPECT_EQ(rdmx::lane_count(kW12x), 12);
    EXPECT_EQ(rdmx::lane_count(0), 0);
    EXPECT_EQ(rdmx::lane_count(3), 0);
}

TEST(PortRate, InfiniBandPortIsLanesTimesLaneRate) {
    rdmx::PortRate r = rdmx::port_rate(ib(kEdr, kW4x));
    EXPECT_EQ(r.source, RateSource::kIbPort);
    EXPECT_EQ(r.kind, DeviceKind::kHardware);
    EXPECT_EQ(r.lanes, 4);
    EXPECT_DOUBLE_EQ(r.signal_gbps, 103.125);
    EXPECT_DOUBLE_EQ(r.data_gbps, 100.0);
    EXPECT_EQ(r.speed, "4x EDR");
    EXPECT_NE(r.detail.find("64b/66b"), std::string::npos) << r.detail;

    r = rdmx::port_rate(ib(kQdr, kW4x));   // 40 Gb/s signalling, 8b/10b
    EXPECT_DOUBLE_EQ(r.signal_gbps, 40.0);
    EXPECT_DOUBLE_EQ(r.data_gbps, 32.0);
    EXPECT_NE(r.detail.find("8b/10b"), std::string::npos) << r.detail;

    r = rdmx::port_rate(ib(kNdr, kW2x));   // NDR200 (2 lanes)
    EXPECT_DOUBLE_EQ(r.signal_gbps, 212.5);
    EXPECT_DOUBLE_EQ(r.data_gbps, 200.0);
    EXPECT_EQ(r.speed, "2x NDR");
    EXPECT_TRUE(r.known());
}

TEST(PortRate, UnknownCodesLeaveTheRateUnknown) {
    rdmx::PortRate r = rdmx::port_rate(ib(3, kW4x));
    EXPECT_FALSE(r.known());
    EXPECT_EQ(r.source, RateSource::kUnknown);
    EXPECT_NE(r.detail.find("speed code"), std::string::npos) << r.detail;
    r = rdmx::port_rate(ib(kEdr, 3));
    EXPECT_FALSE(r.known());
    EXPECT_NE(r.detail.find("width code"), std::string::npos) << r.detail;
}

TEST(PortRate, RoceTakesTheNetdevSpeedWhenKnown) {
    PortAttrs a = ib(kEdr, kW4x);   // what the kernel derives from 100GbE
    a.ethernet = true;
    a.netdev = "ens1f0";
    a.netdev_mbps = 100000;
    rdmx::PortRate r = rdmx::port_rate(a);
    EXPECT_EQ(r.source, RateSource::kNetdev);
    EXPECT_DOUBLE_EQ(r.data_gbps, 100.0);
    EXPECT_NE(r.detail.find("/sys/class/net/ens1f0/speed"), std::string::npos) << r.detail;

    a.netdev_mbps = -1;   // virtual NIC: back to the port's codes, saying why
    r = rdmx::port_rate(a);
    EXPECT_EQ(r.source, RateSource::kIbPort);
    EXPECT_DOUBLE_EQ(r.data_gbps, 100.0);
    EXPECT_NE(r.detail.find("reports no speed"), std::string::npos) << r.detail;
}

TEST(PortRate, SoftwareDevicesAreNotHardware) {
    EXPECT_EQ(rdmx::device_kind("rxe0", rdmx::kVendorSoftRoce), DeviceKind::kSoftRoce);
    EXPECT_EQ(rdmx::device_kind("roce_sw", rdmx::kVendorSoftRoce), DeviceKind::kSoftRoce);
    EXPECT_EQ(rdmx::device_kind("rxe1", 0), DeviceKind::kSoftRoce);
    EXPECT_EQ(rdmx::device_kind("siw0", rdmx::kVendorSiw), DeviceKind::kSiw);
    EXPECT_EQ(rdmx::device_kind("mlx5_0", kMellanox), DeviceKind::kHardware);
    EXPECT_EQ(rdmx::device_kind("mlx5_0", 0), DeviceKind::kUnknown);

    PortAttrs a;
    a.device = "rxe0";
    a.vendor_id = rdmx::kVendorSoftRoce;
    a.active_speed = kSdr;   // rxe over a NIC of unknown speed
    a.active_width = kW1x;
    a.ethernet = true;
    a.netdev = "veth0";
    const rdmx::PortRate r = rdmx::port_rate(a);
    EXPECT_EQ(r.kind, DeviceKind::kSoftRoce);
    EXPECT_NE(r.detail.find("Soft-RoCE"), std::string::npos) << r.detail;
    EXPECT_STREQ(rdmx::device_kind_name(r.kind), "soft-roce");
}

TEST(PortRate, NetdevSpeedFromSysfs) {
    const std::filesystem::path root =
        std::filesystem::temp_directory_path() / ("rdmx_sysfs_" + std::to_string(::getpid()));
    auto speed_file = [&](const std::string &ifname, const std::string &text) {
        std::filesystem::create_directories(root / "class/net" / ifname);
        std::ofstream(root / "class/net" / ifname / "speed") << text;
    };
    speed_file("eth0", "25000\n");
    speed_file("veth0", "-1\n");
    speed_file("bad0", "fast\n");
    EXPECT_EQ(rdmx::netdev_speed_mbps("eth0", root.string()), 25000);
    EXPECT_EQ(rdmx::netdev_speed_mbps("veth0", root.string()), -1);
    EXPECT_EQ(rdmx::netdev_speed_mbps("bad0", root.string()), -1);
    EXPECT_EQ(rdmx::netdev_speed_mbps("none0", root.string()), -1);
    EXPECT_EQ(rdmx::netdev_speed_mbps("../eth0", root.string()), -1);
    EXPECT_EQ(rdmx::netdev_speed_mbps("", root.string()), -1);
    std::filesystem::remove_all(root);
}

}  // namespace
