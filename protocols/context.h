// The engine behind an rdmx_context_h: bootstrap, transport objects (in
// creation order, so they are destroyed in the order verbs requires),
// tag matching, eager and rendezvous protocols, and progress.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/bootstrap.h"
#include "core/config.h"
#include "core/hot.h"
#include "core/spinlock.h"
#include "core/tag_match.h"
#include "core/wire.h"
#include "core/ilist.h"
#include "protocols/comm.h"
#include "protocols/request.h"
#include "transport/rc.h"
#include "transport/sm.h"
#include "transport/transport.h"

namespace rdmx {

// An arrived message nobody asked for yet.
struct Unexp : UnexpEntry {
    int peer = -1;
    wire::MsgType type = wire::MsgType::kEager;
    size_t len = 0;
    std::unique_ptr<char[]> data;  // eager payload copied aside, or
    bool held = false;             // the transport's buffer kept (back-pressure):
    uint64_t token = 0;            // released with this token
    const char *held_data = nullptr;  // its payload
    wire::RndvDesc desc{};         // rendezvous
    uint64_t cookie = 0;
};

// A rendezvous control message (FIN, CTS, PutFin) waiting for room on its
// lane. `expose` != 0: a put receive (that id) whose exposure and CTS both
// wait; the CTS body is made when they go.
struct CtrlMsg {
    uint8_t type = 0;
    uint8_t body_len = 0;
    uint64_t length = 0;
    uint64_t cookie = 0;
    uint64_t expose = 0;
    alignas(8) unsigned char body[24] = {};
};

// The engine's view of one peer: its lane (the transport that carries it)
// and the protocol state that waits on that lane.
// Line-aligned to a power-of-two size: peers[i] is a shift away (every
// send, receive and arrival indexes it), and no two peers share a line.
// Which call a send at post makes (send_at_post): one byte tested, not the
// lane pointer against each transport's.
enum class Lane : uint8_t {
    kNone,   // no lane, or the peer failed: the send takes the queued path
    kSm,     // c->sm_lane, called through its final class
    kRc,     // c->rc_lane, by rc_try_send_eager
    kOther,  // through the Transport table (self)
};

struct alignas(64) Peer {
    Transport *t = nullptr;        // null for no lane (never connected)
    bool self = false;             // t is the self lane (its arrivals are delivered at once)
    bool failed = false;           // lost: told by its transport (on_peer_failed) or found by the engine
    Lane lane = Lane::kNone;       // t's kind while not failed (set_lane)
    int error = 0;                 // rdmx_status_t once failed: the first cause
    List pending;                  // sends waiting for room on the lane
    List rma;                      // transfers with gets/puts still to issue
    List rma_done;                 // transfers whose gets/puts are all issued
    uint32_t rma_in_flight = 0;    // gets/puts posted and not yet complete
    uint64_t rma_progress_ns = 0;  // last time one was posted or completed (the watchdog's)
    // Control messages of transfers under way, in order, while the lane has
    // no room for them (empty otherwise; sends queue behind them).
    std::vector<CtrlMsg> ctrl_q;
    size_t ctrl_head = 0;
};
static_assert((sizeof(Peer) & (sizeof(Peer) - 1)) == 0, "Peer: keep its size a power of two (indexed by shift)");

inline void set_lane(Peer &p, Transport *t, Lane kind) {
    p.t = t;
    p.lane = kind;
}

}  // namespace rdmx

struct rdmx_context final : rdmx::TransportSink {
    rdmx::Config cfg;
    std::unique_ptr<rdmx::Bootstrap> boot;
    int rank = 0;
    int size = 1;
    uint64_t job_key = 0;
    double connect_seconds = 0;
    std::atomic<bool> finalized{false};
    std::atomic<int> fatal{0};          // a transport failed whole: new operations fail with this
    bool transport = false;             // false for a job of one: nothing to poll but ourselves
    // Thread level (RDMX_THREADS; set before any second thread exists).
    // app_mt: application threads may call in at once (`multiple`): calls
    // pin the context against a concurrent finalize. engine_mt: more than
    // one thread may be inside the engine (app_mt, or a progress thread):
    // the engine lock is on and completions are published with full
    // barriers for sleeping waiters. With both false nothing on the send or
    // receive path takes a lock or an atomic read-modify-write.
    bool app_mt = true;
    bool engine_mt = true;
    // RDMX_CHECK_ARGS=all: point-to-point calls check every argument;
    // handles: only the context (a layer above checked the rest).
    bool check_args = true;
    bool progress_thread_on = false;  // RDMX_PROGRESS=thread in a job of more than one
    // An empty poll in a spinning wait is followed by sched_yield (RDMX_YIELD;
    // context.cc, decide_yield): with more ranks than CPUs, a rank that spins
    // holds the CPU its peer needs to answer, for a whole scheduler slice.
    bool yield_idle = false;
    // A wait's spin budget, ns: from spin_floor_ns, adapted up to
    // spin_cap_ns (progress.cc, adapt_spin). Read and written by waiting
    // threads without the lock: a lost update only delays the adaptation by
    // one wait.
    std::atomic<uint64_t> spin_ns{0};
    // RDMX_SPIN_US as resolved at bring-up (auto: by how crowded the host
    // is; context.cc, decide_yield) and RDMX_SPIN_MAX_US, never below it.
    uint64_t spin_floor_ns = uint64_t{rdmx::Config::kSpinCrowdedUs} * 1000;
    uint64_t spin_cap_ns = spin_floor_ns;
    // Bumped (engine lock held) when the transports' descriptors may have
    // changed: the progress thread's delegated sleep regathers them then.
    std::atomic<uint64_t> fds_gen{0};

    // Transports, in creation order (destroyed in reverse), and the lane of
    // each peer.
    std::unique_ptr<rdmx::Transport> self_lane;
    std::unique_ptr<rdmx::SmTransport> sm;
    std::unique_ptr<rdmx::Rc> rc;
    std::vector<rdmx::Transport *> transports;
    // The progress pass calls each transport directly, not by walking
    // `transports`: sm and rc (sm_lane, rc_lane: c->sm and c->rc once
    // connected and in `transports`) through their own types, and self
    // only when it holds messages; a send at post calls sm and rc directly
    // too.
    rdmx::SmTransport *sm_lane = nullptr;
    rdmx::Rc *rc_lane = nullptr;
    std::vector<rdmx::Peer> peers;
    size_t eager_limit = 0;
    size_t rndv_thresh = 0;
    uint64_t watchdog_ns = 0;            // last stalled get/put check (fast_ns)

    // Protocol state, guarded by lock.
    rdmx::SpinLock lock;
    rdmx::TagMatcher matcher;
    std::unordered_map<uint64_t, rdmx_request *> rndv_sends;  // cookie -> send waiting for FIN
    std::unordered_map<uint64_t, rdmx_request *> rndv_xfers;  // id -> transfer moving data (get/put)
    std::unordered_map<uint64_t, rdmx_request *> rndv_puts;   // our id -> put receive awaiting PutFin
    std::unordered_map<uint64_t, rdmx_request *> rndv_invs;   // id -> request awaiting its exposure's revocation
    size_t ctrl_waiting = 0;              // peers with control messages queued (Peer::ctrl_q)
    uint64_t next_cookie = 1;
    size_t unexpected_bytes = 0;
    size_t held_bufs = 0;
    std::vector<int> stalled;             // peers with queued sends
    std::vector<int> rma_waiting;         // peers with gets/puts queued for room on their lane
    // ctrl_waiting, rma_waiting or stalled may hold work: set where each is
    // added to, recomputed by the progress pass that serves them (one test
    // per pass instead of three).
    bool deferred = false;
    rdmx_request *free_reqs = nullptr;
    bool closed = false;                  // finalize cancelled everything: nothing polls any more
    size_t live_reqs = 0;                 // handles not yet freed by test/wait
    std::vector<std::unique_ptr<rdmx_request[]>> req_chunks;
    unsigned poll_calls = 0;
    uint64_t housekeeping_ns = 0;  // fast_ns() when CM/async events and watchdogs are next due

    // Progress thread and blocking waits.
    std::thread progress_thread;
    std::atomic<bool> stop{false};
    int wake_fd = -1;
    std::mutex wait_mu;
    std::condition_variable wait_cv;
    std::atomic<int> waiters{0};
    bool notify_pending = false;
    // Set while an application thread waiting for a request sleeps on the
    // transports' completion fds itself; the progress thread then leaves
    // them alone, so a completion wakes one thread, not two in turn.
    std::atomic<bool> cq_waiter{false};
    // Application threads inside a wait (spinning or asleep): they drive
    // progress, and the progress thread keeps off the CPU and the CQ.
    std::atomic<int> app_waiting{0};
    // Bumped by every application call that drives the engine (isend, irecv,
    // test, iprobe, each wait). While it moves, the application is driving
    // progress between its waits (a ping-pong, a message-rate window) and
    // the progress thread stays off the CPU; it takes over once a whole
    // delegated sleep passes without a call.
    std::atomic<uint32_t> app_calls{0};
    // Set while the progress thread sleeps longer than its base delegated
    // sleep (its sleeps lengthen while the application keeps driving
    // progress: DelegatedPace, protocols/progress.cc). The next nonblocking
    // call wakes it (wake_if_deep), so work that call starts and leaves to
    // the background is taken over at the base pace.
    std::atomic<bool> delegate_deep{false};
    // Set by the last waiter leaving work in flight (WaitScope) before it
    // writes wake_fd: that kick hands progress over at once. A kick without
    // it came from a nonblocking call (wake_if_deep), which only restores
    // the base pace of the delegated sleep.
    std::atomic<bool> handoff{false};
    // Delegated sleeps that ended by their timeout (test hook: a measure of
    // how often the progress thread wakes beside a busy application).
    std::atomic<uint64_t> delegated_timeouts{0};
    // Waits that outlasted their spin budget and slept (the adaptive spin,
    // progress.cc): logged at finalize, with the budget they left.
    std::atomic<uint64_t> wait_sleeps{0};
    // Bumped (engine lock held) when a message joins the unexpected queue or a
    // peer is lost: what a blocking probe waits for.
    std::atomic<uint64_t> change_epoch{0};

    // Communicators: this context's own view (the root's, identity ranks),
    // the ids and derived views in use (protocols/comm.cc), and messages a
    // matched probe took off the queue that are not received yet (engine
    // lock; freed by the destructor if never received).
    rdmx::CommView world;
    rdmx::CommRegistry comms;
    rdmx::List matched_msgs;
    // Progress callbacks (rdmx_progress_register): run after every progress
    // pass, outside the lock, by one thread at a time (hooks_busy).
    struct Hook {
        rdmx_progress_fn_t fn = nullptr;
        void *arg = nullptr;
    };
    static constexpr int kMaxHooks = 16;
    Hook hooks[kMaxHooks];
    std::atomic<int> n_hooks{0};
    std::atomic<bool> hooks_busy{false};
    // Generalized requests not yet completed: work the progress thread must
    // keep polling for (their layer completes them from a hook).
    std::atomic<int> greqs_pending{0};

    // TransportSink: what the transports report from their progress.
    bool on_arrival(int peer, const rdmx::wire::MsgHdr &h, const char *buf, uint32_t len, uint64_t token) override;
    void on_rma_done(int peer, uint64_t id, uint32_t bytes, bool ok) override;
    void on_unexposed(int peer, uint64_t id, bool ok) override;
    void on_peer_failed(int peer, rdmx_status_t why, const char *reason) override;
    void on_fatal(rdmx_status_t why) override;

    ~rdmx_context();
};

namespace rdmx {

using Ctx = rdmx_context;

// context.cc
rdmx_status_t context_init(Ctx *c, const rdmx_config_t *cfg);
rdmx_status_t context_finalize(Ctx *c);

// request pool (eager.cc)
rdmx_request *req_alloc(Ctx *c, ReqKind kind, CommView *comm);
inline rdmx_request *req_alloc(Ctx *c, ReqKind kind) { return req_alloc(c, kind, &c->world); }
void req_free(Ctx *c, rdmx_request *r);
void req_complete(Ctx *c, rdmx_request *r, rdmx_status_t st);
constexpr size_t kReqChunk = 256;  // requests per pool chunk
// Hands the context's request chunks to the process (see req_alloc).
RDMX_SLOW_PATH void req_pool_retire(Ctx *c);
// A message became unexpected or a peer was lost: wakes rdmx_probe.
void note_change(Ctx *c);

// eager.cc: sends
// The send fast path: posts an eager message at once when nothing is queued
// for the peer and its lane has room (the transport copies or inlines the
// payload, so the send is complete). False: nothing was sent; the caller
// takes the request path (which also reports a lane that failed here).
bool send_at_post(Ctx *c, int peer, uint8_t space, uint32_t comm, int tag, const void *buf, size_t len);
RDMX_SLOW_PATH rdmx_status_t start_send(Ctx *c, rdmx_request *r);
RDMX_SLOW_PATH void kick_stalled(Ctx *c);
// Whether a message of body_len bytes may go to `peer` now (nothing queued
// ahead of it, room on the lane); post_msg posts it (false: the lane failed).
bool can_post(Ctx *c, int peer, size_t body_len, unsigned extra = 0);
bool post_msg(Ctx *c, int peer, wire::MsgType type, uint8_t space, uint32_t comm, int tag, uint64_t length,
              uint64_t cookie, const void *body, size_t body_len, bool ctrl = false);
// arrival.cc
rdmx_status_t start_recv(Ctx *c, rdmx_request *r);
void deliver_eager(Ctx *c, rdmx_request *r, int peer, int tag, const char *data, size_t len);
void release_unexp(Ctx *c, Unexp *u);
// Receives into r a message already off the matching queue (u is freed).
void recv_unexpected(Ctx *c, rdmx_request *r, Unexp *u);
// A peer that broke the protocol: its unexpected messages are not trusted either.
RDMX_SLOW_PATH void drop_unexpected_of(Ctx *c, int peer);
// progress.cc: failures. fail_peer: the engine found the peer broke the
// protocol or is gone (closes its lane too); the transports report theirs
// through on_peer_failed.
RDMX_SLOW_PATH void fail_peer(Ctx *c, int peer, rdmx_status_t why, const char *reason);

// rndv.cc
RDMX_SLOW_PATH rdmx_status_t rndv_send_start(Ctx *c, int peer, rdmx_request *r);
RDMX_SLOW_PATH
void rndv_recv_start(Ctx *c, rdmx_request *r, int peer, int tag, const wire::RndvDesc &d, uint64_t cookie);
RDMX_SLOW_PATH void rndv_on_fin(Ctx *c, int peer, const wire::MsgHdr &h, const wire::FinBody &f);
RDMX_SLOW_PATH void rndv_post_ctrl(Ctx *c, int peer);
RDMX_SLOW_PATH void rndv_drop_ctrl(Ctx *c, int peer);
RDMX_SLOW_PATH void rndv_issue(Ctx *c, int peer);
// Fails the transfers with `peer`; returns how many requests it completed.
RDMX_SLOW_PATH size_t rndv_fail_peer(Ctx *c, int peer, rdmx_status_t why);
RDMX_SLOW_PATH void rndv_revoke(Ctx *c, int peer, rdmx_request *r);
// ahead: may go before messages already queued (the one at their head is being sent).
RDMX_SLOW_PATH
void rndv_send_ctrl(Ctx *c, int peer, wire::MsgType type, uint64_t length, uint64_t cookie, const void *body,
                    size_t body_len, bool ahead = false);
RDMX_SLOW_PATH void rndv_queue_ctrl(Ctx *c, int peer, const CtrlMsg &m);
RDMX_SLOW_PATH void rndv_move_data(Ctx *c, int peer, rdmx_request *r);
RDMX_SLOW_PATH void rndv_watchdog(Ctx *c);
// Gives the transport back what it holds for r's transfer, if anything (the
// check inline: every request completion and free passes here).
RDMX_SLOW_PATH void rndv_release_mem(Ctx *c, rdmx_request *r);
inline void rndv_release(Ctx *c, rdmx_request *r) {
    if (r->rndv) rndv_release_mem(c, r);
}
// Puts a rendezvous request's fields back to their initial values (at free,
// so the pool holds only requests whose rendezvous fields are clean).
RDMX_SLOW_PATH void rndv_reset(rdmx_request *r);
// rndv_put.cc
RDMX_SLOW_PATH void rndv_put_recv_start(Ctx *c, int peer, rdmx_request *r);
RDMX_SLOW_PATH bool rndv_put_expose_queued(Ctx *c, int peer, uint64_t id);
RDMX_SLOW_PATH void rndv_on_cts(Ctx *c, int peer, const wire::MsgHdr &h, const wire::RndvDesc &d);
RDMX_SLOW_PATH void rndv_put_written(Ctx *c, int peer, rdmx_request *r);
RDMX_SLOW_PATH void rndv_on_put_fin(Ctx *c, int peer, const wire::MsgHdr &h, const wire::FinBody &f);

// comm.cc
void comm_init_root(Ctx *c);
// rdmx_finalize: runs every view's attribute free functions (the layers may
// still call in), marks derived views dead and returns them for release
// once the engine is gone.
std::vector<CommView *> comm_teardown(Ctx *c);
// The last request of a view being freed was freed (engine lock held; req_free counts live_reqs).
void comm_req_freed(Ctx *c, CommView *v);
// A peer's rdmx_abort reached us (arrival.cc): this process ends.
RDMX_SLOW_PATH [[noreturn]] void comm_on_abort(Ctx *c, int peer, int code);
// hooks.cc: the progress callbacks, after a pass (lock released).
RDMX_SLOW_PATH void run_hooks_slow(Ctx *c);
inline void run_hooks(Ctx *c) {
    if (c->n_hooks.load(std::memory_order_relaxed) != 0) run_hooks_slow(c);
}

// progress.cc
int progress(Ctx *c, bool block_ok);
// housekeeping: also read CM/async events and run the watchdogs now.
int progress_locked(Ctx *c, bool housekeeping = false);
void wait_request(Ctx *c, rdmx_request *r);
// The spin budget after a wait that spun `budget` ns, then slept `asleep_ns`
// (progress.cc: a short sleep doubles it up to `cap`, a long one halves it
// down to `floor`).
uint64_t next_spin_budget(uint64_t budget, uint64_t asleep_ns, uint64_t floor, uint64_t cap);

// The progress thread's delegated sleep (while the application drives
// progress). Each sleep that times out doubles the length it has grown to
// (from kBaseMs up to kMaxMs); the next sleep takes that length when the
// application is inside a wait at the time, else kBaseMs (it may be about
// to compute, and the thread takes over once a whole sleep passes without
// a call). A nonblocking call that wakes a lengthened sleep
// (wake_if_deep) sets the length back to kBaseMs and holds it there for
// kHoldSleeps timeouts, so that a loop of nonblocking calls and waits,
// which would cut every lengthened sleep short, keeps the base pace rather
// than waking the thread twice per base sleep. A blocking ping-pong never
// wakes it: its sleeps reach kMaxMs, and the progress thread stops
// preempting its application a hundred times a second.
struct DelegatedPace {
    static constexpr int kBaseMs = 10;
    static constexpr int kMaxMs = 160;
    static constexpr int kHoldSleeps = 8;
    int level = kBaseMs;  // the length grown to
    int ms = kBaseMs;     // the next sleep's length
    int hold = 0;         // timeouts left before the length may grow again
    bool deep() const { return ms > kBaseMs; }
    void timed_out(bool app_waits) {
        if (hold > 0) --hold;
        else level = level * 2 < kMaxMs ? level * 2 : kMaxMs;
        ms = app_waits ? level : kBaseMs;
    }
    void woken() {  // a wake-up through the eventfd: a nonblocking call, or a waiter leaving work
        if (level > kBaseMs) hold = kHoldSleeps;
        level = ms = kBaseMs;
    }
};
// Returns once every non-null request of reqs[0..n) is done (all of ctx c).
void wait_all(Ctx *c, rdmx_request *const *reqs, size_t n);
// Returns once at least one non-null request of reqs[0..n) is done (all of ctx c).
void wait_any(Ctx *c, rdmx_request *const *reqs, size_t n);
// Returns once change_epoch differs from `seen` (spinning, then sleeping).
void wait_change(Ctx *c, uint64_t seen);
// An application thread inside a wait (counted in app_waiting): while any is,
// the progress thread sleeps and leaves progress to it. Scopes nest
// (rdmx_waitall holds one across its waits).
// What an operation with a failed (or never usable) endpoint completes with:
// the connection's first cause, else PEER_LOST.
inline rdmx_status_t peer_failure(const Peer &p) {
    return p.error != 0 ? static_cast<rdmx_status_t>(p.error) : RDMX_ERR_PEER_LOST;
}
inline Peer &peer_of(Ctx *c, int peer) { return c->peers[static_cast<size_t>(peer)]; }
// The peer's lane can carry messages now. (Every connection a transport
// loses is reported through on_peer_failed, so `failed` is the whole
// answer: no call into the transport on the hot path.)
inline bool peer_usable(Ctx *c, int peer) {
    const Peer &p = c->peers[static_cast<size_t>(peer)];
    return !p.failed && p.t != nullptr;
}

// The counter only has to move for the progress thread to see calls come in:
// a load and a store, not a locked add (two racing callers may bump it once).
inline void note_app_call(Ctx *c) {
    c->app_calls.store(c->app_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// A nonblocking call (isend, issend, irecv, test, iprobe) may start work
// and leave it to the background while the application computes: if the
// progress thread is in a lengthened sleep, wake it (once; the thread
// re-arms the flag only for its next lengthened sleep). One relaxed load
// otherwise; never set without a progress thread.
RDMX_SLOW_PATH void wake_delegate(Ctx *c);
inline void wake_if_deep(Ctx *c) {
    if (c->delegate_deep.load(std::memory_order_relaxed)) wake_delegate(c);
}

struct WaitScope {
    Ctx *c;
    explicit WaitScope(Ctx *ctx);
    ~WaitScope();
    WaitScope(const WaitScope &) = delete;
    WaitScope &operator=(const WaitScope &) = delete;
};
void start_progress_thread(Ctx *c);
void stop_progress_thread(Ctx *c);
RDMX_SLOW_PATH void notify_waiters(Ctx *c);

}  // namespace rdmx
