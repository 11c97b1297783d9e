/* A profiling library in the MPI standard's sense: it defines MPI_Send,
 * MPI_Recv and MPI_Finalize, counts, and reaches the library through the
 * PMPI_ names. Linked before libmpich (or LD_PRELOADed), its definitions
 * must win over the library's weak MPI_ symbols. */
#include <mpi.h>
#include <stdio.h>

static long n_send, n_recv;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    n_send++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    n_recv++;
    return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
}

int MPI_Finalize(void)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("prof: rank %d: MPI_Send %ld MPI_Recv %ld\n", rank, n_send, n_recv);
    fflush(stdout);
    return PMPI_Finalize();
}
