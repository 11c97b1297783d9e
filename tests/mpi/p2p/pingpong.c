/* The MPI layer's overhead over rdmx: the same blocking ping-pong loop
 * through MPI_Send/MPI_Recv (mode "mpi": MPI_Init, MPI_COMM_WORLD) or
 * through rdmx_send/rdmx_recv (mode "rdmx": rdmx_init alone, at the thread
 * level MPI_Init asks for), one context per run so nothing else polls.
 * Prints the best of `rounds` rounds, one-way time per message.
 * Usage: pingpong mpi|rdmx [bytes [iterations [rounds]]]. Two ranks. */
#include <rdmx/rdmx.h>
#include <string.h>

#include "../check.h"

static int g_rdmx_mode;
static rdmx_context_h g_ctx;

static void send_msg(char *buf, int len, int peer)
{
    if (g_rdmx_mode) CHECK_EQ(rdmx_send(g_ctx, buf, (size_t)len, peer, 1), RDMX_OK);
    else OK(MPI_Send(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD));
}

static void recv_msg(char *buf, int len, int peer)
{
    if (g_rdmx_mode) CHECK_EQ(rdmx_recv(g_ctx, buf, (size_t)len, peer, 1, NULL), RDMX_OK);
    else OK(MPI_Recv(buf, len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static double one_round(char *buf, int len, int iters)
{
    int peer = 1 - g_rank;
    double t0 = rdmx_wtime();
    for (int i = 0; i < iters; ++i) {
        if (g_rank == 0) {
            send_msg(buf, len, peer);
            recv_msg(buf, len, peer);
        } else {
            recv_msg(buf, len, peer);
            send_msg(buf, len, peer);
        }
    }
    return (rdmx_wtime() - t0) / iters / 2 * 1e6;
}

int main(int argc, char **argv)
{
    int size = 0;
    if (argc < 2 || (strcmp(argv[1], "mpi") != 0 && strcmp(argv[1], "rdmx") != 0)) {
        fprintf(stderr, "usage: pingpong mpi|rdmx [bytes [iterations [rounds]]]\n");
        return 2;
    }
    g_rdmx_mode = strcmp(argv[1], "rdmx") == 0;
    int len = argc > 2 ? atoi(argv[2]) : 8, iters = argc > 3 ? atoi(argv[3]) : 20000;
    int rounds = argc > 4 ? atoi(argv[4]) : 5;
    if (g_rdmx_mode) {
        rdmx_config_t cfg;
        rdmx_config_init(&cfg);
        cfg.threads = getenv("RDMX_THREADS") ? RDMX_THREADS_DEFAULT : RDMX_THREADS_SINGLE;
        CHECK_EQ(rdmx_init(&cfg, &g_ctx), RDMX_OK);
        g_rank = rdmx_rank(g_ctx);
        size = rdmx_size(g_ctx);
    } else {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    }
    CHECK_EQ(size, 2);
    char *buf = calloc(1, (size_t)len + 1);
    double best = 1e30;
    one_round(buf, len, iters / 10 + 1);   /* warm up */
    for (int r = 0; r < rounds; ++r) {
        double t = one_round(buf, len, iters);
        if (t < best) best = t;
    }
    if (g_rank == 0) printf("pingpong %s %d B: %.3f us\n", argv[1], len, best);
    free(buf);
    if (g_rdmx_mode) CHECK_EQ(rdmx_finalize(g_ctx), RDMX_OK);
    else MPI_Finalize();
    return 0;
}
