// The public API of communicators (split, dup, free, numbering, locality,
// attributes), rdmx_sendrecv, rdmx_abort, generalized requests and progress
// callbacks.
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/api_internal.h"
#include "protocols/context.h"

using rdmx::Ctx;
using namespace rdmx::api;

namespace {

// How long rdmx_abort lets its notices to the peers drain before it exits.
constexpr double kAbortDrainSeconds = 1.0;

// The slot every runner of the callbacks takes; `t_in_hooks` marks the
// thread holding it, so a callback may (un)register without deadlock.
thread_local bool t_in_hooks = false;

class HookSlot {
public:
    explicit HookSlot(Ctx *c) : c_(c) {
        if (t_in_hooks) return;
        bool expected = false;
        while (!c_->hooks_busy.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
            expected = false;
            std::this_thread::yield();
        }
        held_ = true;
    }
    ~HookSlot() {
        if (held_) c_->hooks_busy.store(false, std::memory_order_release);
    }
    HookSlot(const HookSlot &) = delete;
    HookSlot &operator=(const HookSlot &) = delete;

private:
    Ctx *c_;
    bool held_ = false;
};

rdmx_status_t create(const char *fn, rdmx_context_h ctx, bool dup, int color, int key, rdmx_context_h *newctx_p) {
    if (newctx_p == nullptr) RDMX_BAD_ARG("%s: newctx_p is NULL", fn);
    *newctx_p = nullptr;
    Handle h;
    if (rdmx_status_t st = check_handle(fn, ctx, &h)) return st;
    Pin pin(h.c);
    if (!pin) RDMX_BAD_ARG("%s: ctx %p is being finalized", fn, (void *)ctx);
    // A bad colour still takes part (every member learns of it and fails
    // the same way, instead of waiting for this rank).
    return guarded(fn, [&] {
        rdmx::CommView *v = nullptr;
        rdmx_status_t st = rdmx::comm_create(h, dup, color, key, &v);
        if (st == RDMX_OK && v != nullptr) *newctx_p = handle_of(v);
        return st;
    });
}

}  // namespace

namespace rdmx {

void run_hooks_slow(Ctx *c) {
    if (t_in_hooks || c->finalized.load(std::memory_order_relaxed)) return;
    bool expected = false;
    if (!c->hooks_busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) return;
    t_in_hooks = true;
    try {
        for (int i = 0; i < c->n_hooks.load(std::memory_order_relaxed); ++i) (void)c->hooks[i].fn(c->hooks[i].arg);
    } catch (...) {
        RDMX_ERROR("progress: a progress callback threw; the exception was dropped");
    }
    t_in_hooks = false;
    c->hooks_busy.store(false, std::memory_order_release);
}

void comm_on_abort(Ctx *c, int peer, int code) {
    RDMX_ERROR("rank %d called rdmx_abort(%d): ending this process with exit status %d", peer, code, code);
    (void)c;
    std::fflush(stderr);
    _exit(code);
}

}  // namespace rdmx

extern "C" {

rdmx_status_t rdmx_comm_split(rdmx_context_h ctx, int color, int key, rdmx_context_h *newctx_p) {
    if (color < 0 && color != RDMX_UNDEFINED)
        RDMX_ERROR("rdmx_comm_split: colour %d is neither >= 0 nor RDMX_UNDEFINED (every member will fail)", color);
    return create("rdmx_comm_split", ctx, false, color, key, newctx_p);
}

rdmx_status_t rdmx_comm_dup(rdmx_context_h ctx, rdmx_context_h *newctx_p) {
    return create("rdmx_comm_dup", ctx, true, 0, 0, newctx_p);
}

rdmx_status_t rdmx_comm_free(rdmx_context_h *ctx_p) {
    if (ctx_p == nullptr) RDMX_BAD_ARG("rdmx_comm_free: ctx_p is NULL");
    Handle h;
    if (!resolve(*ctx_p, &h)) RDMX_BAD_ARG("rdmx_comm_free: ctx %p is not a live context", (void *)*ctx_p);
    if (h.v->is_root())
        RDMX_BAD_ARG("rdmx_comm_free: ctx %p is the context rdmx_init made (rdmx_finalize frees it)", (void *)*ctx_p);
    Pin pin(h.c);
    if (!pin) RDMX_BAD_ARG("rdmx_comm_free: ctx %p is being finalized", (void *)*ctx_p);
    rdmx_status_t st = guarded("rdmx_comm_free", [&] { return rdmx::comm_free(h); });
    if (st == RDMX_OK) *ctx_p = nullptr;
    return st;
}

int rdmx_comm_world_rank(rdmx_context_h ctx, int rank) {
    Handle h;
    if (!resolve(ctx, &h) || rank < 0 || rank >= h.v->size) return -1;
    return h.v->to_engine(rank);
}

int rdmx_local_rank(rdmx_context_h ctx) {
    Handle h;
    return resolve(ctx, &h) ? h.v->local_rank : -1;
}

int rdmx_local_size(rdmx_context_h ctx) {
    Handle h;
    return resolve(ctx, &h) ? h.v->local_size : -1;
}

rdmx_status_t rdmx_attr_key_create(int *key_p) {
    if (key_p == nullptr) RDMX_BAD_ARG("rdmx_attr_key_create: key_p is NULL");
    return rdmx::attr_key_create(key_p);
}

rdmx_status_t rdmx_attr_set(rdmx_context_h ctx, int key, void *value, rdmx_attr_free_fn_t free_fn) {
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_attr_set", ctx, &h)) return st;
    if (!rdmx::attr_key_valid(key)) RDMX_BAD_ARG("rdmx_attr_set: key %d was not made by rdmx_attr_key_create", key);
    rdmx::attr_set(h.v, key, value, free_fn);
    return RDMX_OK;
}

rdmx_status_t rdmx_attr_get(rdmx_context_h ctx, int key, void **value_p) {
    if (value_p == nullptr) RDMX_BAD_ARG("rdmx_attr_get: value_p is NULL");
    *value_p = nullptr;
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_attr_get", ctx, &h)) return st;
    if (!rdmx::attr_key_valid(key)) RDMX_BAD_ARG("rdmx_attr_get: key %d was not made by rdmx_attr_key_create", key);
    *value_p = rdmx::attr_get(h.v, key);
    return RDMX_OK;
}

rdmx_status_t rdmx_sendrecv(rdmx_context_h ctx, const void *sendbuf, size_t sendlen, int dest, int sendtag,
                            void *recvbuf, size_t recvlen, int source, int recvtag, rdmx_msg_info_t *info_p) {
    rdmx_request_h rr = nullptr, sr = nullptr;
    rdmx_status_t st = rdmx_irecv(ctx, recvbuf, recvlen, source, recvtag, &rr);
    if (st != RDMX_OK) return st;
    st = rdmx_isend(ctx, sendbuf, sendlen, dest, sendtag, &sr);
    if (st != RDMX_OK) {
        (void)rdmx_cancel(rr);
        (void)rdmx_wait(&rr, nullptr);
        return st;
    }
    const rdmx_status_t rst = rdmx_wait(&rr, info_p);
    const rdmx_status_t sst = rdmx_wait(&sr, nullptr);
    return rst != RDMX_OK ? rst : sst;
}

// Tells every reachable peer (each exits with the code on arrival), lets the
// notices drain for a moment, asks the launcher to end the job, and exits.
rdmx_status_t rdmx_abort(rdmx_context_h ctx, int code) {
    Handle h;
    if (!resolve(ctx, &h)) RDMX_BAD_ARG("rdmx_abort: ctx %p is not a live context", (void *)ctx);
    Ctx *c = h.c;
    const int status = code & 0xFF;
    RDMX_ERROR("rdmx_abort(%d) called on rank %d: ending the job", code, c->rank);
    try {
        {
            std::lock_guard<rdmx::SpinLock> g(c->lock);
            for (int p = 0; p < c->size; ++p)
                if (p != c->rank && rdmx::peer_usable(c, p) && rdmx::can_post(c, p, 0))
                    (void)rdmx::post_msg(c, p, rdmx::wire::MsgType::kAbort, 0, 0, status, 0, 0, nullptr, 0, true);
            for (rdmx::Transport *t : c->transports) t->flush();
        }
        rdmx::Deadline d(kAbortDrainSeconds);
        while (!d.expired()) {
            (void)rdmx::progress(c, false);
            std::this_thread::yield();
        }
        char msg[96];
        std::snprintf(msg, sizeof(msg), "rdmx_abort(%d) called on rank %d", code, c->rank);
        c->boot->abort_job(status, msg);
    } catch (...) {
    }
    std::fflush(stderr);
    _exit(status);
}

rdmx_status_t rdmx_greq_start(rdmx_context_h ctx, rdmx_request_h *req_p) {
    if (req_p == nullptr) RDMX_BAD_ARG("rdmx_greq_start: req_p is NULL");
    *req_p = nullptr;
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_greq_start", ctx, &h)) return st;
    return guarded("rdmx_greq_start", [&] {
        std::lock_guard<rdmx::SpinLock> g(h.c->lock);
        rdmx_request *r = rdmx::req_alloc(h.c, ReqKind::kGreq, h.v);
        h.c->greqs_pending.fetch_add(1, std::memory_order_relaxed);
        *req_p = r;
        return RDMX_OK;
    });
}

rdmx_status_t rdmx_greq_complete(rdmx_request_h req, rdmx_status_t status) {
    if (req == nullptr) RDMX_BAD_ARG("rdmx_greq_complete: req is NULL");
    Pin pin;
    if (rdmx_status_t st = check_req("rdmx_greq_complete", req, &pin)) return st;
    if (req->kind != ReqKind::kGreq) RDMX_BAD_ARG("rdmx_greq_complete: request %p is not a generalized request", (void *)req);
    Ctx *c = req->ctx;
    bool notify = false;
    {
        std::lock_guard<rdmx::SpinLock> g(c->lock);
        if (req->done.load(std::memory_order_relaxed) != 0)
            RDMX_BAD_ARG("rdmx_greq_complete: request %p was completed already", (void *)req);
        req->info = {RDMX_PROC_NULL, RDMX_ANY_TAG, 0, status};
        rdmx::req_complete(c, req, status);
        c->greqs_pending.fetch_sub(1, std::memory_order_relaxed);
        notify = c->notify_pending;
        c->notify_pending = false;
    }
    if (notify) rdmx::notify_waiters(c);
    return RDMX_OK;
}

rdmx_status_t rdmx_progress_register(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg) {
    if (fn == nullptr) RDMX_BAD_ARG("rdmx_progress_register: fn is NULL");
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_progress_register", ctx, &h)) return st;
    Ctx *c = h.c;
    HookSlot slot(c);
    const int n = c->n_hooks.load(std::memory_order_relaxed);
    if (n == rdmx_context::kMaxHooks) {
        RDMX_ERROR("rdmx_progress_register: %d callbacks registered already", rdmx_context::kMaxHooks);
        return RDMX_ERR_NO_MEMORY;
    }
    c->hooks[n] = {fn, arg};
    c->n_hooks.store(n + 1, std::memory_order_release);
    return RDMX_OK;
}

rdmx_status_t rdmx_progress_unregister(rdmx_context_h ctx, rdmx_progress_fn_t fn, void *arg) {
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_progress_unregister", ctx, &h)) return st;
    Ctx *c = h.c;
    HookSlot slot(c);
    const int n = c->n_hooks.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
        if (c->hooks[i].fn != fn || c->hooks[i].arg != arg) continue;
        for (int j = i; j + 1 < n; ++j) c->hooks[j] = c->hooks[j + 1];  // keep the order
        c->n_hooks.store(n - 1, std::memory_order_release);
        return RDMX_OK;
    }
    RDMX_BAD_ARG("rdmx_progress_unregister: (%p, %p) is not registered", (void *)fn, arg);
}

}  // extern "C"
