// Stand-ins for the modules the datatype files call but the unit test does
// not link: errors (err_raise records the last error and returns its class,
// as under MPI_ERRORS_RETURN) and communicators (MPI_COMM_WORLD alone).
#include <cstdarg>
#include <cstdio>

#include "comm.h"
#include "errors.h"
#include "stubs.h"

namespace rdmx::mpi {

int err_raise(MPI_Comm, int code, const char *call, const char *fmt, ...)
{
    std::va_list ap;
    va_start(ap, fmt);
    char what[512];
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    test_last_error() = {code, call, what};
    return code;
}

Comm *comm_get(MPI_Comm handle)
{
    static Comm world;
    return handle == MPI_COMM_WORLD ? &world : nullptr;
}

}  // namespace rdmx::mpi

rdmx::mpi::LastError &test_last_error()
{
    static rdmx::mpi::LastError e;
    return e;
}
