// The init/finalize family: MPI_Init, MPI_Init_thread, MPI_Finalize,
// MPI_Initialized, MPI_Finalized, MPI_Query_thread, MPI_Is_thread_main,
// MPI_Abort, MPI_Get_processor_name, MPI_Wtime, MPI_Wtick.
//
// MPI_Init is rdmx_init with the launcher's bootstrap (PMIx from Open MPI's
// mpirun or srun --mpi=pmix, PMI-2/PMI-1 from srun --mpi=pmi2 or MPICH's
// mpiexec, a singleton otherwise), so an MPICH binary started by any of
// them joins one job. The thread level asked for becomes rdmx's: below
// MPI_THREAD_MULTIPLE the application promises not to call concurrently,
// which is exactly what RDMX_THREADS=single lets the engine exploit
// (unless RDMX_THREADS in the environment says otherwise).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "comm.h"
#include "errors.h"
#include "request.h"
#include "state.h"

namespace rdmx::mpi {

State &state()
{
    static State s;
    return s;
}

int require_running(const char *call)
{
    switch (state().phase.load(std::memory_order_acquire)) {
    case Phase::kRunning: return MPI_SUCCESS;
    case Phase::kBefore:
        return err_raise(MPI_COMM_NULL, MPI_ERR_OTHER, call, "called before MPI_Init");
    case Phase::kFinalized:
        return err_raise(MPI_COMM_NULL, MPI_ERR_OTHER, call, "called after MPI_Finalize");
    }
    return MPI_ERR_INTERN;
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

namespace {

std::thread::id g_main_thread;

// How long MPI_Finalize lets requests the application freed while active
// (MPI_Request_free, buffered sends) finish before rdmx cancels them: the
// matching receives were posted before finalize (the program's duty), so
// this is a bound for a broken program, not a wait a correct one sees.
constexpr double kDetachedDrainSeconds = 10.0;

rdmx_thread_level_t rdmx_threads_for(int level)
{
    if (std::getenv("RDMX_THREADS")) return RDMX_THREADS_DEFAULT;   // the user's word wins
    return level == MPI_THREAD_MULTIPLE ? RDMX_THREADS_MULTIPLE : RDMX_THREADS_SINGLE;
}

int do_init(const char *call, int required, int *provided)
{
    State &s = state();
    if (s.phase.load() != Phase::kBefore)
        return err_raise(MPI_COMM_NULL, MPI_ERR_OTHER, call,
                         s.phase.load() == Phase::kRunning ? "MPI is already initialised"
                                                           : "MPI cannot be initialised again after MPI_Finalize");
    if (required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "invalid thread level %d", required);
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.threads = rdmx_threads_for(required);
    // Every point-to-point entry point checks its arguments as MPI defines
    // (and reports MPI's error classes): rdmx need not check them again.
    // RDMX_CHECK_ARGS in the environment still wins, for debugging.
    if (std::getenv("RDMX_CHECK_ARGS") == nullptr) cfg.check_args = RDMX_CHECK_HANDLES;
    rdmx_context_h world = nullptr;
    rdmx_status_t st = rdmx_init(&cfg, &world);
    if (st != RDMX_OK)
        return err_raise(MPI_COMM_NULL, err_from_rdmx(st), call, "rdmx_init failed: %s (the log above says why)",
                         rdmx_strerror(st));
    s.world = world;
    s.thread_level = required;
    if (required == MPI_THREAD_MULTIPLE) g_reqs.lock.enable();  // still the only thread in MPI
    g_main_thread = std::this_thread::get_id();
    s.phase.store(Phase::kRunning, std::memory_order_release);
    if (int rc = comm_setup(world)) return rc;
    if (provided) *provided = required;
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Init)
RDMXMPI_API int PMPI_Init(int *, char ***)
{
    return do_init("MPI_Init", MPI_THREAD_SINGLE, nullptr);
}

RDMXMPI_WEAK(Init_thread)
RDMXMPI_API int PMPI_Init_thread(int *, char ***, int required, int *provided)
{
    return do_init("MPI_Init_thread", required, provided);
}

RDMXMPI_WEAK(Finalize)
RDMXMPI_API int PMPI_Finalize(void)
{
    if (int rc = require_running("MPI_Finalize")) return rc;
    State &s = state();
    const double deadline = rdmx_wtime() + kDetachedDrainSeconds;
    while (!req_reap() && rdmx_wtime() < deadline) rdmx_progress(s.world);
    comm_teardown();
    s.phase.store(Phase::kFinalized, std::memory_order_release);
    rdmx_status_t st = rdmx_finalize(s.world);
    s.world = nullptr;
    if (st != RDMX_OK)
        return err_raise(MPI_COMM_NULL, err_from_rdmx(st), "MPI_Finalize", "rdmx_finalize: %s", rdmx_strerror(st));
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Initialized)
RDMXMPI_API int PMPI_Initialized(int *flag)
{
    *flag = state().phase.load() != Phase::kBefore;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Finalized)
RDMXMPI_API int PMPI_Finalized(int *flag)
{
    *flag = state().phase.load() == Phase::kFinalized;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Query_thread)
RDMXMPI_API int PMPI_Query_thread(int *provided)
{
    if (int rc = require_running("MPI_Query_thread")) return rc;
    *provided = state().thread_level;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Is_thread_main)
RDMXMPI_API int PMPI_Is_thread_main(int *flag)
{
    if (int rc = require_running("MPI_Is_thread_main")) return rc;
    *flag = std::this_thread::get_id() == g_main_thread;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Abort)
RDMXMPI_API int PMPI_Abort(MPI_Comm comm, int errorcode)
{
    std::fprintf(stderr, "rdmx-mpi: MPI_Abort(comm %#x, %d) called: ending the job\n", comm, errorcode);
    std::fflush(nullptr);   // what the program printed must not die with it
    if (running()) rdmx_abort(state().world, errorcode);   // does not return
    std::_Exit(errorcode & 255);
}

RDMXMPI_WEAK(Get_processor_name)
RDMXMPI_API int PMPI_Get_processor_name(char *name, int *resultlen)
{
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0) std::snprintf(name, MPI_MAX_PROCESSOR_NAME, "localhost");
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    *resultlen = static_cast<int>(std::strlen(name));
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Wtime)
RDMXMPI_API double PMPI_Wtime(void)
{
    return rdmx_wtime();
}

RDMXMPI_WEAK(Wtick)
RDMXMPI_API double PMPI_Wtick(void)
{
    timespec res{};
    clock_getres(CLOCK_MONOTONIC, &res);
    return static_cast<double>(res.tv_sec) + static_cast<double>(res.tv_nsec) * 1e-9;
}
