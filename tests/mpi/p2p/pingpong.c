/* The MPI layer's overhead over rdmx: the same ping-pong loop through
 * MPI_Send/MPI_Recv and through rdmx_send/rdmx_recv (a second rdmx
 * context beside the one under MPI_COMM_WORLD), in alternating rounds so
 * drift hits both alike; prints the best round of each per size.
 * Usage: pingpong [iterations [rounds]]. Two ranks. */
#include <rdmx/rdmx.h>
#include <string.h>

#include "check.h"

static double mpi_round(char *buf, int len, int iters)
{
    int peer = 1 - g_rank;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        if (g_rank == 0) {
            MPI_Send(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / iters / 2 * 1e6;
}

static double rdmx_round(rdmx_context_h ctx, char *buf, int len, int iters)
{
    int peer = 1 - g_rank;
    double t0 = rdmx_wtime();
    for (int i = 0; i < iters; ++i) {
        if (g_rank == 0) {
            rdmx_send(ctx, buf, (size_t)len, peer, 1);
            rdmx_recv(ctx, buf, (size_t)len, peer, 1, NULL);
        } else {
            rdmx_recv(ctx, buf, (size_t)len, peer, 1, NULL);
            rdmx_send(ctx, buf, (size_t)len, peer, 1);
        }
    }
    return (rdmx_wtime() - t0) / iters / 2 * 1e6;
}

int main(int argc, char **argv)
{
    static const int sizes[] = {8, 1 << 20};
    int iters = argc > 1 ? atoi(argv[1]) : 20000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    int size;
    rdmx_context_h ctx = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_EQ(size, 2);
    CHECK_EQ(rdmx_init(NULL, &ctx), RDMX_OK);
    char *buf = calloc(1, 1 << 20);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        int len = sizes[s], n = len > 65536 ? iters / 100 + 10 : iters;
        double best_mpi = 1e30, best_rdmx = 1e30;
        mpi_round(buf, len, n / 10 + 1);   /* warm up both paths */
        rdmx_round(ctx, buf, len, n / 10 + 1);
        for (int r = 0; r < rounds; ++r) {
            double a = mpi_round(buf, len, n), b = rdmx_round(ctx, buf, len, n);
            if (a < best_mpi) best_mpi = a;
            if (b < best_rdmx) best_rdmx = b;
        }
        if (g_rank == 0)
            printf("pingpong %7d B: MPI %.3f us  rdmx %.3f us  overhead %+.1f%%\n", len, best_mpi, best_rdmx,
                   (best_mpi / best_rdmx - 1) * 100);
    }
    free(buf);
    CHECK_EQ(rdmx_finalize(ctx), RDMX_OK);
    MPI_Finalize();
    return 0;
}
