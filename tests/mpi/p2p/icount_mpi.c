/* The MPI twin of tests/perf/icount_pingpong.c: instructions per 8-byte
 * ping-pong iteration through the MPI layer (MPI_Send, MPI_Irecv, MPI_Wait
 * on rank 0), counted by callgrind around the same calls, with the same
 * shared flag so the wait finds the pong at once. Compared with
 * icount_pingpong's count at RDMX_THREADS=single (what MPI_Init asks for),
 * the difference is the layer's cost per round trip. Counting starts after
 * the same warm-up (icount_flag.h).
 * Usage (two ranks under mpirun): icount_mpi ITERS FLAG_FILE */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

#include "icount_flag.h"

enum { kMsg = 8, kTag = 7 };

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "icount_mpi: %s failed: %d\n", what, rc);
        exit(1);
    }
}

static void ping(long i, _Atomic uint64_t *posted, int phase)
{
    const int counted = phase == ICOUNT_PHASE_COUNTED;
    char out[kMsg] = {(char)i, (char)phase}, in[kMsg] = {0};
    MPI_Request r = MPI_REQUEST_NULL;
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    check(MPI_Send(out, kMsg, MPI_BYTE, 1, kTag, MPI_COMM_WORLD), "send");
    check(MPI_Irecv(in, kMsg, MPI_BYTE, 1, kTag, MPI_COMM_WORLD, &r), "irecv");
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    icount_wait_posted(posted, i);
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    check(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait");
    if (counted) CALLGRIND_TOGGLE_COLLECT;
    if (in[0] != (char)i) {
        fprintf(stderr, "icount_mpi: pong %ld carried %d\n", i, in[0]);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    long iters = argc > 2 ? atol(argv[1]) : 0;
    int me = -1, size = 0;
    if (iters <= 0) {
        fprintf(stderr, "usage: icount_mpi ITERS FLAG_FILE (under mpirun, 2 ranks)\n");
        return 2;
    }
    _Atomic uint64_t *posted = icount_map_flag(argv[2]);
    check(MPI_Init(&argc, &argv), "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        fprintf(stderr, "icount_mpi: needs exactly 2 ranks, got %d\n", size);
        return 2;
    }
    long i = 0;
    if (me == 0) {
        const long long t0 = icount_mono_ns();
        for (int phase = ICOUNT_PHASE_WARM; phase != ICOUNT_PHASE_LAST_WARM; ++i) {
            phase = icount_warm_phase(i, t0);
            ping(i, posted, phase);
        }
        for (long n = 0; n < iters; ++n, ++i) ping(i, posted, ICOUNT_PHASE_COUNTED);
    } else {
        for (long left = -1; left != 0; ++i) {
            char buf[kMsg];
            check(MPI_Recv(buf, kMsg, MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "recv");
            check(MPI_Send(buf, kMsg, MPI_BYTE, 0, kTag, MPI_COMM_WORLD), "send");
            icount_set_posted(posted, i);
            left = icount_pongs_left(left, buf[1], iters);
        }
    }
    MPI_Finalize();
    if (me == 0) printf("%ld\n", iters);
    return 0;
}
