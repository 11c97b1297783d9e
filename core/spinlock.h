// A test-and-test-and-set lock that yields after a short spin: the engine's
// critical sections are short, and with 8 ranks on 2 vCPUs a holder may be
// descheduled, so spinning forever would burn the holder's time slice.
//
// It can be switched off (set_enabled(false), before any second thread can
// reach it): at RDMX_THREADS=single with no progress thread only one thread
// ever enters the engine, and lock/unlock are then one predictable branch
// with no atomic read-modify-write (unlock: one plain store).
#pragma once
#include <atomic>
#include <thread>

namespace rdmx {

class SpinLock {
public:
    void lock() {
        if (!enabled_) return;
        for (int spins = 0;; ++spins) {
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins > kSpinsBeforeYield) std::this_thread::yield();
                else __builtin_ia32_pause();
            }
        }
    }
    bool try_lock() {
        if (!enabled_) return true;
        return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
    }
    // No test of enabled_: switched off, locked_ is never set, and storing
    // false again is one plain store (only one thread reaches the lock then).
    void unlock() { locked_.store(false, std::memory_order_release); }
    // Only while no other thread can reach the lock (context set-up).
    void set_enabled(bool on) { enabled_ = on; }
    bool enabled() const { return enabled_; }

private:
    static constexpr int kSpinsBeforeYield = 64;
    std::atomic<bool> locked_{false};
    bool enabled_ = true;
};

}  // namespace rdmx
