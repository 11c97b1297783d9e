// Probes and matched probes: MPI_Probe, MPI_Iprobe, MPI_Mprobe,
// MPI_Improbe, MPI_Mrecv, MPI_Imrecv. A matched message takes a slot of
// the request table (handle 0xac400000|index); MPI_Imrecv turns that slot
// into the receive's request.
#include <cstdlib>

#include "comm.h"
#include "errors.h"
#include "request.h"

using namespace rdmx::mpi;

namespace {

constexpr rdmx_msg_info_t kProcNullInfo{RDMX_PROC_NULL, RDMX_ANY_TAG, 0, RDMX_OK};

// Checks a probe's arguments: the Comm, or nullptr with *err raised.
Comm *probe_args(const char *call, int source, int tag, MPI_Comm comm, int *err) {
    Comm *c = comm_checked(comm, call, err);
    if (c == nullptr) return nullptr;
    if ((*err = check_peer(c, comm, call, source, true)) != MPI_SUCCESS) return nullptr;
    if ((*err = check_tag(comm, call, tag, true)) != MPI_SUCCESS) return nullptr;
    return c;
}

int probe_failed(MPI_Comm comm, const char *call, rdmx_status_t st) {
    return err_raise(comm, err_from_rdmx(st), call, "%s", rdmx_strerror(st));
}

// A matched message in a table slot.
int keep_message(MPI_Comm comm, const char *call, rdmx_message_h mh, const rdmx_msg_info_t &info,
                 MPI_Message *message) {
    MPI_Request h = MPI_REQUEST_NULL;
    Request *r = req_alloc(ReqKind::kMessage, comm, &h);
    if (r == nullptr) {
        // The message must still be received: take it, and say so.
        (void)rdmx_mrecv(nullptr, 0, &mh, nullptr);
        return err_raise(comm, MPI_ERR_NO_MEM, call, "no request slot left: the probed message was dropped");
    }
    r->msg = mh;
    r->msg_len = info.length;
    *message = msg_handle_of(h);
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Probe)
RDMXMPI_API int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    int err = MPI_SUCCESS;
    Comm *c = probe_args("MPI_Probe", source, tag, comm, &err);
    if (c == nullptr) return err;
    rdmx_msg_info_t info = kProcNullInfo;
    if (source != MPI_PROC_NULL) {
        if (rdmx_status_t st = rdmx_probe(c->ctx, to_rdmx_peer(source), tag, &info))
            return probe_failed(comm, "MPI_Probe", st);
    }
    if (status != MPI_STATUS_IGNORE) status_from_info(status, info, info.length);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Iprobe)
RDMXMPI_API int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    int err = MPI_SUCCESS;
    Comm *c = probe_args("MPI_Iprobe", source, tag, comm, &err);
    if (c == nullptr) return err;
    if (flag == nullptr) return err_raise(comm, MPI_ERR_ARG, "MPI_Iprobe", "flag is NULL");
    rdmx_msg_info_t info = kProcNullInfo;
    *flag = 1;
    if (source != MPI_PROC_NULL) {
        if (rdmx_status_t st = rdmx_iprobe(c->ctx, to_rdmx_peer(source), tag, flag, &info))
            return probe_failed(comm, "MPI_Iprobe", st);
    }
    if (*flag != 0 && status != MPI_STATUS_IGNORE) status_from_info(status, info, info.length);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Mprobe)
RDMXMPI_API int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    int err = MPI_SUCCESS;
    Comm *c = probe_args("MPI_Mprobe", source, tag, comm, &err);
    if (c == nullptr) return err;
    if (message == nullptr) return err_raise(comm, MPI_ERR_ARG, "MPI_Mprobe", "message is NULL");
    rdmx_msg_info_t info = kProcNullInfo;
    if (source == MPI_PROC_NULL) {
        *message = MPI_MESSAGE_NO_PROC;
    } else {
        rdmx_message_h mh = nullptr;
        if (rdmx_status_t st = rdmx_mprobe(c->ctx, to_rdmx_peer(source), tag, &mh, &info))
            return probe_failed(comm, "MPI_Mprobe", st);
        if (int e = keep_message(comm, "MPI_Mprobe", mh, info, message)) return e;
    }
    if (status != MPI_STATUS_IGNORE) status_from_info(status, info, info.length);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Improbe)
RDMXMPI_API int PMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                             MPI_Status *status)
{
    int err = MPI_SUCCESS;
    Comm *c = probe_args("MPI_Improbe", source, tag, comm, &err);
    if (c == nullptr) return err;
    if (flag == nullptr || message == nullptr)
        return err_raise(comm, MPI_ERR_ARG, "MPI_Improbe", "flag or message is NULL");
    rdmx_msg_info_t info = kProcNullInfo;
    *flag = 1;
    if (source == MPI_PROC_NULL) {
        *message = MPI_MESSAGE_NO_PROC;
    } else {
        rdmx_message_h mh = nullptr;
        if (rdmx_status_t st = rdmx_improbe(c->ctx, to_rdmx_peer(source), tag, flag, &mh, &info))
            return probe_failed(comm, "MPI_Improbe", st);
        if (*flag == 0) return MPI_SUCCESS;
        if (int e = keep_message(comm, "MPI_Improbe", mh, info, message)) return e;
    }
    if (status != MPI_STATUS_IGNORE) status_from_info(status, info, info.length);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Mrecv)
RDMXMPI_API int PMPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    const char *call = "MPI_Mrecv";
    if (message == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "message is NULL");
    if (*message == MPI_MESSAGE_NO_PROC) {
        if (status != MPI_STATUS_IGNORE) status_from_info(status, kProcNullInfo, 0);
        *message = MPI_MESSAGE_NULL;
        return MPI_SUCCESS;
    }
    Request *r = msg_get(*message);
    if (r == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, call, "invalid message handle 0x%x",
                         static_cast<unsigned>(*message));
    const MPI_Comm comm = r->comm;
    Data d;
    if (int e = data_for_recv(comm, call, buf, count, datatype, &d)) return e;
    rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    const rdmx_status_t st = rdmx_mrecv(d.base, d.bytes, &r->msg, &info);
    req_release(req_handle_of_msg(*message));
    *message = MPI_MESSAGE_NULL;
    const size_t got = info.length < d.bytes ? info.length : d.bytes;
    data_finish_recv(&d, buf, count, datatype, got);
    if (status != MPI_STATUS_IGNORE) status_from_info(status, info, got);
    if (st == RDMX_OK) return MPI_SUCCESS;
    const int err = err_from_rdmx(st);
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = err;
    if (st == RDMX_ERR_TRUNCATE)
        return err_raise(comm, err, call, "a message of %zu bytes was truncated to the buffer's %zu bytes",
                         info.length, d.bytes);
    return err_raise(comm, err, call, "%s", rdmx_strerror(st));
}

RDMXMPI_WEAK(Imrecv)
RDMXMPI_API int PMPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                            MPI_Request *request)
{
    const char *call = "MPI_Imrecv";
    if (message == nullptr || request == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "message or request is NULL");
    if (*message == MPI_MESSAGE_NO_PROC) {
        Request *r = req_alloc(ReqKind::kRecv, MPI_COMM_WORLD, request);
        if (r == nullptr) return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "no request slot left");
        r->ubuf = buf;
        r->count = count;
        r->dt = datatype;
        req_harvest(r, RDMX_OK, kProcNullInfo);
        *message = MPI_MESSAGE_NULL;
        return MPI_SUCCESS;
    }
    Request *r = msg_get(*message);
    if (r == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, call, "invalid message handle 0x%x",
                         static_cast<unsigned>(*message));
    const MPI_Comm comm = r->comm;
    Data d;
    if (int e = data_for_recv(comm, call, buf, count, datatype, &d)) return e;
    // The message's slot becomes the receive's request.
    rdmx_message_h mh = r->msg;
    r->msg = nullptr;
    r->kind = ReqKind::kRecv;
    r->cap = d.bytes;
    r->tmp = d.tmp;
    r->ubuf = buf;
    r->count = count;
    r->dt = datatype;
    *request = req_handle_of_msg(*message);
    *message = MPI_MESSAGE_NULL;
    if (rdmx_status_t st = rdmx_imrecv(d.base, d.bytes, &mh, &r->rr)) {
        std::free(r->tmp);
        r->tmp = nullptr;
        req_release(*request);
        *request = MPI_REQUEST_NULL;
        return err_raise(comm, err_from_rdmx(st), call, "%s", rdmx_strerror(st));
    }
    return MPI_SUCCESS;
}
