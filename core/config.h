// Effective configuration: defaults < RDMX_* environment < rdmx_config_t
// fields. Each value remembers where it came from (rdmx-info prints it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "rdmx/rdmx.h"

namespace rdmx {

// An enum value that came from C (an argument, a struct field) may hold any
// int: read its bytes as an int and check that, since loading an
// out-of-range value as the enum is undefined behaviour.
template <typename E>
int raw_enum(const E &e) {
    static_assert(sizeof(E) == sizeof(int));
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

enum class ConfigSource { kDefault, kEnvironment, kConfigStruct };
const char *config_source_name(ConfigSource s);

struct ConfigEntry {
    const char *env;          // RDMX_* variable name
    std::string value;        // effective value, printable
    ConfigSource source;
    const char *doc;
};

// On demand (RDMX_CONNECT=lazy), credits per peer and send-queue depths are
// planned as for a job of at most this many peers (RDMX_LAZY_PEERS), however
// large the job: a process pays per connection, so its window must not
// shrink with ranks it never talks to, and a job whose full mesh would not
// fit the device still starts. 64 peers: the mesh's own figure from 65 ranks
// on (8 credits per peer).
constexpr unsigned kLazyPlanPeers = 64;

struct Config {
    std::string device;            // "" = auto; may be a comma list chosen by local rank
    std::string ifaddr;            // "" = from the device's GID table
    size_t eager_limit = 8192;
    size_t rndv_thresh = 8193;
    unsigned srq_depth = 512;
    size_t unexpected_limit = 64u << 20;
    size_t unexpected_max = 65536;  // RDMX_UNEXPECTED_MAX: unexpected messages kept before back-pressure
    rdmx_progress_mode_t progress = RDMX_PROGRESS_THREAD;
    rdmx_thread_level_t threads = RDMX_THREADS_MULTIPLE;  // RDMX_THREADS
    rdmx_check_level_t check_args = RDMX_CHECK_ALL;       // RDMX_CHECK_ARGS
    int log_level = 1;
    std::string log_file;          // RDMX_LOG_FILE: "" = stderr; %h %r %p expand (core/log.h)
    double connect_timeout = 60.0;
    double peer_timeout = 30.0;
    // RDMX_SPIN_US: a wait busy-polls this long before sleeping. auto
    // (kSpinAuto): kSpinSpareCpuUs where every local rank has a CPU of its
    // own, kSpinCrowdedUs where they outnumber the CPUs (protocols/context.cc,
    // set_spin_bounds). The progress thread spins a tenth of kSpinCrowdedUs, or
    // of the value set.
    static constexpr unsigned kSpinAuto = ~0u;
    static constexpr unsigned kSpinSpareCpuUs = 2000;
    static constexpr unsigned kSpinCrowdedUs = 200;
    unsigned spin_us = kSpinAuto;
    unsigned spin_max_us = 5000;   // RDMX_SPIN_MAX_US: how far that budget may grow (progress.cc, adapt_spin)
    unsigned sq_depth = 128;       // RDMX_SQ_DEPTH: send-queue slots per connection (a testing knob)
    // RDMX_YIELD: whether a spinning wait gives up its CPU after each empty
    // poll. auto: when the ranks on this host outnumber the CPUs they may run
    // on (protocols/context.cc, decide_yield), as Open MPI's yield_when_idle.
    enum class YieldMode : uint8_t { kAuto, kAlways, kNever };
    YieldMode yield = YieldMode::kAuto;
    // RDMX_CONNECT: when rc connections are made. mesh: every pair inside
    // rdmx_init; lazy: on first use (a send to a peer, or a receive naming
    // it); auto: mesh up to kConnectAutoMeshMax rc ranks, lazy above.
    enum class ConnectMode : uint8_t { kMesh, kLazy, kAuto };
    ConnectMode connect = ConnectMode::kAuto;
    // auto's threshold in job ranks (docs/configuration.md: how it was chosen).
    static constexpr int kConnectAutoMeshMax = 16;
    unsigned lazy_peers = kLazyPlanPeers;  // RDMX_LAZY_PEERS: the peers on-demand queues are planned for
    bool lazy_connect(int job_size) const {
        return connect == ConnectMode::kLazy || (connect == ConnectMode::kAuto && job_size > kConnectAutoMeshMax);
    }
    // Rendezvous.
    enum class RndvProto : uint8_t { kAuto, kGet, kPut };
    RndvProto rndv_proto = RndvProto::kAuto;  // RDMX_RNDV_PROTO: get (RDMA READ), put (RDMA WRITE)
    unsigned rndv_reads = 8;       // RDMX_RNDV_READS: RDMA READs in flight per peer
    size_t rndv_chunk = 1u << 20;  // RDMX_RNDV_CHUNK: largest single READ
    unsigned rndv_windows = 0;     // RDMX_RNDV_WINDOWS: 0 off, 1 on, 2 auto (= off until tested on a device with working windows)
    unsigned rcache = 1;           // RDMX_RCACHE: cache registrations (0 = register per transfer)
    size_t rcache_max = 0;         // RDMX_RCACHE_MAX: bytes the cache may pin; 0 = auto
    unsigned rcache_max_regions = 4096;
    // Transports and the shared-memory one (transport/sm.h).
    std::string transports = "sm,rc,self";  // RDMX_TRANSPORTS: comma list of rc, sm, self
    bool allows_transport(std::string_view name) const;  // `name` is in the RDMX_TRANSPORTS list
    std::string node_id;           // RDMX_NODE_ID: "" = hostname + boot id; equal ids use sm
    enum class SmCmaMode : uint8_t { kAuto, kOn, kOff };
    SmCmaMode sm_cma = SmCmaMode::kAuto;  // RDMX_SM_CMA
    size_t sm_cma_thresh = kSmCmaThreshDefault;  // RDMX_SM_CMA_THRESH: get/put of at least this use CMA
    unsigned sm_slots = 64;        // RDMX_SM_SLOTS: slots per inbound ring
    // Measured on the 2-core development host when idle (docs/design/sm.md,
    // docs/performance.md): the two-copy pipeline beat CMA's single copy
    // 2-3.5x at every size from 64 KiB to 4 MiB; one copy should win once a
    // message no longer fits the caches, not measured yet.
    static constexpr size_t kSmCmaThreshDefault = size_t{8} << 20;
    // RDMX_BOOTSTRAP: how ranks find each other when no allgather callback is given.
    enum class BootMode : uint8_t { kAuto, kPmix, kPmi1, kPmi2 };
    BootMode boot_mode = BootMode::kAuto;
    // Bootstrap through the caller's runtime.
    rdmx_allgather_fn_t allgather = nullptr;
    void *allgather_arg = nullptr;
    int rank = -1;
    int size = -1;

    std::vector<ConfigEntry> entries;  // for rdmx-info

    // Rendezvous by put (RDMA WRITE) rather than get on a device with this
    // vendor id: what RDMX_RNDV_PROTO says, and for auto, put on Soft-RoCE.
    // The engine (rndv_setup) and rdmx-info both ask here.
    bool rndv_uses_put(uint32_t vendor_id) const {
        return rndv_proto == RndvProto::kPut || (rndv_proto == RndvProto::kAuto && vendor_id == kSoftRoceVendorId);
    }
    // Largest single READ/WRITE on a port whose max_msg_sz is `max_msg`
    // (0: unknown, RDMX_RNDV_CHUNK alone).
    size_t rndv_chunk_for(uint32_t max_msg) const {
        return max_msg > 0 && max_msg < rndv_chunk ? max_msg : rndv_chunk;
    }
    // Soft-RoCE recovers WRITE retransmissions more reliably than READ
    // replays (docs/design/protocols.md).
    static constexpr uint32_t kSoftRoceVendorId = 0xffffff;

    // Resolves defaults, environment and cfg (may be NULL). On a malformed
    // value returns RDMX_ERR_INVALID_ARG after logging the variable and value.
    rdmx_status_t load(const rdmx_config_t *cfg);
    // Warns once per process about each RDMX_* environment variable that
    // names no setting (a misspelling), suggesting the closest one.
    void warn_unknown_env() const;
};

// Receive credits and queue sizes for a job of npeers + 1 ranks, within a
// device's limits (0: no limit known). Every credit granted has a receive
// buffer behind it, plus slack for control messages, so a sender within its
// credits never meets an empty SRQ; the CQ holds every receive and every
// send WR that can be outstanding. When the limits leave less than
// kMinCredits per peer or a send queue under kMinSqDepth, `limit` names the
// device limit that failed (the caller refuses to start) and `need` says how
// much it would take.
struct QueuePlan {
    uint32_t credits = 0;    // per peer
    uint32_t srq_depth = 0;
    uint32_t sq_depth = 0;   // per QP, a power of two
    uint32_t cqe = 0;
    const char *limit = nullptr;
    uint64_t need = 0;
};
constexpr uint32_t kMinCredits = 2;
// Receive buffers beyond the credits, for control messages in flight (FIN,
// CTS, PutFin may borrow one credit each): this many plus one per peer.
constexpr uint32_t kSrqSlack = 16;
// CQ entries beyond every receive buffer and send-queue slot.
constexpr uint32_t kCqSpare = 64;
constexpr uint32_t kSqDepthWanted = 128;  // power of two: the send ring indexes by mask
constexpr uint32_t kMinSqDepth = 32;      // four selective-signalling periods (one WR in a quarter of the ring)
QueuePlan plan_queues(uint32_t npeers, uint32_t want_srq, uint32_t max_credits, uint32_t max_srq_wr,
                      uint32_t max_cqe, uint32_t max_qp_wr, uint32_t want_sq = kSqDepthWanted);

// Parses "4096", "8k", "1M", "2g" (binary multiples). False on garbage.
bool parse_size(const char *s, size_t *out);

}  // namespace rdmx
