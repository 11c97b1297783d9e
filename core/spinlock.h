// The engine lock: a test-and-set lock that spins briefly, then parks the
// waiter on a futex until the holder's unlock wakes it.
//
// Why it parks rather than yields: the engine's critical sections are short,
// but a holder can be preempted inside one, and the thread that preempted it
// is often the very thread that then waits for the lock (the progress
// thread, woken by a completion, lands on the CPU where the application was
// running with the lock held). sched_yield() does not hand the CPU back to
// the holder: the fair scheduler skips the yielding thread only while the
// holder's virtual runtime is within its wake-up granularity, and a thread
// that slept for long has a lower one, so it yields to itself. A scheduler
// trace of the thread-mode ping-pong on the emulated bed caught the progress
// thread calling sched_yield 1,921 times in 4.6 ms while the preempted
// holder waited: one iteration of 4.6 ms. A parked waiter leaves the CPU to
// whoever can run, the holder included, and costs the holder a futex wake
// only when a waiter actually parked.
//
// It can be switched off (set_enabled(false), before any second thread can
// reach it): at RDMX_THREADS=single with no progress thread only one thread
// ever enters the engine, and lock/unlock are then one predictable branch
// each, with no atomic read-modify-write.
#pragma once
#include <atomic>
#include <cstdint>

namespace rdmx {

class SpinLock {
public:
    void lock() {
        if (!enabled_) return;
        uint32_t free = kFree;
        if (state_.compare_exchange_strong(free, kLocked, std::memory_order_acquire, std::memory_order_relaxed))
            return;
        lock_contended();
    }
    bool try_lock() {
        if (!enabled_) return true;
        uint32_t free = kFree;
        return state_.load(std::memory_order_relaxed) == kFree &&
               state_.compare_exchange_strong(free, kLocked, std::memory_order_acquire, std::memory_order_relaxed);
    }
    void unlock() {
        if (!enabled_) return;
        if (state_.exchange(kFree, std::memory_order_release) == kParked) wake_one();
    }
    // Only while no other thread can reach the lock (context set-up).
    void set_enabled(bool on) { enabled_ = on; }
    bool enabled() const { return enabled_; }

    // Pause-spins a waiter makes before it parks: a pause takes from about 10
    // to about 140 cycles depending on the CPU, so this is 0.5-6 us, longer
    // than the engine's usual critical section and far shorter than a slice.
    static constexpr int kSpinsBeforePark = 128;

private:
    static constexpr uint32_t kFree = 0;
    static constexpr uint32_t kLocked = 1;  // held, nobody parked
    static constexpr uint32_t kParked = 2;  // held, and a waiter may be parked on the futex

    void lock_contended();  // spinlock.cc: spin, then park
    void wake_one();

    std::atomic<uint32_t> state_{kFree};
    bool enabled_ = true;
};
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "the futex word is the lock word");

}  // namespace rdmx
