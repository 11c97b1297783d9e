/*
 * ring: pass a token around all ranks, a few laps, with the plain C API.
 *
 * Rank 0 starts the token; every rank adds its rank number and passes it to
 * the next rank; after each lap rank 0 checks the sum. Each rank posts its
 * receive (rdmx_irecv) before anything is sent, so the same code works for a
 * job of one rank, where rank 0 sends to itself (no RDMA device needed).
 *
 *     mpirun -np 4 ./ring          prints "ring: 4 ranks, token ... OK"
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rdmx/rdmx.h>

#define LAPS 3
#define TAG_TOKEN 1

static int g_rank = -1;

/* Print the failed call with rdmx's explanation and leave with status 1
 * (mpirun then stops the other ranks). */
static void check(rdmx_status_t st, const char *what) {
    if (st != RDMX_OK) {
        fprintf(stderr, "ring: rank %d: %s failed: %s\n", g_rank, what, rdmx_strerror(st));
        exit(1);
    }
}

int main(void) {
    rdmx_context_h ctx = NULL;
    check(rdmx_init(NULL, &ctx), "rdmx_init");
    g_rank = rdmx_rank(ctx);
    const int rank = g_rank, size = rdmx_size(ctx);
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;

    int64_t token = 0;
    for (int lap = 1; lap <= LAPS; ++lap) {
        int64_t in = -1;
        rdmx_request_h req = NULL;
        rdmx_msg_info_t info;
        check(rdmx_irecv(ctx, &in, sizeof in, prev, TAG_TOKEN, &req), "rdmx_irecv");
        if (rank == 0) {
            check(rdmx_send(ctx, &token, sizeof token, next, TAG_TOKEN), "rdmx_send");
            check(rdmx_wait(&req, &info), "rdmx_wait");
            token = in + rank;
            /* One lap adds 0 + 1 + ... + (size-1). */
            const int64_t want = (int64_t)lap * size * (size - 1) / 2;
            if (token != want || info.source != prev || info.length != sizeof token) {
                fprintf(stderr, "ring: lap %d: token %" PRId64 " from rank %d (%zu bytes), expected %" PRId64
                        " from rank %d\n", lap, token, info.source, info.length, want, prev);
                return 1;
            }
        } else {
            check(rdmx_wait(&req, &info), "rdmx_wait");
            token = in + rank;
            check(rdmx_send(ctx, &token, sizeof token, next, TAG_TOKEN), "rdmx_send");
        }
    }
    /* Everyone has sent its last token before anyone leaves. */
    check(rdmx_barrier(ctx), "rdmx_barrier");
    if (rank == 0) printf("ring: %d ranks, token %" PRId64 " after %d laps OK\n", size, token, LAPS);
    check(rdmx_finalize(ctx), "rdmx_finalize");
    return 0;
}
