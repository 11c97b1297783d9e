// windows_gate COMMAND [ARGS...]: runs COMMAND only where rendezvous through
// type 2 memory windows can be tested, else exits 77 (ctest SKIP) saying why.
// The device is the one rdmx would pick (RDMX_DEVICE, RDMX_IFADDR, or the
// first active port). Soft-RoCE advertises type 2 windows, but they fail
// under retransmission (bind errors, stalled transfers: docs/design/
// protocols.md), so it is skipped too.
#include <unistd.h>

#include <cstdio>

#include "core/config.h"
#include "transport/device.h"

namespace {
constexpr int kSkip = 77;
constexpr uint32_t kSoftRoceVendor = 0xffffff;

int skip(const char *why, const char *dev) {
    std::printf("SKIP: rendezvous through memory windows not run: %s%s%s\n", dev, *dev ? ": " : "", why);
    return kSkip;
}
}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: windows_gate COMMAND [ARGS...]\n");
        return 2;
    }
    rdmx::Config cfg;
    if (cfg.load(nullptr) != RDMX_OK) return 1;
    rdmx::DeviceChoice dc;
    if (rdmx::select_device(cfg, 0, &dc) != RDMX_OK) return skip("no RDMA device", "");
    if (dc.name.empty()) return skip("the device is chosen by address (RDMX_IFADDR), cannot query it here", "");
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    ibv_device_attr a{};
    bool found = false;
    for (int i = 0; i < n && !found; ++i) {
        if (dc.name != ibv_get_device_name(list[i])) continue;
        if (ibv_context *ctx = ibv_open_device(list[i])) {
            found = ibv_query_device(ctx, &a) == 0;
            ibv_close_device(ctx);
        }
    }
    if (list) ibv_free_device_list(list);
    if (!found) return skip("cannot query the device", dc.name.c_str());
    if (a.vendor_id == kSoftRoceVendor)
        return skip("Soft-RoCE's type 2 windows fail under retransmission; run on a device with working windows",
                    dc.name.c_str());
    if ((a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) == 0)
        return skip("the device has no type 2 memory windows", dc.name.c_str());
    std::printf("windows_gate: %s has type 2 memory windows: running with them\n", dc.name.c_str());
    std::fflush(stdout);
    execvp(argv[1], argv + 1);
    std::perror("windows_gate: execvp");
    return 1;
}
