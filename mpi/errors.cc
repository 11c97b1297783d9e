// Error handling of the MPI layer: error handlers (MPI_ERRORS_ARE_FATAL,
// MPI_ERRORS_RETURN, MPI_ERRORS_ABORT and user handlers), the mapping of
// rdmx statuses to MPI error classes, and the strings.
//
// Calls return error classes as their codes (MPI allows a class to be its
// own code), so a program that compares a return value with MPI_ERR_TRUNCATE
// works as well as one that asks MPI_Error_class. The detail of the last
// error raised in this thread ("invalid rank 7 in a communicator of size 4")
// is kept and MPI_Error_string appends it to the class's text.
#include "errors.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "comm.h"
#include "state.h"

namespace rdmx::mpi {
namespace {

constexpr int kDetailMax = 384;
constexpr MPI_Errhandler kUserKind = 0x94000000;   // MPICH's indirect errhandler kind
constexpr int kMaxUserHandlers = 1024;

thread_local int t_last_code = MPI_SUCCESS;
thread_local char t_last_detail[kDetailMax];

// User error handlers: slots are never reused, so a freed handler still
// attached to a communicator keeps working (MPI: freeing marks it for
// deallocation once nothing refers to it).
struct UserHandlers {
    std::mutex mu;
    std::vector<MPI_Comm_errhandler_function *> fns;
};
UserHandlers &user_handlers()
{
    static UserHandlers h;
    return h;
}

MPI_Comm_errhandler_function *user_fn(MPI_Errhandler eh)
{
    if ((eh & ~0xffff) != kUserKind) return nullptr;
    auto &u = user_handlers();
    std::lock_guard<std::mutex> lock(u.mu);
    size_t idx = static_cast<size_t>(eh & 0xffff);
    return idx < u.fns.size() ? u.fns[idx] : nullptr;
}

struct ClassText { int cls; const char *text; };
constexpr ClassText kClassTexts[] = {
    {MPI_SUCCESS, "no error"},
    {MPI_ERR_BUFFER, "invalid buffer pointer"},
    {MPI_ERR_COUNT, "invalid count argument"},
    {MPI_ERR_TYPE, "invalid datatype"},
    {MPI_ERR_TAG, "invalid tag"},
    {MPI_ERR_COMM, "invalid communicator"},
    {MPI_ERR_RANK, "invalid rank"},
    {MPI_ERR_ROOT, "invalid root"},
    {MPI_ERR_GROUP, "invalid group"},
    {MPI_ERR_OP, "invalid reduction operation"},
    {MPI_ERR_TOPOLOGY, "invalid topology"},
    {MPI_ERR_DIMS, "invalid dimension argument"},
    {MPI_ERR_ARG, "invalid argument"},
    {MPI_ERR_UNKNOWN, "unknown error"},
    {MPI_ERR_TRUNCATE, "message truncated"},
    {MPI_ERR_OTHER, "other error"},
    {MPI_ERR_INTERN, "internal error"},
    {MPI_ERR_IN_STATUS, "error code in status"},
    {MPI_ERR_PENDING, "pending request"},
    {MPI_ERR_REQUEST, "invalid request"},
    {MPI_ERR_INFO, "invalid info object"},
    {MPI_ERR_KEYVAL, "invalid attribute key"},
    {MPI_ERR_NO_MEM, "out of memory"},
    {MPI_ERR_NOT_SAME, "arguments differ between processes"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "operation not supported"},
    {MPI_ERR_SIZE, "invalid size"},
    {MPI_ERR_PROC_ABORTED, "a process aborted"},
    {MPI_ERR_VALUE_TOO_LARGE, "value too large"},
    {MPIX_ERR_PROC_FAILED, "a process failed"},
    {MPIX_ERR_REVOKED, "communicator revoked"},
};

const char *class_text(int cls)
{
    for (const auto &c : kClassTexts)
        if (c.cls == cls) return c.text;
    return nullptr;
}

int rank_for_log()
{
    return running() ? rdmx_rank(state().world) : -1;
}

[[noreturn]] void die(MPI_Comm comm, int code, const char *call, const char *detail)
{
    const char *text = class_text(code);
    std::fprintf(stderr, "rdmx-mpi: rank %d: %s: %s (%s, error class %d); aborting the job "
                 "(set MPI_ERRORS_RETURN on the communicator to handle errors)\n",
                 rank_for_log(), call, detail, text ? text : "error", code);
    std::fflush(nullptr);   // what the program printed must not die with it
    (void)comm;
    if (running()) rdmx_abort(state().world, code);
    std::_Exit(code & 255 ? code & 255 : 1);
}

}  // namespace

int err_raise(MPI_Comm comm, int code, const char *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(t_last_detail, sizeof t_last_detail, fmt, ap);
    va_end(ap);
    t_last_code = code;

    MPI_Errhandler eh = MPI_ERRORS_ARE_FATAL;
    MPI_Comm where = comm;
    Comm *c = running() ? comm_get(comm) : nullptr;
    if (!c && running()) {
        where = MPI_COMM_WORLD;
        c = comm_get(MPI_COMM_WORLD);
    }
    if (c) eh = c->errhandler;
    if (eh == MPI_ERRORS_RETURN) return code;
    if (MPI_Comm_errhandler_function *fn = user_fn(eh)) {
        fn(&where, &code);
        return code;
    }
    die(where, code, call, t_last_detail);
}

int err_from_rdmx(rdmx_status_t st)
{
    switch (st) {
    case RDMX_OK: return MPI_SUCCESS;
    case RDMX_INPROGRESS: return MPI_ERR_PENDING;
    case RDMX_ERR_INVALID_ARG: return MPI_ERR_ARG;
    case RDMX_ERR_TRUNCATE: return MPI_ERR_TRUNCATE;
    case RDMX_ERR_PEER_LOST: return MPIX_ERR_PROC_FAILED;
    case RDMX_ERR_NO_MEMORY: return MPI_ERR_NO_MEM;
    case RDMX_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case RDMX_ERR_CANCELED: return MPI_ERR_OTHER;
    case RDMX_ERR_TIMEOUT:
    case RDMX_ERR_CONNECT:
    case RDMX_ERR_DEVICE:
    case RDMX_ERR_NO_DEVICE:
    case RDMX_ERR_PROTOCOL: return MPI_ERR_OTHER;
    case RDMX_ERR_INTERNAL: return MPI_ERR_INTERN;
    }
    return MPI_ERR_UNKNOWN;
}

int err_unsupported(const char *call)
{
    // Files default to MPI_ERRORS_RETURN (MPI 4.0, 14.7): a program that
    // tries MPI_File_open and falls back to POSIX I/O (HDF5 does) must get
    // the error back instead of losing the job.
    if (std::strncmp(call, "MPI_File_", 9) == 0) {
        std::snprintf(t_last_detail, sizeof t_last_detail, "%s is not supported by rdmx's MPI library", call);
        t_last_code = MPI_ERR_UNSUPPORTED_OPERATION;
        return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return err_raise(MPI_COMM_WORLD, MPI_ERR_UNSUPPORTED_OPERATION, call,
                     "not supported by rdmx's MPI library (docs/mpi.md lists what is)");
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

namespace {

bool valid_errhandler(MPI_Errhandler eh)
{
    return eh == MPI_ERRORS_ARE_FATAL || eh == MPI_ERRORS_RETURN || eh == MPI_ERRORS_ABORT ||
           user_fn(eh) != nullptr;
}

int set_handler(const char *call, MPI_Comm comm, MPI_Errhandler eh)
{
    if (int rc = require_running(call)) return rc;
    Comm *c = comm_get(comm);
    if (!c) return err_raise(MPI_COMM_WORLD, MPI_ERR_COMM, call, "invalid communicator %#x", comm);
    if (!valid_errhandler(eh)) return err_raise(comm, MPI_ERR_ARG, call, "invalid error handler %#x", eh);
    c->errhandler = eh;
    return MPI_SUCCESS;
}

int get_handler(const char *call, MPI_Comm comm, MPI_Errhandler *eh)
{
    if (int rc = require_running(call)) return rc;
    Comm *c = comm_get(comm);
    if (!c) return err_raise(MPI_COMM_WORLD, MPI_ERR_COMM, call, "invalid communicator %#x", comm);
    *eh = c->errhandler;
    return MPI_SUCCESS;
}

int create_handler(const char *call, MPI_Comm_errhandler_function *fn, MPI_Errhandler *eh)
{
    if (!fn) return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "NULL handler function");
    auto &u = user_handlers();
    std::lock_guard<std::mutex> lock(u.mu);
    if (u.fns.size() >= kMaxUserHandlers)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "more than %d error handlers", kMaxUserHandlers);
    *eh = kUserKind | static_cast<int>(u.fns.size());
    u.fns.push_back(fn);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Comm_set_errhandler)
RDMXMPI_API int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler eh)
{
    return set_handler("MPI_Comm_set_errhandler", comm, eh);
}

RDMXMPI_WEAK(Errhandler_set)
RDMXMPI_API int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler eh)
{
    return set_handler("MPI_Errhandler_set", comm, eh);
}

RDMXMPI_WEAK(Comm_get_errhandler)
RDMXMPI_API int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *eh)
{
    return get_handler("MPI_Comm_get_errhandler", comm, eh);
}

RDMXMPI_WEAK(Errhandler_get)
RDMXMPI_API int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *eh)
{
    return get_handler("MPI_Errhandler_get", comm, eh);
}

RDMXMPI_WEAK(Comm_create_errhandler)
RDMXMPI_API int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *eh)
{
    return create_handler("MPI_Comm_create_errhandler", fn, eh);
}

RDMXMPI_WEAK(Errhandler_create)
RDMXMPI_API int PMPI_Errhandler_create(MPI_Handler_function *fn, MPI_Errhandler *eh)
{
    return create_handler("MPI_Errhandler_create", fn, eh);
}

RDMXMPI_WEAK(Errhandler_free)
RDMXMPI_API int PMPI_Errhandler_free(MPI_Errhandler *eh)
{
    if (!eh || !valid_errhandler(*eh))
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Errhandler_free", "invalid error handler");
    *eh = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Comm_call_errhandler)
RDMXMPI_API int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    if (int rc = require_running("MPI_Comm_call_errhandler")) return rc;
    err_raise(comm, errorcode, "MPI_Comm_call_errhandler", "error %d raised by the application", errorcode);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Error_class)
RDMXMPI_API int PMPI_Error_class(int errorcode, int *errorclass)
{
    if (!class_text(errorcode))
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_class", "unknown error code %d", errorcode);
    *errorclass = errorcode;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Error_string)
RDMXMPI_API int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
    const char *text = class_text(errorcode);
    if (!text)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_string", "unknown error code %d", errorcode);
    int n = errorcode == t_last_code && errorcode != MPI_SUCCESS
                ? std::snprintf(string, MPI_MAX_ERROR_STRING, "%s: %s", text, t_last_detail)
                : std::snprintf(string, MPI_MAX_ERROR_STRING, "%s", text);
    *resultlen = n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1;
    return MPI_SUCCESS;
}
