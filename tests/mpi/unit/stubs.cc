// Stand-ins for the modules the datatype files call but the unit test does
// not link: errors (err_raise records the last error and returns its class,
// as under MPI_ERRORS_RETURN) and the communicator table (MPI_COMM_WORLD alone).
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

// comm_get is inline over this table: MPI_COMM_WORLD's slot holds a Comm.
namespace comm_table {
namespace {
Comm g_world;
}
constinit std::atomic<Comm *> g_slots[kMaxComms] = {&g_world};
}  // namespace comm_table

}  // namespace rdmx::mpi

rdmx::mpi::LastError &test_last_error()
{
    static rdmx::mpi::LastError e;
    return e;
}
