// The point-to-point subset of rdmx.h that the collectives use, implemented
// on MPI, so that the collectives can be tested natively (no RDMA device)
// under mpirun. Each tag space is its own duplicate of MPI_COMM_WORLD, so a
// receive in one space (RDMX_ANY_TAG included) never matches another's.
//
// Test hooks (shim only, C++ linkage, see mpi_p2p_shim.h): fault injection
// into request completions, and a count of live requests (leak checks).
//
// Generalized requests and progress callbacks: the callbacks run (never two
// at once, never re-entered) whenever a test or wait meets a generalized
// request; there is no progress thread, so nothing advances between calls.
//
// Limits (test shim only): rdmx_init takes cfg == NULL and needs MPI to be
// initialised by the caller; a message is at most INT_MAX bytes; on
// truncation info->length is the received (not the sent) length.
#include "mpi_p2p_shim.h"

#include <rdmx/rdmx.h>

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdio>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

struct rdmx_context {
    MPI_Comm comm[3];
    int rank;
    int size;
    int tag_ub;
    std::map<int, std::pair<void *, rdmx_attr_free_fn_t>> attrs;  // key -> (value, free_fn)
};

namespace {
std::atomic<long> g_live_requests{0};
std::atomic<long> g_fail_countdown{0};
rdmx_status_t g_fail_status = RDMX_ERR_PEER_LOST;
}  // namespace

struct rdmx_request {
    rdmx_request() { ++g_live_requests; }
    ~rdmx_request() { --g_live_requests; }
    rdmx_request(const rdmx_request &) = delete;
    rdmx_request &operator=(const rdmx_request &) = delete;
    MPI_Request req = MPI_REQUEST_NULL;
    bool is_recv = false;
    bool is_greq = false;
    std::atomic<bool> greq_done{false};
    rdmx_status_t greq_status = RDMX_OK;
};

namespace rdmx_shim {
void fail_completion(long nth, rdmx_status_t status) {
    g_fail_status = status;
    g_fail_countdown.store(nth);
}
long live_requests() { return g_live_requests.load(); }
}  // namespace rdmx_shim

namespace {

// The injected status if this completion is the chosen one, else `st`.
rdmx_status_t maybe_inject(rdmx_status_t st) {
    if (g_fail_countdown.load() > 0 && --g_fail_countdown == 0) return g_fail_status;
    return st;
}

bool space_ok(rdmx_tagspace_t space) {
    return space == RDMX_TAGSPACE_USER || space == RDMX_TAGSPACE_COLL || space == RDMX_TAGSPACE_LIB;
}

rdmx_status_t bad(const char *fn, const char *arg) {
    std::fprintf(stderr, "rdmx(shim): %s: invalid argument '%s'\n", fn, arg);
    return RDMX_ERR_INVALID_ARG;
}

rdmx_status_t from_mpi(int rc) {
    if (rc == MPI_SUCCESS) return RDMX_OK;
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(rc, &cls);
    return cls == MPI_ERR_TRUNCATE ? RDMX_ERR_TRUNCATE : RDMX_ERR_INTERNAL;
}

// Common checks of isend/irecv; `peer` may be ANY_SOURCE for receives.
rdmx_status_t check_p2p(const char *fn, rdmx_context_h ctx, rdmx_tagspace_t space, const void *buf, size_t len,
                        int peer, bool any_ok, int tag, rdmx_request_h *req_p) {
    if (ctx == nullptr) return bad(fn, "ctx");
    if (!space_ok(space)) return bad(fn, "space");
    if (req_p == nullptr) return bad(fn, "req_p");
    if (buf == nullptr && len != 0) return bad(fn, "buf");
    if (len > static_cast<size_t>(INT_MAX)) return bad(fn, "len");
    if (!(peer >= 0 && peer < ctx->size) && !(any_ok && peer == RDMX_ANY_SOURCE)) return bad(fn, "peer");
    if (!(tag >= 0 && tag <= ctx->tag_ub) && !(any_ok && tag == RDMX_ANY_TAG)) return bad(fn, "tag");
    return RDMX_OK;
}

// Registered progress callbacks (per job, as in the library).
constexpr size_t kMaxCallbacks = 16;
constexpr int kMaxAttrKeys = 64;
std::atomic<int> g_attr_keys{0};
std::mutex g_cb_mu;  // the list
struct Callback {
    rdmx_context_h ctx;  // registered on (finalize drops its callbacks)
    rdmx_progress_fn_t fn;
    void *arg;
};
std::vector<Callback> g_callbacks;
std::mutex g_cb_running;  // one pass at a time
thread_local bool t_in_callbacks = false;

int run_callbacks() {
    if (t_in_callbacks) return 0;
    std::unique_lock<std::mutex> running(g_cb_running, std::try_to_lock);
    if (!running.owns_lock()) return 0;
    std::vector<Callback> list;
    {
        std::lock_guard<std::mutex> lk(g_cb_mu);
        list = g_callbacks;
    }
    t_in_callbacks = true;
    int events = 0;
    for (const Callback &cb : list) events += cb.fn(cb.arg);
    t_in_callbacks = false;
    return events;
}

rdmx_status_t finish_greq(rdmx_request_h *req, rdmx_msg_info_t *info_p) {
    rdmx_request *r = *req;
    const rdmx_status_t st = r->greq_status;
    if (info_p) *info_p = rdmx_msg_info_t{RDMX_PROC_NULL, RDMX_ANY_TAG, 0, st};
    delete r;
    *req = nullptr;
    return st;
}

}  // namespace

extern "C" {

rdmx_status_t rdmx_greq_start(rdmx_context_h ctx, rdmx_request_h *req_p) {
    if (ctx == nullptr) return bad("rdmx_greq_start", "ctx");
    if (req_p == nullptr) return bad("rdmx_greq_start", "req_p");
    auto *r = new (std::nothrow) rdmx_request;
    if (r == nullptr) return RDMX_ERR_NO_MEMORY;
    r->is_greq = true;
    *req_p = r;
    return RDMX_OK;
}

rdmx_status_t rdmx_greq_complete(rdmx_request_h req, rdmx_status_t status) {
    if (req == nullptr || !req->is_greq) return bad("rdmx_greq_complete", "req");
    if (req->greq_done.load()) return bad("rdmx_greq_complete", "req (completed twice)");
    req->greq_status = status;
    req->greq_done.store(true);
    return RDMX_OK;
}

rdmx_status_t rdmx_progress_register(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg) {
    if (ctx == nullptr) return bad("rdmx_progress_register", "ctx");
    if (fn == nullptr) return bad("rdmx_progress_register", "fn");
    std::lock_guard<std::mutex> lk(g_cb_mu);
    if (g_callbacks.size() >= kMaxCallbacks) return RDMX_ERR_NO_MEMORY;
    g_callbacks.push_back(Callback{ctx, fn, arg});
    return RDMX_OK;
}

rdmx_status_t rdmx_progress_unregister(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg) {
    if (ctx == nullptr) return bad("rdmx_progress_unregister", "ctx");
    std::lock_guard<std::mutex> lk(g_cb_mu);
    for (auto it = g_callbacks.begin(); it != g_callbacks.end(); ++it) {
        if (it->fn == fn && it->arg == arg) {
            g_callbacks.erase(it);
            return RDMX_OK;
        }
    }
    return bad("rdmx_progress_unregister", "fn (not registered)");
}

rdmx_status_t rdmx_attr_key_create(int *key_p) {
    if (key_p == nullptr) return bad("rdmx_attr_key_create", "key_p");
    const int k = g_attr_keys++;
    if (k >= kMaxAttrKeys) return RDMX_ERR_NO_MEMORY;
    *key_p = k;
    return RDMX_OK;
}

rdmx_status_t rdmx_attr_set(rdmx_context_h ctx, int key, void *value, rdmx_attr_free_fn_t free_fn) {
    if (ctx == nullptr) return bad("rdmx_attr_set", "ctx");
    if (key < 0 || key >= g_attr_keys.load()) return bad("rdmx_attr_set", "key");
    auto it = ctx->attrs.find(key);
    if (it != ctx->attrs.end() && it->second.second != nullptr) it->second.second(it->second.first);
    ctx->attrs[key] = {value, free_fn};
    return RDMX_OK;
}

rdmx_status_t rdmx_attr_get(rdmx_context_h ctx, int key, void **value_p) {
    if (ctx == nullptr) return bad("rdmx_attr_get", "ctx");
    if (key < 0 || key >= g_attr_keys.load() || value_p == nullptr) return bad("rdmx_attr_get", "key");
    auto it = ctx->attrs.find(key);
    *value_p = it == ctx->attrs.end() ? nullptr : it->second.first;
    return RDMX_OK;
}

int rdmx_progress(rdmx_context_h ctx) { return ctx ? run_callbacks() : 0; }

rdmx_status_t rdmx_init(const rdmx_config_t *cfg, rdmx_context_h *ctx_p) {
    if (ctx_p == nullptr) return bad("rdmx_init", "ctx_p");
    *ctx_p = nullptr;
    if (cfg != nullptr) return RDMX_ERR_UNSUPPORTED;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) return RDMX_ERR_INTERNAL;
    auto *ctx = new (std::nothrow) rdmx_context;
    if (ctx == nullptr) return RDMX_ERR_NO_MEMORY;
    MPI_Comm_rank(MPI_COMM_WORLD, &ctx->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ctx->size);
    for (MPI_Comm &c : ctx->comm) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    }
    void *ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    ctx->tag_ub = found ? *static_cast<int *>(ub) : 32767;
    *ctx_p = ctx;
    return RDMX_OK;
}

rdmx_status_t rdmx_finalize(rdmx_context_h ctx) {
    if (ctx == nullptr) return bad("rdmx_finalize", "ctx");
    for (auto &kv : ctx->attrs)  // before the traffic's communicators go
        if (kv.second.second != nullptr) kv.second.second(kv.second.first);
    ctx->attrs.clear();
    for (MPI_Comm &c : ctx->comm) MPI_Comm_free(&c);
    {
        std::lock_guard<std::mutex> lk(g_cb_mu);
        std::erase_if(g_callbacks, [ctx](const Callback &cb) { return cb.ctx == ctx; });
    }
    delete ctx;
    return RDMX_OK;
}

int rdmx_rank(rdmx_context_h ctx) { return ctx ? ctx->rank : -1; }
int rdmx_size(rdmx_context_h ctx) { return ctx ? ctx->size : -1; }

rdmx_status_t rdmx_isend_in(rdmx_context_h ctx, rdmx_tagspace_t space, const void *buf, size_t len, int dest,
                            int tag, rdmx_request_h *req_p) {
    rdmx_status_t st = check_p2p("rdmx_isend_in", ctx, space, buf, len, dest, false, tag, req_p);
    if (st != RDMX_OK) return st;
    auto *r = new (std::nothrow) rdmx_request;
    if (r == nullptr) return RDMX_ERR_NO_MEMORY;
    int rc = MPI_Isend(buf, static_cast<int>(len), MPI_BYTE, dest, tag, ctx->comm[space], &r->req);
    if (rc != MPI_SUCCESS) {
        delete r;
        return from_mpi(rc);
    }
    *req_p = r;
    return RDMX_OK;
}

rdmx_status_t rdmx_irecv_in(rdmx_context_h ctx, rdmx_tagspace_t space, void *buf, size_t len, int source, int tag,
                            rdmx_request_h *req_p) {
    rdmx_status_t st = check_p2p("rdmx_irecv_in", ctx, space, buf, len, source, true, tag, req_p);
    if (st != RDMX_OK) return st;
    auto *r = new (std::nothrow) rdmx_request;
    if (r == nullptr) return RDMX_ERR_NO_MEMORY;
    r->is_recv = true;
    const int src = source == RDMX_ANY_SOURCE ? MPI_ANY_SOURCE : source;
    const int mtag = tag == RDMX_ANY_TAG ? MPI_ANY_TAG : tag;
    int rc = MPI_Irecv(buf, static_cast<int>(len), MPI_BYTE, src, mtag, ctx->comm[space], &r->req);
    if (rc != MPI_SUCCESS) {
        delete r;
        return from_mpi(rc);
    }
    *req_p = r;
    return RDMX_OK;
}

rdmx_status_t rdmx_isend(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag, rdmx_request_h *req_p) {
    return rdmx_isend_in(ctx, RDMX_TAGSPACE_USER, buf, len, dest, tag, req_p);
}

rdmx_status_t rdmx_irecv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_request_h *req_p) {
    return rdmx_irecv_in(ctx, RDMX_TAGSPACE_USER, buf, len, source, tag, req_p);
}

rdmx_status_t rdmx_wait(rdmx_request_h *req, rdmx_msg_info_t *info_p) {
    if (req == nullptr) return bad("rdmx_wait", "req");
    if (*req == nullptr) {
        if (info_p) *info_p = rdmx_msg_info_t{RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_OK};
        return RDMX_OK;
    }
    rdmx_request *r = *req;
    if (r->is_greq) {
        while (!r->greq_done.load()) run_callbacks();
        return finish_greq(req, info_p);
    }
    MPI_Status status;
    rdmx_status_t st = from_mpi(MPI_Wait(&r->req, &status));
    int cancelled = 0;
    if (r->is_recv) MPI_Test_cancelled(&status, &cancelled);
    if (cancelled) st = RDMX_ERR_CANCELED;
    st = maybe_inject(st);  // the data is delivered all the same
    if (info_p) {
        int count = 0;
        if (r->is_recv && !cancelled) MPI_Get_count(&status, MPI_BYTE, &count);
        *info_p = rdmx_msg_info_t{r->is_recv ? status.MPI_SOURCE : RDMX_ANY_SOURCE,
                                  r->is_recv ? status.MPI_TAG : RDMX_ANY_TAG,
                                  static_cast<size_t>(count < 0 ? 0 : count), st};
    }
    delete r;
    *req = nullptr;
    return st;
}

rdmx_status_t rdmx_waitall(size_t n, rdmx_request_h reqs[], rdmx_msg_info_t infos[]) {
    if (reqs == nullptr && n != 0) return bad("rdmx_waitall", "reqs");
    rdmx_status_t first = RDMX_OK;
    for (size_t i = 0; i < n; ++i) {
        rdmx_status_t st = rdmx_wait(&reqs[i], infos ? &infos[i] : nullptr);
        if (st != RDMX_OK && first == RDMX_OK) first = st;
    }
    return first;
}

rdmx_status_t rdmx_test(rdmx_request_h *req, int *done_p, rdmx_msg_info_t *info_p) {
    if (req == nullptr || done_p == nullptr) return bad("rdmx_test", "req");
    if (*req == nullptr) {
        *done_p = 1;
        return rdmx_wait(req, info_p);
    }
    if ((*req)->is_greq) {
        run_callbacks();
        *done_p = (*req)->greq_done.load() ? 1 : 0;
        return *done_p ? finish_greq(req, info_p) : RDMX_INPROGRESS;
    }
    int flag = 0;
    MPI_Request probe = (*req)->req;
    MPI_Request_get_status(probe, &flag, MPI_STATUS_IGNORE);
    *done_p = flag;
    if (!flag) return RDMX_INPROGRESS;
    return rdmx_wait(req, info_p);
}

rdmx_status_t rdmx_cancel(rdmx_request_h req) {
    if (req == nullptr) return bad("rdmx_cancel", "req");
    if (req->is_recv && !req->is_greq) MPI_Cancel(&req->req);
    return RDMX_OK;
}

const char *rdmx_strerror(rdmx_status_t status) {
    switch (status) {
    case RDMX_OK: return "success";
    case RDMX_INPROGRESS: return "in progress";
    case RDMX_ERR_INVALID_ARG: return "invalid argument";
    case RDMX_ERR_TRUNCATE: return "message truncated";
    case RDMX_ERR_PEER_LOST: return "peer lost";
    case RDMX_ERR_TIMEOUT: return "timeout";
    case RDMX_ERR_CONNECT: return "connection failed";
    case RDMX_ERR_DEVICE: return "device error";
    case RDMX_ERR_NO_DEVICE: return "no RDMA device";
    case RDMX_ERR_NO_MEMORY: return "out of memory";
    case RDMX_ERR_CANCELED: return "canceled";
    case RDMX_ERR_INTERNAL: return "internal error";
    case RDMX_ERR_PROTOCOL: return "protocol error";
    case RDMX_ERR_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

}  // extern "C"
