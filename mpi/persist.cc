// Persistent requests: MPI_Send_init and its modes, MPI_Recv_init,
// MPI_Start, MPI_Startall. The request keeps the call's arguments; each
// start posts one instance on the same slot, and completing it (wait,
// test) leaves the request inactive rather than freed.
#include <cstdlib>

#include "comm.h"
#include "errors.h"
#include "request.h"

using namespace rdmx::mpi;

namespace {

int init_common(const char *call, const void *buf, int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm,
                ReqKind kind, SendMode mode, MPI_Request *request) {
    int err = MPI_SUCCESS;
    if (request == nullptr) return err_raise(comm, MPI_ERR_ARG, call, "request pointer is NULL");
    Comm *c = comm_checked(comm, call, &err);
    if (c == nullptr) return err;
    const bool recv = kind == ReqKind::kRecv;
    if (int e = check_peer(c, comm, call, peer, recv)) return e;
    if (int e = check_tag(comm, call, tag, recv)) return e;
    // Count and datatype are checked now, as MPI allows, not at each start.
    Data d;
    if (int e = data_for_recv(comm, call, const_cast<void *>(buf), count, dt, &d)) return e;
    std::free(d.tmp);
    Request *r = req_alloc(kind, comm, request);
    if (r == nullptr) return err_raise(comm, MPI_ERR_NO_MEM, call, "no request slot left");
    r->persistent = true;
    r->args = PersistArgs{const_cast<void *>(buf), count, dt, peer, tag, mode};
    return MPI_SUCCESS;
}

int start_one(const char *call, MPI_Request *request) {
    if (request == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "request pointer is NULL");
    Request *r = req_get(*request);
    if (r == nullptr || !r->persistent)
        return err_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, call, "0x%x is not a persistent request",
                         static_cast<unsigned>(*request));
    if (r->active)
        return err_raise(r->comm, MPI_ERR_REQUEST, call, "persistent request 0x%x is active already",
                         static_cast<unsigned>(*request));
    int err = MPI_SUCCESS;
    Comm *c = comm_checked(r->comm, call, &err);
    if (c == nullptr) return err;
    r->rr = nullptr;
    r->done = r->cancel_asked = false;
    r->err = MPI_SUCCESS;
    r->rst = RDMX_OK;
    r->tmp = nullptr;
    r->bsend_quota = 0;
    const PersistArgs &a = r->args;
    err = r->kind == ReqKind::kRecv ? post_recv(r, c, a.buf, a.count, a.dt, a.peer, a.tag, call)
                                    : send_start(r, c, a, call);
    r->active = err == MPI_SUCCESS;
    return err;
}

}  // namespace

RDMXMPI_WEAK(Send_init)
RDMXMPI_API int PMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                               MPI_Request *request)
{
    return init_common("MPI_Send_init", buf, count, datatype, dest, tag, comm, ReqKind::kSend, SendMode::kStandard,
                       request);
}

RDMXMPI_WEAK(Ssend_init)
RDMXMPI_API int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                MPI_Request *request)
{
    return init_common("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, ReqKind::kSend, SendMode::kSync,
                       request);
}

RDMXMPI_WEAK(Rsend_init)
RDMXMPI_API int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                MPI_Request *request)
{
    return init_common("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, ReqKind::kSend, SendMode::kReady,
                       request);
}

RDMXMPI_WEAK(Bsend_init)
RDMXMPI_API int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                                MPI_Request *request)
{
    return init_common("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, ReqKind::kSend, SendMode::kBuffered,
                       request);
}

RDMXMPI_WEAK(Recv_init)
RDMXMPI_API int PMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                               MPI_Request *request)
{
    return init_common("MPI_Recv_init", buf, count, datatype, source, tag, comm, ReqKind::kRecv, SendMode::kStandard,
                       request);
}

RDMXMPI_WEAK(Start)
RDMXMPI_API int PMPI_Start(MPI_Request *request)
{
    return start_one("MPI_Start", request);
}

RDMXMPI_WEAK(Startall)
RDMXMPI_API int PMPI_Startall(int count, MPI_Request array_of_requests[])
{
    if (count < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_COUNT, "MPI_Startall", "count %d is negative", count);
    for (int i = 0; i < count; ++i)
        if (int e = start_one("MPI_Startall", &array_of_requests[i])) return e;
    return MPI_SUCCESS;
}
