// fast_ns(): the spin clock must keep pace with CLOCK_MONOTONIC once
// calibrated, and never run backwards within a thread.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/clock.h"

namespace {

using rdmx::fast_ns;
using rdmx::now_ns;

// fast_ns() and now_ns() read back to back: retried until no preemption
// (a loaded host, tests running in parallel) fell between the two reads.
void read_pair(uint64_t *f, uint64_t *n) {
    for (int i = 0; i < 1000; ++i) {
        const uint64_t a = now_ns();
        *f = fast_ns();
        *n = now_ns();
        if (*n - a < 200'000) return;
    }
}

TEST(FastClock, TracksMonotonicAfterCalibration) {
    // Calibration needs ~20 ms of calls: call it across 40 ms.
    for (int i = 0; i < 40; ++i) {
        (void)fast_ns();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    uint64_t f0, n0, f1, n1;
    read_pair(&f0, &n0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    read_pair(&f1, &n1);
    const double ratio = static_cast<double>(f1 - f0) / static_cast<double>(n1 - n0);
    // Sanitizers and a loaded host stretch the sleeps, not the ratio; the
    // tolerance covers the calibration error of one clock read each side.
    EXPECT_GT(ratio, 0.9) << "fast clock ran " << (f1 - f0) << " ns while CLOCK_MONOTONIC ran " << (n1 - n0);
    EXPECT_LT(ratio, 1.1) << "fast clock ran " << (f1 - f0) << " ns while CLOCK_MONOTONIC ran " << (n1 - n0);
    // Same timeline as CLOCK_MONOTONIC, within a few milliseconds.
    const int64_t off = static_cast<int64_t>(f1) - static_cast<int64_t>(n1);
    EXPECT_LT(off < 0 ? -off : off, 5'000'000) << "fast clock is " << off << " ns off CLOCK_MONOTONIC";
}

// Across the switch from CLOCK_MONOTONIC to the scaled counter (each test
// runs in a process of its own, so calibration happens inside this loop).
TEST(FastClock, MonotonicWithinAThread) {
    uint64_t prev = fast_ns();
    const uint64_t end = now_ns() + 60'000'000;
    for (long i = 0; now_ns() < end; ++i) {
        const uint64_t t = fast_ns();
        ASSERT_GE(t, prev) << "at call " << i;
        prev = t;
    }
}

}  // namespace
