/* The shim-overhead benchmark: one blocking ping-pong loop, compiled twice,
 * against the MPI layer (PP_MPI: mpi-overhead-mpi, through libmpich.so.12)
 * and against rdmx's own API (mpi-overhead-rdmx). Only the five calls below
 * (init, rank, send, receive, finalize) differ between the two programs;
 * they are static inline, so the loop and its timing are the same code.
 *
 *   mpi-overhead-{mpi,rdmx} lat [SIZE...]      (2 ranks under mpirun)
 *     OSU method: per size, warm-up iterations, then timed iterations of
 *     send+receive on rank 0 and receive+send on rank 1; rank 0 prints
 *     "SIZE USEC" with USEC the half round trip. Default sizes 8 1048576.
 *     PP_ITERS / PP_WARMUP (environment) override the iteration counts.
 *   mpi-overhead-{mpi,rdmx} icount ITERS FLAG_FILE
 *     the 8 B loop for callgrind (scripts/perf/mpi-overhead.sh --icount):
 *     rank 0 toggles collection on around its send and its receive only,
 *     and waits (uncounted) until rank 1 has sent the pong, so the receive
 *     finds it on its first progress pass and the count holds the work of
 *     a round trip, never a wait's spinning (as tests/perf/icount_pingpong.c
 *     counts rdmx alone); rank 1 sends the pong only once rank 0's send has
 *     returned (see run_icount).
 *
 * Thread level: MPI_Init asks rdmx for RDMX_THREADS=single; the rdmx program
 * asks for the same, so both run the same engine configuration. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "icount_flag.h"

enum { kTag = 7 };
/* OSU's counts (osu_latency): small messages 10,000 + 1,000 warm-up, large
 * (above 8 KiB) 1,000 + 100. */
enum { kItersSmall = 10000, kWarmupSmall = 1000, kItersLarge = 1000, kWarmupLarge = 100,
       kLargeAbove = 8192, kIcountWarmup = 200, kIcountSize = 8 };

static void die(const char *what, const char *why) {
    fprintf(stderr, "mpi-overhead: %s: %s\n", what, why);
    exit(1);
}

#ifdef PP_MPI
#include <mpi.h>
#define PP_NAME "mpi"
static void mpi_check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        die(what, msg);
    }
}
static void pp_init(int *argc, char ***argv) { mpi_check(MPI_Init(argc, argv), "MPI_Init"); }
static int pp_rank(int *size) {
    int r = -1;
    mpi_check(MPI_Comm_size(MPI_COMM_WORLD, size), "MPI_Comm_size");
    mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
    return r;
}
static inline void pp_send(const void *buf, size_t n, int peer) {
    mpi_check(MPI_Send(buf, (int)n, MPI_BYTE, peer, kTag, MPI_COMM_WORLD), "MPI_Send");
}
static inline void pp_recv(void *buf, size_t n, int peer) {
    mpi_check(MPI_Recv(buf, (int)n, MPI_BYTE, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
}
static void pp_finalize(void) { mpi_check(MPI_Finalize(), "MPI_Finalize"); }
#else
#include "rdmx/rdmx.h"
#define PP_NAME "rdmx"
static rdmx_context_h g_ctx;
static void rdmx_check(rdmx_status_t st, const char *what) {
    if (st != RDMX_OK) die(what, rdmx_strerror(st));
}
static void pp_init(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    if (!getenv("RDMX_THREADS")) cfg.threads = RDMX_THREADS_SINGLE;   /* what MPI_Init asks for */
    rdmx_check(rdmx_init(&cfg, &g_ctx), "rdmx_init");
}
static int pp_rank(int *size) {
    *size = rdmx_size(g_ctx);
    return rdmx_rank(g_ctx);
}
static inline void pp_send(const void *buf, size_t n, int peer) {
    rdmx_check(rdmx_send(g_ctx, buf, n, peer, kTag), "rdmx_send");
}
static inline void pp_recv(void *buf, size_t n, int peer) {
    rdmx_check(rdmx_recv(g_ctx, buf, n, peer, kTag, NULL), "rdmx_recv");
}
static void pp_finalize(void) { rdmx_check(rdmx_finalize(g_ctx), "rdmx_finalize"); }
#endif

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

/* One size: warm-up, then the timed loop; returns the half round trip in
 * microseconds on rank 0 (0 on rank 1). */
static double pingpong(char *buf, size_t n, int me, long iters, long warmup) {
    const int peer = 1 - me;
    double t0 = 0;
    for (long i = 0; i < warmup + iters; ++i) {
        if (i == warmup) t0 = now_us();
        if (me == 0) {
            pp_send(buf, n, peer);
            pp_recv(buf, n, peer);
        } else {
            pp_recv(buf, n, peer);
            pp_send(buf, n, peer);
        }
    }
    return me == 0 ? (now_us() - t0) / (2.0 * (double)iters) : 0;
}

static int run_lat(int argc, char **argv, int me) {
    size_t sizes[16] = {8, 1u << 20};
    int nsizes = 2;
    if (argc > 2) {
        nsizes = 0;
        for (int i = 2; i < argc && nsizes < 16; ++i) sizes[nsizes++] = (size_t)atol(argv[i]);
    }
    size_t max = 0;
    for (int i = 0; i < nsizes; ++i) max = sizes[i] > max ? sizes[i] : max;
    char *buf = malloc(max ? max : 1);
    if (!buf) die("malloc", "out of memory");
    memset(buf, me + 1, max);
    if (me == 0) printf("# %s ping-pong, half round trip (OSU method)\n# bytes usec\n", PP_NAME);
    for (int i = 0; i < nsizes; ++i) {
        const int large = sizes[i] > kLargeAbove;
        const long iters = env_long("PP_ITERS", large ? kItersLarge : kItersSmall);
        const long warmup = env_long("PP_WARMUP", large ? kWarmupLarge : kWarmupSmall);
        const double us = pingpong(buf, sizes[i], me, iters, warmup);
        if (me == 0) printf("%zu %.3f\n", sizes[i], us);
    }
    free(buf);
    return 0;
}

/* The two counters rank 0 and rank 1 share through FLAG_FILE (>= 16 bytes):
 * [0] pongs rank 1 has sent, [1] pings rank 0's send has returned from. */
static _Atomic uint64_t *map_flags(const char *path) {
    int fd = open(path, O_RDWR);
    void *p = fd < 0 ? MAP_FAILED : mmap(NULL, 2 * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) die(path, "cannot map the flag file (16 bytes or more)");
    close(fd);
    return (_Atomic uint64_t *)p;
}

static int run_icount(int argc, char **argv, int me) {
    const long iters = argc > 3 ? atol(argv[2]) : 0;
    if (iters <= 0) die("icount", "usage: icount ITERS FLAG_FILE");
    _Atomic uint64_t *flags = map_flags(argv[3]);
    _Atomic uint64_t *pong_sent = &flags[0], *ping_done = &flags[1];
    char buf[kIcountSize] = {0};
    for (long i = 0; i < kIcountWarmup + iters; ++i) {
        const int counted = i >= kIcountWarmup;
        if (me == 0) {
            buf[0] = (char)i;
            if (counted) CALLGRIND_TOGGLE_COLLECT;
            pp_send(buf, kIcountSize, 1);
            if (counted) CALLGRIND_TOGGLE_COLLECT;
            icount_set_posted(ping_done, i);
            icount_wait_posted(pong_sent, i);
            if (counted) CALLGRIND_TOGGLE_COLLECT;
            pp_recv(buf, kIcountSize, 1);
            if (counted) CALLGRIND_TOGGLE_COLLECT;
            if (buf[0] != (char)(i + 1)) die("icount", "the pong carried the wrong byte");
        } else {
            pp_recv(buf, kIcountSize, 0);
            buf[0] = (char)(buf[0] + 1);
            /* Rank 0 runs under callgrind, far slower: a pong sent at once
             * would often arrive while rank 0 is still inside its send, whose
             * progress pass would then take it, and the count would depend
             * on timing. Waiting until rank 0's send has returned keeps the
             * work of every iteration the same. */
            icount_wait_posted(ping_done, i);
            pp_send(buf, kIcountSize, 0);
            icount_set_posted(pong_sent, i);
        }
    }
    if (me == 0) printf("%ld\n", iters);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "lat") != 0 && strcmp(mode, "icount") != 0) {
        fprintf(stderr, "usage: mpi-overhead-" PP_NAME " lat [SIZE...] | icount ITERS FLAG_FILE (2 ranks)\n");
        return 2;
    }
    pp_init(&argc, &argv);
    int size = 0;
    const int me = pp_rank(&size);
    if (size != 2) die("mpi-overhead", "needs exactly 2 ranks");
    const int rc = mode[0] == 'l' ? run_lat(argc, argv, me) : run_icount(argc, argv, me);
    pp_finalize();
    return rc;
}
