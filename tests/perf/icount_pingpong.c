/* Instructions per 8-byte ping-pong iteration inside the library, counted by
 * callgrind (the development hosts have no hardware counters, and a count is
 * exact where a time is noise). Rank 0 runs under callgrind with collection
 * off (--collect-atstart=no) and turns it on only around its library calls:
 * send the ping, post the receive, wait for the pong. Rank 1 runs natively
 * and, once its pong is posted, bumps a counter in a small file both map
 * (FLAG_FILE); rank 0 waits for that counter, uncounted, before it waits for
 * the pong. So the wait finds the pong on its first progress pass, and the
 * count holds the work of a round trip, never the spinning of a wait, on a
 * loaded host too.
 * Counting starts after a warm-up (icount_flag.h).
 *
 * Usage (under mpirun, two ranks, FLAG_FILE an existing file of >= 8 bytes):
 *   icount_pingpong ITERS FLAG_FILE
 * scripts/perf/icount.sh runs it at two counts and divides the difference. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

#include "icount_flag.h"

#include "rdmx/rdmx.h"

enum { kMsg = 8, kTag = 7 };

static void check(rdmx_status_t st, const char *what) {
    if (st != RDMX_OK) {
        fprintf(stderr, "icount_pingpong: %s: %s\n", what, rdmx_strerror(st));
        exit(1);
    }
}

static void ping(rdmx_context_h ctx, long i, _Atomic uint64_t *posted, int phase) {
    const int counted = phase == ICOUNT_PHASE_COUNTED;
    char out[kMsg] = {(char)i, (char)phase}, in[kMsg] = {0};
    rdmx_request_h r = NULL;
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    check(rdmx_send(ctx, out, kMsg, 1, kTag), "send");
    check(rdmx_irecv(ctx, in, kMsg, 1, kTag, &r), "irecv");
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    icount_wait_posted(posted, i);
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    check(rdmx_wait(&r, NULL), "wait");
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    if (in[0] != (char)i) {
        fprintf(stderr, "icount_pingpong: pong %ld carried %d\n", i, in[0]);
        exit(1);
    }
}

int main(int argc, char **argv) {
    long iters = argc > 2 ? atol(argv[1]) : 0;
    if (iters <= 0) {
        fprintf(stderr, "usage: icount_pingpong ITERS FLAG_FILE (under mpirun, 2 ranks)\n");
        return 2;
    }
    _Atomic uint64_t *posted = icount_map_flag(argv[2]);
    rdmx_context_h ctx = NULL;
    check(rdmx_init(NULL, &ctx), "rdmx_init");
    if (rdmx_size(ctx) != 2) {
        fprintf(stderr, "icount_pingpong: needs exactly 2 ranks, got %d\n", rdmx_size(ctx));
        return 2;
    }
    const int me = rdmx_rank(ctx);
    long i = 0;
    if (me == 0) {
        const long long t0 = icount_mono_ns();
        for (int phase = ICOUNT_PHASE_WARM; phase != ICOUNT_PHASE_LAST_WARM; ++i) {
            phase = icount_warm_phase(i, t0);
            ping(ctx, i, posted, phase);
        }
        CALLGRIND_START_INSTRUMENTATION; /* icount.sh runs callgrind with --instr-atstart=no */
        for (long n = 0; n < iters; ++n, ++i) ping(ctx, i, posted, ICOUNT_PHASE_COUNTED);
    } else {
        /* Echo until the last warm-up ping, then the counted ones. */
        for (long left = -1; left != 0; ++i) {
            char buf[kMsg];
            check(rdmx_recv(ctx, buf, kMsg, 0, kTag, NULL), "recv");
            check(rdmx_send(ctx, buf, kMsg, 0, kTag), "send");
            icount_set_posted(posted, i);
            left = icount_pongs_left(left, buf[1], iters);
        }
    }
    check(rdmx_finalize(ctx), "rdmx_finalize");
    if (me == 0) printf("%ld\n", iters);
    return 0;
}
