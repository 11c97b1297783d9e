// Multi-process harness for the sm transport tests and benchmark: forks N
// ranks that share an anonymous MAP_SHARED board (created before fork: the
// address exchange and barriers the engine's bootstrap would provide), each
// opening an SmTransport with a recording sink.
#pragma once
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "transport/sm.h"

namespace smtest {

using rdmx::SmAddress;
using rdmx::SmParams;
using rdmx::SmTransport;

constexpr int kMaxRanks = 8;
constexpr double kJobDeadline = 40.0;   // seconds a whole job may take before the parent kills it
constexpr double kStepDeadline = 20.0;  // seconds one wait inside a rank may take

// A failed check in a child: say where and exit nonzero (the parent's test fails).
#define SM_CHECK(cond)                                                                                     \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            std::fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", ::smtest::g_rank, __FILE__, __LINE__, \
                         #cond);                                                                           \
            std::fflush(stderr);                                                                           \
            _exit(1);                                                                                      \
        }                                                                                                  \
    } while (0)

inline int g_rank = -1;
inline bool g_expect_connect_ok = true;  // set in the parent before run_job; children inherit it

struct Board {
    std::atomic<int> arrive;
    std::atomic<int> flag[16];
    SmAddress addr[kMaxRanks];
    uint64_t word[32];
};

struct Sink final : rdmx::TransportSink {
    struct Arrival {
        int peer;
        rdmx::wire::MsgHdr h;
        std::vector<char> body;
        uint64_t token;
    };
    struct Rma {
        int peer;
        uint64_t id;
        uint32_t bytes;
        bool ok;
    };
    std::vector<Arrival> arrivals;
    std::vector<Rma> rma;
    std::vector<std::pair<int, rdmx_status_t>> failed;
    std::string reason;
    bool hold = false;      // keep every arrival's slot
    int hold_peer = -1;     // keep this peer's arrivals' slots
    size_t rma_before_fail = 0;  // rma records seen when the first failure came

    bool on_arrival(int peer, const rdmx::wire::MsgHdr &h, const char *buf, uint32_t len, uint64_t token) override {
        arrivals.push_back({peer, h, std::vector<char>(buf + sizeof(h), buf + len), token});
        return hold || peer == hold_peer;
    }
    void on_rma_done(int peer, uint64_t id, uint32_t bytes, bool ok) override { rma.push_back({peer, id, bytes, ok}); }
    void on_unexposed(int, uint64_t, bool) override {}
    void on_peer_failed(int peer, rdmx_status_t why, const char *r) override {
        if (failed.empty()) rma_before_fail = rma.size();
        failed.emplace_back(peer, why);
        reason = r;
    }
    void on_fatal(rdmx_status_t) override {}
};

struct Ctx {
    int rank = 0;
    int size = 0;
    Board *board = nullptr;
    Sink sink;
    std::unique_ptr<SmTransport> t;
    int barriers = 0;

    // Progresses until pred() holds; false on the deadline.
    template <typename P>
    bool drive(P pred, double secs = kStepDeadline, bool hk = true) {
        rdmx::Deadline d(secs);
        while (!pred()) {
            if (d.expired()) return false;
            t->progress(hk);
        }
        return true;
    }
    // All live ranks meet (progressing meanwhile, so pipelined copies move).
    bool barrier(int nranks = 0) {
        const int n = nranks > 0 ? nranks : size;
        ++barriers;
        board->arrive.fetch_add(1);
        const int want = n * barriers;
        return drive([&] { return board->arrive.load() >= want; });
    }
};

inline int count_fds() {
    int n = 0;
    for (int fd = 0; fd < 4096; ++fd) n += fcntl(fd, F_GETFD) != -1;
    return n;
}

using Body = std::function<void(Ctx &)>;
using Tune = std::function<void(int rank, SmParams &)>;

// Child: open, publish, connect, run the body, exit 0.
[[noreturn]] inline void run_rank(int rank, int n, Board *b, const Tune &tune, const Body &body) {
    g_rank = rank;
    Ctx c;
    c.rank = rank;
    c.size = n;
    c.board = b;
    SmParams p;
    p.rank = rank;
    p.size = n;
    p.job_key = 0x5eed;
    p.eager_limit = 4096;
    p.slots = 16;
    p.peer_timeout = 5.0;
    p.rma_chunk = 8u << 20;
    p.stage_chunk = 64u << 10;
    if (tune) tune(rank, p);
    b->word[16 + rank] = static_cast<uint64_t>(count_fds());
    SM_CHECK(SmTransport::open(p, &c.sink, &c.t) == RDMX_OK);
    b->addr[rank] = c.t->address();
    SM_CHECK(c.barrier());
    std::vector<rdmx::SmPeer> locals;
    for (int r = 0; r < n; ++r) locals.push_back({r, b->addr[r]});
    const rdmx_status_t st = c.t->connect(locals);
    b->word[24 + rank] = static_cast<uint64_t>(st);
    if (g_expect_connect_ok) SM_CHECK(st == RDMX_OK);
    SM_CHECK(c.barrier());  // the bootstrap barrier: nobody closes its fds before all mapped
    body(c);
    c.t.reset();
    std::fflush(stderr);
    _exit(0);
}

struct JobResult {
    std::vector<int> status;  // waitpid status per rank
    bool timed_out = false;
    bool ok(int r) const { return WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0; }
    bool killed(int r) const { return WIFSIGNALED(status[r]) && WTERMSIG(status[r]) == SIGKILL; }
};

// Forks n ranks; waits for all of them within kJobDeadline (then kills them).
inline JobResult run_job(int n, const Body &body, const Tune &tune = nullptr, Board **board_out = nullptr) {
    void *m = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    auto *b = new (m) Board{};
    std::vector<pid_t> pids;
    std::fflush(stdout);
    std::fflush(stderr);
    for (int r = 0; r < n; ++r) {
        pid_t pid = fork();
        if (pid == 0) run_rank(r, n, b, tune, body);
        pids.push_back(pid);
    }
    JobResult res;
    res.status.assign(n, -1);
    rdmx::Deadline d(kJobDeadline);
    int left = n;
    while (left > 0) {
        for (int r = 0; r < n; ++r) {
            if (res.status[r] != -1) continue;
            int st = 0;
            if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
                res.status[r] = st;
                --left;
            }
        }
        if (left > 0 && d.expired()) {
            res.timed_out = true;
            for (int r = 0; r < n; ++r)
                if (res.status[r] == -1) kill(pids[r], SIGKILL);
        }
        usleep(1000);
    }
    if (board_out != nullptr) *board_out = b;
    else munmap(m, sizeof(Board));
    return res;
}

inline unsigned char pattern(uint64_t i, uint64_t salt) { return static_cast<unsigned char>((i * 131 + salt * 7 + (i >> 9)) & 0xff); }

}  // namespace smtest
