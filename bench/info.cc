// rdmx-info: what rdmx would use on this node and why: devices and ports,
// the limits rdmx relies on, where the progress thread would run, the
// effective configuration with each value's source, and the protocol table.
// `rdmx-info --json` prints the same as one JSON object.
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/placement.h"
#include "core/port_rate.h"
#include "core/wire.h"
#include "protocols/placement_glue.h"
#include "transport/device.h"
#include "transport/port_query.h"

namespace {

struct Out {
    bool json = false;
    bool first = true;
    std::string buf;
    // Strings go through a JSON library: a value may hold quotes,
    // backslashes or control characters (an RDMX_* variable's text).
    static std::string quoted(const std::string &s) { return nlohmann::json(s).dump(); }
    void kv(const char *k, const std::string &v, bool quote = true) {
        if (json) {
            buf += (first ? "" : ",") + quoted(k) + ":" + (quote ? quoted(v) : v);
            first = false;
        } else {
            std::printf("  %-24s %s\n", k, v.c_str());
        }
    }
    void open(const char *k, char br) {
        if (json) {
            buf += (first ? "" : ",") + std::string(k[0] ? quoted(k) + ":" : "") + br;
            first = true;
        } else if (k[0]) {
            std::printf("\n%s\n", k);
        }
    }
    void close(char br) {
        if (json) {
            buf += br;
            first = false;
        }
    }
};

const char *mtu_str(ibv_mtu m) {
    switch (m) {
    case IBV_MTU_256: return "256";
    case IBV_MTU_512: return "512";
    case IBV_MTU_1024: return "1024";
    case IBV_MTU_2048: return "2048";
    case IBV_MTU_4096: return "4096";
    }
    return "?";
}

std::string gid_str(const ibv_gid &g) {
    char s[INET6_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET6, g.raw, s, sizeof(s));
    return s;
}

std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

// The port's rate (core/port_rate.h) and where it came from; rdmx-bench
// compares its bandwidth figures with the data rate.
void rate_info(Out &o, const std::string &dev, int p) {
    rdmx::PortAttrs attrs;
    std::string why;
    const bool ok = rdmx::query_port_attrs(dev, static_cast<uint8_t>(p), &attrs, &why);
    const rdmx::PortRate r = ok ? rdmx::port_rate(attrs) : rdmx::PortRate{};
    if (!ok) o.kv("rate", "unknown: " + why);
    else if (!r.known()) o.kv("rate", "unknown");
    else o.kv("rate", r.speed + ": " + num(r.signal_gbps) + " Gb/s signalling, " + num(r.data_gbps) + " Gb/s data");
    if (o.json) {
        o.kv("rate_signal_gbps", r.known() ? num(r.signal_gbps) : "null", false);
        o.kv("rate_data_gbps", r.known() ? num(r.data_gbps) : "null", false);
        o.kv("rate_speed", r.speed);
        if (attrs.ethernet) o.kv("netdev", attrs.netdev);
        if (attrs.ethernet) o.kv("netdev_mbps", attrs.netdev_mbps > 0 ? std::to_string(attrs.netdev_mbps) : "null", false);
    } else if (attrs.ethernet) {
        o.kv("netdev", (attrs.netdev.empty() ? "?" : attrs.netdev) + ", speed " +
                           (attrs.netdev_mbps > 0 ? std::to_string(attrs.netdev_mbps) + " Mb/s" : "unknown"));
    }
    o.kv("rate_source", rdmx::rate_source_name(r.source));
    o.kv("rate_detail", ok ? r.detail : why);
    o.kv("device_kind", rdmx::device_kind_name(ok ? r.kind : rdmx::device_kind(dev, 0)));
}

void port_info(Out &o, ibv_context *ctx, int p) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, static_cast<uint8_t>(p), &pa) != 0) return;
    o.open("", '{');
    o.kv("port", std::to_string(p), false);
    o.kv("state", ibv_port_state_str(pa.state));
    o.kv("link_layer", pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet (RoCE)" : "InfiniBand");
    o.kv("active_mtu", mtu_str(pa.active_mtu));
    o.kv("max_msg_sz", std::to_string(pa.max_msg_sz), false);
    rate_info(o, ibv_get_device_name(ctx->device), p);
    o.open("gids", '[');
    for (int i = 0; i < pa.gid_tbl_len && i < 16; ++i) {
        ibv_gid g;
        if (ibv_query_gid(ctx, static_cast<uint8_t>(p), i, &g) != 0) continue;
        static const uint8_t zero[16] = {};
        if (std::memcmp(g.raw, zero, 16) == 0) continue;
        if (o.json) o.buf += (o.first ? "\"" : ",\"") + gid_str(g) + "\"", o.first = false;
        else std::printf("  gid[%d]                  %s\n", i, gid_str(g).c_str());
    }
    o.close(']');
    o.close('}');
}

// What a rendezvous exposes on this device with this configuration: to
// whom, with which access, and for how long (docs/reliability.md,
// "Exposure"). Mirrors rndv_setup: the cache may still be off at run time
// when the memory hooks cannot be installed (sanitizer runtimes), which
// narrows the exposure to the third case.
std::string rndv_exposure(const rdmx::Config &c, const ibv_device_attr &a) {
    const bool put = c.rndv_uses_put(a.vendor_id);
    const bool mw2 = (a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0;
    const bool windows = c.rcache != 0 && c.rndv_windows == 1 && mw2;
    std::string who = put ? "put: the receiver's buffer, REMOTE_WRITE only, to the sending peer"
                          : "get: the sender's message, REMOTE_READ only, to the receiving peer";
    if (windows)
        return who + "; through a type 2 memory window over exactly the message's bytes, usable by that peer's QP "
                     "only, invalidated before the operation completes";
    if (c.rcache != 0)
        return who + "; through the cached registration: whole pages, merged with overlapping cached " +
               (put ? "receives" : "sends") + ", usable by any connected peer that knows the rkey (one protection "
               "domain) until the region is evicted or its memory freed, not revoked at completion" +
               (c.rndv_windows == 1 && !mw2 ? " (RDMX_RNDV_WINDOWS=1 but the device has no type 2 windows)" : "");
    return who + "; registered over exactly the message's bytes for the transfer, deregistered when it ends "
                 "(usable meanwhile by any connected peer that knows the rkey)";
}

void device_info(Out &o, ibv_device *dev, const rdmx::Config &cfg) {
    ibv_context *ctx = ibv_open_device(dev);
    if (ctx == nullptr) return;
    ibv_device_attr a{};
    if (ibv_query_device(ctx, &a) == 0) {
        o.open("", '{');
        if (!o.json) std::printf("\ndevice %s\n", ibv_get_device_name(dev));
        o.kv("name", ibv_get_device_name(dev));
        o.kv("max_qp", std::to_string(a.max_qp), false);
        o.kv("max_qp_wr", std::to_string(a.max_qp_wr), false);
        o.kv("max_srq_wr", std::to_string(a.max_srq_wr), false);
        o.kv("max_cqe", std::to_string(a.max_cqe), false);
        o.kv("max_mr", std::to_string(a.max_mr), false);
        o.kv("max_qp_rd_atom", std::to_string(a.max_qp_rd_atom), false);
        o.kv("max_qp_init_rd_atom", std::to_string(a.max_qp_init_rd_atom), false);
        o.kv("numa_node", std::to_string(rdmx::device_numa_node(ibv_get_device_name(dev))), false);
        o.kv("progress_thread", rdmx::describe_progress_placement(ibv_get_device_name(dev)));
        o.kv("rndv_exposure", rndv_exposure(cfg, a));
        o.open("ports", '[');
        for (int p = 1; p <= a.phys_port_cnt; ++p) port_info(o, ctx, p);
        o.close(']');
        o.close('}');
    }
    ibv_close_device(ctx);
}

// Which protocol carries which sizes, from the effective configuration
// (and the selected device, which decides RDMX_RNDV_PROTO=auto and caps
// the chunk at its max_msg_sz). max_inline is known only once a QP exists;
// rdmx asks for 256 bytes.
void protocol_table(Out &o, const rdmx::Config &c, const ibv_device_attr *dev, uint32_t max_msg) {
    using P = rdmx::Config::RndvProto;
    const size_t hdr = sizeof(rdmx::wire::MsgHdr);
    const char *how = c.rndv_proto == P::kGet   ? "get (RDMX_RNDV_PROTO=get): the receiver RDMA-READs the sender's buffer"
                      : c.rndv_proto == P::kPut ? "put (RDMX_RNDV_PROTO=put): the sender RDMA-WRITEs the receiver's buffer"
                      : dev == nullptr          ? "auto: put (RDMA WRITE) on Soft-RoCE, get (RDMA READ) elsewhere"
                      : c.rndv_uses_put(dev->vendor_id)
                          ? "put (auto, Soft-RoCE): the sender RDMA-WRITEs the receiver's buffer"
                          : "get (auto): the receiver RDMA-READs the sender's buffer";
    const size_t chunk = c.rndv_chunk_for(max_msg);
    o.open("protocols", '[');
    struct Row { std::string range, proto; };
    std::vector<Row> rows = {
        {"0 .. " + std::to_string(256 - hdr), "eager, inline in the SEND (no copy, no registration)"},
        {std::to_string(256 - hdr + 1) + " .. " + std::to_string(c.eager_limit), "eager, copied into a registered bounce buffer"},
        {std::to_string(c.rndv_thresh) + " ..", std::string("rendezvous ") + how + ", in chunks of at most " +
                                                    std::to_string(chunk) + " bytes (RDMX_RNDV_CHUNK" +
                                                    (chunk < c.rndv_chunk ? ", capped by the port's max_msg_sz)" : ")") +
                                                    ", " + std::to_string(c.rndv_reads) + " in flight per peer"}};
    for (auto &r : rows) {
        if (!o.json) {
            std::printf("  %-24s %s\n", r.range.c_str(), r.proto.c_str());
            continue;
        }
        o.open("", '{');
        o.kv("bytes", r.range);
        o.kv("protocol", r.proto);
        o.close('}');
    }
    o.close(']');
}

// The locked-memory limit: the most common reason registrations fail.
void limits_info(Out &o) {
    rlimit rl{};
    const bool ok = getrlimit(RLIMIT_MEMLOCK, &rl) == 0;
    auto show = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v) + " bytes"; };
    constexpr rlim_t kLowMemlock = rlim_t{1} << 30;  // below 1 GiB, registrations of large messages fail
    o.open("limits", '{');
    o.kv("memlock_soft", ok ? show(rl.rlim_cur) : "unknown");
    o.kv("memlock_hard", ok ? show(rl.rlim_max) : "unknown");
    if (ok && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < kLowMemlock)
        o.kv("memlock_hint", "low: registrations of large messages and the receive pool may fail with ENOMEM; run "
                             "`ulimit -l unlimited` where the ranks start, or raise memlock in "
                             "/etc/security/limits.conf (and LimitMEMLOCK of slurmd or the launcher's daemon)");
    o.close('}');
}

// RDMX_COLL_* variables are read by the collectives themselves; shown as set.
void coll_settings(Out &o) {
    static const char *const kVars[] = {"RDMX_COLL_BARRIER_ALGO", "RDMX_COLL_BCAST_ALGO", "RDMX_COLL_REDUCE_ALGO",
                                        "RDMX_COLL_ALLREDUCE_ALGO", "RDMX_COLL_REDUCE_SCATTER_ALGO",
                                        "RDMX_COLL_ALLGATHER_ALGO", "RDMX_COLL_GATHER_ALGO",
                                        "RDMX_COLL_SCATTER_ALGO", "RDMX_COLL_ALLTOALL_ALGO"};
    o.open("collectives", '[');
    for (const char *v : kVars) {
        const char *e = std::getenv(v);
        const std::string val = e != nullptr && *e != '\0' ? e : "auto";
        if (!o.json) {
            std::printf("  %-30s %s\n", v, val.c_str());
            continue;
        }
        o.open("", '{');
        o.kv("name", v);
        o.kv("value", val);
        o.close('}');
    }
    o.close(']');
}

}  // namespace

int main(int argc, char **argv) {
    Out o;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) o.json = true;
        else {
            std::printf("usage: rdmx-info [--json]\n");
            return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
        }
    }
    rdmx::Config cfg;
    if (cfg.load(nullptr) != RDMX_OK) return 1;
    o.open("", '{');
    if (!o.json) std::printf("rdmx %d.%d.%d\n", RDMX_VERSION_MAJOR, RDMX_VERSION_MINOR, RDMX_VERSION_PATCH);
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    o.open("devices", '[');
    if (n == 0 && !o.json) std::printf("  (no RDMA devices: is the driver (rdma_rxe, mlx5_ib, ...) loaded?)\n");
    for (int d = 0; d < n; ++d) device_info(o, list[d], cfg);
    o.close(']');
    limits_info(o);
    rdmx::DeviceChoice choice;
    bool chosen = n > 0 && rdmx::select_device(cfg, 0, &choice) == RDMX_OK;
    ibv_device_attr sel_attr{};
    uint32_t sel_max_msg = 0;
    bool have_attr = false;
    for (int d = 0; chosen && d < n && !have_attr; ++d) {
        if (choice.name != ibv_get_device_name(list[d])) continue;
        if (ibv_context *ctx = ibv_open_device(list[d])) {
            ibv_port_attr pa{};
            have_attr = ibv_query_device(ctx, &sel_attr) == 0;
            if (ibv_query_port(ctx, static_cast<uint8_t>(choice.port), &pa) == 0) sel_max_msg = pa.max_msg_sz;
            ibv_close_device(ctx);
        }
    }
    o.open("selected", '{');
    o.kv("device", chosen ? choice.name + ":" + std::to_string(choice.port) : "none");
    o.kv("address", chosen ? rdmx::sockaddr_str(choice.addr) : "none");
    if (chosen && !choice.name.empty()) rate_info(o, choice.name, choice.port);
    o.close('}');
    o.open("config", '[');
    if (!o.json) std::printf("  %-24s %-14s %s\n", "variable", "value", "source");
    for (const auto &e : cfg.entries) {
        if (!o.json) {
            std::printf("  %-24s %-14s %s\n", e.env, e.value.c_str(), rdmx::config_source_name(e.source));
            continue;
        }
        o.open("", '{');
        o.kv("name", e.env);
        o.kv("value", e.value);
        o.kv("source", rdmx::config_source_name(e.source));
        o.close('}');
    }
    o.close(']');
    coll_settings(o);
    protocol_table(o, cfg, have_attr ? &sel_attr : nullptr, sel_max_msg);
    if (list) ibv_free_device_list(list);
    o.close('}');
    if (o.json) std::printf("%s\n", o.buf.c_str());
    return 0;
}
