/* Ping-pong between ranks 0 and 1 with MPI_Send/MPI_Recv: ITERATIONS round
 * trips, so each of the two ranks makes ITERATIONS sends and receives (what
 * the profiling library must count). Checks the payload. */
#include <mpi.h>
#include <stdio.h>

enum { ITERATIONS = 10, WORDS = 16 };

int main(int argc, char **argv)
{
    int rank, size, bad = 0;
    int buf[WORDS];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) fprintf(stderr, "pingpong: needs 2 ranks, not %d\n", size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        /* The test checks that this is rdmx's library, not MPICH's. */
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(lib, &len);
        printf("library: %s\n", lib);
        fflush(stdout);
    }
    for (int it = 0; it < ITERATIONS; it++) {
        if (rank == 0) {
            for (int i = 0; i < WORDS; i++) buf[i] = it * WORDS + i;
            MPI_Send(buf, WORDS, MPI_INT, 1, it, MPI_COMM_WORLD);
            MPI_Recv(buf, WORDS, MPI_INT, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < WORDS; i++) bad |= buf[i] != -(it * WORDS + i);
        } else {
            MPI_Recv(buf, WORDS, MPI_INT, 0, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int i = 0; i < WORDS; i++) buf[i] = -buf[i];
            MPI_Send(buf, WORDS, MPI_INT, 0, it, MPI_COMM_WORLD);
        }
    }
    if (bad) fprintf(stderr, "pingpong: rank %d: wrong payload\n", rank);
    MPI_Finalize();
    return bad;
}
