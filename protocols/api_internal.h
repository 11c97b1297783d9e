// What every file of the public API shares: argument checks, the table of
// live contexts (a handle is checked against it, never by reading memory a
// finalize may have freed), pinning against a concurrent finalize, and the
// resolution of a handle to its engine and communicator view.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

#include "core/hot.h"
#include "core/log.h"
#include "protocols/comm.h"
#include "protocols/context.h"

namespace rdmx::api {

using rdmx::Ctx;

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
inline LiveSlot g_live[kMaxLive];

inline uintptr_t addr_of(const Ctx *c) { return reinterpret_cast<uintptr_t>(c); }

// The slot whose word is exactly `want` (loads only). The common case of
// one context finds it in the first slot, tested before the loop: three
// instructions on every call instead of the loop's set-up.
inline LiveSlot *find_slot(uintptr_t want) {
    if (g_live[0].word.load(std::memory_order_acquire) == want) [[likely]] return &g_live[0];
    for (size_t i = 1; i < kMaxLive; ++i)
        if (g_live[i].word.load(std::memory_order_acquire) == want) return &g_live[i];
    return nullptr;
}


inline bool register_live(Ctx *c) {
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
    Pin() = default;
    explicit Pin(const Ctx *c) { (void)acquire(c); }
    // Pins c (letting go of what was pinned before); false: c is not live.
    bool acquire(const Ctx *c) {
        release();
        slot_ = c != nullptr ? find_slot(addr_of(c)) : nullptr;
        if (slot_ == nullptr) return false;
        live_ = true;
        if (slot_->unpinned.load(std::memory_order_relaxed)) {  // RDMX_THREADS=single: found live is enough
            slot_ = nullptr;
            return true;
        }
        slot_->users.fetch_add(1, std::memory_order_seq_cst);
        if (slot_->word.load(std::memory_order_seq_cst) != addr_of(c)) release();
        return live_;
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
    LiveSlot *slot_ = nullptr;
    bool live_ = false;
};

// A request handle: its memory is never unmapped (request chunks outlive
// their context, see req_pool_retire), so reading it is safe; its context
// must be live and pinned before anything else is read, and the request
// must not be back in the pool (a second wait on a copy of the handle).
inline rdmx_status_t check_req(const char *fn, rdmx_request *r, Pin *pin) {
    Ctx *c = r->ctx;
    if (c == nullptr || !pin->acquire(c) || r->ctx != c)
        RDMX_BAD_ARG("%s: request %p belongs to no live context (its context was finalized)", fn, (void *)r);
    if (r->pooled)
        RDMX_BAD_ARG("%s: request %p was already completed and freed (a second test/wait on a copy of the handle?)",
                     fn, (void *)r);
    return RDMX_OK;
}


// A handle resolved: the engine and the communicator view it names (the
// root's own view for the root's handle).
struct Handle {
    Ctx *c = nullptr;
    CommView *v = nullptr;
};

inline rdmx_context_h handle_of(CommView *v) {
    return v->is_root() ? v->eng : reinterpret_cast<rdmx_context_h>(v);
}

// The root's handle is found in the live table; a derived one is an address
// in the view pool (its memory is never freed, so reading its flag is safe)
// whose engine is live. No pin is taken: see pin_of.
inline bool resolve(rdmx_context_h h, Handle *out) {
    if (h == nullptr) return false;
    if (find_slot(addr_of(h)) != nullptr) {
        *out = {h, &h->world};
        return true;
    }
    if (!comm_pool_owns(h)) return false;
    auto *v = reinterpret_cast<CommView *>(h);
    if (!v->alive.load(std::memory_order_acquire)) return false;
    Ctx *c = v->eng;
    if (c == nullptr || find_slot(addr_of(c)) == nullptr) return false;
    *out = {c, v};
    return true;
}

// Resolves and checks a context argument: INVALID_ARG (logged) for a bad
// handle, the engine's fatal status for a failed one.
inline rdmx_status_t check_handle(const char *fn, rdmx_context_h h, Handle *out) {
    if (h == nullptr) RDMX_BAD_ARG("%s: ctx is NULL", fn);
    if (!resolve(h, out))
        RDMX_BAD_ARG("%s: ctx %p is not a live context (freed, finalized, or never initialised)", fn, (void *)h);
    if (int f = out->c->fatal.load(std::memory_order_relaxed)) return static_cast<rdmx_status_t>(f);
    return RDMX_OK;
}

// A peer argument of a communicator's point-to-point call, checked.
inline rdmx_status_t check_peer(const char *fn, const Handle &h, int peer, bool any_ok) {
    if (peer == RDMX_PROC_NULL) return RDMX_OK;
    const int lo = any_ok ? RDMX_ANY_SOURCE : 0;  // one unsigned compare for [lo, size)
    if (static_cast<unsigned>(peer) - static_cast<unsigned>(lo) >= static_cast<unsigned>(h.v->size) - static_cast<unsigned>(lo))
        RDMX_BAD_ARG("%s: rank %d out of range [0, %d)%s or RDMX_PROC_NULL", fn, peer, h.v->size,
                     any_ok ? ", RDMX_ANY_SOURCE" : "");
    return RDMX_OK;
}

// A completion's info as the application sees it: the source numbered in
// the request's communicator.
inline void report_info(const rdmx_request *r, rdmx_msg_info_t *info) {
    *info = r->info;
    if (r->comm != nullptr && !r->comm->is_root()) info->source = r->comm->from_engine(info->source);
}

// Frees a completed request r (the one *req names) and reports it.
inline rdmx_status_t finish(rdmx_request *r, rdmx_request_h *req, rdmx_msg_info_t *info_p) {
    Ctx *c = r->ctx;
    rdmx_status_t st = r->status;
    if (info_p != nullptr) report_info(r, info_p);
    {
        std::lock_guard<SpinLock> g(c->lock);
        req_free(c, r);
    }
    *req = nullptr;
    return st;
}

// api.cc: a checked point-to-point post on a communicator (space may be
// the engine's own).
// sync: rdmx_issend's send (rendezvous whatever the size).
rdmx_status_t do_isend(const Handle &h, int space, const void *buf, size_t len, int dest, int tag,
                       rdmx_request_h *req_p, bool sync = false);
rdmx_status_t do_irecv(const Handle &h, int space, void *buf, size_t len, int source, int tag, rdmx_request_h *req_p);

}  // namespace rdmx::api

namespace rdmx {
// comm.cc: collective over h's members; *out NULL for RDMX_UNDEFINED.
rdmx_status_t comm_create(const api::Handle &h, bool dup, int color, int key, CommView **out);
rdmx_status_t comm_free(const api::Handle &h);
rdmx_status_t attr_key_create(int *key_p);
bool attr_key_valid(int key);
void attr_set(CommView *v, int key, void *value, rdmx_attr_free_fn_t free_fn);
void *attr_get(CommView *v, int key);
}  // namespace rdmx
