// Process life around a context, over real verbs under mpirun (2 ranks):
//   fork      after rdmx_init, each rank runs system() and forks a child that
//             reads and writes the registered (cached) rendezvous buffers,
//             then rewrites them itself and exchanges again: every payload
//             must arrive intact, and the parent's buffers must not see the
//             child's writes. Registered pages are protected from fork
//             (ibv_fork_init, or a kernel that copies pinned pages at fork).
//   readonly  a rendezvous send from read-only memory (a PROT_READ mapping)
//             arrives intact, or is refused at once with a message that
//             names the buffer; never NO_MEMORY with a locked-memory hint.
// Cases run in the order given, in one launch.
#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness.h"

namespace {

constexpr size_t kLen = size_t{1} << 20;  // rendezvous at any eager limit
constexpr int kRounds = 4;
constexpr uint8_t kChildByte = 0xC5;

rdmx_context_h ctx;
int me, peer;

// Both ways at once: my send buffer to the peer, its data into my receive buffer.
void exchange(std::vector<uint8_t> &out, std::vector<uint8_t> &in, int tag) {
    rdmx_request_h r[2];
    RT_OK(rdmx_irecv(ctx, in.data(), in.size(), peer, tag, &r[0]));
    RT_OK(rdmx_isend(ctx, out.data(), out.size(), peer, tag, &r[1]));
    RT_OK(rdmx_waitall(2, r, nullptr));
    size_t bad = rt::verify(in.data(), in.size(), peer, tag, in.size());
    RT_CHECK(bad == SIZE_MAX, "tag %d: byte %zu of %zu wrong (0x%02x)", tag, bad, in.size(), in[bad]);
}

const char *fork_mode_name(ibv_fork_status s) {
    return s == IBV_FORK_DISABLED ? "disabled" : s == IBV_FORK_ENABLED ? "enabled (MADV_DONTFORK)" : "unneeded (kernel copies pinned pages)";
}

// A child that touches the registered buffers: with MADV_DONTFORK they are
// absent in the child (SIGSEGV, as documented); with a kernel that copies
// pinned pages at fork the child has its own copy. Either way the parent's
// buffers and registrations are untouched.
void child_touches(std::vector<uint8_t> &out, std::vector<uint8_t> &in, ibv_fork_status mode) {
    pid_t pid = fork();
    RT_CHECK(pid >= 0, "fork failed");
    if (pid == 0) {
        volatile uint8_t sum = out[0] ^ in[kLen / 2];
        (void)sum;
        std::memset(out.data(), kChildByte, out.size());
        std::memset(in.data(), kChildByte, in.size());
        _exit(0);
    }
    int status = 0;
    RT_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const bool segv = WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
    RT_CHECK(clean || (mode == IBV_FORK_ENABLED && segv), "child touching registered pages ended with status 0x%x "
             "(fork mode %s)", status, fork_mode_name(mode));
    RT_CHECK(out[0] != kChildByte && in[kLen / 2] != kChildByte, "the child's writes reached the parent's buffers");
}

void t_fork() {
    rt::g_test = "fork";
    const ibv_fork_status mode = ibv_is_fork_initialized();
    std::fprintf(stderr, "fork: rank %d: fork protection %s\n", me, fork_mode_name(mode));
    RT_CHECK(mode != IBV_FORK_DISABLED, "registered pages are not protected from fork (no ibv_fork_init, and the "
             "kernel does not copy pinned pages)");
    std::vector<uint8_t> out(kLen), in(kLen);
    for (int round = 0; round < kRounds; ++round) {
        const int tag = 100 + round;
        rt::fill(out, me, tag);   // written after the fork: a COW break lands here
        std::memset(in.data(), 0, in.size());
        exchange(out, in, tag);   // same buffers each round: cached registrations
        RT_CHECK(std::system("true") == 0, "system(\"true\") failed");
        child_touches(out, in, mode);
        RT_OK(rdmx_barrier(ctx));
    }
    rdmx_stats_t s;
    rdmx_stats_init(&s);
    RT_OK(rdmx_get_stats(ctx, &s));
    std::fprintf(stderr, "fork: rank %d OK (%d rounds, registration cache %s, %llu hits)\n", me, kRounds,
                 s.rcache_enabled ? "on" : "off", static_cast<unsigned long long>(s.rcache_hits));
}

void t_readonly() {
    rt::g_test = "readonly";
    const int tag = 200;
    void *p = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    RT_CHECK(p != MAP_FAILED, "mmap failed");
    auto *ro = static_cast<uint8_t *>(p);
    for (size_t i = 0; i < kLen; ++i) ro[i] = rt::pattern(me, tag, kLen, i);
    RT_CHECK(mprotect(p, kLen, PROT_READ) == 0, "mprotect failed");
    std::vector<uint8_t> in(kLen);
    rdmx_request_h r[2];
    RT_OK(rdmx_irecv(ctx, in.data(), in.size(), peer, tag, &r[0]));
    rdmx_status_t st = rdmx_isend(ctx, ro, kLen, peer, tag, &r[1]);
    if (st == RDMX_OK) st = rdmx_wait(&r[1], nullptr);
    RT_CHECK(st == RDMX_OK, "send from read-only memory: %s", rdmx_strerror(st));
    RT_OK(rdmx_wait(&r[0], nullptr));
    size_t bad = rt::verify(in.data(), in.size(), peer, tag, kLen);
    RT_CHECK(bad == SIZE_MAX, "byte %zu of %zu wrong", bad, kLen);
    munmap(p, kLen);
    std::fprintf(stderr, "readonly: rank %d OK\n", me);
}

}  // namespace

int main(int argc, char **argv) {
    ctx = rt::init_or_skip();
    me = rdmx_rank(ctx);
    RT_CHECK(rdmx_size(ctx) == 2, "needs 2 ranks, got %d", rdmx_size(ctx));
    peer = me ^ 1;
    for (int i = 1; i < argc; ++i) {
        std::string which = argv[i];
        if (which == "fork") t_fork();
        else if (which == "readonly") t_readonly();
        else RT_CHECK(false, "unknown case '%s' (fork, readonly)", which.c_str());
        RT_OK(rdmx_barrier(ctx));
    }
    RT_OK(rdmx_finalize(ctx));
    return 0;
}
