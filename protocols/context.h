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
#include "core/spinlock.h"
#include "core/tag_match.h"
#include "core/wire.h"
#include "protocols/request.h"
#include "transport/cm.h"
#include "transport/device.h"
#include "transport/endpoint.h"
#include "transport/iface.h"
#include "transport/memory.h"

namespace rdmx {

// An arrived message nobody asked for yet.
struct Unexp : UnexpEntry {
    int peer = -1;
    wire::MsgType type = wire::MsgType::kEager;
    size_t len = 0;
    std::unique_ptr<char[]> data;  // eager payload copied aside, or
    int32_t held_buf = -1;         // the SRQ buffer kept (back-pressure)
    wire::RndvDesc desc{};         // rendezvous
    uint64_t cookie = 0;
    rdmx_request *self_send = nullptr;  // a send to ourselves, matched late
};

}  // namespace rdmx

struct rdmx_context {
    rdmx::Config cfg;
    std::unique_ptr<rdmx::Bootstrap> boot;
    int rank = 0;
    int size = 1;
    uint64_t job_key = 0;
    double connect_seconds = 0;
    std::atomic<bool> finalized{false};
    std::atomic<int> fatal{0};          // device-wide failure status
    uint64_t port_down_ns = 0;          // when the port went down (PORT_ERR), 0 while up
    uint64_t keepalive_ns = 0;          // next check for silent peers
    std::vector<uint32_t> keepalive_seen;  // each peer's rx_seq at the last check
    bool transport = false;             // false for a job of one: no device needed

    // Transport, in creation order.
    rdmx::ConnManager cm;
    rdmx::Device dev;
    rdmx::Iface iface;
    rdmx::Slab send_pool;
    rdmx::CreditSlots credit_mem;        // a slot per peer, which it RDMA-WRITEs its grants into
    // Rendezvous registrations: after the PD, before the endpoints whose
    // memory windows are bound to its MRs (windows must go first).
    rdmx::MrRegistrar registrar;
    std::unique_ptr<rdmx::RegCache> rcache;  // null: register per transfer
    bool rndv_mw = false;                // buffers are exposed through type 2 windows
    bool rndv_put = false;               // rendezvous by RDMA WRITE (else READ)
    uint32_t rndv_reads = 8;             // READs in flight per peer
    size_t rndv_chunk = 1u << 20;        // largest READ
    uint64_t watchdog_ns = 0;            // last stalled-READ check
    std::vector<rdmx::Endpoint> eps;
    std::vector<sockaddr_in> addrs;
    size_t eager_limit = 0;
    size_t rndv_thresh = 0;
    uint32_t credits = 0;                // per peer
    uint32_t sq_depth = 0;               // per QP, within the device's CQ (size_queues)
    uint32_t cqe = 0;
    uint32_t max_inline = 0;
    uint32_t max_msg = 1u << 30;

    // Protocol state, guarded by lock.
    rdmx::SpinLock lock;
    rdmx::TagMatcher matcher;
    std::unordered_map<uint64_t, rdmx_request *> rndv_sends;  // cookie -> send waiting for FIN
    std::unordered_map<uint64_t, rdmx_request *> rndv_xfers;  // request -> transfer moving data (READ/WRITE)
    std::unordered_map<uint64_t, rdmx_request *> rndv_puts;   // our id -> put receive awaiting PutFin
    std::unordered_map<uint64_t, rdmx_request *> rndv_invs;   // sq id -> request awaiting its window's LOCAL_INV
    size_t ctrl_waiting = 0;              // endpoints with control messages queued (Endpoint::ctrl_q)
    uint64_t next_cookie = 1;
    size_t unexpected_bytes = 0;
    size_t held_bufs = 0;
    std::vector<int> stalled;             // peers with queued sends
    rdmx_request *free_reqs = nullptr;
    bool closed = false;                  // finalize cancelled everything: nothing polls any more
    size_t live_reqs = 0;                 // handles not yet freed by test/wait
    std::vector<std::unique_ptr<rdmx_request[]>> req_chunks;
    unsigned poll_calls = 0;
    uint64_t housekeeping_ns = 0;  // fast_ns() when CM/async events and watchdogs are next due
    bool credits_dirty = false;    // a grant was made since return_credits last looked
    // Test hook (protocols/test_hooks.h): send completions of this peer are
    // set aside instead of dispatched, as if the device were slow to flush.
    int held_peer = -1;
    std::vector<ibv_wc> held_wcs;

    // Progress thread and blocking waits.
    std::thread progress_thread;
    std::atomic<bool> stop{false};
    int wake_fd = -1;
    std::mutex wait_mu;
    std::condition_variable wait_cv;
    std::atomic<int> waiters{0};
    bool notify_pending = false;
    // Set while an application thread waiting for a request sleeps on the
    // CQ's completion channel itself; the progress thread then leaves that fd
    // alone, so a completion wakes one thread, not two in turn.
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
    // Bumped (engine lock held) when a message joins the unexpected queue or a
    // peer is lost: what a blocking probe waits for.
    std::atomic<uint64_t> change_epoch{0};

    ~rdmx_context();
};

namespace rdmx {

using Ctx = rdmx_context;

// context.cc
rdmx_status_t context_init(Ctx *c, const rdmx_config_t *cfg);
rdmx_status_t context_finalize(Ctx *c);

// request pool (eager.cc)
rdmx_request *req_alloc(Ctx *c, ReqKind kind);
void req_free(Ctx *c, rdmx_request *r);
void req_complete(Ctx *c, rdmx_request *r, rdmx_status_t st);
constexpr size_t kReqChunk = 256;  // requests per pool chunk
// Hands the context's request chunks to the process (see req_alloc).
void req_pool_retire(Ctx *c);
// A message became unexpected or a peer was lost: wakes rdmx_probe.
void note_change(Ctx *c);

// eager.cc: sends and arrivals
rdmx_status_t start_send(Ctx *c, rdmx_request *r);
rdmx_status_t start_recv(Ctx *c, rdmx_request *r);
void handle_recv(Ctx *c, const ibv_wc &wc);
void handle_send_wc(Ctx *c, const ibv_wc &wc);
void kick_stalled(Ctx *c);
void return_credits(Ctx *c);
bool post_msg(Ctx *c, Endpoint &ep, wire::MsgType type, uint8_t space, int tag, uint64_t length, uint64_t cookie,
              const void *body, size_t body_len, bool signal);
bool can_post(Ctx *c, Endpoint &ep, size_t body_len);
void fail_peer(Ctx *c, int peer, rdmx_status_t why, const char *reason);
void fail_device(Ctx *c, rdmx_status_t why);
rdmx_status_t wc_error_status(ibv_wc_status st);
void deliver_eager(Ctx *c, rdmx_request *r, int peer, int tag, const char *data, size_t len);
void release_unexp(Ctx *c, Unexp *u);
// The peer's credit slot held an impossible grant (Endpoint::grant_forged): close it.
void credit_forged(Ctx *c, Endpoint &ep);

// rndv.cc
rdmx_status_t rndv_send_start(Ctx *c, Endpoint &ep, rdmx_request *r);
void rndv_recv_start(Ctx *c, rdmx_request *r, int peer, int tag, const wire::RndvDesc &d, uint64_t cookie);
void rndv_on_fin(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::FinBody &f);
void rndv_on_read_done(Ctx *c, uint64_t id, uint32_t bytes, bool ok);
void rndv_post_ctrl(Ctx *c, Endpoint &ep);
void rndv_drop_ctrl(Ctx *c, Endpoint &ep);
void rndv_issue_reads(Ctx *c, Endpoint &ep);
void rndv_fail_peer(Ctx *c, int peer, rdmx_status_t why);
void rndv_setup(Ctx *c);
bool rndv_bind_window(Ctx *c, Endpoint &ep, rdmx_request *r, size_t len, int access, uint32_t *rkey);
void rndv_invalidate(Ctx *c, Endpoint &ep, rdmx_request *r);
// ahead: may go before messages already queued (the one at their head is being sent).
void rndv_send_ctrl(Ctx *c, Endpoint &ep, wire::MsgType type, uint64_t length, uint64_t cookie, const void *body,
                    size_t body_len, bool ahead = false);
void rndv_queue_ctrl(Ctx *c, Endpoint &ep, const CtrlMsg &m);
void rndv_move_data(Ctx *c, Endpoint &ep, rdmx_request *r);
// rndv_put.cc
void rndv_put_recv_start(Ctx *c, Endpoint &ep, rdmx_request *r);
bool rndv_put_expose_queued(Ctx *c, Endpoint &ep, uint64_t id);
void rndv_on_cts(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::RndvDesc &d);
void rndv_put_written(Ctx *c, Endpoint &ep, rdmx_request *r);
void rndv_on_put_fin(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::FinBody &f);
void rndv_watchdog(Ctx *c);
void rndv_release(Ctx *c, rdmx_request *r);
void rndv_on_invalidated(Ctx *c, Endpoint &ep, uint64_t id, bool ok);
void rndv_post_invalidations(Ctx *c, Endpoint &ep);

// progress.cc
int progress(Ctx *c, bool block_ok);
// housekeeping: also read CM/async events and run the watchdogs now.
int progress_locked(Ctx *c, bool housekeeping = false);
void wait_request(Ctx *c, rdmx_request *r);
// Returns once at least one non-null request of reqs[0..n) is done (all of ctx c).
void wait_any(Ctx *c, rdmx_request *const *reqs, size_t n);
// Returns once change_epoch differs from `seen` (spinning, then sleeping).
void wait_change(Ctx *c, uint64_t seen);
// An application thread inside a wait (counted in app_waiting): while any is,
// the progress thread sleeps and leaves progress to it. Scopes nest
// (rdmx_waitall holds one across its waits).
// What an operation with a failed (or never usable) endpoint completes with:
// the connection's first cause, else PEER_LOST.
inline rdmx_status_t ep_failure(const Endpoint &ep) {
    return ep.error != 0 ? static_cast<rdmx_status_t>(ep.error) : RDMX_ERR_PEER_LOST;
}

inline void note_app_call(Ctx *c) { c->app_calls.fetch_add(1, std::memory_order_relaxed); }

struct WaitScope {
    Ctx *c;
    explicit WaitScope(Ctx *ctx);
    ~WaitScope();
    WaitScope(const WaitScope &) = delete;
    WaitScope &operator=(const WaitScope &) = delete;
};
void start_progress_thread(Ctx *c);
void stop_progress_thread(Ctx *c);
void notify_waiters(Ctx *c);

}  // namespace rdmx
