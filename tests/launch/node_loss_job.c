/*
 * A whole node lost mid-transfer (tests/launch/two_node.sh): launched over
 * two nodes, the ranks of the second node (SLURM_NODEID 1) stream
 * rendezvous-sized messages to every rank of the first until their node is
 * powered off; the first node's ranks receive from each of them in turn.
 * Each survivor must see every lost rank's receive fail with
 * RDMX_ERR_PEER_LOST within BOUND seconds of the last message that
 * arrived from it, then still exchange with the other survivors and
 * finalize. Rank 0 prints "node_loss: streaming" once data flows (the cue
 * to power the node off) and every survivor one verdict line.
 *
 *   node_loss_job BOUND_SECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdmx/rdmx.h>

enum { kTagStream = 7, kTagSurvivor = 8, kMsgBytes = 256 * 1024, kMaxRanks = 64 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v != NULL ? atoi(v) : dflt;
}

/* The second node's ranks: stream to every rank of the first until killed. */
static void stream_forever(rdmx_context_h ctx, const int *node_of, int size, char *buf) {
    for (;;)
        for (int p = 0; p < size; ++p)
            if (node_of[p] == 0 && rdmx_send(ctx, buf, kMsgBytes, p, kTagStream) != RDMX_OK) return;
}

/* The first node's ranks: receive from each streamer until every one is lost. */
static int receive_until_lost(rdmx_context_h ctx, int rank, const int *node_of, int size, char *buf, double bound) {
    double last_ok[kMaxRanks], lost_after[kMaxRanks];
    int alive = 0, lost = 0, bad = 0, said = 0;
    for (int p = 0; p < size; ++p) {
        last_ok[p] = now_s();
        lost_after[p] = -1;
        alive += node_of[p] == 1;
    }
    while (lost < alive) {
        for (int p = 0; p < size; ++p) {
            if (node_of[p] != 1 || lost_after[p] >= 0) continue;
            rdmx_status_t st = rdmx_recv(ctx, buf, kMsgBytes, p, kTagStream, NULL);
            if (st == RDMX_OK) {
                last_ok[p] = now_s();
                if (rank == 0 && !said) {
                    printf("node_loss: streaming\n");
                    fflush(stdout);
                    said = 1;
                }
                continue;
            }
            lost_after[p] = now_s() - last_ok[p];
            ++lost;
            if (st != RDMX_ERR_PEER_LOST || lost_after[p] > bound) {
                fprintf(stderr, "node_loss: FAIL rank %d: the receive from rank %d ended with %s after %.1f s "
                        "(want PEER_LOST within %.0f s)\n", rank, p, rdmx_strerror(st), lost_after[p], bound);
                bad = 1;
            }
        }
    }
    double worst = 0;
    for (int p = 0; p < size; ++p)
        if (lost_after[p] > worst) worst = lost_after[p];
    printf("node_loss: rank %d lost %d rank(s) of the powered-off node, the last %.1f s after its last message "
           "(bound %.0f s)\n", rank, lost, worst, bound);
    return bad;
}

/* The survivors still talk: each sends its rank to every other survivor. */
static int survivors_exchange(rdmx_context_h ctx, int rank, const int *node_of, int size) {
    int bad = 0;
    for (int p = 0; p < size; ++p) {
        if (node_of[p] != 0 || p == rank) continue;
        int got = -1;
        rdmx_request_h r = NULL;
        rdmx_status_t st = rdmx_irecv(ctx, &got, sizeof got, p, kTagSurvivor, &r);
        if (st == RDMX_OK) st = rdmx_send(ctx, &rank, sizeof rank, p, kTagSurvivor);
        if (st == RDMX_OK) st = rdmx_wait(&r, NULL);
        if (st != RDMX_OK || got != p) {
            fprintf(stderr, "node_loss: FAIL rank %d: survivor exchange with rank %d: %s (got %d)\n", rank, p,
                    rdmx_strerror(st), got);
            bad = 1;
        }
    }
    return bad;
}

int main(int argc, char **argv) {
    const double bound = argc > 1 ? atof(argv[1]) : 0;
    if (bound <= 0) {
        fprintf(stderr, "usage: node_loss_job BOUND_SECONDS\n");
        return 2;
    }
    rdmx_context_h ctx = NULL;
    if (rdmx_init(NULL, &ctx) != RDMX_OK) return 1;
    const int rank = rdmx_rank(ctx), size = rdmx_size(ctx);
    int node_of[kMaxRanks], mine = env_int("SLURM_NODEID", -1);
    if (size > kMaxRanks || mine < 0 || mine > 1) {
        fprintf(stderr, "node_loss: FAIL: needs 2 nodes (SLURM_NODEID 0 or 1) and at most %d ranks\n", kMaxRanks);
        return 1;
    }
    /* Everyone learns everyone's node: rank 0 gathers and sends the map out. */
    if (rank == 0) {
        node_of[0] = mine;
        for (int p = 1; p < size; ++p)
            if (rdmx_recv(ctx, &node_of[p], sizeof(int), p, kTagSurvivor, NULL) != RDMX_OK) return 1;
        for (int p = 1; p < size; ++p)
            if (rdmx_send(ctx, node_of, sizeof(int) * (size_t)size, p, kTagSurvivor) != RDMX_OK) return 1;
    } else if (rdmx_send(ctx, &mine, sizeof mine, 0, kTagSurvivor) != RDMX_OK ||
               rdmx_recv(ctx, node_of, sizeof(int) * (size_t)size, 0, kTagSurvivor, NULL) != RDMX_OK) {
        return 1;
    }
    char *buf = malloc(kMsgBytes);
    if (buf == NULL) return 1;
    memset(buf, rank, kMsgBytes);
    if (mine == 1) {
        stream_forever(ctx, node_of, size, buf);
        return 1; /* only a send failure ends the stream: the node was meant to die first */
    }
    int bad = receive_until_lost(ctx, rank, node_of, size, buf, bound);
    bad |= survivors_exchange(ctx, rank, node_of, size);
    if (!bad) printf("node_loss: rank %d: survivors exchange OK\n", rank);
    const double t0 = now_s();
    rdmx_status_t st = rdmx_finalize(ctx);
    printf("node_loss: rank %d finalized in %.1f s (%s)\n", rank, now_s() - t0, rdmx_strerror(st));
    free(buf);
    return bad;
}
