// PMI-1 / PMI-2 bootstrap: the wire codec, and whole sessions against a
// fake launcher (one socketpair per rank, served by threads with a shared
// key-value store and barrier), including launchers that misbehave.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_pmi.h"
#include "core/pmi_wire.h"

namespace rdmx {
namespace {

using pmi::Message;
using pmi::ParseError;
using pmi::Wire;

// ---- wire -------------------------------------------------------------------

TEST(PmiWire, ParsesV1Line) {
    Message m;
    ASSERT_EQ(pmi::parse(Wire::kV1, "cmd=get_result rc=0 value=abc=d", &m), ParseError::kOk);
    EXPECT_EQ(m.cmd(), "get_result");
    EXPECT_EQ(m.get("value"), "abc=d");  // only the first '=' splits
    EXPECT_TRUE(m.ok());
    ASSERT_EQ(pmi::parse(Wire::kV1, "cmd=put_result rc=-1 msg=duplicate", &m), ParseError::kOk);
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(pmi::parse(Wire::kV1, "rc=0 cmd=x", &m), ParseError::kNoCmd);
    EXPECT_EQ(pmi::parse(Wire::kV1, "cmd=x novalue", &m), ParseError::kBadField);
    EXPECT_EQ(pmi::parse(Wire::kV1, "cmd=x =v", &m), ParseError::kBadField);
    EXPECT_EQ(pmi::parse(Wire::kV1, "", &m), ParseError::kEmpty);
    EXPECT_EQ(pmi::parse(Wire::kV1, std::string(pmi::kMaxMessage + 1, 'a'), &m), ParseError::kTooLong);
}

TEST(PmiWire, ParsesV2WithEscapes) {
    Message m;
    ASSERT_EQ(pmi::parse(Wire::kV2, "cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b;;;", &m), ParseError::kOk);
    EXPECT_EQ(m.get("value"), "a;b;");
    EXPECT_EQ(m.get("found"), "TRUE");
    EXPECT_EQ(pmi::parse(Wire::kV2, "cmd=x;key=unterminated", &m), ParseError::kBadEscape);
    EXPECT_EQ(pmi::parse(Wire::kV2, "cmd=x;;", &m), ParseError::kBadEscape);  // "x;" never ends
    EXPECT_EQ(pmi::parse(Wire::kV2, "cmd=x;=v;", &m), ParseError::kBadField);
    EXPECT_EQ(pmi::parse(Wire::kV2, "cmd=x;k;v=1;", &m), ParseError::kBadField);
    EXPECT_EQ(pmi::parse(Wire::kV2, "key=v;cmd=x;", &m), ParseError::kNoCmd);
}

TEST(PmiWire, FormatsBothWiresAndRoundTrips) {
    EXPECT_EQ(pmi::format(Wire::kV1, "put", {{"key", "k"}, {"value", "v"}}), "cmd=put key=k value=v\n");
    const std::string v2 = pmi::format(Wire::kV2, "kvs-put", {{"key", "k"}, {"value", "x;y"}});
    EXPECT_EQ(v2, "    29cmd=kvs-put;key=k;value=x;;y;");
    size_t len = 0;
    ASSERT_TRUE(pmi::parse_v2_length(std::string_view(v2).substr(0, 6), &len));
    ASSERT_EQ(len, v2.size() - 6);
    Message m;
    ASSERT_EQ(pmi::parse(Wire::kV2, std::string_view(v2).substr(6), &m), ParseError::kOk);
    EXPECT_EQ(m.get("value"), "x;y");
    ASSERT_TRUE(pmi::parse_v2_length("29    ", &len));  // either alignment
    EXPECT_EQ(len, 29u);
    EXPECT_FALSE(pmi::parse_v2_length("      ", &len));
    EXPECT_FALSE(pmi::parse_v2_length("0     ", &len));
    EXPECT_FALSE(pmi::parse_v2_length("12 3  ", &len));
    EXPECT_FALSE(pmi::parse_v2_length("999999", &len));  // beyond kMaxMessage
}

TEST(PmiWire, HexRoundTripAndRejects) {
    const uint8_t in[] = {0, 1, 0x7f, 0x80, 0xff};
    std::vector<uint8_t> out;
    ASSERT_TRUE(pmi::hex_decode(pmi::hex_encode(in, sizeof(in)), &out));
    EXPECT_EQ(out, std::vector<uint8_t>(in, in + sizeof(in)));
    EXPECT_FALSE(pmi::hex_decode("abc", &out));
    EXPECT_FALSE(pmi::hex_decode("zz", &out));
}

TEST(PmiWire, ProcessMapping) {
    std::vector<int> node;
    ASSERT_TRUE(pmi::parse_process_mapping("(vector,(0,2,2))", 4, &node));  // block
    EXPECT_EQ(node, (std::vector<int>{0, 0, 1, 1}));
    ASSERT_TRUE(pmi::parse_process_mapping("(vector,(0,2,1))", 5, &node));  // round robin, repeated
    EXPECT_EQ(node, (std::vector<int>{0, 1, 0, 1, 0}));
    ASSERT_TRUE(pmi::parse_process_mapping("(vector,(0,1,3),(1,1,1))", 4, &node));
    EXPECT_EQ(node, (std::vector<int>{0, 0, 0, 1}));
    for (const char *bad : {"", "(vector)", "(vector,(0,1))", "(vector,(0,0,1))", "(vector,(0,1,1)", "vector,(0,1,1))",
                            "(vector,(0,1,1))x", "(vector,(0,1,99999999999))"})
        EXPECT_FALSE(pmi::parse_process_mapping(bad, 4, &node)) << bad;
}

// ---- a fake launcher -----------------------------------------------------------

enum class Fault { kNone, kSilentFence, kRefusePut, kCloseOnGet, kGarbage, kBadLength };

class FakeLauncher {
public:
    FakeLauncher(int n, Wire w, Fault f, std::string mapping) : n_(n), wire_(w), fault_(f), mapping_(std::move(mapping)) {
        for (int i = 0; i < n; ++i) {
            int sv[2];
            EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            client_.push_back(sv[0]);
            server_.push_back(sv[1]);
        }
        for (int i = 0; i < n; ++i) threads_.emplace_back([this, i] { serve(i); });
    }
    ~FakeLauncher() {
        for (int fd : client_) shutdown(fd, SHUT_RDWR);
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto &t : threads_) t.join();
        for (int fd : client_) close(fd);
        for (int fd : server_) close(fd);
    }
    int client_fd(int i) const { return client_[static_cast<size_t>(i)]; }
    int finalized() const { return finalized_; }

private:
    bool read_msg(int fd, std::string &buf, bool v2, std::string *text) {
        for (;;) {
            if (!v2) {
                size_t nl = buf.find('\n');
                if (nl != std::string::npos) {
                    *text = buf.substr(0, nl);
                    buf.erase(0, nl + 1);
                    return true;
                }
            } else if (buf.size() >= 6) {
                size_t len = std::strtoul(buf.substr(0, 6).c_str(), nullptr, 10);
                if (buf.size() >= 6 + len) {
                    *text = buf.substr(6, len);
                    buf.erase(0, 6 + len);
                    return true;
                }
            }
            char c[4096];
            ssize_t r = read(fd, c, sizeof(c));
            if (r <= 0) return false;
            buf.append(c, static_cast<size_t>(r));
        }
    }
    // MSG_NOSIGNAL: a client that gave up must not kill the test with SIGPIPE.
    void send(int fd, const std::string &s) {
        EXPECT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
    }
    void fence() {
        std::unique_lock<std::mutex> lk(mu_);
        const int gen = gen_;
        if (++arrived_ == n_) {
            arrived_ = 0;
            ++gen_;
            cv_.notify_all();
            return;
        }
        cv_.wait(lk, [&] { return gen_ != gen || stop_; });
    }
    std::string reply(int rank, bool v2, const Message &q);
    void serve(int i) {
        const int fd = server_[static_cast<size_t>(i)];
        std::string buf, text;
        bool v2 = false;
        while (read_msg(fd, buf, v2, &text)) {
            Message q;
            if (pmi::parse(v2 ? Wire::kV2 : Wire::kV1, text, &q) != ParseError::kOk) return;
            const std::string cmd(q.cmd());
            if (cmd == "init") {  // answered in PMI-1 form; PMI-2 framing from then on
                send(fd, "cmd=response_to_init pmi_version=" + std::string(q.get("pmi_version")) +
                             " pmi_subversion=0 rc=0\n");
                v2 = wire_ == Wire::kV2;
                continue;
            }
            if ((cmd == "barrier_in" || cmd == "kvs-fence") && fault_ == Fault::kSilentFence) continue;
            if ((cmd == "get" || cmd == "kvs-get") && fault_ == Fault::kCloseOnGet &&
                q.get("key") != "PMI_process_mapping") {
                shutdown(fd, SHUT_RDWR);
                return;
            }
            if (cmd == "barrier_in" || cmd == "kvs-fence") fence();
            if (cmd == "finalize") ++finalized_;
            send(fd, reply(i, v2, q));
        }
    }

    int n_;
    Wire wire_;
    Fault fault_;
    std::string mapping_;
    std::vector<int> client_, server_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable cv_;
    std::map<std::string, std::string> kvs_;
    int arrived_ = 0, gen_ = 0;
    bool stop_ = false;
    std::atomic<int> finalized_{0};
};

std::string FakeLauncher::reply(int rank, bool v2, const Message &q) {
    const std::string cmd(q.cmd());
    const Wire w = v2 ? Wire::kV2 : Wire::kV1;
    std::lock_guard<std::mutex> g(mu_);
    if ((cmd == "put" || cmd == "kvs-put") && fault_ == Fault::kRefusePut)
        return pmi::format(w, v2 ? "kvs-put-response" : "put_result", {{"rc", "-1"}, {"msg", "no_room_in_kvs"}});
    if (cmd == "put" || cmd == "kvs-put") {
        kvs_[std::string(q.get("key"))] = std::string(q.get("value"));
        return pmi::format(w, v2 ? "kvs-put-response" : "put_result", {{"rc", "0"}});
    }
    if (fault_ == Fault::kGarbage) return v2 ? "5     nonse" : "this is not pmi\n";
    if (fault_ == Fault::kBadLength && v2) return "abcdef";
    if (cmd == "get_maxes")
        return pmi::format(w, "maxes", {{"rc", "0"}, {"kvsname_max", "256"}, {"keylen_max", "64"}, {"vallen_max", "1024"}});
    if (cmd == "get_my_kvsname") return pmi::format(w, "my_kvsname", {{"rc", "0"}, {"kvsname", "kvs_1"}});
    if (cmd == "fullinit")
        return pmi::format(w, "fullinit-response", {{"rc", "0"}, {"rank", std::to_string(rank)},
                                                    {"size", std::to_string(n_)}, {"appnum", "0"}});
    if (cmd == "barrier_in") return "cmd=barrier_out\n";
    if (cmd == "kvs-fence") return pmi::format(w, "kvs-fence-response", {{"rc", "0"}});
    if (cmd == "info-getjobattr")
        return pmi::format(w, "info-getjobattr-response", {{"rc", "0"}, {"found", "TRUE"}, {"value", mapping_}});
    if (cmd == "get" || cmd == "kvs-get") {
        std::string key(q.get("key"));
        std::string val = key == "PMI_process_mapping" ? mapping_ : kvs_.count(key) ? kvs_[key] : "";
        bool found = key == "PMI_process_mapping" || kvs_.count(key) > 0;
        if (v2) return pmi::format(w, "kvs-get-response", {{"rc", "0"}, {"found", found ? "TRUE" : "FALSE"}, {"value", val}});
        return pmi::format(w, "get_result", {{"rc", found ? "0" : "-1"}, {"value", val}});
    }
    if (cmd == "finalize") return pmi::format(w, v2 ? "finalize-response" : "finalize_ack", {{"rc", "0"}});
    return pmi::format(w, "unknown", {{"rc", "-1"}});
}

struct RankResult {
    rdmx_status_t init = RDMX_ERR_INTERNAL, small = RDMX_ERR_INTERNAL, large = RDMX_ERR_INTERNAL;
    int rank = -1, size = -1, local = -1, local_size = -1;
    std::vector<uint8_t> small_out, large_out;
    double seconds = 0;
};

// Every rank of a fake job bootstraps on its own thread and exchanges a
// 16-byte record and a 3000-byte one (several values at vallen_max 1024).
std::vector<RankResult> run_job(int n, Wire w, Fault f, const std::string &mapping, double timeout = 10) {
    FakeLauncher l(n, w, f, mapping);
    std::vector<RankResult> res(static_cast<size_t>(n));
    std::vector<std::thread> t;
    for (int i = 0; i < n; ++i)
        t.emplace_back([&, i] {
            RankResult &r = res[static_cast<size_t>(i)];
            auto t0 = std::chrono::steady_clock::now();
            std::unique_ptr<Bootstrap> b;
            r.init = pmi_bootstrap_open(l.client_fd(i), w == Wire::kV1 ? 1 : 2, timeout, i, n, &b);
            if (r.init == RDMX_OK) {
                r.rank = b->rank();
                r.size = b->size();
                r.local = b->local_rank();
                r.local_size = b->local_size();
                std::vector<uint8_t> small(16, static_cast<uint8_t>(0xa0 + i)), large(3000);
                for (size_t k = 0; k < large.size(); ++k) large[k] = static_cast<uint8_t>(k * 7 + i);
                r.small_out.resize(16 * static_cast<size_t>(n));
                r.large_out.resize(3000 * static_cast<size_t>(n));
                r.small = b->allgather(small.data(), r.small_out.data(), small.size());
                if (r.small == RDMX_OK) r.large = b->allgather(large.data(), r.large_out.data(), large.size());
            }
            b.reset();  // finalize while the launcher still serves
            r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        });
    for (auto &x : t) x.join();
    return res;
}

void expect_exchange(const std::vector<RankResult> &res) {
    const int n = static_cast<int>(res.size());
    for (int i = 0; i < n; ++i) {
        const RankResult &r = res[static_cast<size_t>(i)];
        ASSERT_EQ(r.init, RDMX_OK) << "rank " << i;
        ASSERT_EQ(r.small, RDMX_OK) << "rank " << i;
        ASSERT_EQ(r.large, RDMX_OK) << "rank " << i;
        EXPECT_EQ(r.rank, i);
        EXPECT_EQ(r.size, n);
        for (int s = 0; s < n; ++s) {
            EXPECT_EQ(r.small_out[static_cast<size_t>(s) * 16], 0xa0 + s);
            for (size_t k = 0; k < 3000; k += 97)
                ASSERT_EQ(r.large_out[static_cast<size_t>(s) * 3000 + k], static_cast<uint8_t>(k * 7 + s));
        }
    }
}

TEST(PmiSession, Pmi1ExchangesAcrossThreeRanks) {
    auto res = run_job(3, Wire::kV1, Fault::kNone, "(vector,(0,1,3))");
    expect_exchange(res);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(res[static_cast<size_t>(i)].local, i);
        EXPECT_EQ(res[static_cast<size_t>(i)].local_size, 3);  // one node: sizes the sm segment's rings
    }
}

TEST(PmiSession, Pmi2ExchangesAndReadsTheMapping) {
    auto res = run_job(3, Wire::kV2, Fault::kNone, "(vector,(0,2,1))");  // nodes 0, 1, 0
    expect_exchange(res);
    EXPECT_EQ(res[0].local, 0);
    EXPECT_EQ(res[1].local, 0);
    EXPECT_EQ(res[2].local, 1);
    EXPECT_EQ(res[0].local_size, 2);
    EXPECT_EQ(res[1].local_size, 1);
    EXPECT_EQ(res[2].local_size, 2);
}

TEST(PmiSession, SilentLauncherTimesOut) {
    for (Wire w : {Wire::kV1, Wire::kV2}) {
        auto res = run_job(2, w, Fault::kSilentFence, "(vector,(0,1,2))", 0.5);
        for (const RankResult &r : res) {
            EXPECT_EQ(r.init, RDMX_OK);
            EXPECT_EQ(r.small, RDMX_ERR_TIMEOUT);
            EXPECT_LT(r.seconds, 5.0);  // the 0.5 s deadline, plus finalize's own
        }
    }
}

TEST(PmiSession, RefusalsAndBrokenLaunchersFailCleanly) {
    for (Wire w : {Wire::kV1, Wire::kV2}) {
        for (Fault f : {Fault::kRefusePut, Fault::kCloseOnGet}) {
            auto res = run_job(2, w, f, "(vector,(0,1,2))", 2);
            for (const RankResult &r : res) {
                EXPECT_EQ(r.init, RDMX_OK);
                EXPECT_EQ(r.small, RDMX_ERR_CONNECT) << "fault " << static_cast<int>(f);
            }
        }
        auto res = run_job(1, w, Fault::kGarbage, "(vector,(0,1,1))", 2);
        EXPECT_EQ(res[0].init, RDMX_ERR_CONNECT);
    }
    auto res = run_job(1, Wire::kV2, Fault::kBadLength, "(vector,(0,1,1))", 2);
    EXPECT_EQ(res[0].init, RDMX_ERR_CONNECT);
}

// A launcher that says "N processes" but offers no bootstrap must not give N
// jobs of one.
TEST(PmiSession, LauncherWithoutBootstrapIsNamed) {
    struct Env {
        const char *name;
        const char *value;
    };
    const std::vector<std::vector<Env>> cases = {
        {{"SLURM_NTASKS", "4"}, {"SLURM_STEP_ID", "0"}},
        {{"PMI_SIZE", "2"}, {"PMI_PORT", "host:1234"}},
        {{"OMPI_COMM_WORLD_SIZE", "2"}},
    };
    for (const char *v : {"PMIX_NAMESPACE", "PMIX_SERVER_URI", "PMIX_SERVER_URI2", "PMIX_SERVER_URI3", "PMI_FD",
                          "PMI_SIZE", "PMI_PORT", "SLURM_NTASKS", "SLURM_STEP_ID", "OMPI_COMM_WORLD_SIZE",
                          "MV2_COMM_WORLD_SIZE", "RDMX_BOOTSTRAP"})
        unsetenv(v);
    Config cfg;
    ASSERT_EQ(cfg.load(nullptr), RDMX_OK);
    std::unique_ptr<Bootstrap> b;
    ASSERT_EQ(bootstrap_create(cfg, &b), RDMX_OK);  // nothing set: a job of one
    EXPECT_STREQ(b->name(), "singleton");
    for (const auto &c : cases) {
        for (const Env &e : c) setenv(e.name, e.value, 1);
        EXPECT_EQ(bootstrap_create(cfg, &b), RDMX_ERR_CONNECT) << c[0].name;
        for (const Env &e : c) unsetenv(e.name);
    }
}

}  // namespace
}  // namespace rdmx
