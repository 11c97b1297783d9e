// The public C API: argument checks (a log line naming the argument), then
// the engine under the context lock. No exception crosses this boundary.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <thread>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"

using rdmx::Ctx;

namespace {

#define RDMX_BAD_ARG(...)                          \
    do {                                           \
        RDMX_ERROR("invalid argument: " __VA_ARGS__); \
        return RDMX_ERR_INVALID_ARG;               \
    } while (0)

template <typename F>
rdmx_status_t guarded(const char *fn, F &&f) noexcept {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        RDMX_ERROR("%s: out of memory", fn);
        return RDMX_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        RDMX_ERROR("%s: internal error: %s", fn, e.what());
        return RDMX_ERR_INTERNAL;
    } catch (...) {
        RDMX_ERROR("%s: internal error", fn);
        return RDMX_ERR_INTERNAL;
    }
}

// ---- live contexts ---------------------------------------------------------
// A finalized context is freed, so a handle is checked against this table of
// live ones, never by reading the memory behind it. A slot's word is the
// context's address, with kClosing set once rdmx_finalize has begun. `users`
// counts the calls that may still run when another thread finalizes (waits,
// tests, probes, cancel): finalize wakes them and waits for them to leave
// before it frees anything.
constexpr size_t kMaxLive = 64;
constexpr size_t kMaxLen = PTRDIFF_MAX;  // sizes above this are negative numbers passed as size_t
constexpr uintptr_t kClosing = 1;  // contexts are at least 8-byte aligned
constexpr double kUsersDrainSeconds = 10.0;

struct LiveSlot {
    std::atomic<uintptr_t> word{0};
    std::atomic<int> users{0};
    // RDMX_THREADS=single: the application never overlaps its calls, so no
    // finalize can run beside one and calls do not pin. Kept here, not read
    // from the context, because a context may be freed while a call of
    // another thread (at `multiple`) is still deciding whether to pin it.
    std::atomic<bool> unpinned{false};
};
LiveSlot g_live[kMaxLive];

uintptr_t addr_of(const Ctx *c) { return reinterpret_cast<uintptr_t>(c); }

// The slot whose word is exactly `want` (loads only: the common case of one
// context finds it in the first slot).
LiveSlot *find_slot(uintptr_t want) {
    for (LiveSlot &s : g_live)
        if (s.word.load(std::memory_order_acquire) == want) return &s;
    return nullptr;
}

bool live(const Ctx *c) { return c != nullptr && find_slot(addr_of(c)) != nullptr; }

bool register_live(Ctx *c) {
    for (LiveSlot &s : g_live) {
        uintptr_t empty = 0;
        if (!s.word.compare_exchange_strong(empty, kClosing, std::memory_order_acq_rel)) continue;
        // Reserved (kClosing matches no context): set the flag, then publish.
        s.unpinned.store(!c->app_mt, std::memory_order_relaxed);
        s.word.store(addr_of(c), std::memory_order_release);
        return true;
    }
    return false;
}

// Holds a context alive for the length of a call (see g_live). seq_cst on
// both sides: either the pin sees kClosing, or finalize sees the pin.
class Pin {
public:
    explicit Pin(const Ctx *c) : slot_(c != nullptr ? find_slot(addr_of(c)) : nullptr) {
        if (slot_ == nullptr) return;
        live_ = true;
        if (slot_->unpinned.load(std::memory_order_relaxed)) {  // RDMX_THREADS=single: found live is enough
            slot_ = nullptr;
            return;
        }
        slot_->users.fetch_add(1, std::memory_order_seq_cst);
        if (slot_->word.load(std::memory_order_seq_cst) != addr_of(c)) release();
    }
    ~Pin() { release(); }
    Pin(const Pin &) = delete;
    Pin &operator=(const Pin &) = delete;
    explicit operator bool() const { return live_; }

private:
    void release() {
        if (slot_ != nullptr) slot_->users.fetch_sub(1, std::memory_order_release);
        slot_ = nullptr;
        live_ = false;
    }
    LiveSlot *slot_;
    bool live_ = false;
};

rdmx_status_t check_ctx(const char *fn, rdmx_context_h ctx) {
    if (ctx == nullptr) RDMX_BAD_ARG("%s: ctx is NULL", fn);
    if (!live(ctx)) RDMX_BAD_ARG("%s: ctx %p is not a live context (finalized, or never initialised)", fn, (void *)ctx);
    if (int f = ctx->fatal.load(std::memory_order_relaxed)) return static_cast<rdmx_status_t>(f);
    return RDMX_OK;
}

// A request handle: its memory is never unmapped (request chunks outlive
// their context, see req_pool_retire), so reading it is safe; its context
// must be live and pinned before anything else is read, and the request
// must not be back in the pool (a second wait on a copy of the handle).
rdmx_status_t check_req(const char *fn, rdmx_request *r, std::optional<Pin> *pin) {
    Ctx *c = r->ctx;
    if (c == nullptr || !pin->emplace(c) || r->ctx != c)
        RDMX_BAD_ARG("%s: request %p belongs to no live context (its context was finalized)", fn, (void *)r);
    if (r->pooled)
        RDMX_BAD_ARG("%s: request %p was already completed and freed (a second test/wait on a copy of the handle?)",
                     fn, (void *)r);
    return RDMX_OK;
}

// An enum argument from C may hold any int: read its bytes, never the enum.
template <typename E>
int raw_enum(const E &e) {
    static_assert(sizeof(E) == sizeof(int));
    int v;
    std::memcpy(&v, &e, sizeof(v));
    return v;
}

rdmx_status_t check_p2p(const char *fn, rdmx_context_h ctx, int space, const void *buf, size_t len,
                        int peer, bool any_ok, int tag, const void *req_p) {
    if (rdmx_status_t st = check_ctx(fn, ctx)) return st;
    if (buf == nullptr && len != 0) RDMX_BAD_ARG("%s: buf is NULL with len %zu", fn, len);
    // A range past the address space's end would reach the peer, which
    // rejects it and drops us as a protocol offender.
    if (len > kMaxLen) RDMX_BAD_ARG("%s: len %zu is above the largest message (%zu bytes)", fn, len, kMaxLen);
    if (reinterpret_cast<uintptr_t>(buf) + len < reinterpret_cast<uintptr_t>(buf))
        RDMX_BAD_ARG("%s: buf %p + len %zu wraps past the end of the address space", fn, buf, len);
    if (space < 0 || static_cast<unsigned>(space) >= rdmx::kNumSpaces) RDMX_BAD_ARG("%s: tag space %d unknown", fn, space);
    if (peer >= ctx->size || peer < (any_ok ? RDMX_ANY_SOURCE : 0))
        RDMX_BAD_ARG("%s: rank %d out of range [0, %d)%s", fn, peer, ctx->size, any_ok ? " or RDMX_ANY_SOURCE" : "");
    if (tag < (any_ok ? RDMX_ANY_TAG : 0)) RDMX_BAD_ARG("%s: tag %d is negative%s", fn, tag, any_ok ? " (and not RDMX_ANY_TAG)" : "");
    if (req_p == nullptr) RDMX_BAD_ARG("%s: request pointer is NULL", fn);
    return RDMX_OK;
}

rdmx_status_t do_isend(rdmx_context_h ctx, int space, const void *buf, size_t len, int dest, int tag,
                       rdmx_request_h *req_p) {
    rdmx::note_app_call(ctx);
    std::lock_guard<rdmx::SpinLock> g(ctx->lock);
    // Complete at post: no request, *req_p stays NULL (a finished handle).
    if (rdmx::send_at_post(ctx, dest, static_cast<uint8_t>(space), tag, buf, len)) return RDMX_OK;
    rdmx_request *r = rdmx::req_alloc(ctx, ReqKind::kSend);
    r->buf = const_cast<void *>(buf);
    r->len = len;
    r->peer = dest;
    r->tag = tag;
    r->space = static_cast<uint8_t>(space);
    r->bits = {r->space, dest, tag};
    *req_p = r;
    return rdmx::start_send(ctx, r);
}

rdmx_status_t do_irecv(rdmx_context_h ctx, int space, void *buf, size_t len, int source, int tag,
                       rdmx_request_h *req_p) {
    rdmx::note_app_call(ctx);
    std::lock_guard<rdmx::SpinLock> g(ctx->lock);
    rdmx_request *r = rdmx::req_alloc(ctx, ReqKind::kRecv);
    r->buf = buf;
    r->len = len;
    r->tag = tag;
    r->space = static_cast<uint8_t>(space);
    r->bits = {r->space, source, tag};
    *req_p = r;
    return rdmx::start_recv(ctx, r);
}

// Frees a completed request and reports it.
rdmx_status_t finish(rdmx_request_h *req, rdmx_msg_info_t *info_p) {
    rdmx_request *r = *req;
    Ctx *c = r->ctx;
    rdmx_status_t st = r->status;
    if (info_p != nullptr) *info_p = r->info;
    {
        std::lock_guard<rdmx::SpinLock> g(c->lock);
        rdmx::req_free(c, r);
    }
    *req = nullptr;
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
        if (infos != nullptr) infos[i] = r->info;
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
    if (cfg != nullptr && cfg->struct_size != sizeof(rdmx_config_t))
        RDMX_BAD_ARG("rdmx_init: cfg->struct_size %zu (call rdmx_config_init first)", cfg->struct_size);
    rdmx::fork_protect();  // before this context registers anything
    return guarded("rdmx_init", [&] {
        auto *c = new rdmx_context;
        rdmx_status_t st = rdmx::context_init(c, cfg);
        if (st != RDMX_OK) {
            rdmx::stop_progress_thread(c);
            delete c;
            return st;
        }
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
    LiveSlot *slot = find_slot(addr_of(ctx));
    uintptr_t word = addr_of(ctx);
    if (slot == nullptr || !slot->word.compare_exchange_strong(word, word | kClosing, std::memory_order_seq_cst))
        RDMX_BAD_ARG("rdmx_finalize: ctx %p is not a live context (finalized already?)", (void *)ctx);
    ctx->finalized.store(true, std::memory_order_release);
    return guarded("rdmx_finalize", [&] {
        rdmx_status_t st = rdmx::context_finalize(ctx);
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
        slot->word.store(0, std::memory_order_release);
        return st;
    });
}

int rdmx_rank(rdmx_context_h ctx) { return live(ctx) ? ctx->rank : -1; }
int rdmx_size(rdmx_context_h ctx) { return live(ctx) ? ctx->size : -1; }

rdmx_status_t rdmx_isend_in(rdmx_context_h ctx, rdmx_tagspace_t space, const void *buf, size_t len, int dest,
                            int tag, rdmx_request_h *req_p) {
    if (req_p != nullptr) *req_p = nullptr;
    const int sp = raw_enum(space);
    if (rdmx_status_t st = check_p2p("rdmx_isend", ctx, sp, buf, len, dest, false, tag, req_p)) return st;
    return guarded("rdmx_isend", [&] { return do_isend(ctx, sp, buf, len, dest, tag, req_p); });
}

rdmx_status_t rdmx_irecv_in(rdmx_context_h ctx, rdmx_tagspace_t space, void *buf, size_t len, int source, int tag,
                            rdmx_request_h *req_p) {
    if (req_p != nullptr) *req_p = nullptr;
    const int sp = raw_enum(space);
    if (rdmx_status_t st = check_p2p("rdmx_irecv", ctx, sp, buf, len, source, true, tag, req_p)) return st;
    return guarded("rdmx_irecv", [&] { return do_irecv(ctx, sp, buf, len, source, tag, req_p); });
}

rdmx_status_t rdmx_isend(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag, rdmx_request_h *req_p) {
    return rdmx_isend_in(ctx, RDMX_TAGSPACE_USER, buf, len, dest, tag, req_p);
}

rdmx_status_t rdmx_irecv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_request_h *req_p) {
    return rdmx_irecv_in(ctx, RDMX_TAGSPACE_USER, buf, len, source, tag, req_p);
}

// Checked once and posted directly: an eager send that completes at post
// returns without a request or a second entry point.
rdmx_status_t rdmx_send(rdmx_context_h ctx, const void *buf, size_t len, int dest, int tag) {
    rdmx_request_h r = nullptr;
    const int sp = RDMX_TAGSPACE_USER;
    if (rdmx_status_t st = check_p2p("rdmx_send", ctx, sp, buf, len, dest, false, tag, &r)) return st;
    rdmx_status_t st = guarded("rdmx_send", [&] { return do_isend(ctx, sp, buf, len, dest, tag, &r); });
    return st != RDMX_OK || r == nullptr ? st : rdmx_wait(&r, nullptr);
}

rdmx_status_t rdmx_recv(rdmx_context_h ctx, void *buf, size_t len, int source, int tag, rdmx_msg_info_t *info_p) {
    rdmx_request_h r = nullptr;
    rdmx_status_t st = rdmx_irecv(ctx, buf, len, source, tag, &r);
    return st != RDMX_OK ? st : rdmx_wait(&r, info_p);
}

rdmx_status_t rdmx_test(rdmx_request_h *req, int *done_p, rdmx_msg_info_t *info_p) {
    if (req == nullptr) RDMX_BAD_ARG("rdmx_test: req is NULL");
    if (done_p == nullptr) RDMX_BAD_ARG("rdmx_test: done_p is NULL");
    *done_p = 0;
    if (*req == nullptr) {
        *done_p = 1;
        return RDMX_OK;
    }
    std::optional<Pin> pin;
    if (rdmx_status_t st = check_req("rdmx_test", *req, &pin)) return st;
    return guarded("rdmx_test", [&] {
        if ((*req)->done.load(std::memory_order_acquire) == 0) {
            rdmx::note_app_call((*req)->ctx);
            rdmx::progress((*req)->ctx, false);
        }
        if ((*req)->done.load(std::memory_order_acquire) == 0) return RDMX_INPROGRESS;
        *done_p = 1;
        return finish(req, info_p);
    });
}

rdmx_status_t rdmx_wait(rdmx_request_h *req, rdmx_msg_info_t *info_p) {
    if (req == nullptr) RDMX_BAD_ARG("rdmx_wait: req is NULL");
    if (*req == nullptr) return RDMX_OK;
    std::optional<Pin> pin;
    if (rdmx_status_t st = check_req("rdmx_wait", *req, &pin)) return st;
    return guarded("rdmx_wait", [&] {
        rdmx::wait_request((*req)->ctx, *req);
        return finish(req, info_p);
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
    std::optional<Pin> pin;
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
    std::optional<Pin> pin;
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

rdmx_status_t rdmx_iprobe(rdmx_context_h ctx, int source, int tag, int *found_p, rdmx_msg_info_t *info_p) {
    if (found_p == nullptr) RDMX_BAD_ARG("rdmx_iprobe: found_p is NULL");
    *found_p = 0;
    Pin pin(ctx);
    if (rdmx_status_t st = check_p2p("rdmx_iprobe", ctx, RDMX_TAGSPACE_USER, nullptr, 0, source, true, tag, found_p))
        return st;
    if (!pin) RDMX_BAD_ARG("rdmx_iprobe: ctx %p is being finalized", (void *)ctx);
    rdmx::note_app_call(ctx);
    rdmx::progress(ctx, false);
    std::lock_guard<rdmx::SpinLock> g(ctx->lock);
    rdmx::UnexpEntry *u = ctx->matcher.find_unexpected({0, source, tag}, false);
    if (u == nullptr) return RDMX_OK;
    *found_p = 1;
    if (info_p != nullptr) *info_p = {u->bits.source, u->bits.tag, static_cast<rdmx::Unexp *>(u)->len, RDMX_OK};
    return RDMX_OK;
}

rdmx_status_t rdmx_probe(rdmx_context_h ctx, int source, int tag, rdmx_msg_info_t *info_p) {
    for (;;) {
        Pin pin(ctx);
        if (!pin) return check_ctx("rdmx_probe", ctx);
        // Read before looking, so a message arriving in between wakes the wait below.
        const uint64_t seen = ctx->change_epoch.load(std::memory_order_seq_cst);
        int found = 0;
        rdmx_status_t st = rdmx_iprobe(ctx, source, tag, &found, info_p);
        if (st != RDMX_OK || found) return st;
        if (ctx->finalized.load(std::memory_order_acquire)) return RDMX_ERR_CANCELED;
        {
            std::lock_guard<rdmx::SpinLock> g(ctx->lock);
            if (source >= 0 && ctx->peers[static_cast<size_t>(source)].failed)
                return rdmx::peer_failure(ctx->peers[static_cast<size_t>(source)]);
        }
        st = guarded("rdmx_probe", [&] {
            rdmx::wait_change(ctx, seen);
            return RDMX_OK;
        });
        if (st != RDMX_OK) return st;
        if (ctx->finalized.load(std::memory_order_acquire)) return RDMX_ERR_CANCELED;
    }
}

void rdmx_stats_init(rdmx_stats_t *stats) {
    if (stats == nullptr) return;
    std::memset(stats, 0, sizeof(*stats));
    stats->struct_size = sizeof(*stats);
}

rdmx_status_t rdmx_get_stats(rdmx_context_h ctx, rdmx_stats_t *stats) {
    if (rdmx_status_t st = check_ctx("rdmx_get_stats", ctx)) return st;
    if (stats == nullptr) RDMX_BAD_ARG("rdmx_get_stats: stats is NULL");
    if (stats->struct_size < sizeof(rdmx_stats_t))
        RDMX_BAD_ARG("rdmx_get_stats: stats->struct_size is %zu (call rdmx_stats_init first)", stats->struct_size);
    std::lock_guard<rdmx::SpinLock> g(ctx->lock);
    if (ctx->rc) ctx->rc->fill_stats(stats);
    return RDMX_OK;
}

int rdmx_progress(rdmx_context_h ctx) {
    Pin pin(ctx);
    if (!pin || ctx->finalized.load(std::memory_order_acquire)) return 0;
    try {
        return rdmx::progress(ctx, true);
    } catch (...) {
        return 0;
    }
}

}  // extern "C"
