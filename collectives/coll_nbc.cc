// The schedule engine of the nonblocking collectives: building and running
// schedules, the per-context sequence numbers, and the progress callback.
//
// Locking: one mutex (Engine::mu) covers the table of contexts and every
// schedule's state; whoever holds it advances schedules. The progress
// callback only try-locks it (a thread inside an rdmx call made while
// advancing may be called back, and the engine's other callbacks must never
// wait on us), and registration is done outside it under its own mutex, so
// no lock of ours is held while the library takes its callback lock.
#include "coll_nbc.h"

#include <cstdio>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>

namespace rdmx::coll::nbc {

namespace {

// Address handed to zero-length operations (barrier tokens): never written.
std::byte g_empty_sink{};

// Set while this thread advances schedules: a progress pass run from inside
// one of the rdmx calls made meanwhile must not re-enter.
thread_local bool t_advancing = false;

struct AdvancingScope {
    AdvancingScope() noexcept { t_advancing = true; }
    ~AdvancingScope() { t_advancing = false; }
    AdvancingScope(const AdvancingScope &) = delete;
    AdvancingScope &operator=(const AdvancingScope &) = delete;
};

/** A context's state, kept as its attribute (so it lives exactly as long as
 *  the context): its next sequence number, which members must agree on
 *  (restarting it whenever this rank's list empties would not: another
 *  member may still run the previous schedule when the next starts), and
 *  its active schedules, in start order. */
struct CtxState {
    rdmx_context_h ctx = nullptr;
    uint32_t next_seq = 0;
    bool busy = false;  // listed in Engine::busy
    std::vector<std::unique_ptr<Schedule>> active;
};

struct Engine {
    std::mutex mu;                    // everything below but the registration
    std::vector<CtxState *> busy;     // contexts with active schedules
    std::vector<std::unique_ptr<Schedule>> orphans;  // completed, requests still draining
    size_t total = 0;                 // schedules in every busy list
    std::mutex reg_mu;                // the registration; never taken by the callback
    rdmx_context_h reg_ctx = nullptr; // where the callback is registered (NULL: nowhere)
    uintptr_t reg_gen = 0;            // its arg: a new one per registration
    std::once_flag key_once;
    int key = -1;                     // the attribute key of CtxState
};

// Never destroyed: a progress pass may run while statics are torn down.
Engine &engine() {
    static Engine *e = new Engine;
    return *e;
}

// Advance every active schedule (called with mu). A context whose list
// empties leaves the busy list; its state stays with the context.
int advance_all(Engine &e) noexcept {
    AdvancingScope scope;
    int events = 0;
    for (size_t k = 0; k < e.busy.size();) {
        auto &v = e.busy[k]->active;
        for (size_t i = 0; i < v.size();) {
            if (v[i]->advance(events)) {
                v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
                --e.total;
            } else {
                ++i;
            }
        }
        if (v.empty()) {
            e.busy[k]->busy = false;
            e.busy.erase(e.busy.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
            ++k;
        }
    }
    for (size_t i = 0; i < e.orphans.size();) {
        if (e.orphans[i]->advance(events)) e.orphans.erase(e.orphans.begin() + static_cast<std::ptrdiff_t>(i));
        else ++i;
    }
    return events;
}

int progress_cb(void *) {
    if (t_advancing) return 0;
    Engine &e = engine();
    std::unique_lock<std::mutex> lk(e.mu, std::try_to_lock);
    if (!lk.owns_lock()) return 0;  // another thread is advancing them
    return advance_all(e);
}

// The context is being freed (rdmx_comm_free, or finalize of its root): its
// schedules complete with RDMX_ERR_CANCELED now; those with requests still
// in flight (into their scratch) are kept, without the context's state,
// until the requests are done.
void free_state(void *value) {
    auto *cs = static_cast<CtxState *>(value);
    Engine &e = engine();
    {
        std::lock_guard<std::mutex> lk(e.mu);
        for (auto &s : cs->active) {
            s->abandon(RDMX_ERR_CANCELED);
            if (!s->drained()) e.orphans.push_back(std::move(s));  // capacity reserved by start()
        }
        e.total -= cs->active.size();
        cs->active.clear();
        if (cs->busy) std::erase(e.busy, cs);
    }
    {
        std::lock_guard<std::mutex> lk(e.reg_mu);
        if (e.reg_ctx == cs->ctx) e.reg_ctx = nullptr;  // the next start registers anew
    }
    delete cs;
}

// One registration per job, made on the context of the first nonblocking
// collective. After that context was freed a new one is made (with a new
// arg) and the old one dropped in case the job kept it.
rdmx_status_t ensure_registered(Engine &e, rdmx_context_h ctx) {
    std::lock_guard<std::mutex> lk(e.reg_mu);
    if (e.reg_ctx != nullptr) return RDMX_OK;
    if (e.reg_gen != 0) (void)rdmx_progress_unregister(ctx, progress_cb, reinterpret_cast<void *>(e.reg_gen));
    const uintptr_t gen = e.reg_gen + 1;
    const rdmx_status_t st = rdmx_progress_register(ctx, progress_cb, reinterpret_cast<void *>(gen));
    if (st != RDMX_OK) {
        std::fprintf(stderr, "rdmx: nonblocking collectives: rdmx_progress_register failed: %s\n",
                     rdmx_strerror(st));
        return st;
    }
    e.reg_gen = gen;
    e.reg_ctx = ctx;
    return RDMX_OK;
}

// The context's state, made at its first nonblocking collective (called with mu).
rdmx_status_t ctx_state(Engine &e, rdmx_context_h ctx, CtxState **out) {
    std::call_once(e.key_once, [&e] {
        if (rdmx_attr_key_create(&e.key) != RDMX_OK) e.key = -1;
    });
    if (e.key < 0) {
        std::fprintf(stderr, "rdmx: nonblocking collectives: no attribute key left for their state\n");
        return RDMX_ERR_NO_MEMORY;
    }
    void *v = nullptr;
    if (rdmx_status_t st = rdmx_attr_get(ctx, e.key, &v); st != RDMX_OK) return st;
    if (v == nullptr) {
        auto cs = std::make_unique<CtxState>();
        cs->ctx = ctx;
        if (rdmx_status_t st = rdmx_attr_set(ctx, e.key, cs.get(), free_state); st != RDMX_OK) return st;
        v = cs.release();
    }
    *out = static_cast<CtxState *>(v);
    return RDMX_OK;
}

}  // namespace

// ---- building ----------------------------------------------------------------

void Schedule::send(const void *buf, size_t len, int dest, int step) {
    if (len == 0 && skip_empty_) return;
    ops_.push_back(Op{Type::Send, false, dest, step, buf, nullptr, len});
}

void Schedule::recv(void *buf, size_t len, int source, int step) {
    if (len == 0 && skip_empty_) return;
    ops_.push_back(Op{Type::Recv, false, source, step, nullptr, buf, len});
}

void Schedule::copy(void *dst, const void *src, size_t len) {
    if (len != 0 && dst != src) ops_.push_back(Op{Type::Copy, false, -1, 0, src, dst, len});
}

void Schedule::reduce(void *acc, const void *in, size_t count, bool in_left) {
    if (count != 0) ops_.push_back(Op{Type::Reduce, in_left, -1, 0, in, acc, count});
}

void Schedule::end_round() {
    const size_t begin = round_end_.empty() ? 0 : round_end_.back();
    if (ops_.size() == begin) return;
    size_t comm_ops = 0;
    for (size_t i = begin; i < ops_.size(); ++i)
        if (ops_[i].type == Type::Send || ops_[i].type == Type::Recv) ++comm_ops;
    // Posting must not allocate (it runs in the progress callback).
    if (comm_ops > reqs_.capacity()) {
        reqs_.reserve(comm_ops);
        want_.reserve(comm_ops);
    }
    round_end_.push_back(ops_.size());
}

std::byte *Schedule::scratch(size_t n) {
    if (n == 0) return nullptr;
    scratch_.push_back(std::make_unique_for_overwrite<std::byte[]>(n));
    return scratch_.back().get();
}

// ---- running -------------------------------------------------------------------

void Schedule::fail(rdmx_status_t st) noexcept {
    if (err_ == RDMX_OK) err_ = st;
}

// After an error no round follows, and a receive whose sender will never
// send must not keep the schedule (and the application's wait) forever.
void Schedule::cancel_receives() noexcept {
    if (canceled_) return;
    canceled_ = true;
    for (size_t i = 0; i < reqs_.size(); ++i)
        if (reqs_[i] != nullptr && want_[i] != kSend) (void)rdmx_cancel(reqs_[i]);
}

// Receives first, so that a peer's send of this round finds its receive.
void Schedule::post_round() noexcept {
    const size_t begin = round_begin(round_), end = round_end_[round_];
    for (const Type pass : {Type::Recv, Type::Send}) {
        for (size_t i = begin; i < end && err_ == RDMX_OK; ++i) {
            const Op &o = ops_[i];
            if (o.type != pass) continue;
            rdmx_request_h r = nullptr;
            const int tag = tag_of(seq_, o.step);
            const rdmx_status_t st =
                pass == Type::Send
                    ? rdmx_isend_in(c_.ctx, RDMX_TAGSPACE_COLL, o.len ? o.src : &g_empty_sink, o.len, o.peer, tag, &r)
                    : rdmx_irecv_in(c_.ctx, RDMX_TAGSPACE_COLL, o.len ? o.dst : &g_empty_sink, o.len, o.peer, tag, &r);
            if (r != nullptr) {  // capacity reserved by end_round: no allocation
                reqs_.push_back(r);
                want_.push_back(pass == Type::Send ? kSend : o.len);
            }
            if (st != RDMX_OK) fail(st);
        }
    }
}

// True once every request of the round completed (and was freed).
bool Schedule::test_round(int &events) noexcept {
    bool pending = false;
    for (size_t i = 0; i < reqs_.size(); ++i) {
        if (reqs_[i] == nullptr) continue;
        int done = 0;
        rdmx_msg_info_t info{};
        rdmx_status_t st = rdmx_test(&reqs_[i], &done, &info);
        if (!done) {
            if (st == RDMX_INPROGRESS) {
                pending = true;
                continue;
            }
            reqs_[i] = nullptr;  // the test itself failed: the handle is dead (its context is gone)
        } else {
            ++events;
            // As in Batch: every receive is posted for exactly what its peer
            // sends, so another length means the ranks disagree on the call.
            if (st == RDMX_OK && want_[i] != kSend && info.length != want_[i]) {
                std::fprintf(stderr,
                             "rdmx: %s: rank %d received %zu bytes from rank %d (tag 0x%x) where %zu were expected: "
                             "the ranks called the collective with different arguments\n",
                             fn_, c_.rank, info.length, info.source, static_cast<unsigned>(info.tag), want_[i]);
                st = RDMX_ERR_INVALID_ARG;
            }
        }
        if (st != RDMX_OK) fail(st);
    }
    if (pending) {
        if (err_ != RDMX_OK) cancel_receives();
        return false;
    }
    reqs_.clear();
    want_.clear();
    return true;
}

void Schedule::run_local() noexcept {
    for (size_t i = round_begin(round_); i < round_end_[round_]; ++i) {
        const Op &o = ops_[i];
        if (o.type == Type::Copy) std::memmove(o.dst, o.src, o.len);
        else if (o.type == Type::Reduce) reduce_local(rs_, o.dst, o.src, o.len, o.in_left);
    }
}

void Schedule::abandon(rdmx_status_t st) noexcept {
    if (finished_) return;
    fail(st);
    cancel_receives();
    finish();
}

bool Schedule::drained() const noexcept {
    for (const rdmx_request_h r : reqs_)
        if (r != nullptr) return false;
    return true;
}

void Schedule::finish() noexcept {
    finished_ = true;
    const rdmx_status_t st = rdmx_greq_complete(greq_, err_);
    if (st != RDMX_OK && err_ == RDMX_OK)  // the context went away under the schedule
        std::fprintf(stderr, "rdmx: %s: completing the request failed: %s\n", fn_, rdmx_strerror(st));
    greq_ = nullptr;
}

bool Schedule::advance(int &events) noexcept {
    if (finished_) return test_round(events);  // abandoned: drain what is in flight
    for (;;) {
        if (round_ >= round_end_.size()) {
            finish();
            return true;
        }
        if (!posted_) {
            post_round();
            posted_ = true;
        }
        if (!test_round(events)) return false;
        posted_ = false;
        if (err_ != RDMX_OK) {
            finish();
            return true;
        }
        run_local();
        ++round_;
        ++events;
    }
}

// ---- starting ------------------------------------------------------------------

namespace {

// A request handed out to nobody: complete and free it.
void drop_greq(rdmx_request_h greq, rdmx_status_t st) noexcept {
    (void)rdmx_greq_complete(greq, st);
    (void)rdmx_wait(&greq, nullptr);
}

}  // namespace

rdmx_status_t start(std::unique_ptr<Schedule> s, rdmx_request_h *req_p) {
    *req_p = nullptr;
    const rdmx_context_h ctx = s->comm().ctx;
    Engine &e = engine();
    rdmx_status_t st = RDMX_OK;
    {
        // The state first: registering on a context that has none would
        // leave the registration unnoticed when that context is freed.
        std::lock_guard<std::mutex> lk(e.mu);
        CtxState *cs = nullptr;
        st = ctx_state(e, ctx, &cs);
    }
    if (st == RDMX_OK) st = ensure_registered(e, ctx);
    rdmx_request_h greq = nullptr;
    if (st == RDMX_OK) st = rdmx_greq_start(ctx, &greq);
    if (st != RDMX_OK) return st;
    std::lock_guard<std::mutex> lk(e.mu);
    CtxState *cs = nullptr;
    try {  // everything that may allocate, before anything is sent
        st = ctx_state(e, ctx, &cs);  // the same one, unless the context was freed meanwhile
        if (st == RDMX_OK) {
            cs->active.reserve(cs->active.size() + 1);
            e.busy.reserve(e.busy.size() + 1);
            // Contexts being freed orphan their active schedules.
            e.orphans.reserve(e.orphans.size() + e.total + 1);
        }
    } catch (const std::bad_alloc &) {
        st = RDMX_ERR_NO_MEMORY;
    }
    if (st != RDMX_OK) {
        drop_greq(greq, st);
        return st;
    }
    s->bind(greq, cs->next_seq++);
    AdvancingScope scope;
    int events = 0;
    if (!s->advance(events)) {
        cs->active.push_back(std::move(s));
        ++e.total;
        if (!cs->busy) {
            cs->busy = true;
            e.busy.push_back(cs);
        }
    }
    *req_p = greq;
    return RDMX_OK;
}

}  // namespace rdmx::coll::nbc
