// Progress: drive every transport (its completions and arrivals come back
// as upcalls), then push what waits for room: control messages, gets and
// puts, queued sends. Failures of peers and of whole transports end here.
// A progress thread (default) spins for RDMX_SPIN_US, then blocks on the
// transports' descriptors (completion channel, CM and async fds, shared
// memory wake-ups), so many ranks on few cores still progress.
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <future>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"
#include "protocols/placement_glue.h"
#include "transport/sm_poll.h"

namespace rdmx {

// How often a spinning caller also runs the transports' slow checks (CM and
// async events, keepalives, dead local processes) and the watchdog: a
// disconnect or port event is noticed within a millisecond.
constexpr uint64_t kHousekeepingNs = 1'000'000;
// Descriptors a sleeping thread polls: every transport's, plus the wake-up fd.
constexpr int kMaxSleepFds = 16;

// Control messages queued for want of room (a bounce buffer any
// connection's completions return, or a slot on a ring that just drained).
RDMX_SLOW_PATH static void post_waiting_ctrl(Ctx *c) {
    for (size_t i = 0; i < c->peers.size(); ++i)
        if (!c->peers[i].ctrl_q.empty()) rndv_post_ctrl(c, static_cast<int>(i));
}

// Transfers that ran out of room on their lane (sends filled the queue):
// no get/put of their own may be in flight to retry them.
RDMX_SLOW_PATH static void issue_waiting(Ctx *c) {
    std::vector<int> waiting;
    waiting.swap(c->rma_waiting);
    for (int peer : waiting)
        if (!peer_of(c, peer).rma.empty() && peer_usable(c, peer)) rndv_issue(c, peer);
}

// Everything waiting on a lost peer fails with the first cause; `close`:
// the engine found it (its transport closes the connection), else the
// transport reported it.
// Fails everything waiting on `peer` with `why`; returns how many requests.
static size_t fail_requests_of(Ctx *c, int peer, rdmx_status_t why) {
    Peer &p = peer_of(c, peer);
    size_t n = 0;
    while (ListNode *node = p.pending.pop_front()) {
        req_complete(c, container_of<rdmx_request, &rdmx_request::link>(node), why);
        ++n;
    }
    n += rndv_fail_peer(c, peer, why);
    // Receives naming this peer can never match now; wildcards stay posted.
    c->matcher.for_each_posted([&](PostedEntry *pe) {
        if (pe->bits.source == peer) {
            c->matcher.cancel(pe);
            req_complete(c, static_cast<rdmx_request *>(pe), why);
            ++n;
        }
    });
    return n;
}

// A lost peer: everything waiting on it fails with the first cause. The loss
// is a warning when it cost operations (or broke the protocol); a peer
// leaving with nothing outstanding (it finished first) is news, not trouble,
// and while we finalize ourselves it is the normal course.
RDMX_SLOW_PATH static void lose_peer(Ctx *c, int peer, rdmx_status_t why, const char *reason, bool close) {
    Peer &p = peer_of(c, peer);
    if (p.error == 0) p.error = why;
    const bool first = !p.failed;
    if (first) {
        p.failed = true;
        p.lane = Lane::kNone;  // sends at post stop here; the queued path reports the failure
        if (close && p.t != nullptr) p.t->close_peer(peer, static_cast<rdmx_status_t>(p.error));
        note_change(c);
        c->fds_gen.fetch_add(1, std::memory_order_release);  // its transport's descriptors change
    }
    why = static_cast<rdmx_status_t>(p.error);  // the first cause names every later failure
    const size_t failed = fail_requests_of(c, peer, why);
    // A peer that broke the protocol: what it sent before is not trusted either.
    if (why == RDMX_ERR_PROTOCOL) drop_unexpected_of(c, peer);
    if (!first) return;
    const LogLevel level = c->finalized.load(std::memory_order_relaxed) ? LogLevel::kDebug
                           : failed > 0 || why != RDMX_ERR_PEER_LOST     ? LogLevel::kWarn
                                                                        : LogLevel::kInfo;
    RDMX_LOG(level, "peer %d (%s) lost: %s; %zu pending operation(s) and any later ones fail with \"%s\"", peer,
             p.t != nullptr ? p.t->peer_addr(peer) : "no lane", reason, failed, rdmx_strerror(why));
}

void fail_peer(Ctx *c, int peer, rdmx_status_t why, const char *reason) { lose_peer(c, peer, why, reason, true); }

}  // namespace rdmx

void rdmx_context::on_peer_failed(int peer, rdmx_status_t why, const char *reason) {
    rdmx::lose_peer(this, peer, why, reason, false);
}

// A transport failed whole (its device is gone or broken): nothing on it
// can complete, and no new operation starts (the API returns `fatal`).
// Pending requests and every posted receive, wildcards too, fail now, so no
// wait can hang.
void rdmx_context::on_fatal(rdmx_status_t why) {
    using namespace rdmx;
    int expected = 0;
    if (!fatal.compare_exchange_strong(expected, why)) return;
    for (size_t i = 0; i < peers.size(); ++i) {
        Peer &p = peers[i];
        if (!p.failed) p.error = why;
        lose_peer(this, static_cast<int>(i), why, "device failure", false);
    }
    stalled.clear();  // their queues were failed above
    rma_waiting.clear();
    matcher.for_each_posted([&](PostedEntry *pe) {
        matcher.cancel(pe);
        req_complete(this, static_cast<rdmx_request *>(pe), why);
    });
}

namespace rdmx {

// Work queued for room on a lane. Control messages first: transfers under
// way finish before new work starts.
RDMX_SLOW_PATH static void run_deferred(Ctx *c) {
    if (c->ctrl_waiting > 0) post_waiting_ctrl(c);
    if (!c->rma_waiting.empty()) issue_waiting(c);
    if (!c->stalled.empty()) kick_stalled(c);
    c->deferred = c->ctrl_waiting > 0 || !c->rma_waiting.empty() || !c->stalled.empty();
}

// One pass, inlined into progress() (the spin of every wait) and
// progress_locked() (everything else).
RDMX_HOT_INLINE static int progress_pass(Ctx *c, bool housekeeping) {
    if (c->closed) return 0;
    // The transports' slow checks every kHousekeepingNs, or when about to
    // sleep. Not on every idle poll: a waiting caller spins through here,
    // and a system call per spin (several microseconds emulated) showed up
    // in small-message latency; every 64th poll still cost 2-3% of a
    // spinning wait.
    // One clock read per gate: the 16th poll reads it to decide, and that
    // same reading sets the next deadline.
    if (housekeeping) {
        c->housekeeping_ns = fast_ns() + kHousekeepingNs;
    } else if ((++c->poll_calls & 15) == 0) {
        const uint64_t now = fast_ns();
        if (now >= c->housekeeping_ns) housekeeping = true, c->housekeeping_ns = now + kHousekeepingNs;
    }
    int total = 0;
    // sm is a final class: called through its own type the call is direct
    // (and inlined under LTO), not through the Transport table; and given
    // the engine itself as its sink (the one it was opened with), each
    // arrival's on_arrival is direct too (transport/sm_poll.h).
    if (SmTransport *const sm = c->sm_lane) total += sm->progress_with(*c, housekeeping);
    // rc's progress is a direct call too (rc_progress); its arrivals still
    // reach the engine through the sink's table.
    if (Rc *const rc = c->rc_lane) total += rc_progress(rc, housekeeping);
    // self delivers at once after each send to ourselves (post_msg): it has
    // work here only when such a delivery was held back.
    if (Transport *const self = c->self_lane.get(); self != nullptr && !self->idle())
        total += self->progress(housekeeping);
    if (c->deferred) run_deferred(c);
    if (housekeeping) rndv_watchdog(c);
    return total;
}

int progress_locked(Ctx *c, bool housekeeping) { return progress_pass(c, housekeeping); }

void notify_waiters(Ctx *c) {
    std::lock_guard<std::mutex> g(c->wait_mu);
    c->wait_cv.notify_all();
}

// Descriptors to sleep on, gathered under the engine lock (a transport's
// list changes as its peers fail): every transport's connection-event fds,
// its data fds too when `data`, and the wake-up eventfd last when `wake`.
struct SleepFds {
    bool data = false;
    bool wake = false;
    nfds_t n = 0;
    pollfd fds[kMaxSleepFds];
};

static void gather_fds(Ctx *c, SleepFds *s) {
    int n = 0;
    for (Transport *t : c->transports) n += t->fds(s->fds + n, kMaxSleepFds - 1 - n, s->data);
    if (s->wake && c->wake_fd >= 0) s->fds[n++] = {c->wake_fd, POLLIN, 0};
    s->n = static_cast<nfds_t>(n);
}

// With the engine lock held: progress, then release the lock and wake the
// waiters whose requests completed. *stalled (if given): sends were queued.
// *sleep (if given): the descriptors to sleep on, gathered before unlocking.
RDMX_HOT_INLINE static int progress_unlock(Ctx *c, bool housekeeping, bool *stalled = nullptr,
                                           SleepFds *sleep = nullptr) {
    int n = progress_pass(c, housekeeping);
    if (stalled != nullptr) *stalled = !c->stalled.empty();
    if (sleep != nullptr) gather_fds(c, sleep);
    const bool notify = c->notify_pending;
    if (notify) c->notify_pending = false;
    c->lock.unlock();
    log_flush_deferred();  // lines found under the lock (refused connect requests), written outside it
    if (notify) notify_waiters(c);
    run_hooks(c);
    return n;
}

static void drain_wake_fd(Ctx *c) {
    uint64_t v;
    ssize_t r = read(c->wake_fd, &v, sizeof(v));
    (void)r;
}

int progress(Ctx *c, bool block_ok) {
    if (!block_ok) {
        if (!c->lock.try_lock()) return 0;
    } else {
        c->lock.lock();
    }
    return progress_unlock(c, false);
}

// Arms the transports' wake-ups, re-checks (closing the race), then sleeps
// on their fds: the completion/arrival ones unless `cq` is false, the
// connection-event ones always, and the wake-up eventfd only for the
// progress thread (`wake`), whose stop signal it carries. True when there
// was work: the re-check found some, or a descriptor woke the sleep (false:
// it timed out).
RDMX_SLOW_PATH static bool block_on_fds(Ctx *c, int timeout_ms, bool cq, bool wake) {
    if (!c->transport) {
        pollfd wfd{c->wake_fd, POLLIN, 0};
        return poll(&wfd, 1, timeout_ms) > 0;
    }
    c->lock.lock();
    bool ready = false;
    if (cq && c->fatal.load(std::memory_order_relaxed) == 0)
        for (Transport *t : c->transports) ready |= !t->arm();
    bool stalled = false;
    SleepFds s;
    s.data = cq;
    s.wake = wake;
    // Not sleeping after all (work turned up) or after the poll: the armed
    // transports are told either way. A left-over arm kept sm's "asleep"
    // flag up, and every peer then paid a wake-up write() per message.
    bool work = progress_unlock(c, true, &stalled, &s) != 0 || ready;
    if (!work) work = poll(s.fds, s.n, stalled ? 1 : timeout_ms) > 0;
    if (cq)
        for (Transport *t : c->transports) t->after_sleep();
    if (wake && c->wake_fd >= 0 && (s.fds[s.n - 1].revents & POLLIN)) drain_wake_fd(c);
    return work;
}

// Thread mode, after the spin: one waiting thread sleeps on the completion
// channel and drives progress itself when it fires (one wake-up per
// completion instead of the progress thread's followed by this thread's);
// any other waiter sleeps on the condition variable, woken by whoever
// completes a request while it is registered. Returns when done() holds, or
// when there was work (then the caller spins again: more is likely close),
// or (condition variable) after a millisecond; true when there was work.
template <class Done> RDMX_SLOW_PATH static bool sleep_until(Ctx *c, Done done) {
    bool expected = false;
    if (c->cq_waiter.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        bool work = false;
        while (!work && !done()) work = block_on_fds(c, 1, true, false);
        c->cq_waiter.store(false, std::memory_order_release);
        return work;
    }
    c->waiters.fetch_add(1);
    {
        std::unique_lock<std::mutex> lk(c->wait_mu);
        c->wait_cv.wait_for(lk, std::chrono::milliseconds(1), done);
    }
    c->waiters.fetch_sub(1);
    return progress(c, false) != 0;
}

// Work that goes on without the application calling in: queued sends,
// rendezvous transfers, receives waiting for data.
static bool background_work(Ctx *c) {
    std::lock_guard<SpinLock> g(c->lock);
    return !c->stalled.empty() || !c->rndv_sends.empty() || !c->rndv_xfers.empty() || !c->rndv_puts.empty() ||
           !c->rndv_invs.empty() || c->ctrl_waiting > 0 || c->matcher.posted_count() > 0 ||
           c->greqs_pending.load(std::memory_order_relaxed) > 0;
}

// At RDMX_THREADS=single without a progress thread nobody else reads these:
// no locked add on every wait.
WaitScope::WaitScope(Ctx *ctx) : c(ctx) {
    if (!c->engine_mt) return;
    note_app_call(c);
    c->app_waiting.fetch_add(1, std::memory_order_acq_rel);
}

// The last waiter leaving hands progress back to the progress thread at once
// when something is still in flight (it may be asleep for up to
// DelegatedPace::kMaxMs).
WaitScope::~WaitScope() {
    if (!c->engine_mt) return;
    if (c->app_waiting.fetch_sub(1, std::memory_order_acq_rel) != 1 || c->wake_fd < 0 ||
        c->cfg.progress != RDMX_PROGRESS_THREAD || !background_work(c))
        return;
    c->handoff.store(true, std::memory_order_release);
    uint64_t one = 1;
    ssize_t w = write(c->wake_fd, &one, sizeof(one));
    (void)w;
}

// The adaptive spin. A wait that had to sleep but whose completion came
// within one spin budget of falling asleep would have been cheaper spun
// through: a sleep and its wake-up cost a scheduler round trip (milliseconds
// on a loaded or emulated machine), so a ping-pong whose round trips straddle
// the budget ran at two speeds, spun or slept, from one run to the next. So
// such a wait doubles the budget (up to RDMX_SPIN_MAX_US); a wait whose sleep
// lasted several budgets (the peer computes; or ranks outnumber cores, where
// spinning takes the CPU the peer needs) halves it back toward RDMX_SPIN_US.
constexpr uint64_t kSpinShrinkAfter = 8;  // sleeps this many budgets long shrink it
uint64_t next_spin_budget(uint64_t budget, uint64_t asleep_ns, uint64_t floor, uint64_t cap) {
    if (asleep_ns < budget) return std::max(floor, std::min(cap, budget * 2));
    if (asleep_ns > kSpinShrinkAfter * budget) return std::max(floor, budget / 2);
    return budget;
}

RDMX_SLOW_PATH static void adapt_spin(Ctx *c, uint64_t budget, uint64_t asleep_ns) {
    const uint64_t next = next_spin_budget(budget, asleep_ns, c->spin_floor_ns, c->spin_cap_ns);
    c->wait_sleeps.fetch_add(1, std::memory_order_relaxed);
    if (next == budget) return;
    c->spin_ns.store(next, std::memory_order_relaxed);
    RDMX_DEBUG("progress: spin budget %llu -> %llu us (a wait slept %llu us)",
               static_cast<unsigned long long>(budget / 1000), static_cast<unsigned long long>(next / 1000),
               static_cast<unsigned long long>(asleep_ns / 1000));
}

// Spins (driving progress) until a spin budget (RDMX_SPIN_US, adapted: see
// adapt_spin) passes without a pass finding work, then sleeps; never
// returns before done() holds. done() must load with seq_cst (see
// req_complete). The budget counts from the last pass that found work, not
// from the start of the wait: a wait for a window of messages that arrive
// one by one (rdmx_waitall on 64 receives) keeps spinning while they come.
// Counted from the start, such a wait ran out of budget long before its
// last message, and from then on armed the completion channel and read the
// connection and async events between every two arrivals (five system
// calls each; on the emulated bed the 8-byte message rate lost a fifth).
// The spin is timed with fast_ns() (the TSC), every 16th spin: where the
// clocksource is not the TSC (HPET in an emulated guest) clock_gettime is a
// system call, and reading it while spinning took an eighth of the wait.
template <class Done> static void wait_until(Ctx *c, Done done) {
    if (done()) return;
    const uint64_t spin_ns = c->spin_ns.load(std::memory_order_relaxed);
    const bool caller = c->cfg.progress == RDMX_PROGRESS_CALLER;
    WaitScope waiting(c);
    bool spinning = spin_ns > 0;
    // The clock is first read at the 16th spin, with the start taken as then
    // minus nothing: most waits end in the first passes and never read it.
    // A pass that finds work starts the budget again the same way.
    uint64_t start = 0, asleep_at = 0;
    for (unsigned spins = 1;; ++spins) {  // done() was false above, and nothing has moved since
        if (spinning) {
            if (progress(c, false) != 0) start = 0;
            else if (c->yield_idle) sched_yield();
            if ((spins & 15) == 0) {
                const uint64_t now = fast_ns();
                if (start == 0) start = now;
                else if (now - start >= spin_ns) spinning = false, asleep_at = now;
            }
        } else if (caller) {
            // Woken by work (not by the timeout): spin again, as at the
            // start of a wait; the peer's next message is likely close.
            if (block_on_fds(c, 1, true, false)) spinning = true, start = 0;
        } else if (sleep_until(c, done)) {
            spinning = true, start = 0;
        }
        if (done()) break;
    }
    if (asleep_at != 0) adapt_spin(c, spin_ns, fast_ns() - asleep_at);
}

// One progress pass before the spin's set-up: most waits of a small
// message find it there (the count of an 8-byte ping-pong drops by the
// spin's bookkeeping). A pass that cannot take the lock (the progress
// thread holds it) leaves the wait to the spin.
void wait_request(Ctx *c, rdmx_request *r) {
    auto done = [r] { return r->done.load(std::memory_order_seq_cst) != 0; };
    if (done()) return;
    progress(c, false);
    wait_until(c, done);
}

void wait_change(Ctx *c, uint64_t seen) {
    wait_until(c, [c, seen] { return c->change_epoch.load(std::memory_order_seq_cst) != seen; });
}

void wait_all(Ctx *c, rdmx_request *const *reqs, size_t n) {
    size_t next = 0;  // everything before it is done: each request is checked until done, then never again
    wait_until(c, [reqs, n, &next] {
        while (next < n && (reqs[next] == nullptr || reqs[next]->done.load(std::memory_order_seq_cst) != 0)) ++next;
        return next == n;
    });
}

void wait_any(Ctx *c, rdmx_request *const *reqs, size_t n) {
    wait_until(c, [reqs, n] {
        for (size_t i = 0; i < n; ++i)
            if (reqs[i] != nullptr && reqs[i]->done.load(std::memory_order_seq_cst) != 0) return true;
        return false;
    });
}

// While the application drives progress (a thread waits, or it called in
// during the last sleep): sleep on the CM, async and wake-up fds, and take
// the engine lock only when the CM or async fd fired. Polling the CQ here
// too would make this thread run beside the application's whenever
// completions flow; on two emulated CPUs with two ranks that cost a sixth of
// the 8-byte message rate (docs/design/protocols.md).
// Returns kKicked when woken through the wake-up fd: the last waiter left
// work in flight (WaitScope) and this thread should take over at once, or
// a nonblocking call found the sleep lengthened (wake_if_deep); the caller
// tells the two apart by Ctx::handoff.
// The descriptors of sleep_delegated, gathered under the engine lock only
// when fds_gen says they changed (a peer lost): this thread then sleeps and
// wakes every delegated sleep (DelegatedPace) without touching the lock the
// application is using. (Taking it every sleep meant that, on two busy CPUs, the lock
// was now and then held by a preempted progress thread while the
// application spun for it: milliseconds in the latency tail.)
struct DelegatedFds {
    SleepFds s;
    uint64_t gen = ~uint64_t{0};
};

enum class Woke { kTimeout, kEvents, kKicked };

void wake_delegate(Ctx *c) {
    if (!c->delegate_deep.exchange(false, std::memory_order_acq_rel)) return;  // another call woke it
    // Counted before the write: the woken thread then always sees a call
    // made during its sleep and keeps delegating (at the base pace), rather
    // than taking over at once when it read the counter before the caller's
    // own note_app_call.
    note_app_call(c);
    uint64_t one = 1;
    ssize_t w = write(c->wake_fd, &one, sizeof(one));
    (void)w;
}

static Woke sleep_delegated(Ctx *c, DelegatedFds *d, int sleep_ms, bool deep) {
    if (!c->transport) {
        block_on_fds(c, 1, false, true);
        return Woke::kEvents;
    }
    SleepFds &s = d->s;
    const uint64_t gen = c->fds_gen.load(std::memory_order_acquire);
    if (gen != d->gen) {
        s = SleepFds{};
        s.wake = true;
        std::lock_guard<SpinLock> g(c->lock);
        gather_fds(c, &s);
        d->gen = gen;
    }
    // Deep: a nonblocking call wakes this sleep (wake_if_deep). The flag is
    // cleared after the poll whatever woke it; a wake-up written meanwhile
    // ends the next sleep at once, which then counts as a kick.
    if (deep) c->delegate_deep.store(true, std::memory_order_release);
    const int ready = poll(s.fds, s.n, sleep_ms);
    if (deep) c->delegate_deep.store(false, std::memory_order_relaxed);
    if (ready <= 0) {
        c->delegated_timeouts.fetch_add(1, std::memory_order_relaxed);
        return Woke::kTimeout;
    }
    const bool with_wake = c->wake_fd >= 0;
    const bool kicked = with_wake && (s.fds[s.n - 1].revents & POLLIN);
    if (kicked) drain_wake_fd(c);
    bool events = false;
    for (nfds_t i = 0; i + (with_wake ? 1 : 0) < s.n; ++i) {
        events |= (s.fds[i].revents & POLLIN) != 0;
        if (s.fds[i].revents & POLLNVAL) d->gen = ~uint64_t{0};  // closed meanwhile: gather again
    }
    if (events) {
        c->lock.lock();
        (void)progress_unlock(c, true);
    }
    return kicked ? Woke::kKicked : Woke::kEvents;
}

// One thread per process drives progress at a time: two per rank (the
// application's and this one) on a busy or emulated machine fight for the
// CPUs the transport itself needs (on Soft-RoCE, the kernel's packet work).
// So while the application drives progress (it waits, or has called in
// during its last delegated sleep) this thread sleeps on the CM, async and
// wake-up fds only (sleep_delegated). It takes over when a whole sleep
// passes without a call (the application computes) or when the last waiter
// leaves work in flight (kick); then it spins a tenth of RDMX_SPIN_US after
// its last completion and sleeps on every fd, the completion channel too.
static void progress_main(Ctx *c, std::promise<void> *placed) {
    // Named so top -H, perf and scheduler traces tell it from the
    // application's threads (15 characters at most).
    pthread_setname_np(pthread_self(), "rdmx-progress");
    apply_progress_placement(c);
    placed->set_value();
    // A tenth of the crowded spin (or of RDMX_SPIN_US when set): this thread
    // spins while the application computes, on a CPU it may need.
    const unsigned spin_us = c->cfg.spin_us != Config::kSpinAuto ? c->cfg.spin_us : Config::kSpinCrowdedUs;
    const uint64_t spin_ns = uint64_t{spin_us} * 100;
    uint64_t last_busy = fast_ns();
    uint32_t seen = c->app_calls.load(std::memory_order_relaxed);
    DelegatedFds delegated;
    DelegatedPace pace;
    unsigned spins = 0;
    while (!c->stop.load(std::memory_order_acquire)) {
        const uint32_t calls = c->app_calls.load(std::memory_order_relaxed);
        if (c->app_waiting.load(std::memory_order_acquire) > 0 || calls != seen) {
            seen = calls;
            const Woke woke = sleep_delegated(c, &delegated, pace.ms, pace.deep());
            if (woke == Woke::kKicked) {
                // The last waiter's hand-off: take over unless the
                // application calls in again. A nonblocking call's kick
                // (wake_if_deep, which counted itself first) leaves `seen`
                // behind the counter: the next sleep is delegated again, at
                // the base pace.
                if (c->handoff.exchange(false, std::memory_order_acq_rel))
                    seen = c->app_calls.load(std::memory_order_relaxed);
                pace.woken();
            } else if (woke == Woke::kTimeout) {
                pace.timed_out(c->app_waiting.load(std::memory_order_relaxed) > 0);
            }
            last_busy = fast_ns();
            continue;
        }
        pace = DelegatedPace{};  // taking over: the application went quiet
        // A hand-off whose kick this thread drained elsewhere (block_on_fds)
        // must not make a later nonblocking call's kick look like one.
        if (c->handoff.load(std::memory_order_relaxed)) c->handoff.store(false, std::memory_order_relaxed);
        if (progress(c, false) > 0) {
            last_busy = fast_ns();
            continue;
        }
        if ((++spins & 15) != 0 || fast_ns() - last_busy < spin_ns) {
            if (c->yield_idle) sched_yield();
            else __builtin_ia32_pause();
            continue;
        }
        block_on_fds(c, 100, true, true);
        last_busy = fast_ns();
    }
}

void start_progress_thread(Ctx *c) {
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    c->stop.store(false);
    if (c->cfg.progress != RDMX_PROGRESS_THREAD) return;
    // Placement loads the machine's topology (hundreds of milliseconds of
    // CPU under emulation): done before rdmx_init returns, so it does not
    // compete with the application's first messages. (It did: a 20-iteration
    // warm-up left 8-byte latency 3x what it was after 3,000.)
    std::promise<void> placed;
    std::future<void> done = placed.get_future();
    c->progress_thread = std::thread(progress_main, c, &placed);
    done.wait();
}

void stop_progress_thread(Ctx *c) {
    c->stop.store(true, std::memory_order_release);
    if (c->wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t w = write(c->wake_fd, &one, sizeof(one));
        (void)w;
    }
    if (c->progress_thread.joinable()) c->progress_thread.join();
    // The eventfd stays open until the context is freed: threads still
    // waiting while finalize runs read wake_fd (see ~rdmx_context).
}

}  // namespace rdmx
