/*
 * A job for launcher tests: started by srun, sbatch or mpiexec, each rank
 * initialises rdmx through whatever bootstrap the launcher offers, checks
 * its rank and size against the launcher's own variables, passes a token
 * around the ring in both directions (every rank talks to two peers, over
 * whichever transport serves them) and reports to rank 0, which prints one
 * line for the job. Exit 0 only when every check on every rank held.
 *
 *   launch_job RANK_VAR SIZE_VAR      e.g. SLURM_PROCID SLURM_NTASKS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdmx/rdmx.h>

enum { kTagRight = 1, kTagLeft = 2, kTagReport = 3 };

static int env_int(const char *name) {
    const char *v = name != NULL ? getenv(name) : NULL;
    return v != NULL ? atoi(v) : -1;
}

static int fail(int rank, const char *what, rdmx_status_t st) {
    fprintf(stderr, "launch_job: FAIL rank %d: %s: %s\n", rank, what, rdmx_strerror(st));
    return 1;
}

/* One lap each way: the token arriving from the left must be the left
 * neighbour's rank, the one from the right the right neighbour's. */
static int ring(rdmx_context_h ctx, int rank, int size) {
    const int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int64_t from_left = -1, from_right = -1, me = rank;
    rdmx_request_h r[2] = {NULL, NULL};
    rdmx_status_t st = rdmx_irecv(ctx, &from_left, sizeof from_left, left, kTagRight, &r[0]);
    if (st == RDMX_OK) st = rdmx_irecv(ctx, &from_right, sizeof from_right, right, kTagLeft, &r[1]);
    if (st == RDMX_OK) st = rdmx_send(ctx, &me, sizeof me, right, kTagRight);
    if (st == RDMX_OK) st = rdmx_send(ctx, &me, sizeof me, left, kTagLeft);
    if (st == RDMX_OK) st = rdmx_waitall(2, r, NULL);
    if (st != RDMX_OK) return fail(rank, "ring", st);
    if (from_left != left || from_right != right) {
        fprintf(stderr, "launch_job: FAIL rank %d: ring tokens %lld from the left (want %d), %lld from the right "
                "(want %d)\n", rank, (long long)from_left, left, (long long)from_right, right);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: launch_job RANK_VAR SIZE_VAR\n");
        return 2;
    }
    rdmx_context_h ctx = NULL;
    rdmx_status_t st = rdmx_init(NULL, &ctx);
    if (st != RDMX_OK) return fail(env_int(argv[1]), "rdmx_init", st);
    const int rank = rdmx_rank(ctx), size = rdmx_size(ctx);
    int bad = 0;
    if (rank != env_int(argv[1]) || size != env_int(argv[2])) {
        fprintf(stderr, "launch_job: FAIL rank %d of %d: the launcher says %s=%d %s=%d\n", rank, size, argv[1],
                env_int(argv[1]), argv[2], env_int(argv[2]));
        bad = 1;
    }
    if (size > 1 && ring(ctx, rank, size) != 0) bad = 1;
    /* Rank 0 hears from everyone, so one line speaks for the whole job. */
    if (rank != 0) {
        st = rdmx_send(ctx, &bad, sizeof bad, 0, kTagReport);
        if (st != RDMX_OK) bad = fail(rank, "report", st);
    } else {
        for (int p = 1; p < size; ++p) {
            int theirs = 1;
            st = rdmx_recv(ctx, &theirs, sizeof theirs, p, kTagReport, NULL);
            if (st != RDMX_OK || theirs != 0) bad = 1;
        }
        char host[64] = "";
        (void)gethostname(host, sizeof host - 1);
        printf("launch_job: %d ranks on %s: %s\n", size, host, bad ? "FAIL" : "OK");
    }
    st = rdmx_finalize(ctx);
    if (st != RDMX_OK && !bad) bad = fail(rank, "rdmx_finalize", st);
    return bad;
}
