// Monotonic time and deadlines.
#pragma once
#include <cstdint>
#include <ctime>

namespace rdmx {

// CLOCK_MONOTONIC in nanoseconds: for deadlines and anything reported.
inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Nanoseconds for spin bounds and the cadence of periodic work, never for a
// deadline: the time-stamp counter scaled by a rate measured against
// CLOCK_MONOTONIC over the process's first ~20 ms of calls (until then it
// is now_ns()). Where clock_gettime has no fast path (an emulated guest on
// HPET) it is a system call, and a spinning wait that read it every few
// polls spent an eighth of its time there. Monotonic within the thread that
// calibrates it; another thread may see it step back by microseconds at the
// switch, and across threads it is as monotonic as the CPUs' counters agree:
// compute spans so that a negative one does no harm. Thread-safe, no lock.
uint64_t fast_ns();

class Deadline {
public:
    explicit Deadline(double seconds) : end_(now_ns() + static_cast<uint64_t>(seconds * 1e9)) {}
    bool expired() const { return now_ns() >= end_; }
    // Milliseconds left, clamped to [0, cap_ms], for poll(2).
    int remaining_ms(int cap_ms) const {
        uint64_t n = now_ns();
        if (n >= end_) return 0;
        uint64_t ms = (end_ - n) / 1000000ull;
        return ms > static_cast<uint64_t>(cap_ms) ? cap_ms : static_cast<int>(ms);
    }

private:
    uint64_t end_;
};

}  // namespace rdmx
