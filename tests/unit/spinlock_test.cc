// The engine lock (core/spinlock.h): exclusion, try_lock, the switched-off
// mode, and that a waiter parks instead of burning the CPU the holder needs.
#include <gtest/gtest.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "core/spinlock.h"

namespace {

double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

TEST(SpinLock, ExcludesUnderContentionAndWakesEveryParkedWaiter) {
    rdmx::SpinLock lock;
    constexpr int kThreads = 4;
    constexpr int kRounds = 400;
    long counter = 0;  // plain: only the lock orders the increments
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < kRounds; ++i) {
                std::lock_guard<rdmx::SpinLock> g(lock);
                const long seen = counter;
                // Every 8th round holds the lock for 50 us, long enough for
                // the others to exhaust their spin and park: a lost wake-up
                // would hang here (the ctest timeout catches it).
                if (i % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
                counter = seen + 1;
            }
        });
    for (auto &t : ts) t.join();
    EXPECT_EQ(counter, long{kThreads} * kRounds);
}

TEST(SpinLock, TryLockFailsWhileHeld) {
    rdmx::SpinLock lock;
    ASSERT_TRUE(lock.try_lock());
    bool other = true;
    std::thread([&] { other = lock.try_lock(); }).join();
    EXPECT_FALSE(other);
    lock.unlock();
    std::thread([&] {
        other = lock.try_lock();
        if (other) lock.unlock();
    }).join();
    EXPECT_TRUE(other);
}

// The case a scheduler trace caught: the waiter is on the CPU and the holder
// is not. A waiter that spins or yields burns the whole wait (sched_yield
// returns at once when nothing else is runnable); a parked one sleeps.
TEST(SpinLock, WaiterParksWhileTheHolderIsAway) {
    rdmx::SpinLock lock;
    constexpr auto kHold = std::chrono::milliseconds(100);
    lock.lock();
    std::atomic<bool> started{false}, got{false};
    double waiter_cpu_ms = -1;
    std::thread waiter([&] {
        const double t0 = thread_cpu_ms();
        started.store(true);
        lock.lock();
        waiter_cpu_ms = thread_cpu_ms() - t0;
        got.store(true);
        lock.unlock();
    });
    while (!started.load()) std::this_thread::yield();
    std::this_thread::sleep_for(kHold);
    EXPECT_FALSE(got.load()) << "the waiter took a held lock";
    lock.unlock();
    waiter.join();
    EXPECT_TRUE(got.load());
    // Parked, the waiter used microseconds of CPU; spinning, about 100 ms.
    EXPECT_LT(waiter_cpu_ms, 20.0) << "the waiter burnt " << waiter_cpu_ms << " ms of CPU waiting";
}

TEST(SpinLock, SwitchedOffItIsANoOp) {
    rdmx::SpinLock lock;
    lock.set_enabled(false);
    EXPECT_FALSE(lock.enabled());
    lock.lock();
    EXPECT_TRUE(lock.try_lock());  // one thread only: nothing to exclude
    lock.lock();
    lock.unlock();
    lock.unlock();
}

}  // namespace
