// The public C API: argument checks (a log line naming the argument), then
// the engine under the context lock. No exception crosses this boundary.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <thread>

#include "core/clock.h"
#include "core/hot.h"
#include "core/log.h"
#include "protocols/api_internal.h"
#include "protocols/context.h"

using rdmx::Ctx;

namespace {

using namespace rdmx::api;

RDMX_HOT_INLINE rdmx_status_t check_p2p(const char *fn, rdmx_context_h ctx, Handle *h, int space, const void *buf,
                                        size_t len, int peer, bool any_ok, int tag, const void *req_p) {
    if (rdmx_status_t st = check_handle(fn, ctx, h)) return st;
    // The tag space indexes the engine's tables: checked in every mode (a
    // constant in the callers that matter, so it costs nothing there).
    if (space < 0 || static_cast<unsigned>(space) >= rdmx::kNumPublicSpaces)
        RDMX_BAD_ARG("%s: tag space %d unknown", fn, space);
    if (!h->c->check_args) return RDMX_OK;  // RDMX_CHECK_ARGS=handles: the caller checked the rest
    if (buf == nullptr && len != 0) RDMX_BAD_ARG("%s: buf is NULL with len %zu", fn, len);
    // A range past the address space's end would reach the peer, which
    // rejects it and drops us as a protocol offender.
    if (len > kMaxLen) RDMX_BAD_ARG("%s: len %zu is above the largest message (%zu bytes)", fn, len, kMaxLen);
    if (reinterpret_cast<uintptr_t>(buf) + len < reinterpret_cast<uintptr_t>(buf))
        RDMX_BAD_ARG("%s: buf %p + len %zu wraps past the end of the address space", fn, buf, len);
    if (rdmx_status_t st = check_peer(fn, *h, peer, any_ok)) return st;
    if (tag < (any_ok ? RDMX_ANY_TAG : 0)) RDMX_BAD_ARG("%s: tag %d is negative%s", fn, tag, any_ok ? " (and not RDMX_ANY_TAG)" : "");
    if (req_p == nullptr) RDMX_BAD_ARG("%s: request pointer is NULL", fn);
    return RDMX_OK;
}

// The posts, inlined into the public entry points (rdmx_send, rdmx_isend,
// rdmx_irecv, ...): one call from the application to the transport's post.
// do_isend and do_irecv are the same for the other files of the API.
RDMX_HOT_INLINE rdmx_status_t isend_impl(const Handle &h, int space, const void *buf, size_t len, int dest, int tag,
                                         rdmx_request_h *req_p, bool sync) {
    if (dest == RDMX_PROC_NULL) return RDMX_OK;  // complete at post: *req_p stays NULL
    Ctx *ctx = h.c;
    const int peer = h.v->to_engine(dest);
    rdmx::note_app_call(ctx);
    std::lock_guard<rdmx::SpinLock> g(ctx->lock);
    // Complete at post: no request, *req_p stays NULL (a finished handle).
    if (!sync && rdmx::send_at_post(ctx, peer, static_cast<uint8_t>(space), h.v->id, tag, buf, len)) return RDMX_OK;
    rdmx_request *r = rdmx::req_alloc(ctx, ReqKind::kSend, h.v);
    r->sync = sync;
    r->buf = const_cast<void *>(buf);
    r->len = len;
    r->peer = peer;
    r->tag = tag;
    r->space = static_cast<uint8_t>(space);
    r->bits = {r->space, peer, tag, h.v->id};
    *req_p = r;
    return rdmx::start_send(ctx, r);
}

RDMX_HOT_INLINE rdmx_status_t irecv_impl(const Handle &h, int space, void *buf, size_t len, int source, int tag,
                                         rdmx_request_h *req_p) {
    Ctx *ctx = h.c;
    rdmx::note_app_call(ctx);
    std::lock_guard<rdmx::SpinLock> g(ctx->lock);
    rdmx_request *r = rdmx::req_alloc(ctx, ReqKind::kRecv, h.v);
    *req_p = r;
    if (source == RDMX_PROC_NULL) {  // done at once: nothing to receive
        r->info = {RDMX_PROC_NULL, RDMX_ANY_TAG, 0, RDMX_OK};
        rdmx::req_complete(ctx, r, RDMX_OK);
        return RDMX_OK;
    }
    r->buf = buf;
    r->len = len;
    r->tag = tag;
    r->space = static_cast<uint8_t>(space);
    r->bits = {r->space, source >= 0 ? h.v->to_engine(source) : source, tag, h.v->id};
    return rdmx::start_recv(ctx, r);
}

}  // namespace

namespace rdmx::api {

rdmx_status_t do_isend(const Handle &h, int space, const void *buf, size_t len, int dest, int tag,
                       rdmx_request_h *req_p, bool sync) {
    return isend_impl(h, space, buf, len, dest, tag, req_p, sync);
}

rdmx_status_t do_irecv(const Handle &h, int space, void *buf, size_t len, int source, int tag,
                       rdmx_request_h *req_p) {
    return irecv_impl(h, space, buf, len, source, tag, req_p);
}

}  // namespace rdmx::api

namespace {

// rdmx_irecv_in's body; `async`: the application may compute after it
// without waiting (rdmx_irecv), not wait at once (rdmx_recv).
RDMX_HOT_INLINE rdmx_status_t irecv_entry(rdmx_context_h ctx, int sp, void *buf, size_t len, int source, int tag,
                                          rdmx_request_h *req_p, bool async) {
    Handle h;
    if (rdmx_status_t st = check_p2p("rdmx_irecv", ctx, &h, sp, buf, len, source, true, tag, req_p)) {
        if (req_p != nullptr) *req_p = nullptr;
        return st;
    }
    if (async) rdmx::wake_if_deep(h.c);
    // One store of *req_p, whatever the outcome: the request once it exists
    // (a failure after that, e.g. out of memory starting a rendezvous, still
    // hands it back to be waited on), NULL if its allocation failed.
    rdmx_request_h out = nullptr;
    const rdmx_status_t st = guarded("rdmx_irecv", [&] { return irecv_impl(h, sp, buf, len, source, tag, &out); });
    *req_p = out;
    return st;
}

// rdmx_waitall over requests of one live context, all valid (the usual
// case): one pin, one wait for the whole array (every progress pass serves
// them all), one lock to free them. False: something else is in the array;
// nothing was touched.
bool waitall_one_pass(size_t n, rdmx_request_h reqs[], rdmx_msg_info_t infos[], rdmx_status_t *first) {
    Ctx *c = nullptr;
    for (size_t i = 0; i < n && c == nullptr; ++i)
        if (reqs[i] != nullptr) c = reqs[i]->ctx;
    if (c == nullptr) return false;
    Pin pin(c);
    if (!pin) return false;
    for (size_t i = 0; i < n; ++i)
        if (reqs[i] != nullptr && (reqs[i]->ctx != c || reqs[i]->pooled)) return false;
    rdmx::wait_all(c, reqs, n);
    std::lock_guard<rdmx::SpinLock> g(c->lock);
    for (size_t i = 0; i < n; ++i) {
        rdmx_request *r = reqs[i];
        if (r == nullptr) continue;
        if (r->status != RDMX_OK && *first == RDMX_OK) *first = r->status;
        if (infos != nullptr) report_info(r, &infos[i]);
        rdmx::req_free(c, r);
        reqs[i] = nullptr;
    }
    return true;
}

}  // namespace

extern "C" {

rdmx_status_t rdmx_init(const rdmx_config_t *cfg, rdmx_context_h *ctx_p) {
    if (ctx_p == nullptr) RDMX_BAD_ARG("rdmx_init: ctx_p is NULL");
    *ctx_p = nullptr;
    // A caller built against an earlier header passes a shorter struct: its
    // fields are copied over the defaults of this version's.
    constexpr size_t kConfigFirstVersion = offsetof(rdmx_config_t, connect);
    rdmx_config_t full;
    if (cfg != nullptr) {
        if (cfg->struct_size < kConfigFirstVersion || cfg->struct_size > sizeof(rdmx_config_t))
            RDMX_BAD_ARG("rdmx_init: cfg->struct_size %zu is neither this version's %zu nor an earlier one's (from "
                         "%zu; call rdmx_config_init first)", cfg->struct_size, sizeof(rdmx_config_t),
                         kConfigFirstVersion);
        rdmx_config_init(&full);
        std::memcpy(&full, cfg, cfg->struct_size);
        full.struct_size = sizeof(full);
        cfg = &full;
    }
    rdmx::fork_protect();  // before this context registers anything
    return guarded("rdmx_init", [&] {
        auto *c = new rdmx_context;
        rdmx_status_t st = rdmx::context_init(c, cfg);
        if (st != RDMX_OK) {
            rdmx::stop_progress_thread(c);
            delete c;
            return st;
        }
        rdmx::comm_init_root(c);
        if (!register_live(c)) {
            RDMX_ERROR("rdmx_init: more than %zu contexts alive at once; finalize one first", kMaxLive);
            (void)rdmx::context_finalize(c);
            delete c;
            return RDMX_ERR_NO_MEMORY;
        }
        *ctx_p = c;
        return RDMX_OK;
    });
}

// Threads still inside a wait, test or probe on the context were woken by
// context_finalize (their requests completed with CANCELED); the context is
// freed only once every one has left. One stuck past the deadline leaks the
// context instead: better than freeing memory a thread still reads.
rdmx_status_t rdmx_finalize(rdmx_context_h ctx) {
    if (ctx == nullptr) RDMX_BAD_ARG("rdmx_finalize: ctx is NULL");
    if (comm_pool_owns(ctx))
        RDMX_BAD_ARG("rdmx_finalize: ctx %p is a derived context (free it with rdmx_comm_free; rdmx_finalize "
                     "takes the context rdmx_init made)", (void *)ctx);
    LiveSlot *slot = find_slot(addr_of(ctx));
    if (slot == nullptr) RDMX_BAD_ARG("rdmx_finalize: ctx %p is not a live context (finalized already?)", (void *)ctx);
    // Layers above rdmx let go of their per-context state first (their
    // free functions may still call in); the views go back to the pool once
    // the engine is gone.
    std::vector<rdmx::CommView *> views;
    if (rdmx_status_t st = guarded("rdmx_finalize", [&] {
            views = rdmx::comm_teardown(ctx);
            return RDMX_OK;
        }))
        return st;
    uintptr_t word = addr_of(ctx);
    if (slot == nullptr || !slot->word.compare_exchange_strong(word, word | kClosing, std::memory_order_seq_cst))
        RDMX_BAD_ARG("rdmx_finalize: ctx %p is not a live context (finalized already?)", (void *)ctx);
    ctx->finalized.store(true, std::memory_order_release);
    return guarded("rdmx_finalize", [&] {
        rdmx_status_t st = rdmx::context_finalize(ctx);
        rdmx::log_flush_suppressed();  // the counts of rate-limited lines, before the job may exit
        rdmx::Deadline d(kUsersDrainSeconds);
        while (slot->users.load(std::memory_order_seq_cst) != 0) {
            if (d.expired()) {
                RDMX_ERROR("rdmx_finalize: %d thread(s) still inside a call on this context after %.0f s; "
                           "leaving the context allocated", slot->users.load(), kUsersDrainSeconds);
                return st;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        delete ctx;
        for (rdmx::CommView *v : views) rdmx::comm_view_release(v);
        slot->word.store(0, std::memory_order_release);
        return st;
    });
}

int rdmx_rank(rdmx_context_h ctx) {
    Handle h;
    return resolve(ctx, &h) ? h.v->rank : -1;
}
int rdmx_size(rdmx_context_h ctx) {
    Handle h;
    return resolve(ctx, &h) ? h.v->size : -1;
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_isend_in(rdmx_context_h ctx, rdmx_tagspace_t space, const void *buf, size_t len, int dest,
                            int tag, rdmx_request_h *req_p) {
    if (req_p != nullptr) *req_p = nullptr;
    const int sp = rdmx::raw_enum(space);
    Handle h;
    if (rdmx_status_t st = check_p2p("rdmx_isend", ctx, &h, sp, buf, len, dest, false, tag, req_p)) return st;
    rdmx::wake_if_deep(h.c);
    return guarded("rdmx_isend", [&] { return isend_impl(h, sp, buf, len, dest, tag, req_p, false); });
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_irecv_in(rdmx_context_h ctx, rdmx_tagspace_t space, void *buf, size_t len, int source, int tag,
                            rdmx_request_h *req_p) {
    return irecv_entry(ctx, rdmx::raw_enum(space), buf, len, source, tag, req_p, true);
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_isend(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag, rdmx_request_h *req_p) {
    return rdmx_isend_in(ctx, RDMX_TAGSPACE_USER, buf, len, dest, tag, req_p);
}

rdmx_status_t rdmx_issend(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag, rdmx_request_h *req_p) {
    if (req_p != nullptr) *req_p = nullptr;
    const int sp = RDMX_TAGSPACE_USER;
    Handle h;
    if (rdmx_status_t st = check_p2p("rdmx_issend", ctx, &h, sp, buf, len, dest, false, tag, req_p)) return st;
    rdmx::wake_if_deep(h.c);
    return guarded("rdmx_issend", [&] { return do_isend(h, sp, buf, len, dest, tag, req_p, true); });
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_irecv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_request_h *req_p) {
    return rdmx_irecv_in(ctx, RDMX_TAGSPACE_USER, buf, len, source, tag, req_p);
}

// A send that did not complete at post (rendezvous, or queued behind
// others) waits out of line: flattened into rdmx_send, the whole wait would
// be a second copy of rdmx_wait.
RDMX_SLOW_PATH static rdmx_status_t wait_send(rdmx_request_h *r) { return rdmx_wait(r, nullptr); }

// Checked once and posted directly: an eager send that completes at post
// returns without a request or a second entry point.
RDMX_HOT_ENTRY
rdmx_status_t rdmx_send(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag) {
    rdmx_request_h r = nullptr;
    const int sp = RDMX_TAGSPACE_USER;
    Handle h;
    if (rdmx_status_t st = check_p2p("rdmx_send", ctx, &h, sp, buf, len, dest, false, tag, &r)) return st;
    rdmx_status_t st = guarded("rdmx_send", [&] { return isend_impl(h, sp, buf, len, dest, tag, &r, false); });
    return st != RDMX_OK || r == nullptr ? st : wait_send(&r);
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_recv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_msg_info_t *info_p) {
    rdmx_request_h r = nullptr;
    rdmx_status_t st = irecv_entry(ctx, RDMX_TAGSPACE_USER, buf, len, source, tag, &r, false);
    return st != RDMX_OK ? st : rdmx_wait(&r, info_p);
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_test(rdmx_request_h *req, int *done_p, rdmx_msg_info_t *info_p) {
    if (req == nullptr) RDMX_BAD_ARG("rdmx_test: req is NULL");
    if (done_p == nullptr) RDMX_BAD_ARG("rdmx_test: done_p is NULL");
    *done_p = 0;
    if (*req == nullptr) {
        *done_p = 1;
        return RDMX_OK;
    }
    rdmx_request *const r = *req;  // read once: the application's pointer may alias anything we store
    Pin pin;
    if (rdmx_status_t st = check_req("rdmx_test", r, &pin)) return st;
    return guarded("rdmx_test", [&] {
        if (r->done.load(std::memory_order_acquire) == 0) {
            rdmx::note_app_call(r->ctx);
            rdmx::wake_if_deep(r->ctx);
            rdmx::progress(r->ctx, false);
        }
        if (r->done.load(std::memory_order_acquire) == 0) return RDMX_INPROGRESS;
        *done_p = 1;
        return finish(r, req, info_p);
    });
}

RDMX_HOT_ENTRY
rdmx_status_t rdmx_wait(rdmx_request_h *req, rdmx_msg_info_t *info_p) {
    if (req == nullptr) RDMX_BAD_ARG("rdmx_wait: req is NULL");
    rdmx_request *const r = *req;  // read once: the application's pointer may alias anything we store
    if (r == nullptr) return RDMX_OK;
    Pin pin;
    if (rdmx_status_t st = check_req("rdmx_wait", r, &pin)) return st;
    return guarded("rdmx_wait", [&] {
        rdmx::wait_request(r->ctx, r);
        return finish(r, req, info_p);
    });
}

rdmx_status_t rdmx_waitall(size_t n, rdmx_request_h reqs[], rdmx_msg_info_t infos[]) {
    if (n > 0 && reqs == nullptr) RDMX_BAD_ARG("rdmx_waitall: reqs is NULL with n %zu", n);
    rdmx_status_t first = RDMX_OK;
    bool done = false;
    const rdmx_status_t gst = guarded("rdmx_waitall", [&] {
        done = waitall_one_pass(n, reqs, infos, &first);
        return RDMX_OK;
    });
    if (gst != RDMX_OK) return gst;
    if (done) return first;
    // Mixed contexts, or a handle to report: one wait per request.
    // One wait scope across the whole array (all of one context, the usual
    // case): the progress thread stays asleep between the individual waits.
    // An invalid handle gets no scope; its own wait below reports it.
    Pin pin;
    std::optional<rdmx::WaitScope> scope;
    for (size_t i = 0; i < n && !scope; ++i) {
        if (reqs[i] == nullptr) continue;
        if (check_req("rdmx_waitall", reqs[i], &pin) == RDMX_OK) scope.emplace(reqs[i]->ctx);
        break;
    }
    for (size_t i = 0; i < n; ++i) {
        rdmx_status_t st = rdmx_wait(&reqs[i], infos != nullptr ? &infos[i] : nullptr);
        if (st != RDMX_OK && first == RDMX_OK) first = st;
    }
    return first;
}

rdmx_status_t rdmx_waitany(size_t n, rdmx_request_h reqs[], size_t *index_p, rdmx_msg_info_t *info_p) {
    if (n > 0 && reqs == nullptr) RDMX_BAD_ARG("rdmx_waitany: reqs is NULL with n %zu", n);
    if (index_p == nullptr) RDMX_BAD_ARG("rdmx_waitany: index_p is NULL");
    *index_p = n;
    for (;;) {
        Ctx *one = nullptr;  // the context of every request, or nullptr if they differ
        bool any = false, mixed = false;
        for (size_t i = 0; i < n; ++i) {
            if (reqs[i] == nullptr) continue;
            if (!any) one = reqs[i]->ctx;
            mixed = mixed || reqs[i]->ctx != one;
            any = true;
            int done = 0;
            rdmx_status_t st = rdmx_test(&reqs[i], &done, info_p);
            if (done || st != RDMX_INPROGRESS) {  // completed, or an invalid handle
                *index_p = i;
                return st;
            }
        }
        if (!any) return RDMX_OK;
        if (mixed) {  // several contexts: no one place to sleep on
            std::this_thread::yield();
            continue;
        }
        Pin pin(one);
        if (!pin) continue;  // finalized meanwhile: rdmx_test above reports it
        rdmx_status_t st = guarded("rdmx_waitany", [&] {
            rdmx::wait_any(one, reqs, n);
            return RDMX_OK;
        });
        if (st != RDMX_OK) return st;
    }
}

rdmx_status_t rdmx_cancel(rdmx_request_h req) {
    if (req == nullptr) return RDMX_OK;  // finished (a send completed at post): nothing to cancel
    Pin pin;
    if (rdmx_status_t st = check_req("rdmx_cancel", req, &pin)) return st;
    Ctx *c = req->ctx;
    std::lock_guard<rdmx::SpinLock> g(c->lock);
    if (req->kind == ReqKind::kRecv && req->done.load() == 0 && !req->matched && req->node.linked()) {
        c->matcher.cancel(req);
        req->info = {RDMX_ANY_SOURCE, RDMX_ANY_TAG, 0, RDMX_ERR_CANCELED};
        rdmx::req_complete(c, req, RDMX_ERR_CANCELED);
    }
    return RDMX_OK;
}

void rdmx_stats_init(rdmx_stats_t *stats) {
    if (stats == nullptr) return;
    std::memset(stats, 0, sizeof(*stats));
    stats->struct_size = sizeof(*stats);
}

rdmx_status_t rdmx_get_stats(rdmx_context_h handle, rdmx_stats_t *stats) {
    Handle h;
    if (rdmx_status_t st = check_handle("rdmx_get_stats", handle, &h)) return st;
    Ctx *ctx = h.c;
    if (stats == nullptr) RDMX_BAD_ARG("rdmx_get_stats: stats is NULL");
    // The struct grows at the end: a caller built against an older header
    // passes a smaller struct_size and gets the fields it knows.
    constexpr size_t kFirstVersion = offsetof(rdmx_stats_t, rc_connections);
    if (stats->struct_size < kFirstVersion)
        RDMX_BAD_ARG("rdmx_get_stats: stats->struct_size is %zu (call rdmx_stats_init first)", stats->struct_size);
    rdmx_stats_t all;
    rdmx_stats_init(&all);
    {
        std::lock_guard<rdmx::SpinLock> g(ctx->lock);
        if (ctx->rc) ctx->rc->fill_stats(&all);
    }
    const size_t n = std::min(stats->struct_size, sizeof(all));
    std::memcpy(reinterpret_cast<char *>(stats) + sizeof(size_t), reinterpret_cast<const char *>(&all) + sizeof(size_t),
                n - sizeof(size_t));
    return RDMX_OK;
}

int rdmx_progress(rdmx_context_h handle) {
    Handle h;
    if (!resolve(handle, &h)) return 0;
    Ctx *ctx = h.c;
    Pin pin(ctx);
    if (!pin || ctx->finalized.load(std::memory_order_acquire)) return 0;
    try {
        return rdmx::progress(ctx, true);
    } catch (...) {
        return 0;
    }
}

}  // extern "C"
