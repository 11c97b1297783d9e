/* bed-probe: how fast this machine runs right now, for scripts/perf/compare.sh.
 *
 * Two probes, each a fixed amount of work timed on CLOCK_MONOTONIC, so on a
 * machine whose speed is steady the figure is the same every time; on a
 * shared or virtual machine it rises while the machine underneath is slowed
 * (a busy neighbour, a lower clock, an emulator's other threads):
 *
 *   bed-probe [ITERATIONS]       a chain of dependent 64-bit multiply-adds
 *                                (default 10,000,000): the CPU alone, no
 *                                memory traffic, no system call in the loop.
 *   bed-probe --chase MIB [LOADS]
 *                                a chain of dependent loads (default
 *                                1,000,000) through a random cycle over MIB
 *                                MiB (small pages), one pointer per 64-byte
 *                                line: each load waits for the last, and a
 *                                working set above the caches makes each a
 *                                trip to memory. The multiply-add loop
 *                                cannot see the memory system change speed;
 *                                this can. The cycle is built (and its pages
 *                                touched) before the clock starts.
 *
 * scripts/perf/compare.sh times them before its runs, and the report gives
 * the spread of those readings: how steady the bed was in that boot, which
 * the latency spread must be read against.
 *
 * Output: one line, the elapsed milliseconds, e.g. "11.2".
 * Exit status: 0; 2 on a bad argument; 1 when the memory cannot be had. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define BED_PROBE_DEFAULT_ITERS 10000000ull
#define BED_PROBE_DEFAULT_LOADS 1000000ull
#define BED_PROBE_MAX_MIB 4096ull
#define LINE_BYTES 64u
/* Knuth's MMIX linear congruential constants: each step depends on the
 * last, so the loop runs at one multiply-add latency per iteration. */
#define LCG_MUL 6364136223846793005ull
#define LCG_ADD 1442695040888963407ull

struct line {
    struct line *next;
    char pad[LINE_BYTES - sizeof(struct line *)];
};
_Static_assert(sizeof(struct line) == LINE_BYTES, "one pointer per cache line");

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int usage(void) {
    fprintf(stderr, "usage: bed-probe [ITERATIONS] | bed-probe --chase MIB [LOADS]\n");
    return 2;
}

/* A positive integer no larger than max; 0 (with the error printed) if not. */
static unsigned long long parse_count(const char *what, const char *s, unsigned long long max) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v == 0 || v > max || s[0] == '-') {
        fprintf(stderr, "bed-probe: %s must be an integer from 1 to %llu, got '%s'\n", what, max, s);
        return 0;
    }
    return v;
}

static int multiply_add(uint64_t iters) {
    volatile uint64_t sink = 0; /* keeps the chain from being optimised away */
    uint64_t x = 1;
    const double t0 = now_ms();
    for (uint64_t i = 0; i < iters; ++i) x = x * LCG_MUL + LCG_ADD;
    sink = x;
    (void)sink;
    printf("%.1f\n", now_ms() - t0);
    return 0;
}

/* Sattolo's shuffle: a random permutation that is one cycle through every
 * line, so the walk visits them all before it repeats and the prefetcher
 * cannot guess the next. */
static int chase(uint64_t mib, uint64_t loads) {
    const size_t n = (size_t)(mib << 20) / LINE_BYTES;
    const size_t bytes = n * sizeof(struct line);
    /* Small pages only: whether a transparent huge page is free depends on
     * what ran before, and a huge page changes what each load costs (the
     * page walk), which is not the speed asked about. */
    struct line *lines = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t *order = malloc(n * sizeof(size_t));
    if (lines == MAP_FAILED || order == NULL) {
        fprintf(stderr, "bed-probe: cannot allocate %llu MiB for the chase: %s\n", (unsigned long long)mib,
                strerror(errno));
        if (lines != MAP_FAILED) munmap(lines, bytes);
        free(order);
        return 1;
    }
    (void)madvise(lines, bytes, MADV_NOHUGEPAGE); /* where THP is off or absent there is nothing to undo */
    memset(lines, 0, bytes); /* touch every page before the clock starts */
    for (size_t i = 0; i < n; ++i) order[i] = i;
    uint64_t x = 88172645463325252ull; /* xorshift64: any fixed seed, the same cycle every run */
    for (size_t i = n - 1; i > 0; --i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const size_t j = (size_t)(x % i); /* j < i: Sattolo, not Fisher-Yates */
        const size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < n; ++i) lines[order[i]].next = &lines[order[(i + 1) % n]];
    free(order);
    struct line *volatile sink = NULL;
    struct line *p = &lines[0];
    const double t0 = now_ms();
    for (uint64_t i = 0; i < loads; ++i) p = p->next;
    const double ms = now_ms() - t0;
    sink = p;
    (void)sink;
    munmap(lines, bytes);
    printf("%.1f\n", ms);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "--chase") == 0) {
        if (argc < 3 || argc > 4) return usage();
        const unsigned long long mib = parse_count("MIB", argv[2], BED_PROBE_MAX_MIB);
        const unsigned long long loads = argc == 4 ? parse_count("LOADS", argv[3], UINT64_MAX) : BED_PROBE_DEFAULT_LOADS;
        if (mib == 0 || loads == 0) return 2;
        return chase(mib, loads);
    }
    if (argc > 2) return usage();
    uint64_t iters = BED_PROBE_DEFAULT_ITERS;
    if (argc == 2 && (iters = parse_count("ITERATIONS", argv[1], UINT64_MAX)) == 0) return 2;
    return multiply_add(iters);
}
