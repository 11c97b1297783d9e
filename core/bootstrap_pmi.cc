// PMI-1 and PMI-2 clients over the launcher's socket (PMI_FD): what MPICH's
// hydra (mpiexec.mpich) and Slurm's `srun --mpi=pmi2` offer. No library: the
// wire protocol is small (core/pmi_wire.h) and speaking it ourselves keeps
// librdmx free of a second PMI runtime. Every read has a deadline
// (RDMX_CONNECT_TIMEOUT): a launcher that stops answering fails rdmx_init
// with a message, never a hang.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/bootstrap_pmi.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/pmi_wire.h"

namespace rdmx {

namespace {

using pmi::Message;
using pmi::Wire;

// PMI-2's value limit (PMI2_MAX_VALLEN); PMI-1 servers say theirs in get_maxes.
constexpr size_t kV2ValueMax = 1024;
// How long finalize at process exit waits for the launcher's acknowledgement.
constexpr double kFinalizeSeconds = 2.0;
// Longest single poll(2) while waiting for a reply (the deadline decides).
constexpr int kPollCapMs = 1000;

// One connection to the launcher, one request and its reply at a time.
class PmiConn {
public:
    PmiConn(int fd, double timeout) : fd_(fd), timeout_(timeout) {}
    void set_wire(Wire w) { wire_ = w; }
    Wire wire() const { return wire_; }

    // Sends `msg`, reads one reply into `reply` (backed by `text`), which
    // must be `want` and carry rc=0.
    rdmx_status_t request(const std::string &msg, const char *want, std::string *text, Message *reply,
                          double timeout = 0, bool quiet_refusal = false) {
        if (broken_) return RDMX_ERR_CONNECT;  // said once already, where it broke
        if (rdmx_status_t st = send_all(msg); st != RDMX_OK) return fail(st);
        Deadline d(timeout > 0 ? timeout : timeout_);
        if (rdmx_status_t st = recv_msg(d, text); st != RDMX_OK) return fail(st);
        pmi::ParseError e = pmi::parse(wire_, *text, reply);
        if (e != pmi::ParseError::kOk) {
            RDMX_ERROR("bootstrap: the launcher's PMI reply (%s due) is malformed (%s): '%.200s'", want,
                       pmi::parse_error_name(e), text->c_str());
            return fail();
        }
        if (reply->cmd() != want) {
            RDMX_ERROR("bootstrap: the launcher answered with PMI cmd=%.*s where cmd=%s was due",
                       static_cast<int>(reply->cmd().size()), reply->cmd().data(), want);
            return fail();
        }
        if (!reply->ok()) {  // a refusal the caller may survive (an absent key): the connection is fine
            std::string_view m = reply->has("msg") ? reply->get("msg") : reply->get("errmsg");
            if (m.empty()) m = "no reason given (the launcher's own log may have one)";
            if (!quiet_refusal)
                RDMX_ERROR("bootstrap: the launcher refused a PMI request (%s rc=%.*s): %.*s", want,
                           static_cast<int>(reply->get("rc").size()), reply->get("rc").data(),
                           static_cast<int>(m.size()), m.data());
            return RDMX_ERR_CONNECT;
        }
        return RDMX_OK;
    }

    // The connection can no longer be trusted (I/O error, timeout, garbage):
    // a late reply would be taken for the next request's.
    bool broken() const { return broken_; }

private:
    rdmx_status_t fail(rdmx_status_t st = RDMX_ERR_CONNECT) {
        broken_ = true;
        return st;
    }

    rdmx_status_t send_all(const std::string &msg) {
        size_t off = 0;
        while (off < msg.size()) {
            ssize_t n = ::send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == ENOTSOCK) n = ::write(fd_, msg.data() + off, msg.size() - off);
            if (n <= 0) {
                RDMX_ERROR("bootstrap: writing to the launcher's PMI socket (fd %d) failed: %s", fd_,
                           n < 0 ? strerror(errno) : "closed");
                return RDMX_ERR_CONNECT;
            }
            off += static_cast<size_t>(n);
        }
        return RDMX_OK;
    }

    // Reads until `buf_` holds `need` bytes (or a newline, need == 0).
    rdmx_status_t fill(const Deadline &d, size_t need) {
        for (;;) {
            if (need > 0 ? buf_.size() >= need : buf_.find('\n') != std::string::npos) return RDMX_OK;
            if (buf_.size() > pmi::kMaxMessage + pmi::kV2LengthField) {
                RDMX_ERROR("bootstrap: the launcher sent a PMI message over %zu bytes", pmi::kMaxMessage);
                return RDMX_ERR_CONNECT;
            }
            const int left_ms = d.remaining_ms(kPollCapMs);
            pollfd p{fd_, POLLIN, 0};
            int r = left_ms > 0 || !d.expired() ? ::poll(&p, 1, left_ms) : 0;
            if (r == 0 && !d.expired()) continue;
            if (r < 0 && errno == EINTR) continue;
            if (r == 0) {
                RDMX_ERROR("bootstrap: the launcher did not answer a PMI request within %.1f s "
                           "(RDMX_CONNECT_TIMEOUT; a rank that never started?)", timeout_);
                return RDMX_ERR_TIMEOUT;
            }
            char chunk[4096];
            ssize_t n = r > 0 ? ::read(fd_, chunk, sizeof(chunk)) : -1;
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                RDMX_ERROR("bootstrap: the launcher's PMI socket (fd %d) %s", fd_,
                           n == 0 ? "was closed" : strerror(errno));
                return RDMX_ERR_CONNECT;
            }
            buf_.append(chunk, static_cast<size_t>(n));
        }
    }

    rdmx_status_t recv_msg(const Deadline &d, std::string *text) {
        if (wire_ == Wire::kV1) {
            if (rdmx_status_t st = fill(d, 0); st != RDMX_OK) return st;
            size_t nl = buf_.find('\n');
            text->assign(buf_, 0, nl);
            buf_.erase(0, nl + 1);
            return RDMX_OK;
        }
        if (rdmx_status_t st = fill(d, pmi::kV2LengthField); st != RDMX_OK) return st;
        size_t len = 0;
        if (!pmi::parse_v2_length(std::string_view(buf_).substr(0, pmi::kV2LengthField), &len)) {
            RDMX_ERROR("bootstrap: the launcher's PMI-2 message has a bad length field '%.6s'", buf_.c_str());
            return RDMX_ERR_CONNECT;
        }
        if (rdmx_status_t st = fill(d, pmi::kV2LengthField + len); st != RDMX_OK) return st;
        text->assign(buf_, pmi::kV2LengthField, len);
        buf_.erase(0, pmi::kV2LengthField + len);
        return RDMX_OK;
    }

    int fd_;
    double timeout_;
    Wire wire_ = Wire::kV1;
    bool broken_ = false;
    std::string buf_;
};

}  // namespace

// The process's one PMI session: initialised by the first rdmx_init, kept
// across rdmx_finalize/rdmx_init (the launcher serves one init per process)
// and finalized at exit.
class PmiSession {
public:
    static PmiSession *get(const Config &cfg, Wire w, rdmx_status_t *st);
    static std::unique_ptr<PmiSession> open(int fd, Wire w, double timeout, rdmx_status_t *st, int rank = -1,
                                            int size = -1);
    ~PmiSession();
    rdmx_status_t allgather(const void *in, void *out, size_t len);
    int rank = 0, size = 1, local_rank = 0, local_size = 0;
    Wire wire = Wire::kV1;

private:
    PmiSession(int fd, double timeout) : conn_(fd, timeout) {}
    rdmx_status_t init_v1();
    rdmx_status_t init_v2();
    rdmx_status_t handshake(int version);
    void locate(std::string_view mapping);
    rdmx_status_t put(const std::string &key, const std::string &value);
    rdmx_status_t fence();
    rdmx_status_t get(int src, const std::string &key, std::string *value, bool optional = false);

    PmiConn conn_;
    std::string kvsname_;
    size_t value_max_ = kV2ValueMax;
    unsigned seq_ = 0;
    bool up_ = false;
    std::mutex mu_;  // rdmx_init may run on several threads
};

rdmx_status_t PmiSession::handshake(int version) {
    std::string text;
    Message m;
    const std::string v = std::to_string(version);
    conn_.set_wire(Wire::kV1);  // both versions open with a PMI-1 line
    rdmx_status_t st = conn_.request(pmi::format(Wire::kV1, "init", {{"pmi_version", v}, {"pmi_subversion", version == 1 ? "1" : "0"}}),
                                     "response_to_init", &text, &m);
    if (st != RDMX_OK) return st;
    if (m.has("pmi_version") && m.get("pmi_version") != v) {
        RDMX_ERROR("bootstrap: asked the launcher for PMI-%d, it offers PMI-%.*s (set RDMX_BOOTSTRAP=pmi%.*s)",
                   version, static_cast<int>(m.get("pmi_version").size()), m.get("pmi_version").data(),
                   static_cast<int>(m.get("pmi_version").size()), m.get("pmi_version").data());
        return RDMX_ERR_CONNECT;
    }
    return RDMX_OK;
}

// Node of every rank from PMI_process_mapping; our local rank is how many
// ranks before us share our node, our local size how many share it at all.
void PmiSession::locate(std::string_view mapping) {
    std::vector<int> node;
    if (!pmi::parse_process_mapping(mapping, size, &node)) {
        local_rank = env_int("MPI_LOCALRANKID", env_int("SLURM_LOCALID", rank));
        local_size = env_int("MPI_LOCALNRANKS", 0);
        if (!mapping.empty())
            RDMX_WARN("bootstrap: PMI_process_mapping '%.*s' not understood: local rank %d from the environment",
                      static_cast<int>(mapping.size()), mapping.data(), local_rank);
        return;
    }
    local_rank = 0;
    local_size = 0;
    for (int r = 0; r < size; ++r) {
        const bool same = node[static_cast<size_t>(r)] == node[static_cast<size_t>(rank)];
        local_rank += r < rank && same;
        local_size += same;
    }
}

rdmx_status_t PmiSession::init_v1() {
    std::string text;
    Message m;
    rdmx_status_t st = handshake(1);
    if (st == RDMX_OK) st = conn_.request(pmi::format(Wire::kV1, "get_maxes", {}), "maxes", &text, &m);
    if (st != RDMX_OK) return st;
    const long vmax = std::strtol(std::string(m.get("vallen_max")).c_str(), nullptr, 10);
    value_max_ = vmax > 32 ? static_cast<size_t>(vmax) - 1 : 0;  // room for the C string's NUL
    if (value_max_ == 0) {
        RDMX_ERROR("bootstrap: the launcher's PMI-1 vallen_max '%.*s' is unusable",
                   static_cast<int>(m.get("vallen_max").size()), m.get("vallen_max").data());
        return RDMX_ERR_CONNECT;
    }
    if ((st = conn_.request(pmi::format(Wire::kV1, "get_my_kvsname", {}), "my_kvsname", &text, &m)) != RDMX_OK)
        return st;
    kvsname_ = m.get("kvsname");
    if (rank < 0) rank = env_int("PMI_RANK", -1);
    if (size < 0) size = env_int("PMI_SIZE", -1);
    if (rank < 0 || size <= 0 || rank >= size) {
        RDMX_ERROR("bootstrap: PMI-1 launcher set PMI_RANK='%s' PMI_SIZE='%s': need 0 <= rank < size",
                   std::getenv("PMI_RANK") ? std::getenv("PMI_RANK") : "", std::getenv("PMI_SIZE") ? std::getenv("PMI_SIZE") : "");
        return RDMX_ERR_CONNECT;
    }
    std::string mapping;
    if (get(-1, "PMI_process_mapping", &mapping, true) != RDMX_OK) mapping.clear();
    if (conn_.broken()) return RDMX_ERR_CONNECT;
    locate(mapping);
    return RDMX_OK;
}

rdmx_status_t PmiSession::init_v2() {
    std::string text;
    Message m;
    rdmx_status_t st = handshake(2);
    if (st != RDMX_OK) return st;
    conn_.set_wire(Wire::kV2);
    const std::string me = std::to_string(rank >= 0 ? rank : env_int("PMI_RANK", env_int("SLURM_PROCID", 0)));
    // Slurm's PMI-2 server refuses a fullinit without the job id it put in
    // PMI_JOBID ("pmijobid missing"); hydra sets none and needs none.
    const char *jobid = std::getenv("PMI_JOBID");
    const std::string req = jobid != nullptr
        ? pmi::format(Wire::kV2, "fullinit", {{"pmijobid", jobid}, {"pmirank", me}, {"threaded", "FALSE"}})
        : pmi::format(Wire::kV2, "fullinit", {{"pmirank", me}, {"threaded", "FALSE"}});
    if ((st = conn_.request(req, "fullinit-response", &text, &m)) != RDMX_OK)
        return st;
    rank = std::atoi(std::string(m.get("rank")).c_str());
    size = std::atoi(std::string(m.get("size")).c_str());
    if (rank < 0 || size <= 0 || rank >= size) {
        RDMX_ERROR("bootstrap: PMI-2 fullinit gave rank %d of %d", rank, size);
        return RDMX_ERR_CONNECT;
    }
    value_max_ = kV2ValueMax - 1;
    std::string mapping;
    if (conn_.request(pmi::format(Wire::kV2, "info-getjobattr", {{"key", "PMI_process_mapping"}}),
                      "info-getjobattr-response", &text, &m, 0, true) == RDMX_OK && m.get("found") == "TRUE")
        mapping = m.get("value");
    if (conn_.broken()) return RDMX_ERR_CONNECT;
    locate(mapping);
    return RDMX_OK;
}

std::unique_ptr<PmiSession> PmiSession::open(int fd, Wire w, double timeout, rdmx_status_t *st, int rank,
                                             int size) {
    std::unique_ptr<PmiSession> s(new PmiSession(fd, timeout));
    s->wire = w;
    s->rank = rank;
    s->size = size;
    *st = w == Wire::kV1 ? s->init_v1() : s->init_v2();
    if (*st != RDMX_OK) return nullptr;
    s->up_ = true;
    return s;
}

PmiSession *PmiSession::get(const Config &cfg, Wire w, rdmx_status_t *st) {
    static std::mutex mu;
    static std::unique_ptr<PmiSession> session;
    std::lock_guard<std::mutex> g(mu);
    if (session) {
        *st = RDMX_OK;
        return session.get();
    }
    const int fd = env_int("PMI_FD", -1);
    if (fd < 0) {
        RDMX_ERROR("bootstrap: PMI_FD='%s' is not a file descriptor", std::getenv("PMI_FD") ? std::getenv("PMI_FD") : "");
        *st = RDMX_ERR_CONNECT;
        return nullptr;
    }
    session = open(fd, w, cfg.connect_timeout, st);
    return session.get();
}

PmiSession::~PmiSession() {
    if (!up_ || conn_.broken()) return;
    std::string text;
    Message m;
    // Tells the launcher this process ended cleanly; hydra and Slurm both answer.
    (void)conn_.request(pmi::format(wire, "finalize", {}), wire == Wire::kV1 ? "finalize_ack" : "finalize-response",
                        &text, &m, kFinalizeSeconds);
}

rdmx_status_t PmiSession::put(const std::string &key, const std::string &value) {
    std::string text;
    Message m;
    if (wire == Wire::kV1)
        return conn_.request(pmi::format(Wire::kV1, "put", {{"kvsname", kvsname_}, {"key", key}, {"value", value}}),
                             "put_result", &text, &m);
    return conn_.request(pmi::format(Wire::kV2, "kvs-put", {{"key", key}, {"value", value}}), "kvs-put-response",
                         &text, &m);
}

rdmx_status_t PmiSession::fence() {
    std::string text;
    Message m;
    if (wire == Wire::kV1) return conn_.request(pmi::format(Wire::kV1, "barrier_in", {}), "barrier_out", &text, &m);
    return conn_.request(pmi::format(Wire::kV2, "kvs-fence", {}), "kvs-fence-response", &text, &m);
}

rdmx_status_t PmiSession::get(int src, const std::string &key, std::string *value, bool optional) {
    std::string text;
    Message m;
    rdmx_status_t st;
    if (wire == Wire::kV1) {
        st = conn_.request(pmi::format(Wire::kV1, "get", {{"kvsname", kvsname_}, {"key", key}}), "get_result", &text, &m,
                           0, optional);
    } else {
        st = conn_.request(pmi::format(Wire::kV2, "kvs-get", {{"jobid", ""}, {"srcid", std::to_string(src)}, {"key", key}}),
                           "kvs-get-response", &text, &m);
        if (st == RDMX_OK && m.get("found") != "TRUE") {
            RDMX_ERROR("bootstrap: the launcher has no PMI-2 value %s from rank %d after the fence", key.c_str(), src);
            st = RDMX_ERR_CONNECT;
        }
    }
    if (st != RDMX_OK) return st;
    *value = m.get("value");
    return RDMX_OK;
}

// Each rank's blob goes up hex-encoded in chunks of the launcher's value
// limit under keys "rdmx<round>.<rank>.<chunk>"; after the fence every rank
// reads every other's. Rounds keep successive rdmx_init calls apart.
rdmx_status_t PmiSession::allgather(const void *in, void *out, size_t len) {
    std::lock_guard<std::mutex> g(mu_);
    const std::string hex = pmi::hex_encode(in, len);
    const size_t chunk = value_max_ & ~size_t{1};
    const size_t nchunks = hex.empty() ? 1 : (hex.size() + chunk - 1) / chunk;
    const std::string round = "rdmx" + std::to_string(seq_++) + ".";
    rdmx_status_t st = RDMX_OK;
    for (size_t c = 0; c < nchunks && st == RDMX_OK; ++c)
        st = put(round + std::to_string(rank) + "." + std::to_string(c), hex.substr(c * chunk, chunk));
    if (st == RDMX_OK) st = fence();
    for (int r = 0; r < size && st == RDMX_OK; ++r) {
        std::string all, part;
        for (size_t c = 0; c < nchunks && st == RDMX_OK; ++c) {
            st = get(r, round + std::to_string(r) + "." + std::to_string(c), &part);
            all += part;
        }
        std::vector<uint8_t> bytes;
        if (st == RDMX_OK && (!pmi::hex_decode(all, &bytes) || bytes.size() != len)) {
            RDMX_ERROR("bootstrap: rank %d's PMI record %s is %zu hex digits, expected %zu", r, round.c_str(),
                       all.size(), 2 * len);
            st = RDMX_ERR_CONNECT;
        }
        if (st == RDMX_OK && len > 0) std::memcpy(static_cast<char *>(out) + static_cast<size_t>(r) * len, bytes.data(), len);
    }
    if (st != RDMX_OK) RDMX_ERROR("bootstrap: PMI-%d allgather of %zu bytes failed", wire == Wire::kV1 ? 1 : 2, len);
    return st;
}

namespace {

class PmiBootstrap final : public Bootstrap {
public:
    explicit PmiBootstrap(PmiSession *s, std::unique_ptr<PmiSession> owned = nullptr) : s_(s), owned_(std::move(owned)) {
        rank_ = s->rank;
        size_ = s->size;
        local_rank_ = s->local_rank;
        local_size_ = s->local_size;
    }
    const char *name() const override { return s_->wire == Wire::kV1 ? "PMI-1" : "PMI-2"; }
    rdmx_status_t allgather(const void *in, void *out, size_t len) override { return s_->allgather(in, out, len); }

private:
    PmiSession *s_;
    std::unique_ptr<PmiSession> owned_;  // a session of its own (tests), else the process's
};

}  // namespace

rdmx_status_t pmi_bootstrap_create(const Config &cfg, int version, std::unique_ptr<Bootstrap> *out) {
    rdmx_status_t st = RDMX_OK;
    PmiSession *s = PmiSession::get(cfg, version == 1 ? Wire::kV1 : Wire::kV2, &st);
    if (s == nullptr) return st;
    *out = std::make_unique<PmiBootstrap>(s);
    return RDMX_OK;
}

rdmx_status_t pmi_bootstrap_open(int fd, int version, double timeout, int rank, int size,
                                 std::unique_ptr<Bootstrap> *out) {
    rdmx_status_t st = RDMX_OK;
    std::unique_ptr<PmiSession> s =
        PmiSession::open(fd, version == 1 ? Wire::kV1 : Wire::kV2, timeout, &st, rank, size);
    if (!s) return st;
    PmiSession *raw = s.get();
    *out = std::make_unique<PmiBootstrap>(raw, std::move(s));
    return RDMX_OK;
}

}  // namespace rdmx
