// Handle lifetime on a job of one rank: calls after rdmx_finalize, a second
// wait on a copy of a request handle, and finalize while other threads are
// blocked in the library. Run under ASan (the Asan tree's unit label) these
// also prove that no call reads the freed context.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "protocols/context.h"  // app_waiting: which threads are blocked inside
#include "rdmx/rdmx.h"

extern char **environ;

namespace {

constexpr size_t kBig = size_t{1} << 20;  // above the default rendezvous threshold
constexpr auto kWakeDeadline = std::chrono::seconds(10);

void singleton_environment() {
    std::vector<std::string> names;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string kv = *e;
        std::string name = kv.substr(0, kv.find('='));
        for (const char *prefix : {"PMIX_", "OMPI_", "PRTE_", "PMI_", "SLURM_", "MV2_", "RDMX_"})
            if (name.rfind(prefix, 0) == 0 && name != "RDMX_LOG_LEVEL") names.push_back(name);
    }
    for (const auto &n : names) unsetenv(n.c_str());
}

rdmx_context_h init_ctx() {
    singleton_environment();
    rdmx_context_h ctx = nullptr;
    EXPECT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK);
    return ctx;
}

TEST(ApiLifetime, CallsAfterFinalizeAreRejected) {
    rdmx_context_h ctx = init_ctx();
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(rdmx_finalize(ctx), RDMX_OK);
    char b[8] = {};
    rdmx_request_h r = nullptr;
    int found = 0;
    rdmx_stats_t st;
    rdmx_stats_init(&st);
    EXPECT_EQ(rdmx_rank(ctx), -1);
    EXPECT_EQ(rdmx_size(ctx), -1);
    EXPECT_EQ(rdmx_isend(ctx, b, sizeof(b), 0, 1, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(r, nullptr);
    EXPECT_EQ(rdmx_irecv(ctx, b, sizeof(b), 0, 1, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_iprobe(ctx, 0, 1, &found, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_probe(ctx, 0, 1, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_get_stats(ctx, &st), RDMX_ERR_INVALID_ARG);
    rdmx_port_info_t pi;
    rdmx_port_info_init(&pi);
    EXPECT_EQ(rdmx_get_port_info(ctx, &pi), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_progress(ctx), 0);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_ERR_INVALID_ARG);
}

// The effective configuration as text: every setting once, NAME TAB VALUE
// TAB SOURCE, a value from the environment reported as such with tabs made
// spaces; snprintf's contract for the length; a bad handle gives 0.
TEST(ApiLifetime, ConfigTextListsEverySetting) {
    singleton_environment();
    setenv("RDMX_EAGER_LIMIT", "4096", 1);
    setenv("RDMX_LOG_PREFIX_TEST_ONLY_UNUSED", "x", 1);  // unknown names are not settings
    rdmx_context_h ctx = nullptr;
    EXPECT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK);
    unsetenv("RDMX_EAGER_LIMIT");
    unsetenv("RDMX_LOG_PREFIX_TEST_ONLY_UNUSED");
    ASSERT_NE(ctx, nullptr);
    const size_t need = rdmx_config_text(ctx, nullptr, 0);
    ASSERT_GT(need, 0u);
    std::string text(need + 1, '#');
    EXPECT_EQ(rdmx_config_text(ctx, text.data(), text.size()), need);
    EXPECT_EQ(text[need], '\0');
    text.resize(need);
    EXPECT_NE(text.find("RDMX_EAGER_LIMIT\t4096\tenvironment\n"), std::string::npos) << text;
    EXPECT_NE(text.find("RDMX_CONNECT\t"), std::string::npos) << text;
    EXPECT_EQ(text.find("RDMX_LOG_PREFIX_TEST_ONLY_UNUSED"), std::string::npos) << text;
    size_t lines = 0;
    for (size_t at = 0; at < text.size(); at = text.find('\n', at) + 1, ++lines) {
        const std::string line = text.substr(at, text.find('\n', at) - at);
        EXPECT_EQ(std::count(line.begin(), line.end(), '\t'), 2) << line;
    }
    EXPECT_GT(lines, 20u);
    char small[8];
    EXPECT_EQ(rdmx_config_text(ctx, small, sizeof(small)), need);  // truncated, still the whole length
    EXPECT_EQ(std::string(small), text.substr(0, sizeof(small) - 1));
    EXPECT_EQ(rdmx_config_text(ctx, nullptr, 4), 0u);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
    EXPECT_EQ(rdmx_config_text(ctx, nullptr, 0), 0u);  // finalized
}

// A singleton has no rc lane, so no port: an empty device, no rate, and a
// detail that says why; a bad argument is refused.
TEST(ApiLifetime, PortInfoOfASingletonHasNoPort) {
    rdmx_context_h ctx = init_ctx();
    ASSERT_NE(ctx, nullptr);
    rdmx_port_info_t pi;
    rdmx_port_info_init(&pi);
    ASSERT_EQ(rdmx_get_port_info(ctx, &pi), RDMX_OK);
    EXPECT_STREQ(pi.device, "");
    EXPECT_EQ(pi.port, 0);
    EXPECT_EQ(pi.data_gbps, 0.0);
    EXPECT_EQ(pi.rc_peers, 0);
    EXPECT_STREQ(pi.kind, "unknown");
    EXPECT_STREQ(pi.source, "unknown");
    EXPECT_NE(std::string(pi.detail).find("no RDMA port"), std::string::npos) << pi.detail;
    EXPECT_STREQ(pi.state, "");
    EXPECT_EQ(pi.active_mtu, 0);
    // A caller built against the first version of the struct (which ended
    // at `detail`) gets those fields, and nothing is written past them.
    rdmx_port_info_t old;
    const size_t first = offsetof(rdmx_port_info_t, fw_ver);
    std::memset(&old, 0x5a, sizeof(old));
    old.struct_size = first;
    ASSERT_EQ(rdmx_get_port_info(ctx, &old), RDMX_OK);
    EXPECT_EQ(old.struct_size, first);
    EXPECT_STREQ(old.device, "");
    EXPECT_EQ(old.fw_ver[0], 0x5a) << "a field past the caller's struct_size was written";
    EXPECT_EQ(old.active_mtu, 0x5a5a5a5a);
    old.struct_size = first - 1;
    EXPECT_EQ(rdmx_get_port_info(ctx, &old), RDMX_ERR_INVALID_ARG);
    pi.rc_peers = 5;   // a struct passed again is filled afresh
    ASSERT_EQ(rdmx_get_port_info(ctx, &pi), RDMX_OK);
    EXPECT_EQ(pi.rc_peers, 0);
    EXPECT_EQ(rdmx_get_port_info(ctx, nullptr), RDMX_ERR_INVALID_ARG);
    rdmx_port_info_t uninit{};
    EXPECT_EQ(rdmx_get_port_info(ctx, &uninit), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
}

// A handle the application never completed dies with its context: waiting
// on it afterwards is reported, not a read of freed memory.
TEST(ApiLifetime, RequestOfFinalizedContextIsRejected) {
    rdmx_context_h ctx = init_ctx();
    ASSERT_NE(ctx, nullptr);
    char b[8] = {};
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, b, sizeof(b), 0, 7, &r), RDMX_OK);
    ASSERT_EQ(rdmx_finalize(ctx), RDMX_OK);
    int done = 0;
    rdmx_request_h copy = r;
    EXPECT_EQ(rdmx_test(&r, &done, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(done, 0);
    EXPECT_EQ(rdmx_wait(&copy, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_cancel(r), RDMX_ERR_INVALID_ARG);
    // The request memory is reused by the next context, and the stale handle
    // still does not pass for a live one.
    rdmx_context_h next = init_ctx();
    ASSERT_NE(next, nullptr);
    rdmx_request_h fresh = nullptr;
    ASSERT_EQ(rdmx_irecv(next, b, sizeof(b), 0, 8, &fresh), RDMX_OK);
    ASSERT_EQ(rdmx_cancel(fresh), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&fresh, nullptr), RDMX_ERR_CANCELED);
    EXPECT_EQ(rdmx_finalize(next), RDMX_OK);
}

// rdmx_wait on a copy of a handle already waited: the request is back in the
// pool, and freeing it twice would hand one request to two later operations.
TEST(ApiLifetime, SecondWaitOnCopiedHandleIsRejected) {
    rdmx_context_h ctx = init_ctx();
    ASSERT_NE(ctx, nullptr);
    char out[8] = "abcdefg", in[8] = {}, in2[8] = {};
    rdmx_request_h rr = nullptr, sr = nullptr, rr2 = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, in, sizeof(in), 0, 3, &rr), RDMX_OK);
    ASSERT_EQ(rdmx_irecv(ctx, in2, sizeof(in2), 0, 3, &rr2), RDMX_OK);
    ASSERT_EQ(rdmx_isend(ctx, out, sizeof(out), 0, 3, &sr), RDMX_OK);
    EXPECT_EQ(sr, nullptr) << "an eager send completes at post and gets no request";
    ASSERT_EQ(rdmx_send(ctx, out, sizeof(out), 0, 3), RDMX_OK);
    rdmx_request_h rr_copy = rr, rr2_copy = rr2;
    EXPECT_EQ(rdmx_wait(&rr2, nullptr), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&rr, nullptr), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&rr2_copy, nullptr), RDMX_ERR_INVALID_ARG);
    int done = 0;
    EXPECT_EQ(rdmx_test(&rr_copy, &done, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_cancel(rr_copy), RDMX_ERR_INVALID_ARG);
    // The pool is intact: three live requests are three distinct objects.
    rdmx_request_h a = nullptr, b = nullptr, c = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, in, sizeof(in), 0, 4, &a), RDMX_OK);
    ASSERT_EQ(rdmx_irecv(ctx, in, sizeof(in), 0, 5, &b), RDMX_OK);
    ASSERT_EQ(rdmx_irecv(ctx, in, sizeof(in), 0, 6, &c), RDMX_OK);
    EXPECT_NE(a, b);
    EXPECT_NE(b, c);
    EXPECT_NE(a, c);
    for (rdmx_request_h *p : {&a, &b, &c}) {
        EXPECT_EQ(rdmx_cancel(*p), RDMX_OK);
        EXPECT_EQ(rdmx_wait(p, nullptr), RDMX_ERR_CANCELED);
    }
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
}

// Threads blocked in rdmx_wait (a receive nobody sends, a rendezvous send to
// ourselves nobody receives) and in rdmx_probe when another thread calls
// rdmx_finalize: each returns RDMX_ERR_CANCELED, and the context is freed only
// after they have left (ASan would see a thread read it otherwise).
TEST(ApiLifetime, FinalizeWakesBlockedThreads) {
    rdmx_context_h ctx = init_ctx();
    ASSERT_NE(ctx, nullptr);
    std::vector<char> big(kBig, 'x');
    char small[8] = {};
    rdmx_request_h recv = nullptr, send = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, small, sizeof(small), 0, 11, &recv), RDMX_OK);
    ASSERT_EQ(rdmx_isend(ctx, big.data(), big.size(), 0, 12, &send), RDMX_OK);
    std::atomic<int> left{0};
    rdmx_status_t st_recv = RDMX_OK, st_send = RDMX_OK, st_probe = RDMX_OK;
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
        st_recv = rdmx_wait(&recv, nullptr);
        left.fetch_add(1);
    });
    threads.emplace_back([&] {
        st_send = rdmx_wait(&send, nullptr);
        left.fetch_add(1);
    });
    threads.emplace_back([&] {
        st_probe = rdmx_probe(ctx, 0, 13, nullptr);
        left.fetch_add(1);
    });
    // All three inside the library's wait loop (each holds a WaitScope).
    const auto blocked_by = std::chrono::steady_clock::now() + kWakeDeadline;
    while (ctx->app_waiting.load() < 3 && std::chrono::steady_clock::now() < blocked_by)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_EQ(ctx->app_waiting.load(), 3) << "the waiting threads never blocked";
    EXPECT_EQ(left.load(), 0);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
    const auto until = std::chrono::steady_clock::now() + kWakeDeadline;
    while (left.load() < 3 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (left.load() < 3) {
        for (auto &t : threads) t.detach();
        FAIL() << (3 - left.load()) << " thread(s) still blocked " << kWakeDeadline.count()
               << " s after rdmx_finalize returned";
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(st_recv, RDMX_ERR_CANCELED);
    EXPECT_EQ(st_send, RDMX_ERR_CANCELED);
    EXPECT_EQ(st_probe, RDMX_ERR_CANCELED);
    EXPECT_EQ(recv, nullptr);
    EXPECT_EQ(send, nullptr);
}

}  // namespace
