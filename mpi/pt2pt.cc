// Point-to-point: the send modes, receives, Sendrecv(_replace) and the
// buffered-send buffer. A contiguous datatype goes straight to rdmx (the
// user's buffer at its true lower bound, count*size bytes); a
// non-contiguous one is packed into, or received into and unpacked from, a
// temporary buffer. The blocking contiguous path allocates nothing and
// costs one rdmx call plus the argument checks.
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "comm.h"
#include "datatype.h"
#include "errors.h"
#include "request.h"

namespace rdmx::mpi {

namespace {

inline void *offset(const void *buf, MPI_Aint off) {
    return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(buf) + static_cast<uintptr_t>(off));
}

// Describes count elements of dt at buf; a non-contiguous layout gets a
// temporary buffer of the packed size (filled by the caller if it sends).
int describe(MPI_Comm comm, const char *call, const void *buf, int count, MPI_Datatype dt, Data *out,
             TypeView *view) {
    if (count < 0) return err_raise(comm, MPI_ERR_COUNT, call, "count %d is negative", count);
    size_t size = 0;
    if (builtin_size(dt, &size)) {
        out->bytes = static_cast<size_t>(count) * size;
        if (buf == nullptr && out->bytes != 0)
            return err_raise(comm, MPI_ERR_BUFFER, call, "buffer is NULL with count %d", count);
        out->base = const_cast<void *>(buf);
        out->tmp = nullptr;
        view->contiguous = true;
        return MPI_SUCCESS;
    }
    if (!type_view(dt, view))
        return err_raise(comm, MPI_ERR_TYPE, call, "invalid datatype 0x%x", static_cast<unsigned>(dt));
    if (!view->committed)
        return err_raise(comm, MPI_ERR_TYPE, call, "datatype 0x%x is not committed", static_cast<unsigned>(dt));
    out->bytes = static_cast<size_t>(count) * view->size;
    out->tmp = nullptr;
    if (view->contiguous || out->bytes == 0) {
        if (buf == nullptr && view->true_lb == 0 && out->bytes != 0)
            return err_raise(comm, MPI_ERR_BUFFER, call, "buffer is NULL with count %d", count);
        out->base = offset(buf, view->true_lb);
        view->contiguous = true;
        return MPI_SUCCESS;
    }
    out->tmp = std::malloc(out->bytes);
    if (out->tmp == nullptr)
        return err_raise(comm, MPI_ERR_NO_MEM, call, "no memory for a %zu-byte packing buffer", out->bytes);
    out->base = out->tmp;
    return MPI_SUCCESS;
}

}  // namespace

int data_for_send(MPI_Comm comm, const char *call, const void *buf, int count, MPI_Datatype dt, Data *out) {
    TypeView v;
    if (int e = describe(comm, call, buf, count, dt, out, &v)) return e;
    if (out->tmp != nullptr) type_pack(buf, count, dt, out->tmp);
    return MPI_SUCCESS;
}

int data_for_recv(MPI_Comm comm, const char *call, void *buf, int count, MPI_Datatype dt, Data *out) {
    TypeView v;
    return describe(comm, call, buf, count, dt, out, &v);
}

void data_finish_recv(Data *d, void *buf, int count, MPI_Datatype dt, size_t received) {
    if (d->tmp == nullptr) return;
    type_unpack(d->tmp, received, buf, count, dt);
    std::free(d->tmp);
    d->tmp = nullptr;
}

Comm *comm_checked(MPI_Comm comm, const char *call, int *err) {
    Comm *c = comm_get(comm);
    if (c == nullptr)
        *err = err_raise(MPI_COMM_NULL, MPI_ERR_COMM, call, "invalid communicator 0x%x", static_cast<unsigned>(comm));
    return c;
}

int check_peer(const Comm *c, MPI_Comm comm, const char *call, int peer, bool recv) {
    if (peer == MPI_PROC_NULL || (recv && peer == MPI_ANY_SOURCE) || (peer >= 0 && peer < c->size))
        return MPI_SUCCESS;
    return err_raise(comm, MPI_ERR_RANK, call, "invalid %s rank %d in a communicator of size %d",
                     recv ? "source" : "destination", peer, c->size);
}

int check_tag(MPI_Comm comm, const char *call, int tag, bool recv) {
    if ((tag >= 0 && tag <= kTagUb) || (recv && tag == MPI_ANY_TAG)) return MPI_SUCCESS;
    return err_raise(comm, MPI_ERR_TAG, call, "invalid tag %d (valid: 0..%d%s)", tag, kTagUb,
                     recv ? " or MPI_ANY_TAG" : "");
}

rdmx_status_t post_send(rdmx_context_h ctx, const Data &d, int dest, int tag, SendMode mode, rdmx_request_h *rr) {
    if (mode == SendMode::kSync) return rdmx_issend(ctx, d.base, d.bytes, to_rdmx_peer(dest), tag, rr);
    return rdmx_isend(ctx, d.base, d.bytes, to_rdmx_peer(dest), tag, rr);
}

// ---- buffered sends ----------------------------------------------------------
// The attached buffer is a quota: each buffered send copies its data to a
// block of its own and counts its size plus MPI_BSEND_OVERHEAD against
// the buffer until the send completes (so MPI_ERR_BUFFER comes where MPI
// says: the buffer would overflow).

namespace {
std::mutex g_bsend_mu;
void *g_bsend_buf = nullptr;
size_t g_bsend_size = 0;
size_t g_bsend_used = 0;
}  // namespace

void bsend_release(size_t bytes) {
    std::lock_guard<std::mutex> g(g_bsend_mu);
    g_bsend_used -= bytes;
}

static int bsend_reserve(MPI_Comm comm, const char *call, size_t bytes) {
    std::lock_guard<std::mutex> g(g_bsend_mu);
    const size_t need = bytes + MPI_BSEND_OVERHEAD;
    if (g_bsend_used + need <= g_bsend_size) {
        g_bsend_used += need;
        return MPI_SUCCESS;
    }
    return err_raise(comm, MPI_ERR_BUFFER, call,
                     "the attached buffer (%zu bytes, %zu in use) has no room for %zu bytes plus %d of overhead",
                     g_bsend_size, g_bsend_used, bytes, MPI_BSEND_OVERHEAD);
}

// A buffered send of d: the data is copied, sent, and the copy freed (and
// its quota given back) when the send completes.
static int bsend(Comm *c, MPI_Comm comm, const char *call, Data &d, int dest, int tag) {
    if (dest == MPI_PROC_NULL) return MPI_SUCCESS;
    if (int e = bsend_reserve(comm, call, d.bytes)) return e;
    const size_t quota = d.bytes + MPI_BSEND_OVERHEAD;
    void *copy = d.tmp;
    if (copy == nullptr && d.bytes != 0) {
        copy = std::malloc(d.bytes);
        if (copy == nullptr) {
            bsend_release(quota);
            return err_raise(comm, MPI_ERR_NO_MEM, call, "no memory for a %zu-byte buffered send", d.bytes);
        }
        std::memcpy(copy, d.base, d.bytes);
    }
    d.tmp = nullptr;  // the copy is the request's now
    rdmx_request_h rr = nullptr;
    rdmx_status_t st = rdmx_isend(c->ctx, copy, d.bytes, dest, tag, &rr);
    if (st != RDMX_OK || rr == nullptr) {
        std::free(copy);
        bsend_release(quota);
        return st == RDMX_OK ? MPI_SUCCESS
                             : err_raise(comm, err_from_rdmx(st), call, "send to rank %d: %s", dest, rdmx_strerror(st));
    }
    MPI_Request h = MPI_REQUEST_NULL;
    Request *r = req_alloc(ReqKind::kSend, comm, &h);
    if (r == nullptr) {  // no slot: finish it here
        (void)rdmx_wait(&rr, nullptr);
        std::free(copy);
        bsend_release(quota);
        return MPI_SUCCESS;
    }
    r->rr = rr;
    r->tmp = copy;
    r->bsend_quota = quota;
    req_detach(h);
    return MPI_SUCCESS;
}

// ---- sends -------------------------------------------------------------------

// Out of line, so the hot paths keep a small frame.
static int __attribute__((noinline, cold)) send_failed(MPI_Comm comm, const char *call, rdmx_status_t st, int dest) {
    return err_raise(comm, err_from_rdmx(st), call, "send to rank %d: %s", dest, rdmx_strerror(st));
}

// Every send: checks, then one rdmx call. Blocking standard and ready sends
// go through rdmx_send (no request at all for an eager message).
static int __attribute__((noinline)) send_common(const char *call, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                       MPI_Comm comm, SendMode mode) {
    int err = MPI_SUCCESS;
    Comm *c = comm_checked(comm, call, &err);
    if (c == nullptr) return err;
    if (int e = check_peer(c, comm, call, dest, false)) return e;
    if (int e = check_tag(comm, call, tag, false)) return e;
    Data d;
    if (int e = data_for_send(comm, call, buf, count, dt, &d)) return e;
    if (mode == SendMode::kBuffered) {
        err = bsend(c, comm, call, d, dest, tag);
        std::free(d.tmp);
        return err;
    }
    rdmx_status_t st;
    if (mode == SendMode::kSync) {
        rdmx_request_h rr = nullptr;
        st = post_send(c->ctx, d, dest, tag, mode, &rr);
        if (st == RDMX_OK) st = rdmx_wait(&rr, nullptr);
    } else {
        st = rdmx_send(c->ctx, d.base, d.bytes, to_rdmx_peer(dest), tag);
    }
    std::free(d.tmp);
    if (st == RDMX_OK) return MPI_SUCCESS;
    return err_raise(comm, err_from_rdmx(st), call, "send of %zu bytes to rank %d: %s", d.bytes, dest,
                     rdmx_strerror(st));
}

static int __attribute__((noinline)) isend_common(const char *call, const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                        MPI_Comm comm, SendMode mode, MPI_Request *request) {
    int err = MPI_SUCCESS;
    if (request == nullptr) return err_raise(comm, MPI_ERR_ARG, call, "request pointer is NULL");
    Comm *c = comm_checked(comm, call, &err);
    if (c == nullptr) return err;
    if (int e = check_peer(c, comm, call, dest, false)) return e;
    if (int e = check_tag(comm, call, tag, false)) return e;
    Data d;
    if (int e = data_for_send(comm, call, buf, count, dt, &d)) return e;
    Request *r = req_alloc(ReqKind::kSend, comm, request);
    if (r == nullptr) {
        std::free(d.tmp);
        return err_raise(comm, MPI_ERR_NO_MEM, call, "no request slot left");
    }
    rdmx_status_t st = RDMX_OK;
    if (mode == SendMode::kBuffered) {
        // Done once the data is copied: the request completes at once.
        err = bsend(c, comm, call, d, dest, tag);
        std::free(d.tmp);
        d.tmp = nullptr;
        if (err != MPI_SUCCESS) {
            req_release(*request);
            *request = MPI_REQUEST_NULL;
            return err;
        }
    } else if (dest != MPI_PROC_NULL) {
        st = post_send(c->ctx, d, dest, tag, mode, &r->rr);
    }
    r->tmp = d.tmp;
    if (st != RDMX_OK) {
        std::free(d.tmp);
        req_release(*request);
        *request = MPI_REQUEST_NULL;
        return err_raise(comm, err_from_rdmx(st), call, "send of %zu bytes to rank %d: %s", d.bytes, dest,
                         rdmx_strerror(st));
    }
    if (r->rr == nullptr) req_done_at_post(r);
    return MPI_SUCCESS;
}

int post_recv(Request *r, Comm *c, void *buf, int count, MPI_Datatype dt, int source, int tag, const char *call) {
    Data d;
    if (int e = data_for_recv(r->comm, call, buf, count, dt, &d)) return e;
    r->cap = d.bytes;
    r->tmp = d.tmp;
    r->ubuf = buf;
    r->count = count;
    r->dt = dt;
    if (r->tmp != nullptr) r->dt_hold = TypeRef(dt);   // unpacked at completion, maybe after MPI_Type_free
    rdmx_status_t st = rdmx_irecv(c->ctx, d.base, d.bytes, to_rdmx_peer(source), tag, &r->rr);
    if (st == RDMX_OK) return MPI_SUCCESS;
    std::free(r->tmp);
    r->tmp = nullptr;
    return err_raise(r->comm, err_from_rdmx(st), call, "receive from rank %d: %s", source, rdmx_strerror(st));
}

int send_start(Request *r, Comm *c, const PersistArgs &a, const char *call) {
    Data d;
    if (int e = data_for_send(r->comm, call, a.buf, a.count, a.dt, &d)) return e;
    rdmx_status_t st = RDMX_OK;
    if (a.mode == SendMode::kBuffered) {
        const int e = bsend(c, r->comm, call, d, a.peer, a.tag);
        std::free(d.tmp);
        d.tmp = nullptr;
        if (e != MPI_SUCCESS) return e;
    } else if (a.peer != MPI_PROC_NULL) {
        st = post_send(c->ctx, d, a.peer, a.tag, a.mode, &r->rr);
    }
    r->tmp = d.tmp;
    if (st != RDMX_OK) {
        std::free(d.tmp);
        r->tmp = nullptr;
        return err_raise(r->comm, err_from_rdmx(st), call, "send of %zu bytes to rank %d: %s", d.bytes, a.peer,
                         rdmx_strerror(st));
    }
    if (r->rr == nullptr) req_done_at_post(r);
    return MPI_SUCCESS;
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

// The second half of MPI_Send's hot path, tail-called once the arguments
// are checked, so that MPI_Send itself saves no register.
static int __attribute__((noinline)) send_checked(rdmx_context_h ctx, const void *buf, size_t bytes, int dest, int tag,
                                                  MPI_Comm comm)
{
    const rdmx_status_t st = rdmx_send(ctx, buf, bytes, dest, tag);
    return __builtin_expect(st == RDMX_OK, 1) ? MPI_SUCCESS : send_failed(comm, "MPI_Send", st, dest);
}

static int __attribute__((noinline)) send_general(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                                                  MPI_Comm comm)
{
    return send_common("MPI_Send", buf, count, datatype, dest, tag, comm, SendMode::kStandard);
}

// The hot path: a predefined type to a rank, checked inline and handed to
// rdmx_send; everything else goes through send_common.
RDMXMPI_WEAK(Send)
RDMXMPI_API int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    const Comm *c = comm_get(comm);
    if (__builtin_expect(c != nullptr && fast_args(buf, count, datatype) && fast_rank(dest, c->size) && tag >= 0, 1))
        return send_checked(c->ctx, buf, builtin_bytes(count, datatype), dest, tag, comm);
    return send_general(buf, count, datatype, dest, tag, comm);
}

RDMXMPI_WEAK(Ssend)
RDMXMPI_API int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_common("MPI_Ssend", buf, count, datatype, dest, tag, comm, SendMode::kSync);
}

// A ready send may be sent as a standard one: its only promise (the
// receive is posted) lets an implementation go faster, never slower.
RDMXMPI_WEAK(Rsend)
RDMXMPI_API int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_common("MPI_Rsend", buf, count, datatype, dest, tag, comm, SendMode::kReady);
}

RDMXMPI_WEAK(Bsend)
RDMXMPI_API int PMPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_common("MPI_Bsend", buf, count, datatype, dest, tag, comm, SendMode::kBuffered);
}

RDMXMPI_WEAK(Isend)
RDMXMPI_API int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                           MPI_Request *request)
{
    Comm *c = comm_get(comm);
    size_t bytes = 0;
    if (c != nullptr && request != nullptr && fast_data(buf, count, datatype, &bytes) && fast_rank(dest, c->size) &&
        tag >= 0) {
        Request *r = req_alloc(ReqKind::kSend, comm, request);
        if (r != nullptr) {
            const rdmx_status_t st = rdmx_isend(c->ctx, buf, bytes, dest, tag, &r->rr);
            if (st == RDMX_OK) {
                if (r->rr == nullptr) req_done_at_post(r);
                return MPI_SUCCESS;
            }
            req_release(*request);
            *request = MPI_REQUEST_NULL;
            return err_raise(comm, err_from_rdmx(st), "MPI_Isend", "send of %zu bytes to rank %d: %s", bytes, dest,
                             rdmx_strerror(st));
        }
    }
    return isend_common("MPI_Isend", buf, count, datatype, dest, tag, comm, SendMode::kStandard, request);
}

RDMXMPI_WEAK(Issend)
RDMXMPI_API int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                            MPI_Request *request)
{
    return isend_common("MPI_Issend", buf, count, datatype, dest, tag, comm, SendMode::kSync, request);
}

RDMXMPI_WEAK(Irsend)
RDMXMPI_API int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                            MPI_Request *request)
{
    return isend_common("MPI_Irsend", buf, count, datatype, dest, tag, comm, SendMode::kReady, request);
}

RDMXMPI_WEAK(Ibsend)
RDMXMPI_API int PMPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                            MPI_Request *request)
{
    return isend_common("MPI_Ibsend", buf, count, datatype, dest, tag, comm, SendMode::kBuffered, request);
}

RDMXMPI_WEAK(Buffer_attach)
RDMXMPI_API int PMPI_Buffer_attach(void *buffer, int size)
{
    if (size < 0) return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Buffer_attach", "size %d is negative", size);
    std::lock_guard<std::mutex> g(g_bsend_mu);
    if (g_bsend_buf != nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_BUFFER, "MPI_Buffer_attach", "a buffer is attached already");
    g_bsend_buf = buffer;
    g_bsend_size = static_cast<size_t>(size);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Buffer_detach)
RDMXMPI_API int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    // MPI: blocks until every message in the buffer has gone.
    for (;;) {
        {
            std::lock_guard<std::mutex> g(g_bsend_mu);
            if (g_bsend_used == 0) break;
        }
        (void)req_reap();
    }
    std::lock_guard<std::mutex> g(g_bsend_mu);
    *static_cast<void **>(buffer_addr) = g_bsend_buf;
    *size = static_cast<int>(g_bsend_size);
    g_bsend_buf = nullptr;
    g_bsend_size = 0;
    return MPI_SUCCESS;
}

// ---- receives ------------------------------------------------------------------

// Every receive the hot path does not take: derived types, PROC_NULL, bad
// arguments (named by the checks), and the errors of any receive.
static int __attribute__((noinline)) recv_general(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                                                  MPI_Comm comm, MPI_Status *status)
{
    const char *call = "MPI_Recv";
    int err = MPI_SUCCESS;
    Comm *c = comm_get(comm);
    Data d;
    if (c == nullptr || !fast_data(buf, count, datatype, &d.bytes) ||
        !(fast_rank(source, c->size) || source == MPI_ANY_SOURCE) || !(tag >= 0 || tag == MPI_ANY_TAG)) {
        // The general path: checks that name what is wrong, derived types.
        c = comm_checked(comm, call, &err);
        if (c == nullptr) return err;
        if (int e = check_peer(c, comm, call, source, true)) return e;
        if (int e = check_tag(comm, call, tag, true)) return e;
        if (int e = data_for_recv(comm, call, buf, count, datatype, &d)) return e;
    } else {
        d.base = buf;
    }
    rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    const rdmx_status_t st = rdmx_recv(c->ctx, d.base, d.bytes, to_rdmx_peer(source), tag, &info);
    const size_t got = info.length < d.bytes ? info.length : d.bytes;
    if (d.tmp != nullptr) data_finish_recv(&d, buf, count, datatype, got);
    if (status != MPI_STATUS_IGNORE) status_from_info(status, info, got);
    if (st == RDMX_OK) return MPI_SUCCESS;
    err = err_from_rdmx(st);
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = err;
    if (st == RDMX_ERR_TRUNCATE)
        return err_raise(comm, err, call, "a message of %zu bytes from rank %d was truncated to the buffer's %zu bytes",
                         info.length, from_rdmx_peer(info.source), d.bytes);
    return err_raise(comm, err, call, "receive from rank %d: %s", source, rdmx_strerror(st));
}

constexpr rdmx_msg_info_t kNoInfo{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};

// A failed receive of the hot path, reported from what rdmx said (kept out
// of line so that the hot path saves few registers across rdmx_recv). With
// MPI_STATUS_IGNORE the hot path asked rdmx for no info: a truncated
// message's size and source are then unknown.
static int __attribute__((noinline, cold)) recv_failed(MPI_Comm comm, rdmx_status_t st, int source, size_t cap,
                                                       const rdmx_msg_info_t &info, MPI_Status *status)
{
    const int err = err_from_rdmx(st);
    if (status != MPI_STATUS_IGNORE) {
        status_from_info(status, info, info.length < cap ? info.length : cap);
        status->MPI_ERROR = err;
    }
    if (st == RDMX_ERR_TRUNCATE && status == MPI_STATUS_IGNORE) {
        char from[32] = "MPI_ANY_SOURCE";
        if (source != MPI_ANY_SOURCE) std::snprintf(from, sizeof from, "rank %d", source);
        return err_raise(comm, err, "MPI_Recv", "a message (receive from %s) was longer than the buffer's %zu bytes "
                         "and was truncated; pass a status to learn its size and source", from, cap);
    }
    if (st == RDMX_ERR_TRUNCATE)
        return err_raise(comm, err, "MPI_Recv", "a message of %zu bytes from rank %d was truncated to the buffer's %zu bytes",
                         info.length, from_rdmx_peer(info.source), cap);
    return err_raise(comm, err, "MPI_Recv", "receive from rank %d: %s", source, rdmx_strerror(st));
}

// The two halves of the hot path, tail-called once the arguments are
// checked: PMPI_Recv itself then saves no register, and each half only
// what its error report needs (`from` is rdmx's numbering of the source).
static int __attribute__((noinline)) recv_no_status(rdmx_context_h ctx, void *buf, size_t bytes, int from, int tag,
                                                    MPI_Comm comm)
{
    const rdmx_status_t st = rdmx_recv(ctx, buf, bytes, from, tag, nullptr);
    if (__builtin_expect(st == RDMX_OK, 1)) return MPI_SUCCESS;
    return recv_failed(comm, st, from_rdmx_peer(from), bytes, kNoInfo, MPI_STATUS_IGNORE);
}

static int __attribute__((noinline)) recv_with_status(rdmx_context_h ctx, void *buf, size_t bytes, int from, int tag,
                                                      MPI_Comm comm, MPI_Status *status)
{
    rdmx_msg_info_t info = kNoInfo;  // what a failure before the match leaves
    const rdmx_status_t st = rdmx_recv(ctx, buf, bytes, from, tag, &info);
    if (__builtin_expect(st != RDMX_OK, 0)) return recv_failed(comm, st, from_rdmx_peer(from), bytes, info, status);
    status_from_info(status, info, info.length);
    return MPI_SUCCESS;
}

// The hot path: a predefined type from a rank or MPI_ANY_SOURCE, checked
// inline and handed to rdmx_recv; everything else goes to recv_general.
RDMXMPI_WEAK(Recv)
RDMXMPI_API int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                          MPI_Status *status)
{
    const Comm *c = comm_get(comm);
    if (__builtin_expect(c == nullptr || !fast_args(buf, count, datatype) ||
                             !(fast_rank(source, c->size) || source == MPI_ANY_SOURCE) ||
                             !(tag >= 0 || tag == MPI_ANY_TAG), 0))
        return recv_general(buf, count, datatype, source, tag, comm, status);
    const int from = source == MPI_ANY_SOURCE ? RDMX_ANY_SOURCE : source;
    const size_t bytes = builtin_bytes(count, datatype);
    if (status == MPI_STATUS_IGNORE) return recv_no_status(c->ctx, buf, bytes, from, tag, comm);
    return recv_with_status(c->ctx, buf, bytes, from, tag, comm, status);
}

static int __attribute__((noinline, cold)) irecv_failed(MPI_Comm comm, rdmx_status_t st, int source,
                                                        MPI_Request *request) {
    req_release(*request);
    *request = MPI_REQUEST_NULL;
    return err_raise(comm, err_from_rdmx(st), "MPI_Irecv", "receive from rank %d: %s", source, rdmx_strerror(st));
}

static int __attribute__((noinline)) irecv_general(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                                                   MPI_Comm comm, MPI_Request *request);

// The hot path: a predefined type from a rank or MPI_ANY_SOURCE; the rest
// (and every error) in irecv_general.
RDMXMPI_WEAK(Irecv)
RDMXMPI_API int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                           MPI_Request *request)
{
    Comm *c = comm_get(comm);
    size_t bytes = 0;
    if (c != nullptr && request != nullptr && fast_data(buf, count, datatype, &bytes) &&
        (fast_rank(source, c->size) || source == MPI_ANY_SOURCE) && (tag >= 0 || tag == MPI_ANY_TAG)) {
        Request *r = req_alloc(ReqKind::kRecv, comm, request);
        if (r != nullptr) {
            r->cap = bytes;
            const rdmx_status_t st = rdmx_irecv(c->ctx, buf, bytes, to_rdmx_peer(source), tag, &r->rr);
            return st == RDMX_OK ? MPI_SUCCESS : irecv_failed(comm, st, source, request);
        }
    }
    return irecv_general(buf, count, datatype, source, tag, comm, request);
}

static int irecv_general(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                         MPI_Request *request)
{
    const char *call = "MPI_Irecv";
    int err = MPI_SUCCESS;
    if (request == nullptr) return err_raise(comm, MPI_ERR_ARG, call, "request pointer is NULL");
    Comm *c = comm_checked(comm, call, &err);
    if (c == nullptr) return err;
    if (int e = check_peer(c, comm, call, source, true)) return e;
    if (int e = check_tag(comm, call, tag, true)) return e;
    Request *r = req_alloc(ReqKind::kRecv, comm, request);
    if (r == nullptr) return err_raise(comm, MPI_ERR_NO_MEM, call, "no request slot left");
    if (int e = post_recv(r, c, buf, count, datatype, source, tag, call)) {
        req_release(*request);
        *request = MPI_REQUEST_NULL;
        return e;
    }
    return MPI_SUCCESS;
}

// ---- send and receive at once ----------------------------------------------------

static int sendrecv_finish(MPI_Comm comm, const char *call, rdmx_status_t st, const rdmx_msg_info_t &info,
                           size_t cap, MPI_Status *status) {
    const size_t got = info.length < cap ? info.length : cap;
    if (status != MPI_STATUS_IGNORE) status_from_info(status, info, got);
    if (st == RDMX_OK) return MPI_SUCCESS;
    const int err = err_from_rdmx(st);
    if (status != MPI_STATUS_IGNORE) status->MPI_ERROR = err;
    return err_raise(comm, err, call, "%s", st == RDMX_ERR_TRUNCATE ? "the message received was truncated"
                                                                    : rdmx_strerror(st));
}

RDMXMPI_WEAK(Sendrecv)
RDMXMPI_API int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                              MPI_Comm comm, MPI_Status *status)
{
    const char *call = "MPI_Sendrecv";
    int err = MPI_SUCCESS;
    Comm *c = comm_checked(comm, call, &err);
    if (c == nullptr) return err;
    if (int e = check_peer(c, comm, call, dest, false)) return e;
    if (int e = check_peer(c, comm, call, source, true)) return e;
    if (int e = check_tag(comm, call, sendtag, false)) return e;
    if (int e = check_tag(comm, call, recvtag, true)) return e;
    Data sd, rd;
    if (int e = data_for_send(comm, call, sendbuf, sendcount, sendtype, &sd)) return e;
    if (int e = data_for_recv(comm, call, recvbuf, recvcount, recvtype, &rd)) {
        std::free(sd.tmp);
        return e;
    }
    rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    const rdmx_status_t st = rdmx_sendrecv(c->ctx, sd.base, sd.bytes, to_rdmx_peer(dest), sendtag, rd.base, rd.bytes,
                                           to_rdmx_peer(source), recvtag, &info);
    std::free(sd.tmp);
    const size_t got = info.length < rd.bytes ? info.length : rd.bytes;
    data_finish_recv(&rd, recvbuf, recvcount, recvtype, got);
    return sendrecv_finish(comm, call, st, info, rd.bytes, status);
}

RDMXMPI_WEAK(Sendrecv_replace)
RDMXMPI_API int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                                      int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    const char *call = "MPI_Sendrecv_replace";
    int err = MPI_SUCCESS;
    Comm *c = comm_checked(comm, call, &err);
    if (c == nullptr) return err;
    if (int e = check_peer(c, comm, call, dest, false)) return e;
    if (int e = check_peer(c, comm, call, source, true)) return e;
    if (int e = check_tag(comm, call, sendtag, false)) return e;
    if (int e = check_tag(comm, call, recvtag, true)) return e;
    Data sd;
    if (int e = data_for_send(comm, call, buf, count, datatype, &sd)) return e;
    // The reply lands beside the outgoing data, then replaces it.
    void *in = sd.bytes != 0 ? std::malloc(sd.bytes) : nullptr;
    if (in == nullptr && sd.bytes != 0) {
        std::free(sd.tmp);
        return err_raise(comm, MPI_ERR_NO_MEM, call, "no memory for a %zu-byte receive buffer", sd.bytes);
    }
    rdmx_msg_info_t info{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
    const rdmx_status_t st = rdmx_sendrecv(c->ctx, sd.base, sd.bytes, to_rdmx_peer(dest), sendtag, in, sd.bytes,
                                           to_rdmx_peer(source), recvtag, &info);
    const size_t got = info.length < sd.bytes ? info.length : sd.bytes;
    if (sd.tmp == nullptr) {
        if (got != 0) std::memcpy(sd.base, in, got);
    } else {
        type_unpack(in, got, buf, count, datatype);
        std::free(sd.tmp);
    }
    std::free(in);
    return sendrecv_finish(comm, call, st, info, sd.bytes, status);
}
