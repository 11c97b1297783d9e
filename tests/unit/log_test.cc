// The log: its line prefix, RDMX_LOG_FILE (%h %r %p, a file that cannot be
// opened, a rank that comes later) and the rate limit of repeated lines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/log.h"
#include "log_prefix.h"

namespace rdmx {
namespace {

using test::count_of;

std::string slurp(const std::string &path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Each test starts logging warnings to stderr, rank unknown, default limits.
class LogTest : public ::testing::Test {
protected:
    void SetUp() override {
        log_set_level(static_cast<int>(LogLevel::kWarn));
        log_set_file("", -1);
        log_set_rank(-1);
        log_set_rate_limit(kLogBurst, kLogWindowNs);
        char tmpl[] = "/tmp/rdmx_log_test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override {
        log_set_file("", -1);
        log_set_rank(-1);
        log_set_rate_limit(kLogBurst, kLogWindowNs);
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    std::string dir_;
};

TEST_F(LogTest, PrefixCarriesHostRankPidAndTime) {
    testing::internal::CaptureStderr();
    RDMX_WARN("hello %d", 5);
    log_set_rank(3);
    RDMX_WARN("hello %d", 5);
    const std::string err = testing::internal::GetCapturedStderr();
    const size_t nl = err.find('\n');
    ASSERT_NE(nl, std::string::npos) << err;
    ASSERT_EQ(err.size(), 2 * (nl + 1)) << "two lines of equal length: " << err;
    test::LogPrefix a, b;
    ASSERT_TRUE(test::parse_log_prefix(std::string_view(err).substr(0, nl), &a)) << err;
    ASSERT_TRUE(test::parse_log_prefix(std::string_view(err).substr(nl + 1, nl), &b)) << err;
    for (const test::LogPrefix *p : {&a, &b}) {
        EXPECT_EQ(p->host, log_host());
        EXPECT_EQ(p->pid, std::to_string(getpid()));
        EXPECT_EQ(p->rest, "WARN: hello 5");
        const long long t = std::stoll(p->seconds);
        EXPECT_LE(std::llabs(t - static_cast<long long>(std::time(nullptr))), 5) << "wall-clock seconds";
    }
    EXPECT_EQ(a.rank, "-") << "no rank before the bootstrap";
    EXPECT_EQ(b.rank, "3");
    EXPECT_EQ(std::string(log_host()).find('.'), std::string::npos) << "the host up to its first dot";
    test::LogPrefix bad;
    EXPECT_FALSE(test::parse_log_prefix("[rdmx 3:2133] WARN: the old prefix", &bad));
}

TEST_F(LogTest, FileNameExpansion) {
    EXPECT_EQ(log_expand_file("/t/%h-%r-%p.log", "node1", 7, 123), "/t/node1-7-123.log");
    EXPECT_EQ(log_expand_file("%%r 100%% %x %", "h", 1, 2), "%r 100% %x %");
    EXPECT_EQ(log_expand_file("plain", "h", 1, 2), "plain");
    EXPECT_EQ(log_expand_file("%r%r%h", "h", 12, 2), "1212h");
}

TEST_F(LogTest, FileReceivesTheLinesPerRank) {
    log_set_rank(4);
    const std::string pattern = dir_ + "/r%r-%h-%p.log";
    const std::string path = dir_ + "/r4-" + log_host() + "-" + std::to_string(getpid()) + ".log";
    testing::internal::CaptureStderr();
    log_set_file(pattern, -1);
    RDMX_WARN("to the file %d", 1);
    log_set_file(pattern, -1);  // the same setting again (a second rdmx_init): same file, appended
    RDMX_ERROR("to the file %d", 2);
    log_set_file("", -1);
    RDMX_WARN("back on stderr");
    const std::string err = testing::internal::GetCapturedStderr();
    const std::string file = slurp(path);
    EXPECT_EQ(count_of(file, ":4:"), 2u) << file;
    EXPECT_EQ(count_of(file, "] WARN: to the file 1\n"), 1u) << file;
    EXPECT_EQ(count_of(file, "] ERROR: to the file 2\n"), 1u) << file;
    EXPECT_EQ(count_of(err, "to the file"), 0u) << err;
    EXPECT_EQ(count_of(err, "WARN: back on stderr"), 1u) << err;
    // A second file reuses the first one's descriptor; the first keeps its lines.
    log_set_file(dir_ + "/second.log", -1);
    RDMX_WARN("second");
    log_set_file("", -1);
    EXPECT_EQ(count_of(slurp(dir_ + "/second.log"), "WARN: second\n"), 1u);
    EXPECT_EQ(count_of(slurp(path), "second"), 0u);
}

// %r before the rank is known: stderr until log_set_rank, then the file.
TEST_F(LogTest, FileWaitsForTheRank) {
    testing::internal::CaptureStderr();
    log_set_file(dir_ + "/rank%r.log", -1);
    RDMX_WARN("early");
    log_set_rank(9);
    RDMX_WARN("late");
    log_set_file("", -1);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "WARN: early"), 1u) << err;
    EXPECT_EQ(count_of(err, "late"), 0u) << err;
    EXPECT_EQ(count_of(slurp(dir_ + "/rank9.log"), "WARN: late\n"), 1u);
    // A rank given with the pattern (the launcher's) opens the file at once.
    log_set_rank(-1);
    log_set_file(dir_ + "/rank%r.log", 2);
    RDMX_WARN("given");
    log_set_file("", -1);
    EXPECT_EQ(count_of(slurp(dir_ + "/rank2.log"), "WARN: given\n"), 1u);
}

TEST_F(LogTest, BadFileIsSaidOnceAndLinesStayOnStderr) {
    const std::string pattern = dir_ + "/no/such/dir/%p.log";
    testing::internal::CaptureStderr();
    log_set_file(pattern, 0);
    log_set_file(pattern, 0);  // a second rdmx_init: no second complaint
    RDMX_WARN("still here");
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "ERROR: log: cannot open RDMX_LOG_FILE=" + pattern + " (" + dir_ + "/no/such/dir/" +
                                std::to_string(getpid()) + ".log): No such file or directory; logging to stderr\n"),
              1u)
        << err;
    EXPECT_EQ(count_of(err, "\n"), 2u) << err;
    EXPECT_EQ(count_of(err, "WARN: still here\n"), 1u) << err;
}

void warn_at_one_site(int i) { RDMX_WARN("repeated %d", i); }
void warn_at_another_site(int i) { RDMX_WARN("other %d", i); }

TEST_F(LogTest, RepeatedLinesAreRateLimited) {
    log_set_rate_limit(3, 3600'000'000'000ull);  // a window that does not end during the test
    testing::internal::CaptureStderr();
    for (int i = 0; i < 50; ++i) warn_at_one_site(i);
    warn_at_another_site(0);
    RDMX_INFO("info %d", 1);  // below warn: never limited (and off at this level)
    log_flush_suppressed();   // as rdmx_finalize does
    log_flush_suppressed();   // nothing more to say
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "WARN: repeated "), 3u) << err;
    EXPECT_EQ(count_of(err, "WARN: repeated 2\n"), 1u) << err;
    EXPECT_EQ(count_of(err, "WARN: other 0\n"), 1u) << err;
    EXPECT_EQ(count_of(err, "WARN: log: 47 similar messages suppressed (at most 3 a site per 3600 s): "
                            "\"repeated %d\"\n"),
              1u)
        << err;
    EXPECT_EQ(count_of(err, "suppressed"), 1u) << err;
}

// Deferred lines (found under the engine lock) are limited the same way,
// before they take a place in the queue.
TEST_F(LogTest, DeferredLinesAreRateLimited) {
    log_set_rate_limit(3, 3600'000'000'000ull);
    testing::internal::CaptureStderr();
    for (int i = 0; i < 40; ++i) RDMX_WARN_DEFERRED("deferred %d", i);
    log_flush_deferred();
    log_flush_suppressed();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "WARN: deferred "), 3u) << err;
    EXPECT_EQ(count_of(err, "dropped"), 0u) << "the suppressed lines did not fill the queue: " << err;
    EXPECT_EQ(count_of(err, "log: 37 similar messages suppressed"), 1u) << err;
}

// When the window ends the next line of any site reports the count first.
TEST_F(LogTest, RateLimitWindowEnds) {
    constexpr uint64_t kWindowNs = 300'000'000;  // 0.3 s: the first five lines fit in it even under TSan
    log_set_rate_limit(2, kWindowNs);
    testing::internal::CaptureStderr();
    for (int i = 0; i < 5; ++i) warn_at_one_site(i);
    std::this_thread::sleep_for(std::chrono::nanoseconds(2 * kWindowNs));
    warn_at_another_site(1);
    for (int i = 5; i < 8; ++i) warn_at_one_site(i);  // a new window: two more lines
    const std::string err = testing::internal::GetCapturedStderr();
    const size_t report = err.find("log: 3 similar messages suppressed");
    ASSERT_NE(report, std::string::npos) << err;
    EXPECT_LT(report, err.find("other 1")) << "reported before the next line";
    EXPECT_EQ(count_of(err, "WARN: repeated "), 4u) << err;
    EXPECT_EQ(count_of(err, "WARN: repeated 6\n"), 1u) << err;
    log_flush_suppressed();
}

// Threads logging at once: every line whole, the count exact (TSan runs this).
TEST_F(LogTest, RateLimitUnderThreads) {
    log_set_rate_limit(5, 3600'000'000'000ull);
    testing::internal::CaptureStderr();
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([] {
            for (int i = 0; i < 100; ++i) warn_at_one_site(i);
        });
    for (auto &t : ts) t.join();
    log_flush_suppressed();
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(count_of(err, "WARN: repeated "), 5u) << err;
    EXPECT_EQ(count_of(err, "log: 395 similar messages suppressed"), 1u) << err;
}

}  // namespace
}  // namespace rdmx
