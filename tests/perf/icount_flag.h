/* The flag the instruction-count programs (icount_pingpong.c, icount_ucx.c)
 * share between their two ranks: rank 1 stores how many pongs it has posted,
 * rank 0 waits (uncounted) until its pong is among them. An existing file of
 * at least 8 bytes, mapped shared. And the warm-up both programs run before
 * counting. */
#pragma once
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static inline _Atomic uint64_t *icount_map_flag(const char *path) {
    int fd = open(path, O_RDWR);
    void *p = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror(path);
        exit(2);
    }
    close(fd);
    return (_Atomic uint64_t *)p;
}

/* Rank 0: returns once rank 1 has posted pong `i` (iterations count from 0). */
static inline void icount_wait_posted(_Atomic uint64_t *posted, long i) {
    while (atomic_load_explicit(posted, memory_order_acquire) < (uint64_t)i + 1) {
    }
}

/* Rank 1: pong `i` is posted. */
static inline void icount_set_posted(_Atomic uint64_t *posted, long i) {
    atomic_store_explicit(posted, (uint64_t)i + 1, memory_order_release);
}

/* The UCX harness's last step: rank 0's endpoint is closed, rank 1 may go. */
#define ICOUNT_CLOSED UINT64_MAX
static inline void icount_set_closed(_Atomic uint64_t *posted) {
    atomic_store_explicit(posted, ICOUNT_CLOSED, memory_order_release);
}
static inline int icount_closed(_Atomic uint64_t *posted) {
    return atomic_load_explicit(posted, memory_order_acquire) == ICOUNT_CLOSED;
}

/* The warm-up lasts ICOUNT_WARMUP pings and at least ICOUNT_WARMUP_NS: what
 * a library adapts over its first moments of running (rdmx's spin clock
 * calibrates against CLOCK_MONOTONIC over its first 20 ms) is settled before
 * counting, as in any application that runs longer than that. Under
 * callgrind a fixed 200 pings took less than 20 ms, and every 16th counted
 * rdmx wait paid the calibration's clock read, which a running application
 * never does. Rank 0 decides when the warm-up ends and says so in byte 1 of
 * each ping (the phase); rank 1 echoes it and follows. */
enum { ICOUNT_WARMUP = 200, ICOUNT_PHASE_WARM = 1, ICOUNT_PHASE_LAST_WARM = 2, ICOUNT_PHASE_COUNTED = 3 };
#define ICOUNT_WARMUP_NS (100LL * 1000 * 1000)

static inline long long icount_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Rank 0: the phase of warm-up ping `i`, begun at `t0_ns`. */
static inline int icount_warm_phase(long i, long long t0_ns) {
    return i + 1 >= ICOUNT_WARMUP && icount_mono_ns() - t0_ns >= ICOUNT_WARMUP_NS ? ICOUNT_PHASE_LAST_WARM
                                                                                    : ICOUNT_PHASE_WARM;
}

/* Rank 1, after echoing a ping of phase `phase`: pings left to echo (-1
 * while warming up), updated from `left`. */
static inline long icount_pongs_left(long left, int phase, long iters) {
    if (left > 0) return left - 1;
    return phase == ICOUNT_PHASE_LAST_WARM ? iters : left;
}
