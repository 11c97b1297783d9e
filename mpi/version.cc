// MPI_Get_version and MPI_Get_library_version: callable before MPI_Init
// and after MPI_Finalize, as the standard allows.
#include <cstdio>

#include "abi.h"

RDMXMPI_WEAK(Get_version)
RDMXMPI_API int PMPI_Get_version(int *version, int *subversion)
{
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Get_library_version)
RDMXMPI_API int PMPI_Get_library_version(char *version, int *resultlen)
{
    // Say both what runs and which ABI it speaks: tools print this string.
    int n = std::snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                          "rdmx MPI %s (MPICH %s ABI, libmpich.so.12)", RDMX_MPI_VERSION, MPICH_VERSION);
    *resultlen = n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1;
    return MPI_SUCCESS;
}
