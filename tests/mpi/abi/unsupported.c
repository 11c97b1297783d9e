/* An MPICH-compiled program that calls a function outside the supported
 * set (MPI_Open_port: dynamic process management).
 *   unsupported return  MPI_ERRORS_RETURN on MPI_COMM_WORLD: the call must
 *                       return an error of class MPI_ERR_UNSUPPORTED_OPERATION
 *                       and the program goes on (exit 0 on success)
 *   unsupported fatal   the default MPI_ERRORS_ARE_FATAL: the job must abort
 *                       with a one-line message naming the call (checked by
 *                       the test's expectations on the output and exit code)
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int check_return(int rank)
{
    char port[MPI_MAX_PORT_NAME];
    char text[MPI_MAX_ERROR_STRING];
    int cls = -1, len = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, text, &len);
    printf("rank %d: MPI_Open_port returned %d (class %d): %s\n", rank, rc, cls, text);
    if (rc == MPI_SUCCESS || cls != MPI_ERR_UNSUPPORTED_OPERATION) {
        fprintf(stderr, "rank %d: expected error class %d (MPI_ERR_UNSUPPORTED_OPERATION), got %d\n", rank,
                MPI_ERR_UNSUPPORTED_OPERATION, cls);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank = 0;
    int fatal = argc > 1 && strcmp(argv[1], "fatal") == 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        /* The test checks that this is rdmx's library, not MPICH's. */
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(lib, &len);
        printf("library: %s\n", lib);
        fflush(stdout);
    }
    if (fatal) {
        char port[MPI_MAX_PORT_NAME];
        MPI_Open_port(MPI_INFO_NULL, port);
        printf("rank %d: MPI_Open_port returned under MPI_ERRORS_ARE_FATAL\n", rank);
        MPI_Finalize();
        return 3;   /* the test expects a non-zero exit either way, but say which */
    }
    int bad = check_return(rank);
    MPI_Finalize();
    return bad;
}
