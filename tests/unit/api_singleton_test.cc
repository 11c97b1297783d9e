// The public C API on a job of one rank: rdmx_init(NULL, ...) in a process
// started without a launcher needs no RDMA device. Self sends go through the
// engine's matching, eager copy and (self) rendezvous paths.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rdmx/rdmx.h"
#include "c_callers.h"

extern char **environ;

namespace {

constexpr size_t kEager = 8192;  // the default eager limit
constexpr size_t kMiB = size_t{1} << 20;
constexpr uint8_t kGuard = 0xEE;

// Launcher variables would make rdmx_init try PMIx or PMI (or refuse a job
// of one the launcher says has more ranks); RDMX_* ones could change
// the eager limit the sizes below are chosen around. Only RDMX_LOG_LEVEL stays.
void make_singleton_environment() {
    std::vector<std::string> names;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string kv = *e;
        std::string name = kv.substr(0, kv.find('='));
        for (const char *prefix : {"PMIX_", "OMPI_", "PRTE_", "PMI_", "SLURM_", "MV2_", "RDMX_"}) {
            if (name.rfind(prefix, 0) == 0 && name != "RDMX_LOG_LEVEL") names.push_back(name);
        }
    }
    for (const auto &n : names) unsetenv(n.c_str());
}

void fill(std::vector<uint8_t> &b, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(((i + seed) * 2654435761u) >> 11);
}

// First index where a and b differ in [0, n), or n.
size_t first_diff(const std::vector<uint8_t> &a, const std::vector<uint8_t> &b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return i;
    return n;
}

class ApiSingleton : public ::testing::Test {
protected:
    static void SetUpTestSuite() { make_singleton_environment(); }
    void SetUp() override {
        make_singleton_environment();
        ASSERT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK);
        ASSERT_NE(ctx, nullptr);
        ASSERT_EQ(rdmx_rank(ctx), 0);
        ASSERT_EQ(rdmx_size(ctx), 1);
    }
    void TearDown() override {
        if (ctx != nullptr) {
            int found = 1;
            // Every test consumes what it sends.
            EXPECT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, nullptr), RDMX_OK);
            EXPECT_EQ(found, 0) << "a test left an unreceived message behind";
            EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
        }
    }
    rdmx_context_h ctx = nullptr;
};

// ---- sizes, eager and rendezvous, posted first and unexpected first --------

class SelfSizes : public ApiSingleton, public ::testing::WithParamInterface<size_t> {};

TEST_P(SelfSizes, ReceivePostedFirst) {
    const size_t n = GetParam();
    std::vector<uint8_t> src(n + 1), dst(n + 1, 0);
    fill(src, n, 1);
    dst[n] = kGuard;
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, dst.data(), n, 0, 5, &r), RDMX_OK);
    ASSERT_NE(r, nullptr);
    ASSERT_EQ(rdmx_send(ctx, src.data(), n, 0, 5), RDMX_OK);
    rdmx_msg_info_t info{-7, -7, 12345, RDMX_ERR_INTERNAL};
    ASSERT_EQ(rdmx_wait(&r, &info), RDMX_OK);
    EXPECT_EQ(r, nullptr);
    EXPECT_EQ(info.source, 0);
    EXPECT_EQ(info.tag, 5);
    EXPECT_EQ(info.length, n);
    EXPECT_EQ(info.error, RDMX_OK);
    EXPECT_EQ(first_diff(src, dst, n), n);
    EXPECT_EQ(dst[n], kGuard);
}

TEST_P(SelfSizes, SendFirstThenReceive) {
    const size_t n = GetParam();
    std::vector<uint8_t> src(n + 1), dst(n + 1, 0);
    fill(src, n, 2);
    dst[n] = kGuard;
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, src.data(), n, 0, 6, &s), RDMX_OK);
    rdmx_msg_info_t info{};
    ASSERT_EQ(rdmx_recv(ctx, dst.data(), n, 0, 6, &info), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&s, nullptr), RDMX_OK);
    EXPECT_EQ(s, nullptr);
    EXPECT_EQ(info.source, 0);
    EXPECT_EQ(info.tag, 6);
    EXPECT_EQ(info.length, n);
    EXPECT_EQ(first_diff(src, dst, n), n);
    EXPECT_EQ(dst[n], kGuard);
}

TEST_P(SelfSizes, NullBufferOnlyForZeroLength) {
    const size_t n = GetParam();
    if (n != 0) {
        EXPECT_EQ(rdmx_send(ctx, nullptr, n, 0, 1), RDMX_ERR_INVALID_ARG);
        rdmx_msg_info_t info{};
        EXPECT_EQ(rdmx_recv(ctx, nullptr, n, 0, 1, &info), RDMX_ERR_INVALID_ARG);
        return;
    }
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, nullptr, 0, 0, 1, &r), RDMX_OK);
    ASSERT_EQ(rdmx_send(ctx, nullptr, 0, 0, 1), RDMX_OK);
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_wait(&r, &info), RDMX_OK);
    EXPECT_EQ(info.length, 0u);
}

INSTANTIATE_TEST_SUITE_P(EagerAndLarge, SelfSizes,
                         ::testing::Values(size_t{0}, size_t{1}, kEager, kEager + 1, kMiB),
                         [](const ::testing::TestParamInfo<size_t> &p) { return "n" + std::to_string(p.param); });

TEST_F(ApiSingleton, EagerSendIsBufferedAndCompletesAtOnce) {
    std::vector<uint8_t> src(100), keep(100), dst(100, 0);
    fill(src, 100, 3);
    keep = src;
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, src.data(), 100, 0, 9, &s), RDMX_OK);
    int done = 0;
    ASSERT_EQ(rdmx_test(&s, &done, nullptr), RDMX_OK);
    EXPECT_EQ(done, 1) << "an eager self send with no receive posted is copied aside";
    EXPECT_EQ(s, nullptr);
    std::memset(src.data(), 0, src.size());  // the sender may reuse its buffer now
    ASSERT_EQ(rdmx_recv(ctx, dst.data(), 100, 0, 9, nullptr), RDMX_OK);
    EXPECT_EQ(first_diff(keep, dst, 100), 100u);
}

TEST_F(ApiSingleton, LargeSendCompletesWhenReceived) {
    std::vector<uint8_t> src(kMiB), dst(kMiB, 0);
    fill(src, kMiB, 4);
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, src.data(), kMiB, 0, 3, &s), RDMX_OK);
    int found = 0;
    rdmx_msg_info_t pi{};
    ASSERT_EQ(rdmx_iprobe(ctx, 0, 3, &found, &pi), RDMX_OK);
    EXPECT_EQ(found, 1);
    EXPECT_EQ(pi.length, kMiB);
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, dst.data(), kMiB, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &r), RDMX_OK);
    rdmx_request_h both[2] = {s, r};
    rdmx_msg_info_t infos[2];
    ASSERT_EQ(rdmx_waitall(2, both, infos), RDMX_OK);
    EXPECT_EQ(both[0], nullptr);
    EXPECT_EQ(both[1], nullptr);
    EXPECT_EQ(infos[1].length, kMiB);
    EXPECT_EQ(infos[1].tag, 3);
    EXPECT_EQ(first_diff(src, dst, kMiB), kMiB);
}

// ---- matching ----------------------------------------------------------------

TEST_F(ApiSingleton, WildcardsReportSourceAndTag) {
    struct Case {
        int src, tag;
    } cases[] = {{RDMX_ANY_SOURCE, RDMX_ANY_TAG}, {RDMX_ANY_SOURCE, 42}, {0, RDMX_ANY_TAG}, {0, 42}};
    for (auto c : cases) {
        uint32_t v = 0x11223344, got = 0;
        ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 42), RDMX_OK);
        rdmx_msg_info_t info{};
        ASSERT_EQ(rdmx_recv(ctx, &got, sizeof(got), c.src, c.tag, &info), RDMX_OK);
        EXPECT_EQ(got, v);
        EXPECT_EQ(info.source, 0);
        EXPECT_EQ(info.tag, 42);
        EXPECT_EQ(info.length, sizeof(v));
    }
}

TEST_F(ApiSingleton, ReceiveOfOtherTagDoesNotMatch) {
    int a = 0;
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, &a, sizeof(a), 0, 5, &r), RDMX_OK);
    int v = 77;
    ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 6), RDMX_OK);
    int done = 1;
    EXPECT_EQ(rdmx_test(&r, &done, nullptr), RDMX_INPROGRESS);
    EXPECT_EQ(done, 0);
    EXPECT_NE(r, nullptr);
    int b = 0;
    ASSERT_EQ(rdmx_recv(ctx, &b, sizeof(b), 0, 6, nullptr), RDMX_OK);
    EXPECT_EQ(b, 77);
    ASSERT_EQ(rdmx_cancel(r), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&r, nullptr), RDMX_ERR_CANCELED);
    EXPECT_EQ(a, 0);
}

TEST_F(ApiSingleton, OrderPerSenderKeptAcrossEagerAndLarge) {
    std::vector<uint8_t> big(kMiB);
    fill(big, kMiB, 5);
    uint32_t smalls[3] = {1, 2, 3};
    rdmx_request_h s[4] = {};
    ASSERT_EQ(rdmx_isend(ctx, big.data(), kMiB, 0, 7, &s[0]), RDMX_OK);
    ASSERT_EQ(rdmx_isend(ctx, &smalls[0], 4, 0, 7, &s[1]), RDMX_OK);
    ASSERT_EQ(rdmx_isend(ctx, &smalls[1], 4, 0, 8, &s[2]), RDMX_OK);
    ASSERT_EQ(rdmx_isend(ctx, &smalls[2], 4, 0, 7, &s[3]), RDMX_OK);
    std::vector<uint8_t> dst(kMiB, 0);
    rdmx_msg_info_t info{};
    // Tag 7 in send order: the large one, then 1, then 3.
    ASSERT_EQ(rdmx_recv(ctx, dst.data(), kMiB, RDMX_ANY_SOURCE, 7, &info), RDMX_OK);
    EXPECT_EQ(info.length, kMiB);
    EXPECT_EQ(first_diff(big, dst, kMiB), kMiB);
    uint32_t v = 0;
    ASSERT_EQ(rdmx_recv(ctx, &v, 4, 0, 7, &info), RDMX_OK);
    EXPECT_EQ(v, 1u);
    ASSERT_EQ(rdmx_recv(ctx, &v, 4, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &info), RDMX_OK);
    EXPECT_EQ(v, 2u) << "ANY_TAG takes the oldest remaining message";
    EXPECT_EQ(info.tag, 8);
    ASSERT_EQ(rdmx_recv(ctx, &v, 4, 0, RDMX_ANY_TAG, &info), RDMX_OK);
    EXPECT_EQ(v, 3u);
    EXPECT_EQ(rdmx_waitall(4, s, nullptr), RDMX_OK);
}

TEST_F(ApiSingleton, ManyMessagesArriveInSendOrder) {
    constexpr int kN = 500;
    for (int i = 0; i < kN; ++i) ASSERT_EQ(rdmx_send(ctx, &i, sizeof(i), 0, i % 4), RDMX_OK);
    for (int i = 0; i < kN; ++i) {
        int v = -1;
        rdmx_msg_info_t info{};
        ASSERT_EQ(rdmx_recv(ctx, &v, sizeof(v), RDMX_ANY_SOURCE, RDMX_ANY_TAG, &info), RDMX_OK);
        ASSERT_EQ(v, i);
        ASSERT_EQ(info.tag, i % 4);
    }
}

TEST_F(ApiSingleton, TagSpacesDoNotCross) {
    int got = -1;
    rdmx_request_h user = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, &got, sizeof(got), RDMX_ANY_SOURCE, RDMX_ANY_TAG, &user), RDMX_OK);
    int v = 31;
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend_in(ctx, RDMX_TAGSPACE_LIB, &v, sizeof(v), 0, 3, &s), RDMX_OK);
    int done = 1;
    EXPECT_EQ(rdmx_test(&user, &done, nullptr), RDMX_INPROGRESS);
    EXPECT_EQ(done, 0) << "a LIB-space message matched a USER-space ANY_TAG receive";
    int found = 1;
    ASSERT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 0) << "iprobe looks at the user space only";
    int lib = -1;
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv_in(ctx, RDMX_TAGSPACE_LIB, &lib, sizeof(lib), 0, RDMX_ANY_TAG, &r), RDMX_OK);
    ASSERT_EQ(rdmx_wait(&r, nullptr), RDMX_OK);
    EXPECT_EQ(lib, 31);
    ASSERT_EQ(rdmx_wait(&s, nullptr), RDMX_OK);
    ASSERT_EQ(rdmx_cancel(user), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&user, nullptr), RDMX_ERR_CANCELED);
    EXPECT_EQ(got, -1);
}

// ---- truncation ----------------------------------------------------------------

struct TruncCase {
    size_t sent, cap;
    bool posted_first;
};

void PrintTo(const TruncCase &c, std::ostream *os) {
    *os << "sent " << c.sent << ", capacity " << c.cap << (c.posted_first ? ", posted first" : ", unexpected first");
}

class Truncation : public ApiSingleton, public ::testing::WithParamInterface<TruncCase> {};

TEST_P(Truncation, FillsCapacityReportsFullLengthWritesNothingPast) {
    const auto [sent, cap, posted_first] = GetParam();
    std::vector<uint8_t> src(sent), dst(cap + 1, 0);
    fill(src, sent, 6);
    dst[cap] = kGuard;
    rdmx_request_h r = nullptr, s = nullptr;
    if (posted_first) {
        ASSERT_EQ(rdmx_irecv(ctx, dst.data(), cap, 0, 2, &r), RDMX_OK);
    }
    ASSERT_EQ(rdmx_isend(ctx, src.data(), sent, 0, 2, &s), RDMX_OK);
    if (!posted_first) {
        ASSERT_EQ(rdmx_irecv(ctx, dst.data(), cap, 0, 2, &r), RDMX_OK);
    }
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_wait(&r, &info), RDMX_ERR_TRUNCATE);
    EXPECT_EQ(info.length, sent);
    EXPECT_EQ(info.error, RDMX_ERR_TRUNCATE);
    EXPECT_EQ(info.source, 0);
    EXPECT_EQ(info.tag, 2);
    EXPECT_EQ(first_diff(src, dst, cap), cap);
    EXPECT_EQ(dst[cap], kGuard) << "a byte was written past the receive buffer";
    EXPECT_EQ(rdmx_wait(&s, nullptr), RDMX_OK) << "the sender does not see the receiver's truncation";
}

INSTANTIATE_TEST_SUITE_P(
    EagerAndLarge, Truncation,
    ::testing::Values(TruncCase{100, 50, true}, TruncCase{100, 50, false}, TruncCase{kEager, 0, true},
                      TruncCase{kEager, 0, false}, TruncCase{kEager + 1, kEager, true},
                      TruncCase{kEager + 1, kEager, false}, TruncCase{kMiB, 4096, true},
                      TruncCase{kMiB, 4096, false}),
    [](const ::testing::TestParamInfo<TruncCase> &p) {
        return "sent" + std::to_string(p.param.sent) + "_cap" + std::to_string(p.param.cap) +
               (p.param.posted_first ? "_posted" : "_unexpected");
    });

TEST_F(ApiSingleton, BlockingRecvReturnsTruncate) {
    char msg[64];
    std::memset(msg, 'x', sizeof(msg));
    ASSERT_EQ(rdmx_send(ctx, msg, sizeof(msg), 0, 1), RDMX_OK);
    char buf[9];
    buf[8] = static_cast<char>(kGuard);
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_recv(ctx, buf, 8, 0, 1, &info), RDMX_ERR_TRUNCATE);
    EXPECT_EQ(info.length, sizeof(msg));
    EXPECT_EQ(std::memcmp(buf, msg, 8), 0);
    EXPECT_EQ(buf[8], static_cast<char>(kGuard));
}

// ---- probe ---------------------------------------------------------------------

TEST_F(ApiSingleton, IprobeDescribesWithoutReceiving) {
    int found = 1;
    rdmx_msg_info_t info{};
    ASSERT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info), RDMX_OK);
    EXPECT_EQ(found, 0);
    std::vector<uint8_t> msg(300);
    fill(msg, 300, 7);
    ASSERT_EQ(rdmx_send(ctx, msg.data(), msg.size(), 0, 9), RDMX_OK);
    for (int i = 0; i < 2; ++i) {  // probing twice sees it twice
        info = {};
        ASSERT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info), RDMX_OK);
        EXPECT_EQ(found, 1);
        EXPECT_EQ(info.source, 0);
        EXPECT_EQ(info.tag, 9);
        EXPECT_EQ(info.length, 300u);
    }
    ASSERT_EQ(rdmx_iprobe(ctx, 0, 10, &found, &info), RDMX_OK);
    EXPECT_EQ(found, 0) << "other tag";
    ASSERT_EQ(rdmx_iprobe(ctx, 0, 9, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 1) << "info_p may be NULL";
    info = {};
    ASSERT_EQ(rdmx_probe(ctx, 0, 9, &info), RDMX_OK);
    EXPECT_EQ(info.length, 300u);
    EXPECT_EQ(info.tag, 9);
    std::vector<uint8_t> dst(info.length);
    ASSERT_EQ(rdmx_recv(ctx, dst.data(), dst.size(), info.source, info.tag, nullptr), RDMX_OK);
    EXPECT_EQ(dst, msg);
    ASSERT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, &info), RDMX_OK);
    EXPECT_EQ(found, 0) << "the receive consumed it";
}

TEST_F(ApiSingleton, ProbeReportsLargeMessageLength) {
    std::vector<uint8_t> src(kMiB + 3);
    fill(src, src.size(), 8);
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, src.data(), src.size(), 0, 12, &s), RDMX_OK);
    rdmx_msg_info_t info{};
    ASSERT_EQ(rdmx_probe(ctx, RDMX_ANY_SOURCE, 12, &info), RDMX_OK);
    EXPECT_EQ(info.length, kMiB + 3);
    std::vector<uint8_t> dst(info.length);
    ASSERT_EQ(rdmx_recv(ctx, dst.data(), dst.size(), 0, 12, nullptr), RDMX_OK);
    EXPECT_EQ(dst, src);
    EXPECT_EQ(rdmx_wait(&s, nullptr), RDMX_OK);
}

TEST_F(ApiSingleton, ProbeBlocksUntilAnotherThreadSends) {
    std::atomic<bool> sent{false};
    std::thread t([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        int v = 5;
        sent = true;
        EXPECT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 77), RDMX_OK);
    });
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_probe(ctx, RDMX_ANY_SOURCE, 77, &info), RDMX_OK);
    EXPECT_TRUE(sent.load());
    EXPECT_EQ(info.length, sizeof(int));
    t.join();
    int v = 0;
    ASSERT_EQ(rdmx_recv(ctx, &v, sizeof(v), 0, 77, nullptr), RDMX_OK);
    EXPECT_EQ(v, 5);
}

// ---- cancel, test, wait variants ------------------------------------------------

TEST_F(ApiSingleton, CancelUnmatchedReceive) {
    int a = -1;
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, &a, sizeof(a), RDMX_ANY_SOURCE, 1, &r), RDMX_OK);
    ASSERT_EQ(rdmx_cancel(r), RDMX_OK);
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_wait(&r, &info), RDMX_ERR_CANCELED);
    EXPECT_EQ(r, nullptr);
    EXPECT_EQ(info.error, RDMX_ERR_CANCELED);
    // The cancelled receive no longer takes messages.
    int v = 9;
    ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 1), RDMX_OK);
    EXPECT_EQ(a, -1);
    int found = 0;
    ASSERT_EQ(rdmx_iprobe(ctx, 0, 1, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 1);
    ASSERT_EQ(rdmx_recv(ctx, &a, sizeof(a), 0, 1, nullptr), RDMX_OK);
    EXPECT_EQ(a, 9);
}

TEST_F(ApiSingleton, CancelReportedThroughTest) {
    char c = 0;
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, &c, 1, 0, 1, &r), RDMX_OK);
    ASSERT_EQ(rdmx_cancel(r), RDMX_OK);
    int done = 0;
    EXPECT_EQ(rdmx_test(&r, &done, nullptr), RDMX_ERR_CANCELED);
    EXPECT_EQ(done, 1);
    EXPECT_EQ(r, nullptr);
}

TEST_F(ApiSingleton, CancelOfMatchedReceiveOrSendIsANoop) {
    int v = 4, a = 0;
    ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 2), RDMX_OK);
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, &a, sizeof(a), 0, 2, &r), RDMX_OK);  // matches at once
    EXPECT_EQ(rdmx_cancel(r), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&r, nullptr), RDMX_OK);
    EXPECT_EQ(a, 4);
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, &v, sizeof(v), 0, 3, &s), RDMX_OK);
    EXPECT_EQ(rdmx_cancel(s), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&s, nullptr), RDMX_OK);
    ASSERT_EQ(rdmx_recv(ctx, &a, sizeof(a), 0, 3, nullptr), RDMX_OK);
}

TEST_F(ApiSingleton, TestAndWaitOnNullHandle) {
    rdmx_request_h r = nullptr;
    int done = 0;
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_test(&r, &done, &info), RDMX_OK);
    EXPECT_EQ(done, 1);
    EXPECT_EQ(rdmx_wait(&r, nullptr), RDMX_OK);
    rdmx_request_h none[3] = {nullptr, nullptr, nullptr};
    EXPECT_EQ(rdmx_waitall(3, none, nullptr), RDMX_OK);
    EXPECT_EQ(rdmx_waitall(0, nullptr, nullptr), RDMX_OK);
    size_t idx = 0;
    EXPECT_EQ(rdmx_waitany(3, none, &idx, nullptr), RDMX_OK);
    EXPECT_EQ(idx, 3u);
}

TEST_F(ApiSingleton, TestPendingThenComplete) {
    int a = 0;
    rdmx_request_h r = nullptr;
    ASSERT_EQ(rdmx_irecv(ctx, &a, sizeof(a), 0, 4, &r), RDMX_OK);
    int done = 1;
    EXPECT_EQ(rdmx_test(&r, &done, nullptr), RDMX_INPROGRESS);
    EXPECT_EQ(done, 0);
    ASSERT_NE(r, nullptr);
    int v = 123;
    ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 4), RDMX_OK);
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_test(&r, &done, &info), RDMX_OK);
    EXPECT_EQ(done, 1);
    EXPECT_EQ(r, nullptr);
    EXPECT_EQ(a, 123);
    EXPECT_EQ(info.tag, 4);
}

TEST_F(ApiSingleton, WaitallReportsFirstErrorAndFreesAll) {
    int a0 = 0, a3 = 0;
    char small[2];
    rdmx_request_h r[4] = {};
    ASSERT_EQ(rdmx_irecv(ctx, &a0, sizeof(a0), 0, 10, &r[0]), RDMX_OK);
    ASSERT_EQ(rdmx_irecv(ctx, &a0, sizeof(a0), 0, 11, &r[1]), RDMX_OK);  // cancelled below
    ASSERT_EQ(rdmx_irecv(ctx, small, sizeof(small), 0, 12, &r[2]), RDMX_OK);  // truncated
    ASSERT_EQ(rdmx_irecv(ctx, &a3, sizeof(a3), 0, 13, &r[3]), RDMX_OK);
    int v0 = 100, v2 = 0x7fffffff, v3 = 103;
    ASSERT_EQ(rdmx_send(ctx, &v0, sizeof(v0), 0, 10), RDMX_OK);
    ASSERT_EQ(rdmx_send(ctx, &v2, sizeof(v2), 0, 12), RDMX_OK);
    ASSERT_EQ(rdmx_send(ctx, &v3, sizeof(v3), 0, 13), RDMX_OK);
    ASSERT_EQ(rdmx_cancel(r[1]), RDMX_OK);
    rdmx_msg_info_t infos[4];
    EXPECT_EQ(rdmx_waitall(4, r, infos), RDMX_ERR_CANCELED);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(r[i], nullptr) << i;
    EXPECT_EQ(infos[0].error, RDMX_OK);
    EXPECT_EQ(infos[1].error, RDMX_ERR_CANCELED);
    EXPECT_EQ(infos[2].error, RDMX_ERR_TRUNCATE);
    EXPECT_EQ(infos[2].length, sizeof(int));
    EXPECT_EQ(infos[3].tag, 13);
    EXPECT_EQ(a0, 100);
    EXPECT_EQ(a3, 103);
}

TEST_F(ApiSingleton, WaitanyReturnsTheCompletedOne) {
    int a = 0, b = 0;
    rdmx_request_h r[2] = {};
    ASSERT_EQ(rdmx_irecv(ctx, &a, sizeof(a), 0, 1, &r[0]), RDMX_OK);
    ASSERT_EQ(rdmx_irecv(ctx, &b, sizeof(b), 0, 2, &r[1]), RDMX_OK);
    int v = 22;
    ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 2), RDMX_OK);
    size_t idx = 99;
    rdmx_msg_info_t info{};
    EXPECT_EQ(rdmx_waitany(2, r, &idx, &info), RDMX_OK);
    EXPECT_EQ(idx, 1u);
    EXPECT_EQ(r[1], nullptr);
    EXPECT_NE(r[0], nullptr);
    EXPECT_EQ(info.tag, 2);
    EXPECT_EQ(b, 22);
    ASSERT_EQ(rdmx_cancel(r[0]), RDMX_OK);
    EXPECT_EQ(rdmx_waitany(2, r, &idx, nullptr), RDMX_ERR_CANCELED);
    EXPECT_EQ(idx, 0u);
    EXPECT_EQ(rdmx_waitany(2, r, &idx, nullptr), RDMX_OK);
    EXPECT_EQ(idx, 2u);
}

// ---- bad arguments ---------------------------------------------------------------

TEST_F(ApiSingleton, BadArgumentsAreInvalidAndChangeNothing) {
    int buf = 0;
    rdmx_msg_info_t info{};
    const auto garbage = reinterpret_cast<rdmx_request_h>(uintptr_t{0x1});
    rdmx_request_h r = garbage;
    // NULL buffer with a length.
    EXPECT_EQ(rdmx_isend(ctx, nullptr, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(r, nullptr) << "the request pointer is cleared on failure";
    r = garbage;
    EXPECT_EQ(rdmx_irecv(ctx, nullptr, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(r, nullptr);
    // Ranks out of range.
    EXPECT_EQ(rdmx_send(ctx, &buf, 4, 1, 0), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_send(ctx, &buf, 4, RDMX_ANY_SOURCE, 0), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_send(ctx, &buf, 4, -5, 0), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_send(ctx, &buf, 4, std::numeric_limits<int>::max(), 0), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_recv(ctx, &buf, 4, 1, 0, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_recv(ctx, &buf, 4, -4, 0, &info), RDMX_ERR_INVALID_ARG);  // -2 is RDMX_PROC_NULL, -3 no rank
    EXPECT_EQ(rdmx_recv(ctx, &buf, 4, RDMX_UNDEFINED, 0, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_irecv(ctx, &buf, 4, std::numeric_limits<int>::min(), 0, &r), RDMX_ERR_INVALID_ARG);
    // Negative tags: no wildcard for sends, only ANY_TAG for receives.
    EXPECT_EQ(rdmx_send(ctx, &buf, 4, 0, -1), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_send(ctx, &buf, 4, 0, std::numeric_limits<int>::min()), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_isend(ctx, &buf, 4, 0, -3, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_recv(ctx, &buf, 4, 0, -2, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_irecv(ctx, &buf, 4, 0, std::numeric_limits<int>::min(), &r), RDMX_ERR_INVALID_ARG);
    // NULL request pointers.
    EXPECT_EQ(rdmx_isend(ctx, &buf, 4, 0, 0, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_irecv(ctx, &buf, 4, 0, 0, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_isend_in(ctx, RDMX_TAGSPACE_COLL, &buf, 4, 0, 0, nullptr), RDMX_ERR_INVALID_ARG);
    // Unknown tag space (passed from C, where an enum parameter is an int).
    EXPECT_EQ(c_isend_in_space(ctx, 3, &buf, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(c_irecv_in_space(ctx, 3, &buf, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG);
    // NULL context everywhere.
    EXPECT_EQ(rdmx_send(nullptr, &buf, 4, 0, 0), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_recv(nullptr, &buf, 4, 0, 0, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_isend(nullptr, &buf, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_irecv(nullptr, &buf, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG);
    int found = 0;
    EXPECT_EQ(rdmx_iprobe(nullptr, 0, 0, &found, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_probe(nullptr, 0, 0, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_finalize(nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_barrier(nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_bcast(nullptr, &buf, 4, 0), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_allreduce(nullptr, &buf, &found, 1, RDMX_INT32, RDMX_SUM), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_rank(nullptr), -1);
    EXPECT_EQ(rdmx_size(nullptr), -1);
    EXPECT_EQ(rdmx_progress(nullptr), 0);
    // Probe arguments.
    EXPECT_EQ(rdmx_iprobe(ctx, 0, 0, nullptr, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_iprobe(ctx, 1, 0, &found, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_iprobe(ctx, 0, -2, &found, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_probe(ctx, 3, 0, &info), RDMX_ERR_INVALID_ARG);
    // Completion calls.
    int done = 0;
    EXPECT_EQ(rdmx_test(nullptr, &done, &info), RDMX_ERR_INVALID_ARG);
    r = nullptr;
    EXPECT_EQ(rdmx_test(&r, nullptr, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_wait(nullptr, &info), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_waitall(2, nullptr, nullptr), RDMX_ERR_INVALID_ARG);
    size_t idx = 0;
    EXPECT_EQ(rdmx_waitany(2, nullptr, &idx, nullptr), RDMX_ERR_INVALID_ARG);
    rdmx_request_h none[1] = {nullptr};
    EXPECT_EQ(rdmx_waitany(1, none, nullptr, nullptr), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_cancel(nullptr), RDMX_OK);  // a finished handle: nothing to cancel
    // Collective arguments.
    EXPECT_EQ(rdmx_bcast(ctx, &buf, 4, 1), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_bcast(ctx, &buf, 4, -1), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(rdmx_bcast(ctx, nullptr, 4, 0), RDMX_ERR_INVALID_ARG);
    float f = 1.0f, g = 0.0f;
    EXPECT_EQ(rdmx_allreduce(ctx, &f, &g, 1, RDMX_FLOAT, RDMX_BXOR), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(c_allreduce(ctx, &buf, &found, 1, 99, RDMX_SUM), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(c_allreduce(ctx, &buf, &found, 1, -1, RDMX_SUM), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(c_allreduce(ctx, &buf, &found, 1, RDMX_INT32, -1), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(c_allreduce(ctx, &buf, &found, 1, RDMX_INT32, RDMX_MAXLOC + 1), RDMX_ERR_INVALID_ARG)
        << "one past the last op";
    EXPECT_EQ(rdmx_allreduce(ctx, &buf, &found, 1, RDMX_INT32, RDMX_MINLOC), RDMX_ERR_INVALID_ARG)
        << "MINLOC takes only the pair types";
    EXPECT_EQ(rdmx_allreduce(ctx, &buf, &buf, 1, RDMX_INT32, RDMX_SUM), RDMX_ERR_INVALID_ARG) << "overlap";
    EXPECT_EQ(g, 0.0f);

    // Nothing of the above left a message or a receive behind.
    found = 1;
    ASSERT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 0);
    int v = 8, w = 0;
    ASSERT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 0), RDMX_OK);
    ASSERT_EQ(rdmx_recv(ctx, &w, sizeof(w), RDMX_ANY_SOURCE, RDMX_ANY_TAG, &info), RDMX_OK);
    EXPECT_EQ(w, 8);
}

// A length beyond the address space (a negative size passed as size_t, or a
// range that wraps past its end) is refused at the call: sent on, it would
// reach the peer, which rejects the RTS and drops us as a protocol offender.
TEST_F(ApiSingleton, LengthsBeyondTheAddressSpaceAreRejected) {
    char buf[16] = {};
    char *top = reinterpret_cast<char *>(std::numeric_limits<uintptr_t>::max() - 15);  // never dereferenced
    const size_t beyond = static_cast<size_t>(std::numeric_limits<ptrdiff_t>::max()) + 1;
    struct Case {
        void *buf;
        size_t len;
    };
    const Case cases[] = {{buf, std::numeric_limits<size_t>::max()}, {buf, beyond}, {top, 16}, {top, kMiB}};
    int tag = 100;
    for (const Case &k : cases) {
        rdmx_request_h r = nullptr;
        EXPECT_EQ(rdmx_isend(ctx, k.buf, k.len, 0, tag, &r), RDMX_ERR_INVALID_ARG) << k.buf << " + " << k.len;
        EXPECT_EQ(r, nullptr);
        EXPECT_EQ(rdmx_irecv(ctx, k.buf, k.len, 0, tag, &r), RDMX_ERR_INVALID_ARG) << k.buf << " + " << k.len;
        EXPECT_EQ(r, nullptr);
        EXPECT_EQ(rdmx_send(ctx, k.buf, k.len, 0, tag), RDMX_ERR_INVALID_ARG);
        ++tag;
    }
    int found = 1;
    EXPECT_EQ(rdmx_iprobe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 0) << "a refused send still queued a message";
}

// A C caller may pass any int as a tag space: it must be refused, not be
// undefined behaviour (the Asan build type aborts on the latter).
TEST_F(ApiSingleton, TagSpaceOutOfEnumRangeFromC) {
    int buf = 0;
    rdmx_request_h r = nullptr;
    for (int space : {-1, 4, 1000}) {
        EXPECT_EQ(c_isend_in_space(ctx, space, &buf, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG) << space;
        EXPECT_EQ(c_irecv_in_space(ctx, space, &buf, 4, 0, 0, &r), RDMX_ERR_INVALID_ARG) << space;
    }
}

TEST(ApiStatic, StrerrorNamesEveryStatus) {
    std::set<std::string> names;
    for (int s = RDMX_ERR_UNSUPPORTED; s <= RDMX_INPROGRESS; ++s) {
        const char *n = rdmx_strerror(static_cast<rdmx_status_t>(s));
        ASSERT_NE(n, nullptr) << s;
        EXPECT_STRNE(n, "unknown status") << s;
        EXPECT_GT(std::strlen(n), 0u);
        names.insert(n);
    }
    EXPECT_EQ(names.size(), static_cast<size_t>(RDMX_INPROGRESS - RDMX_ERR_UNSUPPORTED + 1)) << "names are distinct";
    for (int s : {-13, 2, 1000, std::numeric_limits<int>::min()})
        EXPECT_NE(rdmx_strerror(static_cast<rdmx_status_t>(s)), nullptr) << s;
}

// rdmx_stats_t grows at the end: a caller built against the first version
// (struct_size up to rcache_transient_bytes) is served the fields it knows
// and nothing past them is written; a smaller size is refused.
TEST_F(ApiSingleton, StatsOfAnOlderCallerAreFilledUpToItsSize) {
    rdmx_stats_t st;
    rdmx_stats_init(&st);
    EXPECT_EQ(st.struct_size, sizeof(rdmx_stats_t));
    st.rc_connections = 77;
    ASSERT_EQ(rdmx_get_stats(ctx, &st), RDMX_OK);
    EXPECT_EQ(st.rc_connections, 0u);  // a singleton has no rc lane
    rdmx_stats_init(&st);
    st.struct_size = offsetof(rdmx_stats_t, rc_connections);
    st.rc_connections = 77;
    ASSERT_EQ(rdmx_get_stats(ctx, &st), RDMX_OK);
    EXPECT_EQ(st.rc_connections, 77u);
    st.struct_size = offsetof(rdmx_stats_t, rc_connections) - 1;
    EXPECT_EQ(rdmx_get_stats(ctx, &st), RDMX_ERR_INVALID_ARG);
}

TEST(ApiStatic, ConfigInitSetsStructSize) {
    rdmx_config_t cfg;
    std::memset(&cfg, 0xff, sizeof(cfg));
    rdmx_config_init(&cfg);
    EXPECT_EQ(cfg.struct_size, sizeof(rdmx_config_t));
    EXPECT_EQ(cfg.log_level, -1);
    EXPECT_EQ(cfg.eager_limit, 0u);
}

TEST(ApiStatic, InitRejectsBadConfig) {
    make_singleton_environment();
    rdmx_context_h ctx = reinterpret_cast<rdmx_context_h>(uintptr_t{0x1});
    EXPECT_EQ(rdmx_init(nullptr, nullptr), RDMX_ERR_INVALID_ARG);
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    const size_t first = offsetof(rdmx_config_t, connect);  // the first version ended at check_args
    for (size_t sz : {size_t{0}, first - 1, sizeof(rdmx_config_t) + 8}) {
        cfg.struct_size = sz;
        ctx = reinterpret_cast<rdmx_context_h>(uintptr_t{0x1});
        EXPECT_EQ(rdmx_init(&cfg, &ctx), RDMX_ERR_INVALID_ARG) << sz;
        EXPECT_EQ(ctx, nullptr);
    }
    rdmx_config_init(&cfg);
    cfg.eager_limit = 10;  // below the 64-byte minimum
    ctx = reinterpret_cast<rdmx_context_h>(uintptr_t{0x1});
    EXPECT_EQ(rdmx_init(&cfg, &ctx), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(ctx, nullptr);
    setenv("RDMX_PROGRESS", "sometimes", 1);
    EXPECT_EQ(rdmx_init(nullptr, &ctx), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(ctx, nullptr);
    unsetenv("RDMX_PROGRESS");
}

// A caller built against the first rdmx_config_t (struct_size up to
// check_args) is served: what lies past its struct is never read (here it
// holds values rdmx_init would refuse) and those fields take their defaults.
TEST(ApiStatic, InitAcceptsTheFirstConfigVersion) {
    make_singleton_environment();
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    std::memset(reinterpret_cast<char *>(&cfg) + offsetof(rdmx_config_t, connect), 0x7f,
                sizeof(cfg) - offsetof(rdmx_config_t, connect));
    cfg.struct_size = offsetof(rdmx_config_t, connect);
    rdmx_context_h ctx = nullptr;
    ASSERT_EQ(rdmx_init(&cfg, &ctx), RDMX_OK);
    char text[8192];
    ASSERT_GT(rdmx_config_text(ctx, text, sizeof(text)), 0);
    EXPECT_NE(std::strstr(text, "RDMX_CONNECT\tauto\tdefault"), nullptr) << text;
    EXPECT_NE(std::strstr(text, "RDMX_LAZY_PEERS\t64\tdefault"), nullptr) << text;
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
    cfg.struct_size = sizeof(cfg);  // the whole struct: the bad values are read, and refused
    ctx = nullptr;
    EXPECT_EQ(rdmx_init(&cfg, &ctx), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(ctx, nullptr);
}

// ---- life cycle ------------------------------------------------------------------

void roundtrip(rdmx_context_h ctx, size_t n, int tag) {
    std::vector<uint8_t> src(n), dst(n, 0);
    fill(src, n, static_cast<uint32_t>(tag));
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, src.data(), n, 0, tag, &s), RDMX_OK);
    ASSERT_EQ(rdmx_recv(ctx, dst.data(), n, 0, tag, nullptr), RDMX_OK);
    ASSERT_EQ(rdmx_wait(&s, nullptr), RDMX_OK);
    ASSERT_EQ(first_diff(src, dst, n), n);
}

TEST(ApiLifecycle, InitFinalizeManyTimes) {
    make_singleton_environment();
    for (int i = 0; i < 5; ++i) {
        rdmx_context_h ctx = nullptr;
        ASSERT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK) << "round " << i;
        ASSERT_EQ(rdmx_size(ctx), 1);
        roundtrip(ctx, 64, i);
        roundtrip(ctx, 3 * kEager, i);
        ASSERT_EQ(rdmx_finalize(ctx), RDMX_OK);
    }
}

TEST(ApiLifecycle, FinalizeWithUnreceivedMessages) {
    make_singleton_environment();
    rdmx_context_h ctx = nullptr;
    ASSERT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK);
    std::vector<uint8_t> msg(1000, 1);
    for (int i = 0; i < 10; ++i) ASSERT_EQ(rdmx_send(ctx, msg.data(), msg.size(), 0, i), RDMX_OK);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);  // the buffered copies are released (ASan checks)
}

TEST(ApiLifecycle, TwoContextsAreIndependent) {
    make_singleton_environment();
    rdmx_context_h a = nullptr, b = nullptr;
    ASSERT_EQ(rdmx_init(nullptr, &a), RDMX_OK);
    ASSERT_EQ(rdmx_init(nullptr, &b), RDMX_OK);
    int v = 5;
    ASSERT_EQ(rdmx_send(a, &v, sizeof(v), 0, 1), RDMX_OK);
    int found = 1;
    ASSERT_EQ(rdmx_iprobe(b, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &found, nullptr), RDMX_OK);
    EXPECT_EQ(found, 0) << "a message sent on one context showed up on another";
    int w = 0;
    ASSERT_EQ(rdmx_recv(a, &w, sizeof(w), 0, 1, nullptr), RDMX_OK);
    EXPECT_EQ(w, 5);
    EXPECT_EQ(rdmx_finalize(b), RDMX_OK);
    EXPECT_EQ(rdmx_finalize(a), RDMX_OK);
}

TEST(ApiLifecycle, CallerProgressMode) {
    make_singleton_environment();
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.progress = RDMX_PROGRESS_CALLER;
    rdmx_context_h ctx = nullptr;
    ASSERT_EQ(rdmx_init(&cfg, &ctx), RDMX_OK);
    roundtrip(ctx, 100, 1);
    roundtrip(ctx, kMiB, 2);
    // A receive blocked in one thread completes when another sends.
    int got = 0;
    std::thread t([&] { EXPECT_EQ(rdmx_recv(ctx, &got, sizeof(got), 0, 3, nullptr), RDMX_OK); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    int v = 333;
    EXPECT_EQ(rdmx_send(ctx, &v, sizeof(v), 0, 3), RDMX_OK);
    t.join();
    EXPECT_EQ(got, 333);
    EXPECT_GE(rdmx_progress(ctx), 0);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
}

int self_allgather(const void *in, void *out, size_t len, void *arg) {
    ++*static_cast<int *>(arg);
    std::memcpy(out, in, len);
    return 0;
}

TEST(ApiLifecycle, CallbackBootstrapOfOneRank) {
    make_singleton_environment();
    int calls = 0;
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.allgather = self_allgather;
    cfg.allgather_arg = &calls;
    cfg.rank = 0;
    cfg.size = 1;
    rdmx_context_h ctx = nullptr;
    ASSERT_EQ(rdmx_init(&cfg, &ctx), RDMX_OK);
    EXPECT_EQ(rdmx_rank(ctx), 0);
    EXPECT_EQ(rdmx_size(ctx), 1);
    roundtrip(ctx, 10, 1);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
    cfg.rank = 1;  // rank outside the job
    ctx = nullptr;
    EXPECT_EQ(rdmx_init(&cfg, &ctx), RDMX_ERR_INVALID_ARG);
    EXPECT_EQ(ctx, nullptr);
}

// ---- threads ---------------------------------------------------------------------

// Three senders and three receivers on one context; each tag carries its
// own sequence, with every 25th message large enough for rendezvous.
TEST_F(ApiSingleton, ConcurrentSendersAndReceivers) {
    constexpr int kThreads = 3;
    constexpr int kMsgs = 150;
    constexpr size_t kBig = 4 * kEager;
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
        ts.emplace_back([&, t] {
            std::vector<uint8_t> buf(kBig);
            for (int i = 0; i < kMsgs; ++i) {
                const size_t n = i % 25 == 0 ? kBig : sizeof(int);
                std::memcpy(buf.data(), &i, sizeof(i));
                if (rdmx_send(ctx, buf.data(), n, 0, t) != RDMX_OK) ++failures;
            }
        });
        ts.emplace_back([&, t] {
            std::vector<uint8_t> buf(kBig);
            for (int i = 0; i < kMsgs; ++i) {
                rdmx_msg_info_t info{};
                if (rdmx_recv(ctx, buf.data(), buf.size(), RDMX_ANY_SOURCE, t, &info) != RDMX_OK) ++failures;
                int seq = -1;
                std::memcpy(&seq, buf.data(), sizeof(seq));
                const size_t n = i % 25 == 0 ? kBig : sizeof(int);
                if (seq != i || info.length != n || info.tag != t) ++failures;
            }
        });
    }
    for (auto &th : ts) th.join();
    EXPECT_EQ(failures.load(), 0);
}

// ---- collectives on one rank ------------------------------------------------------

TEST_F(ApiSingleton, CollectivesOnOneRank) {
    constexpr size_t kN = 1000;
    std::vector<int32_t> in(kN), out(kN, -1);
    for (size_t i = 0; i < kN; ++i) in[i] = static_cast<int32_t>(i * 3) - 500;
    ASSERT_EQ(rdmx_allreduce(ctx, in.data(), out.data(), kN, RDMX_INT32, RDMX_SUM), RDMX_OK);
    EXPECT_EQ(out, in);
    std::vector<int32_t> inplace = in;
    ASSERT_EQ(rdmx_allreduce(ctx, RDMX_IN_PLACE, inplace.data(), kN, RDMX_INT32, RDMX_MAX), RDMX_OK);
    EXPECT_EQ(inplace, in);
    std::vector<double> din{1.5, -2.25}, dout{0, 0};
    ASSERT_EQ(rdmx_allreduce(ctx, din.data(), dout.data(), 2, RDMX_DOUBLE, RDMX_PROD), RDMX_OK);
    EXPECT_EQ(dout, din);

    std::vector<uint8_t> b(kMiB), keep;
    fill(b, b.size(), 9);
    keep = b;
    ASSERT_EQ(rdmx_bcast(ctx, b.data(), b.size(), 0), RDMX_OK);
    EXPECT_EQ(b, keep);
    ASSERT_EQ(rdmx_barrier(ctx), RDMX_OK);
    ASSERT_EQ(rdmx_barrier(ctx), RDMX_OK);

    std::vector<uint8_t> ag(300, 0);
    std::vector<uint8_t> mine(300);
    fill(mine, 300, 10);
    ASSERT_EQ(rdmx_allgather(ctx, mine.data(), 300, ag.data()), RDMX_OK);
    EXPECT_EQ(ag, mine);
    std::fill(ag.begin(), ag.end(), 0);
    ASSERT_EQ(rdmx_alltoall(ctx, mine.data(), 300, ag.data()), RDMX_OK);
    EXPECT_EQ(ag, mine);
    std::fill(ag.begin(), ag.end(), 0);
    ASSERT_EQ(rdmx_gather(ctx, mine.data(), 300, ag.data(), 0), RDMX_OK);
    EXPECT_EQ(ag, mine);
    std::fill(ag.begin(), ag.end(), 0);
    ASSERT_EQ(rdmx_scatter(ctx, mine.data(), 300, ag.data(), 0), RDMX_OK);
    EXPECT_EQ(ag, mine);
    std::fill(out.begin(), out.end(), 0);
    ASSERT_EQ(rdmx_reduce(ctx, in.data(), out.data(), kN, RDMX_INT32, RDMX_MIN, 0), RDMX_OK);
    EXPECT_EQ(out, in);
    std::fill(out.begin(), out.end(), 0);
    ASSERT_EQ(rdmx_reduce_scatter_block(ctx, in.data(), out.data(), kN, RDMX_INT32, RDMX_SUM), RDMX_OK);
    EXPECT_EQ(out, in);

    // Point-to-point traffic still flows after the collectives.
    roundtrip(ctx, 64, 1);
}

}  // namespace
