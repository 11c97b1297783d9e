/* Built by rdmx-mpicc in the mpi.tools tests: the smallest MPI program that
 * proves the wrapper's flags (our mpi.h, libmpich.so.12 found through the
 * rpath) and that messages move: every rank passes a token round a ring. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    int rank = 0, size = 0, len = 0;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_library_version(lib, &len);
    int token = rank, got = -1;
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Sendrecv(&token, 1, MPI_INT, next, 0, &got, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    const int ok = got == prev;
    printf("hello from rank %d of %d: token %d from rank %d %s (%s)\n", rank, size, got, prev,
           ok ? "ok" : "WRONG", lib);
    MPI_Finalize();
    return ok ? 0 : 1;
}
