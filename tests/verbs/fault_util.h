// Helpers for the fault tests: bounded waits (a wait that does not return
// is itself a failure, reported with what it waited for), shell commands
// run beside the job (rdma link delete, ip link), and payload streams.
#pragma once
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

extern char **environ;

namespace rt {

using Clock = std::chrono::steady_clock;

inline double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Where this process's threads are in the kernel (root only; a hang
// report that says where is worth more than one that only says how long).
inline void dump_kernel_stacks() {
    std::string cmd = "for t in /proc/" + std::to_string(getpid()) +
                      "/task/*; do echo \"rank " + std::to_string(g_rank) +
                      " thread ${t##*/} in $(cat $t/wchan)\"; head -6 $t/stack 2>/dev/null; done >&2";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "(no kernel stacks)\n");
}

// rdmx_wait with a deadline: polls rdmx_test, fails the test when `secs` pass.
inline rdmx_status_t wait_bounded(rdmx_request_h *r, double secs, const char *what) {
    auto t0 = Clock::now();
    for (;;) {
        int done = 0;
        auto t_call = Clock::now();
        rdmx_status_t st = rdmx_test(r, &done, nullptr);
        // rdmx_test never blocks: a call that did is a bug of its own, and
        // without this line it would look like a peer that never answered.
        if (since(t_call) > 2) std::fprintf(stderr, "rank %d: rdmx_test blocked for %.1f s\n", g_rank, since(t_call));
        if (done) return st;
        if (since(t0) >= secs) dump_kernel_stacks();
        RT_CHECK(since(t0) < secs, "%s did not complete within %.0f s", what, secs);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

// Starts `sh -c cmd` beside the job; returns its pid.
// The child gets this process's environment without LD_PRELOAD: in ASan
// trees the ranks have the sanitizer runtime preloaded, and an uninstrumented
// tool (rdma, ip) run under it reports its own leaks at exit and fails.
inline pid_t spawn_sh(const std::string &cmd) {
    pid_t pid = -1;
    const char *argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
    std::vector<char *> env;
    for (char **e = environ; *e; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
    env.push_back(nullptr);
    int e = posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char **>(argv), env.data());
    RT_CHECK(e == 0, "posix_spawn(%s): %s", cmd.c_str(), std::strerror(e));
    return pid;
}

// Exit status of pid, or -1 if it is still running after `secs` (then killed).
inline int wait_child(pid_t pid, double secs) {
    auto t0 = Clock::now();
    for (;;) {
        int status = 0;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (since(t0) >= secs) {
            kill(pid, SIGKILL);
            (void)waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

inline int run_sh(const std::string &cmd, double secs) { return wait_child(spawn_sh(cmd), secs); }

// One round of a two-way stream with one peer: a receive and a send of the
// same tag and size, checked byte by byte when both succeed.
struct Stream {
    int peer = -1;
    int round = 0;
    bool active = true;
    rdmx_status_t end = RDMX_OK;  // the error that ended it
    double end_s = 0;             // when (seconds since the stream began)
    std::vector<uint8_t> out, in;
    rdmx_request_h rr = nullptr, sr = nullptr;
    rdmx_status_t post_st = RDMX_OK;

    static size_t size_of(int round) {
        static const size_t sizes[] = {64, 4096, 256 * 1024};  // eager, eager, rendezvous
        return sizes[round % 3];
    }
    void post(rdmx_context_h ctx, int me) {
        const size_t n = size_of(round);
        const int tag = 1000 + round;
        out.resize(n);
        in.assign(n, 0);
        fill(out, me, tag);
        rr = sr = nullptr;
        post_st = rdmx_irecv(ctx, in.data(), n, peer, tag, &rr);
        rdmx_status_t s2 = rdmx_isend(ctx, out.data(), n, peer, tag, &sr);
        if (post_st == RDMX_OK) post_st = s2;
    }
    // Completes the round; false (with end set) when it failed.
    bool complete(double bound, Clock::time_point t0) {
        rdmx_status_t a = rr ? wait_bounded(&rr, bound, "a streamed receive") : post_st;
        rdmx_status_t b = sr ? wait_bounded(&sr, bound, "a streamed send") : post_st;
        rdmx_status_t st = a != RDMX_OK ? a : b != RDMX_OK ? b : post_st;
        if (st == RDMX_OK) {
            size_t bad = verify(in.data(), in.size(), peer, 1000 + round, in.size());
            RT_CHECK(bad == SIZE_MAX, "round %d from %d: byte %zu of %zu wrong", round, peer, bad, in.size());
            ++round;
            return true;
        }
        active = false;
        end = st;
        end_s = since(t0);
        return false;
    }
};

// Exchanges 0 B, 64 B, 64 KiB and 1 MiB with each peer in `group` (which
// holds me), payloads checked: survivors still work after a fault.
inline void group_exchange(rdmx_context_h ctx, int me, const std::vector<int> &group, int tag0) {
    static const size_t sizes[] = {0, 64, 64 * 1024, 1 << 20};
    for (int p : group) {
        if (p == me) continue;
        for (size_t k = 0; k < 4; ++k) {
            const int tag = tag0 + static_cast<int>(k);
            std::vector<uint8_t> out(sizes[k]), in(sizes[k]);
            fill(out, me, tag);
            rdmx_request_h r[2];
            RT_OK(rdmx_irecv(ctx, in.data(), in.size(), p, tag, &r[0]));
            RT_OK(rdmx_isend(ctx, out.data(), out.size(), p, tag, &r[1]));
            RT_OK(wait_bounded(&r[0], 30, "a survivor receive"));
            RT_OK(wait_bounded(&r[1], 30, "a survivor send"));
            RT_CHECK(verify(in.data(), in.size(), p, tag, in.size()) == SIZE_MAX, "survivor data from %d, %zu B", p,
                     in.size());
        }
    }
}

}  // namespace rt
