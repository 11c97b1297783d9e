// Built by rdmx-mpicxx in the mpi.tools tests: our C header from C++.
#include <mpi.h>

#include <cstdio>

int main(int argc, char **argv) {
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) return 1;
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    // Everyone sends its rank to the next and checks what came from the previous.
    const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int got = -1;
    MPI_Status st;
    MPI_Sendrecv(&rank, 1, MPI_INT, next, 1, &got, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, &st);
    const bool ok = got == prev && st.MPI_SOURCE == prev && st.MPI_TAG == 1;
    std::printf("hello from C++ rank %d of %d: got %d %s\n", rank, size, got, ok ? "ok" : "WRONG");
    MPI_Finalize();
    return ok ? 0 : 1;
}
