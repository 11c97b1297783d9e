// librdmx.so loaded with dlopen, used (a rendezvous exchange, so the
// registration cache installs its memory hooks), finalized and dlclosed;
// then threads keep allocating and releasing memory (malloc/free of blocks
// glibc maps, realloc that moves them, mmap/munmap, madvise) in the process
// whose libc still routes those calls through the hooks. The library's code
// must still be there (it is linked with -z nodelete). 2 ranks under mpirun;
// this program is not linked with rdmx.
#include <dlfcn.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "rdmx/rdmx.h"

namespace {

constexpr size_t kLen = size_t{1} << 20;
constexpr int kThreads = 4;
constexpr auto kChurn = std::chrono::milliseconds(500);

#define DL_CHECK(cond, ...)                                           \
    do {                                                              \
        if (!(cond)) {                                                \
            std::fprintf(stderr, "FAIL rank %d [dlclose] %s: ", g_rank, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                        \
            std::fprintf(stderr, "\n");                               \
            std::exit(1);                                             \
        }                                                             \
    } while (0)

int g_rank = -1;

template <typename F>
F sym(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    DL_CHECK(p != nullptr, "dlsym %s: %s", name, dlerror());
    return reinterpret_cast<F>(p);
}

// The library's part: init, one rendezvous exchange each way, finalize.
void use_library(const char *path) {
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    DL_CHECK(lib != nullptr, "dlopen %s: %s", path, dlerror());
    auto init = sym<rdmx_status_t (*)(const rdmx_config_t *, rdmx_context_h *)>(lib, "rdmx_init");
    auto fin = sym<rdmx_status_t (*)(rdmx_context_h)>(lib, "rdmx_finalize");
    auto rank = sym<int (*)(rdmx_context_h)>(lib, "rdmx_rank");
    auto isend = sym<rdmx_status_t (*)(rdmx_context_h, const void *, size_t, int, int, rdmx_request_h *)>(lib, "rdmx_isend");
    auto irecv = sym<rdmx_status_t (*)(rdmx_context_h, void *, size_t, int, int, rdmx_request_h *)>(lib, "rdmx_irecv");
    auto waitall = sym<rdmx_status_t (*)(size_t, rdmx_request_h *, rdmx_msg_info_t *)>(lib, "rdmx_waitall");
    auto barrier = sym<rdmx_status_t (*)(rdmx_context_h)>(lib, "rdmx_barrier");
    rdmx_context_h ctx = nullptr;
    rdmx_status_t st = init(nullptr, &ctx);
    if (st == RDMX_ERR_NO_DEVICE) {
        std::fprintf(stderr, "SKIP: no RDMA device\n");
        std::exit(77);
    }
    DL_CHECK(st == RDMX_OK, "rdmx_init returned %d", st);
    g_rank = rank(ctx);
    const int peer = g_rank ^ 1;
    std::vector<uint8_t> out(kLen, static_cast<uint8_t>(g_rank + 1)), in(kLen, 0);
    rdmx_request_h r[2];
    DL_CHECK(irecv(ctx, in.data(), kLen, peer, 1, &r[0]) == RDMX_OK, "irecv");
    DL_CHECK(isend(ctx, out.data(), kLen, peer, 1, &r[1]) == RDMX_OK, "isend");
    DL_CHECK(waitall(2, r, nullptr) == RDMX_OK, "waitall");
    DL_CHECK(in[0] == peer + 1 && in[kLen - 1] == peer + 1, "payload wrong");
    DL_CHECK(barrier(ctx) == RDMX_OK, "barrier");
    DL_CHECK(fin(ctx) == RDMX_OK, "rdmx_finalize");
    DL_CHECK(dlclose(lib) == 0, "dlclose: %s", dlerror());
}

// Every call here reaches one of libc's memory functions the hooks patch.
void churn(std::atomic<bool> *stop, std::atomic<long> *ops) {
    long n = 0;
    while (!stop->load(std::memory_order_relaxed)) {
        void *big = std::malloc(4 * kLen);                  // above the mmap threshold
        DL_CHECK(big != nullptr, "malloc");
        std::memset(big, 1, 4096);
        big = std::realloc(big, 8 * kLen);                  // mremap
        DL_CHECK(big != nullptr, "realloc");
        std::free(big);                                     // munmap
        void *m = mmap(nullptr, kLen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        DL_CHECK(m != MAP_FAILED, "mmap");
        std::memset(m, 2, kLen);
        DL_CHECK(madvise(m, kLen, MADV_DONTNEED) == 0, "madvise");
        DL_CHECK(munmap(m, kLen) == 0, "munmap");
        ++n;
    }
    ops->fetch_add(n);
}

}  // namespace

int main(int argc, char **argv) {
    DL_CHECK(argc == 2, "usage: dlclose_test /path/to/librdmx.so");
    use_library(argv[1]);
    std::atomic<bool> stop{false};
    std::atomic<long> ops{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) threads.emplace_back(churn, &stop, &ops);
    std::this_thread::sleep_for(kChurn);
    stop.store(true);
    for (auto &t : threads) t.join();
    DL_CHECK(ops.load() > 0, "no memory operations ran");
    std::fprintf(stderr, "dlclose: rank %d OK (%ld rounds of malloc/realloc/free/mmap/madvise/munmap after dlclose)\n",
                 g_rank, ops.load());
    return 0;
}
