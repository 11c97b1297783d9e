/* bed-probe: how fast this CPU runs right now, for scripts/perf/compare.sh.
 *
 * Times a fixed chain of dependent 64-bit multiply-adds (no memory traffic,
 * no system call inside the loop) and prints the milliseconds it took. The
 * work never changes, so on a machine whose speed is steady the figure is
 * the same every time; on a shared or virtual machine it rises while the
 * CPU underneath is slowed (a busy neighbour, a lower clock, an emulator's
 * other threads). scripts/perf/compare.sh times it on each CPU in turn
 * before its runs, and the report gives the spread of those readings: how
 * steady the bed was in that boot, which the latency spread must be read
 * against.
 *
 * Usage: bed-probe [ITERATIONS]   (default 10,000,000)
 * Output: one line, the elapsed milliseconds (CLOCK_MONOTONIC), e.g. "11.2".
 * Exit status: 0, or 2 on a bad argument. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BED_PROBE_DEFAULT_ITERS 10000000ull
/* Knuth's MMIX linear congruential constants: each step depends on the
 * last, so the loop runs at one multiply-add latency per iteration. */
#define LCG_MUL 6364136223846793005ull
#define LCG_ADD 1442695040888963407ull

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    uint64_t iters = BED_PROBE_DEFAULT_ITERS;
    if (argc > 2) {
        fprintf(stderr, "usage: bed-probe [ITERATIONS]\n");
        return 2;
    }
    if (argc == 2) {
        char *end = NULL;
        errno = 0;
        unsigned long long v = strtoull(argv[1], &end, 10);
        if (errno != 0 || end == argv[1] || *end != '\0' || v == 0) {
            fprintf(stderr, "bed-probe: ITERATIONS must be a positive integer, got '%s'\n", argv[1]);
            return 2;
        }
        iters = v;
    }
    volatile uint64_t sink = 0; /* keeps the chain from being optimised away */
    uint64_t x = 1;
    const double t0 = now_ms();
    for (uint64_t i = 0; i < iters; ++i) x = x * LCG_MUL + LCG_ADD;
    sink = x;
    (void)sink;
    printf("%.1f\n", now_ms() - t0);
    return 0;
}
