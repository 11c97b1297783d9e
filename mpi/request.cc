// The request table and single-request completion: MPI_Wait, MPI_Test,
// MPI_Request_free, MPI_Request_get_status, MPI_Cancel, generalized
// requests, and request_from_rdmx for the layer's nonblocking collectives.
// The multi-request forms are in request_multi.cc.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "comm.h"
#include "errors.h"
#include "request.h"

namespace rdmx::mpi {

ReqTable g_reqs;

namespace {

std::mutex g_detached_mu;
std::vector<MPI_Request> g_detached;

// A new chunk of free slots (under g_reqs.lock); false when the table is
// full or memory is.
bool grow() {
    if (g_reqs.slots / ReqTable::kChunkSlots >= ReqTable::kMaxChunks) return false;
    auto *chunk = new (std::nothrow) Request[ReqTable::kChunkSlots];
    if (chunk == nullptr) return false;
    const uint32_t base = g_reqs.slots;
    for (uint32_t i = 0; i < ReqTable::kChunkSlots; ++i)
        chunk[i].next_free = i + 1 < ReqTable::kChunkSlots ? base + i + 1 : g_reqs.free;
    g_reqs.chunks[base / ReqTable::kChunkSlots].store(chunk, std::memory_order_release);
    g_reqs.slots += ReqTable::kChunkSlots;
    g_reqs.free = base;
    return true;
}

}  // namespace

Request *req_alloc_slow(ReqKind kind, MPI_Comm comm, MPI_Request *handle) {
    if (g_reqs.detached.load(std::memory_order_relaxed) != 0) (void)req_reap();
    uint32_t idx;
    {
        std::lock_guard<TableLock> g(g_reqs.lock);
        if (g_reqs.free == ReqTable::kNoSlot && !grow()) return nullptr;
        idx = g_reqs.free;
        g_reqs.free = slot_at(idx)->next_free;
    }
    Request *r = slot_at(idx);
    req_reset(r, kind, comm);
    *handle = static_cast<MPI_Request>(kReqHandleBase | idx);
    return r;
}

void req_release(MPI_Request handle) {
    const uint32_t idx = static_cast<uint32_t>(handle) & kHandleIndexMask;
    Request *r = slot_at(idx);
    if (r->kind == ReqKind::kHook) r->hook = nullptr;
    r->dt_hold = TypeRef();
    r->kind = ReqKind::kFree;
    std::lock_guard<TableLock> g(g_reqs.lock);
    r->next_free = g_reqs.free;
    g_reqs.free = idx;
}

// ---- harvest -----------------------------------------------------------

void req_harvest(Request *r, rdmx_status_t st, const rdmx_msg_info_t &info) {
    r->rr = nullptr;
    r->done = true;
    r->rst = st;
    int err = st == RDMX_OK ? MPI_SUCCESS : err_from_rdmx(st);
    switch (r->kind) {
    case ReqKind::kRecv:
        if (st == RDMX_ERR_CANCELED && r->cancel_asked) {
            status_empty(&r->st);
            status_set_cancelled(&r->st, true);
            err = MPI_SUCCESS;
            std::free(r->tmp);
            r->tmp = nullptr;
            break;
        }
        r->msg_len = info.length;
        {
            const size_t got = info.length < r->cap ? info.length : r->cap;
            status_from_info(&r->st, info, got);
            if (r->tmp != nullptr) {
                Data d{nullptr, r->cap, r->tmp};
                data_finish_recv(&d, r->ubuf, r->count, r->dt, got);
                r->tmp = nullptr;
            }
        }
        break;
    case ReqKind::kSend:
        status_empty(&r->st);
        std::free(r->tmp);
        r->tmp = nullptr;
        if (r->bsend_quota != 0) bsend_release(r->bsend_quota);
        r->bsend_quota = 0;
        break;
    case ReqKind::kHook:
        status_empty(&r->st);
        r->st.MPI_SOURCE = from_rdmx_peer(info.source);
        r->st.MPI_TAG = info.tag;
        if (r->hook) {
            const int e = r->hook(info, &r->st);
            if (err == MPI_SUCCESS) err = e;
        }
        break;
    case ReqKind::kGreq:
        status_empty(&r->st);
        if (r->greq.query != nullptr) {
            const int e = r->greq.query(r->greq.state, &r->st);
            if (err == MPI_SUCCESS) err = e;
        }
        break;
    default:
        status_empty(&r->st);
        break;
    }
    r->err = err;
    r->st.MPI_ERROR = err;
}

bool req_poll(Request *r, bool block) {
    if (r->done) return true;
    rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    if (block) {
        const rdmx_status_t st = rdmx_wait(&r->rr, &info);
        req_harvest(r, st, info);
        return true;
    }
    int flag = 0;
    const rdmx_status_t st = rdmx_test(&r->rr, &flag, &info);
    if (flag == 0 && st == RDMX_INPROGRESS) return false;
    req_harvest(r, st, info);  // done, or a handle rdmx refused
    return true;
}

// A request at its end: the generalized request's free function runs, the
// slot goes back (or a persistent request becomes inactive) and the
// handle becomes MPI_REQUEST_NULL. Returns the error to report.
int req_finish(Request *r, MPI_Request *handle) {
    int err = r->err;
    if (r->persistent) {
        r->active = false;
        r->done = false;
        return err;
    }
    if (r->kind == ReqKind::kGreq && r->greq.free != nullptr) {
        const int e = r->greq.free(r->greq.state);
        if (err == MPI_SUCCESS) err = e;
    }
    req_release(*handle);
    *handle = MPI_REQUEST_NULL;
    return err;
}

// Copies a harvested result to the caller's status: MPI_ERROR only when
// the operation failed (single-completion calls leave it alone otherwise).
void req_copy_status(const Request *r, MPI_Status *status) {
    if (status == MPI_STATUS_IGNORE) return;
    const int keep = status->MPI_ERROR;
    *status = r->st;
    if (r->err == MPI_SUCCESS) status->MPI_ERROR = keep;
}

int req_raise(const Outcome &o, int err, const char *call) {
    if (o.kind == ReqKind::kRecv && o.rst == RDMX_ERR_TRUNCATE)
        return err_raise(o.comm, err, call, "a message of %zu bytes was truncated to the receive buffer's %zu bytes",
                         o.msg_len, o.cap);
    if (o.rst != RDMX_OK) return err_raise(o.comm, err, call, "the request failed: %s", rdmx_strerror(o.rst));
    return err_raise(o.comm, err, call, "the request's callback returned error %d", err);
}

int req_bad(const char *call, MPI_Request h) {
    return err_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, call, "invalid request handle 0x%x", static_cast<unsigned>(h));
}

void req_detach(MPI_Request handle) {
    Request *r = req_get(handle);
    r->detached = true;
    std::lock_guard<std::mutex> g(g_detached_mu);
    g_detached.push_back(handle);
    g_reqs.detached.store(g_detached.size(), std::memory_order_relaxed);
}

bool req_reap() {
    std::vector<MPI_Request> mine;
    {
        std::lock_guard<std::mutex> g(g_detached_mu);
        mine.swap(g_detached);
        g_reqs.detached.store(0, std::memory_order_relaxed);
    }
    std::vector<MPI_Request> left;
    for (MPI_Request h : mine) {
        Request *r = req_get(h);
        if (r == nullptr) continue;
        if (!req_poll(r, false)) {
            left.push_back(h);
            continue;
        }
        r->persistent = false;  // freed by the application: nothing restarts it
        MPI_Request copy = h;
        (void)req_finish(r, &copy);
    }
    std::lock_guard<std::mutex> g(g_detached_mu);
    g_detached.insert(g_detached.end(), left.begin(), left.end());
    g_reqs.detached.store(g_detached.size(), std::memory_order_relaxed);
    return g_detached.empty();
}

MPI_Request request_from_rdmx(rdmx_request_h rr, MPI_Comm comm, OnComplete on_complete) {
    MPI_Request h = MPI_REQUEST_NULL;
    Request *r = req_alloc(ReqKind::kHook, comm, &h);
    if (r == nullptr) {
        // No slot: finish the operation here rather than lose it.
        rdmx_msg_info_t info{};
        (void)rdmx_wait(&rr, &info);
        return MPI_REQUEST_NULL;
    }
    r->rr = rr;
    r->hook = std::move(on_complete);
    return h;
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

// The general MPI_Wait (see PMPI_Wait for the fast path).
static int __attribute__((noinline)) wait_general(MPI_Request *request, MPI_Status *status)
{
    if (request == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Wait", "request pointer is NULL");
    if (*request == MPI_REQUEST_NULL) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
        return MPI_SUCCESS;
    }
    Request *r = req_get(*request);
    if (r == nullptr) return req_bad("MPI_Wait", *request);
    if (r->persistent && !r->active) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
        return MPI_SUCCESS;
    }
    req_poll(r, true);
    req_copy_status(r, status);
    const Outcome o = outcome_of(r);
    const int err = req_finish(r, request);
    return err == MPI_SUCCESS ? MPI_SUCCESS : req_raise(o, err, "MPI_Wait");
}

// The hot path: a plain send or contiguous receive. A send done at post
// costs no rdmx call; a receive that completes without error is reported
// straight from rdmx's info. Anything else is harvested by wait_general.
RDMXMPI_WEAK(Wait)
RDMXMPI_API int PMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    Request *r = request != nullptr ? req_get(*request) : nullptr;
    if (r == nullptr || r->persistent || r->tmp != nullptr) return wait_general(request, status);
    if (r->kind == ReqKind::kSend && r->done && r->err == MPI_SUCCESS) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
    } else if (r->kind == ReqKind::kRecv && !r->done) {
        rdmx_msg_info_t info;
        const rdmx_status_t st = rdmx_wait(&r->rr, &info);
        if (st != RDMX_OK) {
            req_harvest(r, st, info);
            return wait_general(request, status);
        }
        if (status != MPI_STATUS_IGNORE) status_from_info(status, info, info.length);  // no truncation: all landed
    } else {
        return wait_general(request, status);
    }
    req_release(*request);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Test)
RDMXMPI_API int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (request == nullptr || flag == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test", "request or flag pointer is NULL");
    *flag = 1;
    if (*request == MPI_REQUEST_NULL) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
        return MPI_SUCCESS;
    }
    Request *r = req_get(*request);
    if (r == nullptr) return req_bad("MPI_Test", *request);
    if (r->persistent && !r->active) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
        return MPI_SUCCESS;
    }
    if (!req_poll(r, false)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    req_copy_status(r, status);
    const Outcome o = outcome_of(r);
    const int err = req_finish(r, request);
    return err == MPI_SUCCESS ? MPI_SUCCESS : req_raise(o, err, "MPI_Test");
}

RDMXMPI_WEAK(Request_free)
RDMXMPI_API int PMPI_Request_free(MPI_Request *request)
{
    if (request == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_free", "request pointer is NULL");
    Request *r = req_get(*request);
    if (r == nullptr) return req_bad("MPI_Request_free", *request);
    const bool pending = r->persistent ? r->active && !r->done : !r->done;
    if (pending) {
        // MPI: the operation goes on and the request is freed once it completes.
        req_detach(*request);
        *request = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    r->persistent = false;
    (void)req_finish(r, request);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Request_get_status)
RDMXMPI_API int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (flag == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Request_get_status", "flag is NULL");
    *flag = 1;
    if (request == MPI_REQUEST_NULL) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
        return MPI_SUCCESS;
    }
    Request *r = req_get(request);
    if (r == nullptr) return req_bad("MPI_Request_get_status", request);
    if (r->persistent && !r->active) {
        if (status != MPI_STATUS_IGNORE) status_empty(status);
        return MPI_SUCCESS;
    }
    if (!req_poll(r, false)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    req_copy_status(r, status);
    return r->err == MPI_SUCCESS ? MPI_SUCCESS : req_raise(outcome_of(r), r->err, "MPI_Request_get_status");
}

RDMXMPI_WEAK(Cancel)
RDMXMPI_API int PMPI_Cancel(MPI_Request *request)
{
    if (request == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Cancel", "request pointer is NULL");
    Request *r = req_get(*request);
    if (r == nullptr) return req_bad("MPI_Cancel", *request);
    if (r->done || (r->persistent && !r->active)) return MPI_SUCCESS;
    switch (r->kind) {
    case ReqKind::kRecv:
        // A receive that has matched completes normally (MPI allows it).
        r->cancel_asked = true;
        (void)rdmx_cancel(r->rr);
        break;
    case ReqKind::kGreq:
        if (r->greq.cancel != nullptr) {
            const int e = r->greq.cancel(r->greq.state, r->greq.completed ? 1 : 0);
            if (e != MPI_SUCCESS) return err_raise(r->comm, e, "MPI_Cancel", "the cancel function returned %d", e);
        }
        break;
    default:
        // Sends are not cancelled: MPI allows a cancel to fail, and
        // MPI_Test_cancelled then says false.
        break;
    }
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Grequest_start)
RDMXMPI_API int PMPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                                    MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                    MPI_Request *request)
{
    if (request == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Grequest_start", "request pointer is NULL");
    Comm *world = comm_get(MPI_COMM_WORLD);
    if (world == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_OTHER, "MPI_Grequest_start", "MPI is not initialized");
    rdmx_request_h rr = nullptr;
    if (rdmx_status_t st = rdmx_greq_start(world->ctx, &rr))
        return err_raise(MPI_COMM_WORLD, err_from_rdmx(st), "MPI_Grequest_start", "%s", rdmx_strerror(st));
    Request *r = req_alloc(ReqKind::kGreq, MPI_COMM_WORLD, request);
    if (r == nullptr) {
        (void)rdmx_greq_complete(rr, RDMX_OK);
        (void)rdmx_wait(&rr, nullptr);
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Grequest_start", "no request slot left");
    }
    r->rr = rr;
    r->greq = Greq{query_fn, free_fn, cancel_fn, extra_state, false};
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Grequest_complete)
RDMXMPI_API int PMPI_Grequest_complete(MPI_Request request)
{
    Request *r = req_get(request);
    if (r == nullptr || r->kind != ReqKind::kGreq || r->greq.completed)
        return err_raise(MPI_COMM_NULL, MPI_ERR_REQUEST, "MPI_Grequest_complete",
                         "0x%x is not a generalized request still to complete", static_cast<unsigned>(request));
    r->greq.completed = true;
    if (rdmx_status_t st = rdmx_greq_complete(r->rr, RDMX_OK))
        return err_raise(r->comm, err_from_rdmx(st), "MPI_Grequest_complete", "%s", rdmx_strerror(st));
    return MPI_SUCCESS;
}
