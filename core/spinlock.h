// A test-and-test-and-set lock that yields after a short spin: the engine's
// critical sections are short, and with 8 ranks on 2 vCPUs a holder may be
// descheduled, so spinning forever would burn the holder's time slice.
#pragma once
#include <atomic>
#include <thread>

namespace rdmx {

class SpinLock {
public:
    void lock() {
        for (int spins = 0;; ++spins) {
            if (!locked_.exchange(true, std::memory_order_acquire)) return;
            while (locked_.load(std::memory_order_relaxed)) {
                if (++spins > 64) std::this_thread::yield();
                else __builtin_ia32_pause();
            }
        }
    }
    bool try_lock() {
        return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire);
    }
    void unlock() { locked_.store(false, std::memory_order_release); }

private:
    std::atomic<bool> locked_{false};
};

}  // namespace rdmx
