// The small-message fast path on a job of one rank: sends that complete at
// post get no request, the thread level decides the engine lock, rdmx_waitall
// takes NULL handles beside pending ones, and the spin budget and the
// progress thread's delegated sleep adapt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "protocols/context.h"
#include "rdmx/rdmx.h"

extern char **environ;

namespace {

constexpr size_t kEager = 8192;  // the default eager limit
constexpr uint64_t kUs = 1000;

// No launcher and no RDMX_* variable: a job of one with defaults.
void clean_environment() {
    std::vector<std::string> names;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string name(*e);
        name = name.substr(0, name.find('='));
        for (const char *prefix : {"PMIX_", "OMPI_", "PRTE_", "PMI_", "SLURM_", "RDMX_"})
            if (name.rfind(prefix, 0) == 0 && name != "RDMX_LOG_LEVEL") names.push_back(name);
    }
    for (const auto &n : names) unsetenv(n.c_str());
}

rdmx_context_h init_at(rdmx_thread_level_t level) {
    clean_environment();
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.threads = level;
    rdmx_context_h ctx = nullptr;
    EXPECT_EQ(rdmx_init(&cfg, &ctx), RDMX_OK);
    return ctx;
}

class FastPath : public ::testing::TestWithParam<rdmx_thread_level_t> {
protected:
    void SetUp() override { ASSERT_NE(ctx = init_at(GetParam()), nullptr); }
    void TearDown() override {
        if (ctx != nullptr) {
            EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
        }
    }
    rdmx_context_h ctx = nullptr;
};

TEST_P(FastPath, EagerSendCompletesAtPostWithoutARequest) {
    char out[8] = "payload", in[8] = {};
    rdmx_request_h s = reinterpret_cast<rdmx_request_h>(&out);  // must be overwritten
    ASSERT_EQ(rdmx_isend(ctx, out, sizeof(out), 0, 1, &s), RDMX_OK);
    EXPECT_EQ(s, nullptr) << "an eager send the lane took at once needs no request";
    EXPECT_EQ(ctx->live_reqs, 0u);
    std::memset(out, 'x', sizeof(out));  // the buffer is free again: the message was copied
    ASSERT_EQ(rdmx_recv(ctx, in, sizeof(in), 0, 1, nullptr), RDMX_OK);
    EXPECT_STREQ(in, "payload");
    int done = 0;
    EXPECT_EQ(rdmx_test(&s, &done, nullptr), RDMX_OK);  // a NULL handle is a finished one
    EXPECT_EQ(done, 1);
    EXPECT_EQ(rdmx_cancel(s), RDMX_OK);
}

TEST_P(FastPath, RendezvousSendStillGetsARequest) {
    std::vector<char> out(kEager + 1, 'r'), in(kEager + 1, 0);
    rdmx_request_h s = nullptr;
    ASSERT_EQ(rdmx_isend(ctx, out.data(), out.size(), 0, 2, &s), RDMX_OK);
    ASSERT_NE(s, nullptr) << "a rendezvous send completes only when received";
    ASSERT_EQ(rdmx_recv(ctx, in.data(), in.size(), 0, 2, nullptr), RDMX_OK);
    EXPECT_EQ(rdmx_wait(&s, nullptr), RDMX_OK);
    EXPECT_EQ(in, out);
}

TEST_P(FastPath, WaitallTakesNullHandlesBesidePendingOnes) {
    int in[3] = {-1, -1, -1}, out[3] = {10, 11, 12};
    rdmx_request_h reqs[5] = {};
    for (int i = 0; i < 3; ++i) ASSERT_EQ(rdmx_irecv(ctx, &in[i], sizeof(int), 0, 20 + i, &reqs[i]), RDMX_OK);
    for (int i = 0; i < 2; ++i) ASSERT_EQ(rdmx_isend(ctx, &out[i], sizeof(int), 0, 20 + i, &reqs[3 + i]), RDMX_OK);
    EXPECT_EQ(reqs[3], nullptr);
    ASSERT_EQ(rdmx_send(ctx, &out[2], sizeof(int), 0, 22), RDMX_OK);
    rdmx_msg_info_t infos[5];
    for (auto &i : infos) i = {-9, -9, 999, RDMX_ERR_INTERNAL};
    ASSERT_EQ(rdmx_waitall(5, reqs, infos), RDMX_OK);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(in[i], out[i]);
        EXPECT_EQ(infos[i].tag, 20 + i);
        EXPECT_EQ(infos[i].length, sizeof(int));
    }
    for (rdmx_request_h r : reqs) EXPECT_EQ(r, nullptr);
    EXPECT_EQ(infos[3].length, 999u) << "a NULL entry's info is left as it was";
    EXPECT_EQ(ctx->live_reqs, 0u);
}

TEST_P(FastPath, ThreadLevelDecidesTheEngineLock) {
    // A job of one has no progress thread: only `multiple` needs the lock.
    const bool single = GetParam() == RDMX_THREADS_SINGLE;
    EXPECT_EQ(ctx->lock.enabled(), !single);
    EXPECT_EQ(ctx->engine_mt, !single);
    EXPECT_EQ(ctx->app_mt, !single);
    EXPECT_FALSE(ctx->progress_thread_on);
}

TEST_P(FastPath, ManyRoundTripsMixingSizes) {
    std::vector<char> out(2 * kEager), in(2 * kEager);
    for (int i = 0; i < 500; ++i) {
        const size_t n = static_cast<size_t>(i * 37) % out.size();
        std::memset(out.data(), static_cast<char>(i), n);
        rdmx_request_h r = nullptr, s = nullptr;
        ASSERT_EQ(rdmx_irecv(ctx, in.data(), in.size(), 0, 5, &r), RDMX_OK);
        ASSERT_EQ(rdmx_isend(ctx, out.data(), n, 0, 5, &s), RDMX_OK);
        rdmx_request_h both[2] = {r, s};
        ASSERT_EQ(rdmx_waitall(2, both, nullptr), RDMX_OK);
        ASSERT_EQ(std::memcmp(in.data(), out.data(), n), 0) << "round trip " << i << ", " << n << " B";
    }
    EXPECT_EQ(ctx->live_reqs, 0u);
}

INSTANTIATE_TEST_SUITE_P(Levels, FastPath, ::testing::Values(RDMX_THREADS_MULTIPLE, RDMX_THREADS_SINGLE),
                         [](const ::testing::TestParamInfo<rdmx_thread_level_t> &p) {
                             return p.param == RDMX_THREADS_SINGLE ? "single" : "multiple";
                         });

// An enum setting refused both ways: a word its variable does not know,
// and a number outside the enum stored in its config field (as C code could).
template <typename Enum>
void expect_refused(const char *env, const char *word, Enum rdmx_config_t::*field) {
    clean_environment();
    rdmx_context_h ctx = nullptr;
    setenv(env, word, 1);
    EXPECT_EQ(rdmx_init(nullptr, &ctx), RDMX_ERR_INVALID_ARG) << env << "=" << word;
    EXPECT_EQ(ctx, nullptr);
    unsetenv(env);
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    const int bogus = 7;
    static_assert(sizeof(Enum) == sizeof(bogus));
    std::memcpy(&(cfg.*field), &bogus, sizeof(bogus));
    EXPECT_EQ(rdmx_init(&cfg, &ctx), RDMX_ERR_INVALID_ARG) << env << " field = " << bogus;
    EXPECT_EQ(ctx, nullptr);
}

TEST(ThreadLevel, BadValuesAreRefusedByName) {
    expect_refused("RDMX_THREADS", "funneled", &rdmx_config_t::threads);
    rdmx_context_h ctx = nullptr;
    setenv("RDMX_THREADS", "single", 1);
    ASSERT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK);
    EXPECT_FALSE(ctx->app_mt);
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
    unsetenv("RDMX_THREADS");
}

// RDMX_CHECK_ARGS=handles: the point-to-point calls still check the context
// and the tag space, and trust the rest (what the MPI layer asks for); a bad
// value names itself; `all` (the default) rejects what `handles` trusts.
TEST(CheckArgs, HandlesTrustsArgumentsButNotTheContext) {
    expect_refused("RDMX_CHECK_ARGS", "some", &rdmx_config_t::check_args);
    rdmx_context_h ctx = nullptr;
    rdmx_config_t cfg;
    ASSERT_EQ(rdmx_init(nullptr, &ctx), RDMX_OK);
    EXPECT_TRUE(ctx->check_args);
    int x = 0;
    EXPECT_EQ(rdmx_send(ctx, &x, sizeof x, 5, 0), RDMX_ERR_INVALID_ARG) << "rank 5 of a job of one";
    EXPECT_EQ(rdmx_send(ctx, &x, sizeof x, 0, -3), RDMX_ERR_INVALID_ARG) << "a negative tag";
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);

    rdmx_config_init(&cfg);
    cfg.check_args = RDMX_CHECK_HANDLES;
    ASSERT_EQ(rdmx_init(&cfg, &ctx), RDMX_OK);
    EXPECT_FALSE(ctx->check_args);
    rdmx_request_h r = nullptr;
    int y = 0;
    x = 42;
    ASSERT_EQ(rdmx_irecv(ctx, &y, sizeof y, 0, 3, &r), RDMX_OK);
    ASSERT_EQ(rdmx_send(ctx, &x, sizeof x, 0, 3), RDMX_OK);
    ASSERT_EQ(rdmx_wait(&r, nullptr), RDMX_OK);
    EXPECT_EQ(y, 42);
    EXPECT_EQ(rdmx_send(nullptr, &x, sizeof x, 0, 3), RDMX_ERR_INVALID_ARG) << "the context is still checked";
    EXPECT_EQ(rdmx_isend_in(ctx, static_cast<rdmx_tagspace_t>(99), &x, sizeof x, 0, 3, &r), RDMX_ERR_INVALID_ARG)
        << "the tag space is still checked";
    EXPECT_EQ(rdmx_finalize(ctx), RDMX_OK);
}

// ---- the adaptive spin (progress.cc) -----------------------------------------

TEST(SpinBudget, ShortSleepDoublesUpToTheCap) {
    EXPECT_EQ(rdmx::next_spin_budget(200 * kUs, 50 * kUs, 200 * kUs, 5000 * kUs), 400 * kUs);
    EXPECT_EQ(rdmx::next_spin_budget(4000 * kUs, 1 * kUs, 200 * kUs, 5000 * kUs), 5000 * kUs);
    EXPECT_EQ(rdmx::next_spin_budget(5000 * kUs, 1 * kUs, 200 * kUs, 5000 * kUs), 5000 * kUs);
}

// ---- the progress thread's delegated sleep (context.h) ------------------------

TEST(DelegatedPace, TimeoutsWhileTheApplicationWaitsLengthenTheSleepUpToTheCap) {
    rdmx::DelegatedPace p;
    EXPECT_EQ(p.ms, rdmx::DelegatedPace::kBaseMs);
    EXPECT_FALSE(p.deep());
    p.timed_out(true);
    EXPECT_EQ(p.ms, 2 * rdmx::DelegatedPace::kBaseMs);
    EXPECT_TRUE(p.deep());
    for (int i = 0; i < 20; ++i) p.timed_out(true);
    EXPECT_EQ(p.ms, rdmx::DelegatedPace::kMaxMs);
}

TEST(DelegatedPace, ApplicationOutsideAWaitGetsOneBaseSleepAndKeepsTheLength) {
    rdmx::DelegatedPace p;
    for (int i = 0; i < 3; ++i) p.timed_out(true);
    const int grown = p.ms;
    p.timed_out(false);  // it may be about to compute: take over at the base pace
    EXPECT_EQ(p.ms, rdmx::DelegatedPace::kBaseMs);
    EXPECT_FALSE(p.deep());
    p.timed_out(true);
    EXPECT_EQ(p.ms, std::min(4 * grown, rdmx::DelegatedPace::kMaxMs));
}

TEST(DelegatedPace, AWakeUpFromALongSleepHoldsTheBasePace) {
    rdmx::DelegatedPace p;
    for (int i = 0; i < 4; ++i) p.timed_out(true);
    p.woken();
    EXPECT_EQ(p.ms, rdmx::DelegatedPace::kBaseMs);
    for (int i = 0; i < rdmx::DelegatedPace::kHoldSleeps; ++i) {
        p.timed_out(true);
        EXPECT_EQ(p.ms, rdmx::DelegatedPace::kBaseMs) << "timeout " << i << " of the hold";
    }
    p.timed_out(true);
    EXPECT_EQ(p.ms, 2 * rdmx::DelegatedPace::kBaseMs) << "lengthens again after the hold";
}

TEST(DelegatedPace, AWakeUpAtTheBasePaceSetsNoHold) {
    rdmx::DelegatedPace p;
    p.woken();
    p.timed_out(true);
    EXPECT_EQ(p.ms, 2 * rdmx::DelegatedPace::kBaseMs);
}

TEST(SpinBudget, LongSleepHalvesDownToTheFloor) {
    EXPECT_EQ(rdmx::next_spin_budget(1600 * kUs, 20000 * kUs, 200 * kUs, 5000 * kUs), 800 * kUs);
    EXPECT_EQ(rdmx::next_spin_budget(300 * kUs, 100000 * kUs, 200 * kUs, 5000 * kUs), 200 * kUs);
}

TEST(SpinBudget, SleepsInBetweenLeaveItAndAFixedSpinNeverMoves) {
    EXPECT_EQ(rdmx::next_spin_budget(400 * kUs, 1000 * kUs, 200 * kUs, 5000 * kUs), 400 * kUs);
    EXPECT_EQ(rdmx::next_spin_budget(200 * kUs, 1 * kUs, 200 * kUs, 200 * kUs), 200 * kUs);
    EXPECT_EQ(rdmx::next_spin_budget(200 * kUs, 1000000 * kUs, 200 * kUs, 200 * kUs), 200 * kUs);
}

}  // namespace
