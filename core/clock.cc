#include "core/clock.h"

#include <atomic>
#include <mutex>

#include "rdmx/rdmx.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define RDMX_HAVE_TSC 1
#endif

extern "C" double rdmx_wtime(void) { return static_cast<double>(rdmx::now_ns()) * 1e-9; }

namespace rdmx {

#ifdef RDMX_HAVE_TSC
namespace {

// The calibration window: long enough that one clock read's cost (a few
// microseconds emulated) skews the rate by well under 1%.
constexpr uint64_t kCalibrateNs = 20'000'000;
__extension__ typedef unsigned __int128 u128;
constexpr int kShift = 24;  // fixed point of the ns-per-tick rate

struct TscClock {
    std::once_flag origin;
    uint64_t tsc0 = 0, ns0 = 0;     // written once, under `origin`
    std::atomic<uint64_t> mult{0};  // ns per tick << kShift; 0 = not calibrated yet
};
TscClock g_tsc;

// Cold and out of line: call_once reaches thread-local state, and inlined
// into fast_ns its TLS lookup ran on every call, calibrated or not.
[[gnu::noinline, gnu::cold]] uint64_t calibrate(uint64_t tsc) {
    std::call_once(g_tsc.origin, [tsc] {
        g_tsc.tsc0 = tsc;
        g_tsc.ns0 = now_ns();
    });
    const uint64_t ns = now_ns();
    const uint64_t t0 = g_tsc.tsc0, n0 = g_tsc.ns0;
    if (ns - n0 < kCalibrateNs || tsc <= t0) return ns;
    // A counter slower than 10 MHz, or one that ran backwards, is not worth
    // using: stay on CLOCK_MONOTONIC (mult stays 0, so every call lands here,
    // which costs what now_ns() costs anyway).
    const uint64_t ticks = tsc - t0, elapsed = ns - n0;
    if (ticks < elapsed / 100) return ns;
    // Rounded up, so the scaled counter is never behind the clock read paired
    // with it: a thread's values do not step back at the switch.
    const uint64_t m = static_cast<uint64_t>(((static_cast<u128>(elapsed) << kShift) + ticks - 1) / ticks);
    uint64_t zero = 0;
    g_tsc.mult.compare_exchange_strong(zero, m, std::memory_order_acq_rel);
    return ns;
}

}  // namespace

uint64_t fast_ns() {
    const uint64_t tsc = __rdtsc();
    const uint64_t m = g_tsc.mult.load(std::memory_order_acquire);
    if (m == 0) return calibrate(tsc);
    // Published by the release on mult, after call_once wrote them.
    const uint64_t d = tsc > g_tsc.tsc0 ? tsc - g_tsc.tsc0 : 0;
    return g_tsc.ns0 +
           static_cast<uint64_t>((static_cast<u128>(d) * m) >> kShift);
}
#else
uint64_t fast_ns() { return now_ns(); }
#endif

}  // namespace rdmx
