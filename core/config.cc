#include "core/config.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>

#include "core/log.h"

namespace rdmx {

const char *config_source_name(ConfigSource s) {
    switch (s) {
    case ConfigSource::kDefault: return "default";
    case ConfigSource::kEnvironment: return "environment";
    case ConfigSource::kConfigStruct: return "config struct";
    }
    return "?";
}

bool parse_size(const char *s, size_t *out) {
    // strtoull would skip blanks and accept a sign: only digits may start.
    if (s == nullptr || *s < '0' || *s > '9') return false;
    errno = 0;
    char *end = nullptr;
    unsigned long long v = std::strtoull(s, &end, 10);
    if (errno != 0 || end == s) return false;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    default: return false;
    }
    if (*end == 'b' || *end == 'B') ++end;
    if (*end != '\0') return false;
    if (shift != 0 && v > (~0ull >> shift)) return false;
    *out = static_cast<size_t>(v << shift);
    return true;
}

QueuePlan plan_queues(uint32_t npeers, uint32_t want_srq, uint32_t max_credits, uint32_t max_srq_wr,
                      uint32_t max_cqe, uint32_t max_qp_wr, uint32_t want_sq) {
    QueuePlan q;
    const uint64_t slack = kSrqSlack + static_cast<uint64_t>(npeers);  // control messages (FIN, CTS, PutFin) in flight
    // Some devices report max_srq_wr but take one less (a ring with a spare entry).
    const uint64_t srq_cap = max_srq_wr > 1 ? max_srq_wr - 1u : ~0u;
    const uint64_t n = npeers > 0 ? npeers : 1;
    uint64_t credits = want_srq / n;
    if (credits > max_credits) credits = max_credits;
    if (credits < 8) credits = 8;
    if (credits * n + slack > srq_cap) credits = srq_cap > slack ? (srq_cap - slack) / n : 0;
    if (credits < kMinCredits) {
        q.limit = "max_srq_wr";
        q.need = kMinCredits * n + slack + 1;
        return q;
    }
    uint64_t depth = credits * n + slack;
    if (depth < want_srq) depth = want_srq < srq_cap ? want_srq : srq_cap;
    uint64_t sq = want_sq;  // RDMX_SQ_DEPTH, a power of two: halving keeps it one
    while (sq > kMinSqDepth && ((max_qp_wr != 0 && sq > max_qp_wr) || (max_cqe != 0 && depth + n * sq + kCqSpare > max_cqe)))
        sq /= 2;
    if (max_qp_wr != 0 && sq > max_qp_wr) {
        q.limit = "max_qp_wr";
        q.need = sq;
        return q;
    }
    if (max_cqe != 0 && depth + n * sq + kCqSpare > max_cqe) {
        q.limit = "max_cqe";
        q.need = depth + n * sq + kCqSpare;
        return q;
    }
    q.credits = static_cast<uint32_t>(credits);
    q.srq_depth = static_cast<uint32_t>(depth);
    q.sq_depth = static_cast<uint32_t>(sq);
    q.cqe = static_cast<uint32_t>(depth + n * sq + kCqSpare);
    return q;
}

namespace {

bool parse_double(const char *s, double *out) {
    char *end = nullptr;
    errno = 0;
    double v = std::strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0)) return false;
    *out = v;
    return true;
}

bool parse_progress(const char *s, rdmx_progress_mode_t *out) {
    if (std::strcmp(s, "thread") == 0) *out = RDMX_PROGRESS_THREAD;
    else if (std::strcmp(s, "caller") == 0) *out = RDMX_PROGRESS_CALLER;
    else return false;
    return true;
}

const char *progress_name(rdmx_progress_mode_t m) { return m == RDMX_PROGRESS_CALLER ? "caller" : "thread"; }

bool parse_threads(const char *s, rdmx_thread_level_t *out) {
    if (std::strcmp(s, "multiple") == 0) *out = RDMX_THREADS_MULTIPLE;
    else if (std::strcmp(s, "single") == 0) *out = RDMX_THREADS_SINGLE;
    else return false;
    return true;
}

bool parse_check(const char *s, rdmx_check_level_t *out) {
    if (std::strcmp(s, "all") == 0) *out = RDMX_CHECK_ALL;
    else if (std::strcmp(s, "handles") == 0) *out = RDMX_CHECK_HANDLES;
    else return false;
    return true;
}

// One resolution step for one variable: the environment, then the struct.
class Resolver {
public:
    explicit Resolver(Config &c) : c_(c) {}
    bool failed = false;

    template <typename T, typename Parse>
    void field(const char *env, const char *doc, T *dst, bool from_struct, T struct_val, Parse parse,
               std::string (*show)(const T &)) {
        ConfigSource src = ConfigSource::kDefault;
        if (const char *e = std::getenv(env); e != nullptr && *e != '\0') {
            T v{};
            if (!parse(e, &v)) {
                RDMX_ERROR("config: %s='%s' is not valid (%s)", env, e, doc);
                failed = true;
                return;
            }
            *dst = v;
            src = ConfigSource::kEnvironment;
        }
        if (from_struct) {
            *dst = struct_val;
            src = ConfigSource::kConfigStruct;
        }
        c_.entries.push_back({env, show(*dst), src, doc});
    }

private:
    Config &c_;
};

std::string show_size(const size_t &v) { return std::to_string(v); }
std::string show_unsigned(const unsigned &v) { return std::to_string(v); }
std::string show_spin(const unsigned &v) { return v == Config::kSpinAuto ? "auto" : std::to_string(v); }
std::string show_double(const double &v) { return std::to_string(v); }
std::string show_int(const int &v) { return std::to_string(v); }
std::string show_str(const std::string &v) { return v.empty() ? "(auto)" : v; }
std::string show_log_file(const std::string &v) { return v.empty() ? "stderr" : v; }
std::string show_progress(const rdmx_progress_mode_t &v) { return progress_name(v); }
std::string show_threads(const rdmx_thread_level_t &v) { return v == RDMX_THREADS_SINGLE ? "single" : "multiple"; }
std::string show_check(const rdmx_check_level_t &v) { return v == RDMX_CHECK_HANDLES ? "handles" : "all"; }

bool p_size(const char *s, size_t *o) { return parse_size(s, o); }
bool p_unsigned(const char *s, unsigned *o) {
    size_t v = 0;
    if (!parse_size(s, &v) || v > 0xffffffffu) return false;
    *o = static_cast<unsigned>(v);
    return true;
}
bool p_spin(const char *s, unsigned *o) {
    if (std::strcmp(s, "auto") == 0) {
        *o = Config::kSpinAuto;
        return true;
    }
    return p_unsigned(s, o) && *o != Config::kSpinAuto;
}
bool p_int(const char *s, int *o) {
    char *end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 0 || v > 4) return false;
    *o = static_cast<int>(v);
    return true;
}
bool p_str(const char *s, std::string *o) {
    *o = s;
    return true;
}

}  // namespace

// Rendezvous tuning: environment only (no config-struct fields yet).
static bool parse_proto(const char *s, Config::RndvProto *out) {
    if (std::strcmp(s, "auto") == 0) *out = Config::RndvProto::kAuto;
    else if (std::strcmp(s, "get") == 0) *out = Config::RndvProto::kGet;
    else if (std::strcmp(s, "put") == 0) *out = Config::RndvProto::kPut;
    else return false;
    return true;
}

static std::string show_proto(const Config::RndvProto &p) {
    return p == Config::RndvProto::kGet ? "get" : p == Config::RndvProto::kPut ? "put" : "auto";
}

static bool parse_boot(const char *s, Config::BootMode *out) {
    if (std::strcmp(s, "auto") == 0) *out = Config::BootMode::kAuto;
    else if (std::strcmp(s, "pmix") == 0) *out = Config::BootMode::kPmix;
    else if (std::strcmp(s, "pmi1") == 0) *out = Config::BootMode::kPmi1;
    else if (std::strcmp(s, "pmi2") == 0) *out = Config::BootMode::kPmi2;
    else return false;
    return true;
}

static std::string show_boot(const Config::BootMode &m) {
    switch (m) {
    case Config::BootMode::kPmix: return "pmix";
    case Config::BootMode::kPmi1: return "pmi1";
    case Config::BootMode::kPmi2: return "pmi2";
    default: return "auto";
    }
}

static bool parse_yield(const char *s, Config::YieldMode *out) {
    if (std::strcmp(s, "auto") == 0) *out = Config::YieldMode::kAuto;
    else if (std::strcmp(s, "always") == 0) *out = Config::YieldMode::kAlways;
    else if (std::strcmp(s, "never") == 0) *out = Config::YieldMode::kNever;
    else return false;
    return true;
}

static std::string show_yield(const Config::YieldMode &m) {
    return m == Config::YieldMode::kAlways ? "always" : m == Config::YieldMode::kNever ? "never" : "auto";
}

static bool parse_connect(const char *s, Config::ConnectMode *out) {
    if (std::strcmp(s, "mesh") == 0) *out = Config::ConnectMode::kMesh;
    else if (std::strcmp(s, "lazy") == 0) *out = Config::ConnectMode::kLazy;
    else if (std::strcmp(s, "auto") == 0) *out = Config::ConnectMode::kAuto;
    else return false;
    return true;
}

static std::string show_connect(const Config::ConnectMode &m) {
    return m == Config::ConnectMode::kLazy ? "lazy" : m == Config::ConnectMode::kAuto ? "auto" : "mesh";
}

static void load_rndv(Resolver &r, Config &c) {
    r.field<Config::RndvProto>("RDMX_RNDV_PROTO", "rendezvous protocol: get (receiver READs), put (sender WRITEs), "
                               "auto (put on soft RoCE, get elsewhere)", &c.rndv_proto, false,
                               Config::RndvProto::kAuto, parse_proto, show_proto);
    r.field<unsigned>("RDMX_RNDV_READS", "RDMA READs in flight per peer", &c.rndv_reads, false, 0u, p_unsigned,
                      show_unsigned);
    r.field<size_t>("RDMX_RNDV_CHUNK", "largest single RDMA READ, bytes", &c.rndv_chunk, false, size_t{0}, p_size,
                    show_size);
    r.field<unsigned>("RDMX_RNDV_WINDOWS", "expose rendezvous buffers through type 2 memory windows: 0 off (default), 1 on, "
                      "2 auto (off: windows are untested on devices where they work)", &c.rndv_windows, false, 0u, p_unsigned, show_unsigned);
    r.field<unsigned>("RDMX_RCACHE", "1: cache rendezvous registrations; 0: register per transfer", &c.rcache,
                      false, 0u, p_unsigned, show_unsigned);
    r.field<size_t>("RDMX_RCACHE_MAX", "bytes the registration cache may pin (0: a quarter of RAM, at most half "
                    "the locked-memory limit)", &c.rcache_max, false, size_t{0}, p_size, show_size);
    r.field<unsigned>("RDMX_RCACHE_MAX_REGIONS", "registrations the cache may hold", &c.rcache_max_regions, false, 0u,
                      p_unsigned, show_unsigned);
}

static bool parse_cma(const char *s, Config::SmCmaMode *out) {
    if (std::strcmp(s, "auto") == 0) *out = Config::SmCmaMode::kAuto;
    else if (std::strcmp(s, "on") == 0) *out = Config::SmCmaMode::kOn;
    else if (std::strcmp(s, "off") == 0) *out = Config::SmCmaMode::kOff;
    else return false;
    return true;
}

static std::string show_cma(const Config::SmCmaMode &m) {
    return m == Config::SmCmaMode::kOn ? "on" : m == Config::SmCmaMode::kOff ? "off" : "auto";
}

// Calls f on each item of a comma list, in order, until f returns false;
// returns whether every call returned true.
template <class F>
static bool each_item(std::string_view v, F f) {
    while (true) {
        const size_t comma = v.find(',');
        if (!f(v.substr(0, comma))) return false;
        if (comma == std::string_view::npos) return true;
        v.remove_prefix(comma + 1);
    }
}

// "sm,rc,self": known names, each at most once, at least one.
static bool parse_transports(const char *s, std::string *out) {
    std::set<std::string_view> seen;
    if (!each_item(s, [&](std::string_view item) {
            return (item == "rc" || item == "sm" || item == "self") && seen.insert(item).second;
        }))
        return false;
    *out = s;
    return true;
}

bool Config::allows_transport(std::string_view name) const {
    return !each_item(transports, [&](std::string_view item) { return item != name; });
}

static void load_sm(Resolver &r, Config &c) {
    r.field<std::string>("RDMX_TRANSPORTS", "transports to use, a comma list of rc, sm, self (each at most once)",
                         &c.transports, false, std::string(), parse_transports, show_str);
    r.field<std::string>("RDMX_NODE_ID", "node identity for choosing sm (ranks with equal ids share memory); "
                         "default hostname + boot id", &c.node_id, false, std::string(), p_str, show_str);
    r.field<Config::SmCmaMode>("RDMX_SM_CMA", "sm cross-memory attach (process_vm_readv/writev): auto (when the "
                               "kernel allows it), on (required, every size), off (copy pipeline only)", &c.sm_cma,
                               false, Config::SmCmaMode::kAuto, parse_cma, show_cma);
    r.field<size_t>("RDMX_SM_CMA_THRESH", "sm get/put of at least this many bytes use CMA single copy, smaller ones "
                    "the copy pipeline", &c.sm_cma_thresh, false, Config::kSmCmaThreshDefault, p_size, show_size);
    r.field<unsigned>("RDMX_SM_SLOTS", "slots per inbound sm ring, a power of two in 4 .. 4096", &c.sm_slots, false, 0u, p_unsigned,
                      show_unsigned);
}

namespace {

// RDMX_* names read outside the engine's configuration: the collectives'
// algorithm choices (collectives/coll_select.cc checks their values) and
// the test and benchmark tools' own knobs.
constexpr std::string_view kOtherPrefixes[] = {"RDMX_COLL_", "RDMX_TEST_", "RDMX_SOAK_", "RDMX_VM_", "RDMX_BENCH_",
                                               "RDMX_BUILD_DIR"};

// Levenshtein distance, for "did you mean" (names are short).
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

}  // namespace

// The rank a launcher gave this process, before the bootstrap runs (-1 if
// none did): so that an RDMX_LOG_FILE with %r holds this configuration's own
// lines too (the unknown-variable warnings) rather than waiting for the rank.
static int launcher_rank() {
    for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
        const char *v = std::getenv(name);
        char *end = nullptr;
        if (v == nullptr || *v < '0' || *v > '9') continue;
        const long r = std::strtol(v, &end, 10);
        if (*end == '\0' && r <= 0x7fffffff) return static_cast<int>(r);
    }
    return -1;
}

// A misspelt variable silently does nothing: each unknown RDMX_* name is
// warned about once per process, with the closest known name.
void Config::warn_unknown_env() const {
    static std::mutex mu;
    static std::set<std::string> warned;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view kv(*e);
        if (kv.substr(0, 5) != "RDMX_") continue;
        const std::string_view name = kv.substr(0, kv.find('='));
        bool known = false;
        for (std::string_view p : kOtherPrefixes) known = known || name.substr(0, p.size()) == p;
        const char *best = nullptr;
        size_t best_d = 3;  // suggest only close names
        for (const ConfigEntry &ce : entries) {
            known = known || name == ce.env;
            const size_t d = edit_distance(name, ce.env);
            if (d < best_d) best_d = d, best = ce.env;
        }
        std::lock_guard<std::mutex> g(mu);
        if (known || !warned.insert(std::string(name)).second) continue;
        RDMX_WARN("config: %.*s is not an rdmx variable and is ignored%s%s%s (rdmx-info lists them all)",
                  static_cast<int>(name.size()), name.data(), best ? " (did you mean " : "", best ? best : "",
                  best ? "?)" : "");
    }
}

rdmx_status_t Config::load(const rdmx_config_t *cfg) {
    rdmx_config_t none;
    rdmx_config_init(&none);
    const rdmx_config_t &u = cfg != nullptr ? *cfg : none;
    Resolver r(*this);
    entries.clear();
    r.field<std::string>("RDMX_DEVICE", "RDMA device[:port], or a comma list chosen by local rank", &device,
                         u.device != nullptr, u.device ? u.device : "", p_str, show_str);
    r.field<std::string>("RDMX_IFADDR", "IPv4 address or interface to listen on", &ifaddr, u.ifaddr != nullptr,
                         u.ifaddr ? u.ifaddr : "", p_str, show_str);
    r.field<size_t>("RDMX_EAGER_LIMIT", "largest eager payload, bytes", &eager_limit, u.eager_limit != 0,
                    u.eager_limit, p_size, show_size);
    rndv_thresh = eager_limit + 1;
    r.field<size_t>("RDMX_RNDV_THRESH", "smallest rendezvous message, bytes", &rndv_thresh, u.rndv_thresh != 0,
                    u.rndv_thresh, p_size, show_size);
    r.field<unsigned>("RDMX_SRQ_DEPTH", "receive buffers posted to the shared receive queue", &srq_depth,
                      u.srq_depth != 0, u.srq_depth, p_unsigned, show_unsigned);
    r.field<size_t>("RDMX_UNEXPECTED_LIMIT", "bytes of unexpected eager data copied aside before back-pressure",
                    &unexpected_limit, u.unexpected_limit != 0, u.unexpected_limit, p_size, show_size);
    r.field<size_t>("RDMX_UNEXPECTED_MAX", "unexpected messages (any size, rendezvous offers too) kept before "
                    "back-pressure", &unexpected_max, false, size_t{0}, p_size, show_size);
    // The struct's enum fields come from C, where any int fits: read their
    // bytes and check them before anything loads them as the enum.
    const int u_progress = raw_enum(u.progress), u_threads = raw_enum(u.threads), u_check = raw_enum(u.check_args);
    const int u_connect = raw_enum(u.connect);
    if (u_connect < RDMX_CONNECT_DEFAULT || u_connect > RDMX_CONNECT_AUTO) {
        RDMX_ERROR("config: connect=%d is not an rdmx_connect_mode_t", u_connect);
        return RDMX_ERR_INVALID_ARG;
    }
    if (u_progress < RDMX_PROGRESS_DEFAULT || u_progress > RDMX_PROGRESS_CALLER) {
        RDMX_ERROR("config: progress=%d is not an rdmx_progress_mode_t", u_progress);
        return RDMX_ERR_INVALID_ARG;
    }
    if (u_threads < RDMX_THREADS_DEFAULT || u_threads > RDMX_THREADS_SINGLE) {
        RDMX_ERROR("config: threads=%d is not an rdmx_thread_level_t", u_threads);
        return RDMX_ERR_INVALID_ARG;
    }
    if (u_check < RDMX_CHECK_DEFAULT || u_check > RDMX_CHECK_HANDLES) {
        RDMX_ERROR("config: check_args=%d is not an rdmx_check_level_t", u_check);
        return RDMX_ERR_INVALID_ARG;
    }
    r.field<rdmx_progress_mode_t>("RDMX_PROGRESS", "progress mode: thread|caller", &progress,
                                  u_progress != RDMX_PROGRESS_DEFAULT, static_cast<rdmx_progress_mode_t>(u_progress),
                                  parse_progress, show_progress);
    r.field<rdmx_thread_level_t>("RDMX_THREADS", "thread level: multiple (any thread, any time) or single (calls "
                                 "never overlap: no lock, no atomic read-modify-write on the send/receive path)",
                                 &threads, u_threads != RDMX_THREADS_DEFAULT, static_cast<rdmx_thread_level_t>(u_threads),
                                 parse_threads, show_threads);
    r.field<rdmx_check_level_t>("RDMX_CHECK_ARGS", "argument checks: all (every argument of every call) or handles "
                                "(point-to-point calls trust buffer, length, rank and tag: a layer above checked them)",
                                &check_args, u_check != RDMX_CHECK_DEFAULT, static_cast<rdmx_check_level_t>(u_check),
                                parse_check, show_check);
    r.field<int>("RDMX_LOG_LEVEL", "0 error, 1 warn, 2 info, 3 debug, 4 trace", &log_level, u.log_level >= 0,
                 u.log_level, p_int, show_int);
    r.field<std::string>("RDMX_LOG_FILE", "write the log to this file (appended) instead of stderr; %h host, %r rank, "
                         "%p pid", &log_file, false, std::string(), p_str, show_log_file);
    r.field<double>("RDMX_CONNECT_TIMEOUT", "seconds allowed for the full-mesh bring-up, or (lazy) for one connection from its first use", &connect_timeout,
                    u.connect_timeout > 0, u.connect_timeout, parse_double, show_double);
    r.field<double>("RDMX_PEER_TIMEOUT", "seconds to wait for a peer at finalize and in transfers", &peer_timeout,
                    u.peer_timeout > 0, u.peer_timeout, parse_double, show_double);
    r.field<unsigned>("RDMX_SPIN_US", "microseconds a wait busy-polls before sleeping (the progress thread: a tenth); "
                      "auto: 2000 where each local rank has a CPU of its own, 200 where they outnumber the CPUs",
                      &spin_us, false, 0u, p_spin, show_spin);
    r.field<unsigned>("RDMX_SPIN_MAX_US", "microseconds the spin may grow to when waits keep ending just after "
                      "falling asleep (RDMX_SPIN_US or less: a fixed spin)", &spin_max_us, false, 0u, p_unsigned,
                      show_unsigned);
    r.field<BootMode>("RDMX_BOOTSTRAP", "how ranks find each other: auto (PMIx, else PMI-2 under Slurm, else PMI-1 "
                      "when PMI_FD is set, else a job of one), pmix, pmi1, pmi2", &boot_mode, false, BootMode::kAuto,
                      parse_boot, show_boot);
    r.field<unsigned>("RDMX_SQ_DEPTH", "send-queue slots per connection, a power of two in [4, 1024] (testing "
                      "knob: a tiny ring exercises the full-queue paths)", &sq_depth, false, 0u, p_unsigned,
                      show_unsigned);
    r.field<YieldMode>("RDMX_YIELD", "a spinning wait yields its CPU after each empty poll: auto (when the ranks on "
                       "this host outnumber their CPUs), always, never", &yield, false, YieldMode::kAuto,
                       parse_yield, show_yield);
    const ConnectMode u_mode = u_connect == RDMX_CONNECT_LAZY   ? ConnectMode::kLazy
                               : u_connect == RDMX_CONNECT_MESH ? ConnectMode::kMesh
                                                                : ConnectMode::kAuto;
    r.field<ConnectMode>("RDMX_CONNECT", "when rc connections are made: mesh (every pair inside rdmx_init), lazy (on "
                         "first use of a peer), auto (mesh up to 16 ranks, lazy above)", &connect,
                         u_connect != RDMX_CONNECT_DEFAULT, u_mode, parse_connect, show_connect);
    r.field<unsigned>("RDMX_LAZY_PEERS", "on demand: credits per peer and send queues are planned as for this many "
                      "peers (the neighbours a rank expects), however large the job", &lazy_peers,
                      u.lazy_peers != 0, u.lazy_peers, p_unsigned, show_unsigned);
    load_rndv(r, *this);
    load_sm(r, *this);
    if (r.failed) return RDMX_ERR_INVALID_ARG;
    if (sm_slots < 4 || sm_slots > 4096 || (sm_slots & (sm_slots - 1)) != 0) {
        RDMX_ERROR("config: RDMX_SM_SLOTS=%u must be a power of two in [4, 4096] (the rings index by mask)", sm_slots);
        return RDMX_ERR_INVALID_ARG;
    }
    if (sq_depth < 4 || sq_depth > 1024 || (sq_depth & (sq_depth - 1)) != 0) {
        RDMX_ERROR("config: RDMX_SQ_DEPTH=%u must be a power of two in [4, 1024] (the send ring indexes by mask)",
                   sq_depth);
        return RDMX_ERR_INVALID_ARG;
    }
    if (rndv_reads == 0 || rndv_chunk < 4096 || rcache > 1 || rndv_windows > 2) {
        RDMX_ERROR("config: RDMX_RNDV_READS=%u must be >= 1, RDMX_RNDV_CHUNK=%zu >= 4096, RDMX_RCACHE=%u 0 or 1, "
                   "RDMX_RNDV_WINDOWS=%u 0, 1 or 2", rndv_reads, rndv_chunk, rcache, rndv_windows);
        return RDMX_ERR_INVALID_ARG;
    }
    if (eager_limit > (1u << 20) || eager_limit < 64) {
        RDMX_ERROR("config: RDMX_EAGER_LIMIT=%zu out of range [64, 1 MiB]", eager_limit);
        return RDMX_ERR_INVALID_ARG;
    }
    if (rndv_thresh == 0) {  // a zero-length message would go by rendezvous: an RTS peers reject
        RDMX_ERROR("config: RDMX_RNDV_THRESH=0: the smallest rendezvous message must be at least 1 byte");
        return RDMX_ERR_INVALID_ARG;
    }
    if (rndv_thresh > eager_limit + 1) {
        RDMX_WARN("config: RDMX_RNDV_THRESH=%zu above eager limit %zu + 1: using %zu", rndv_thresh, eager_limit,
                  eager_limit + 1);
        rndv_thresh = eager_limit + 1;
    }
    if (srq_depth < 16) srq_depth = 16;
    if (lazy_peers == 0 || lazy_peers > (1u << 20)) {
        RDMX_ERROR("config: RDMX_LAZY_PEERS=%u must be in [1, 1048576]", lazy_peers);
        return RDMX_ERR_INVALID_ARG;
    }
    if (spin_us != kSpinAuto && spin_max_us < spin_us) spin_max_us = spin_us;  // a fixed spin
    if (unexpected_max == 0) {
        RDMX_ERROR("config: RDMX_UNEXPECTED_MAX=0: at least one unexpected message must be keepable");
        return RDMX_ERR_INVALID_ARG;
    }
    log_set_level(log_level);
    log_set_file(log_file, u.allgather != nullptr ? u.rank : launcher_rank());
    warn_unknown_env();
    if (u.allgather != nullptr) {
        if (u.rank < 0 || u.size <= 0 || u.rank >= u.size) {
            RDMX_ERROR("config: allgather set with rank=%d size=%d: need 0 <= rank < size", u.rank, u.size);
            return RDMX_ERR_INVALID_ARG;
        }
        allgather = u.allgather;
        allgather_arg = u.allgather_arg;
        rank = u.rank;
        size = u.size;
    }
    return RDMX_OK;
}

}  // namespace rdmx

extern "C" void rdmx_config_init(rdmx_config_t *cfg) {
    if (cfg == nullptr) return;
    std::memset(cfg, 0, sizeof(*cfg));
    cfg->struct_size = sizeof(*cfg);
    cfg->log_level = -1;
}
