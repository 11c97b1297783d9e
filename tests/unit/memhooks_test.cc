// The memory hooks' installation: while other threads keep releasing memory
// through libc (the patch must be atomic against them), and all or nothing
// when a page cannot be made writable (on code pages of the test's own, so
// libc is not touched). The hooks' events themselves: rcache_test.cc.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/memhooks.h"

namespace rdmx {
namespace {

constexpr int kChurnThreads = 4;
constexpr size_t kChunk = 64 * 1024;
constexpr size_t kMallocMapped = 1 << 20;  // above glibc's mmap threshold: free() unmaps it

// Releases memory through every hooked path, as fast as it can.
void churn(std::atomic<bool> *stop, std::atomic<long> *rounds) {
    while (!stop->load(std::memory_order_relaxed)) {
        void *p = mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        static_cast<char *>(p)[0] = 1;
        ASSERT_EQ(madvise(p, kChunk, MADV_DONTNEED), 0);
        ASSERT_EQ(munmap(p, kChunk), 0);
        void *m = std::malloc(kMallocMapped);
        ASSERT_NE(m, nullptr);
        static_cast<char *>(m)[0] = 1;
        m = std::realloc(m, 2 * kMallocMapped);
        ASSERT_NE(m, nullptr);
        std::free(m);
        rounds->fetch_add(1, std::memory_order_relaxed);
    }
}

// Threads sit in (and return from) munmap, madvise, mremap and mmap while
// the hooks go in. A patch that tears an instruction some thread is about
// to execute, or returns into, kills the process here.
TEST(MemHooksInstall, WhileThreadsReleaseMemory) {
    if (memhooks::installed()) GTEST_SKIP() << "hooks already installed in this process (run this test alone)";
    std::atomic<bool> stop{false};
    std::atomic<long> rounds{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kChurnThreads; ++i) threads.emplace_back(churn, &stop, &rounds);
    while (rounds.load() < 100) std::this_thread::yield();  // every thread is in its loop
    const char *why = nullptr;
    const bool ok = memhooks::install(&why);
    memhooks::Cursor cur;
    const long at_install = rounds.load();
    size_t events = 0;  // drained as they come: the threads outrun the ring otherwise
    while (rounds.load() < at_install + 1000) {
        (void)cur.drain([&](const memhooks::Range &) { ++events; });
        std::this_thread::yield();
    }
    stop.store(true);
    for (auto &t : threads) t.join();
    if (!ok) GTEST_SKIP() << "memory hooks unavailable: " << why;
    (void)cur.drain([&](const memhooks::Range &) { ++events; });
    EXPECT_GE(events, 1000u) << "the threads' releases after installation were not seen";
}

#if defined(__x86_64__)
// Two fake functions, each `mov $nr,%eax; syscall; ret`, on two pages.
class FakeText : public ::testing::Test {
protected:
    void SetUp() override {
        page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        void *p = mmap(nullptr, 3 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ASSERT_NE(p, MAP_FAILED);
        base_ = static_cast<uint8_t *>(p);
        const uint8_t fn[] = {0xb8, 0x27, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3};  // getpid
        std::memcpy(base_ + 16, fn, sizeof(fn));
        std::memcpy(base_ + page_ + 32, fn, sizeof(fn));
        std::memset(base_ + 2 * page_, 0xc3, page_);  // the "trampolines": never run
        ASSERT_EQ(mprotect(base_, 3 * page_, PROT_READ | PROT_EXEC), 0);
        ASSERT_EQ(memhooks::detail::find_sites(base_ + 16, 16, 39, &sites_[0], 2), 1u);
        ASSERT_EQ(memhooks::detail::find_sites(base_ + page_ + 32, 16, 39, &sites_[1], 2), 1u);
        targets_[0] = base_ + 2 * page_;
        targets_[1] = base_ + 2 * page_ + 128;
        std::memcpy(before_[0], sites_[0], sizeof(before_[0]));
        std::memcpy(before_[1], sites_[1], sizeof(before_[1]));
    }
    void TearDown() override { munmap(base_, 3 * page_); }
    static int fail_second(void *addr, size_t len, int prot) {
        static int calls = 0;
        return ++calls == 2 ? (errno = EACCES, -1) : mprotect(addr, len, prot);
    }
    size_t page_ = 0;
    uint8_t *base_ = nullptr;
    uint8_t *sites_[2] = {};
    uint8_t *targets_[2] = {};
    uint8_t before_[2][8] = {};
};

TEST_F(FakeText, PatchIsAllOrNothing) {
    const char *why = nullptr;
    EXPECT_FALSE(memhooks::detail::patch_sites(sites_, targets_, 2, &fail_second, &why));
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::strstr(why, "writable"), nullptr) << why;
    EXPECT_EQ(std::memcmp(sites_[0], before_[0], 8), 0) << "the first function was patched anyway";
    EXPECT_EQ(std::memcmp(sites_[1], before_[1], 8), 0);
    // The first page went back to read+exec: a write faults, so probe by
    // patching again with the real mprotect, which must work from scratch.
    ASSERT_TRUE(memhooks::detail::patch_sites(sites_, targets_, 2, &mprotect, &why)) << why;
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(sites_[i][0], 0xe9);
        int32_t rel;
        std::memcpy(&rel, sites_[i] + 1, sizeof(rel));
        EXPECT_EQ(sites_[i] + memhooks::detail::kSiteLen + rel, targets_[i]);
        EXPECT_EQ(std::memcmp(sites_[i] + 5, before_[i] + 5, 3), 0) << "bytes past the mov changed";
    }
}

TEST(MemHooksSites, OnlyTheWantedSystemCall) {
    const uint8_t code[] = {0x90, 0xb8, 0x0b, 0, 0, 0, 0x0f, 0x05,  // munmap's site at 1
                            0xb8, 0x0c, 0, 0, 0, 0x0f, 0x05,        // brk's
                            0xb8, 0x0b, 0, 0, 0, 0x90, 0x90};       // mov without syscall
    uint8_t *out[4] = {};
    EXPECT_EQ(memhooks::detail::find_sites(code, sizeof(code), 11, out, 4), 1u);
    EXPECT_EQ(out[0], code + 1);
    EXPECT_EQ(memhooks::detail::find_sites(code, sizeof(code), 12, out, 4), 1u);
    EXPECT_EQ(out[0], code + 8);
    EXPECT_EQ(memhooks::detail::find_sites(code, sizeof(code), 9, out, 4), 0u);
}
#endif

}  // namespace
}  // namespace rdmx
