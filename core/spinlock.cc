// The engine lock's slow path (see spinlock.h): spin, then park on a futex.
#include "core/spinlock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rdmx {

namespace {

// FUTEX_PRIVATE: the word lives in one process's memory. A spurious or
// interrupted wait (EINTR, EAGAIN when the word already changed) just
// returns: the caller re-reads the word.
void futex_wait(std::atomic<uint32_t> *word, uint32_t expected) {
    (void)syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t> *word) {
    (void)syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

}  // namespace

// The three-state futex lock: a waiter that parks first marks the word
// kParked, so the holder's unlock knows to wake one; a woken waiter takes
// the lock as kParked too (others may still sleep), which costs at most
// one wake with nobody to wake.
[[gnu::noinline, gnu::cold]] void SpinLock::lock_contended() {
    for (int spins = 0; spins < kSpinsBeforePark; ++spins) {
        __builtin_ia32_pause();
        uint32_t free = kFree;
        if (state_.load(std::memory_order_relaxed) == kFree &&
            state_.compare_exchange_weak(free, kLocked, std::memory_order_acquire, std::memory_order_relaxed))
            return;
    }
    while (state_.exchange(kParked, std::memory_order_acquire) != kFree) futex_wait(&state_, kParked);
}

[[gnu::noinline]] void SpinLock::wake_one() { futex_wake(&state_); }

}  // namespace rdmx
