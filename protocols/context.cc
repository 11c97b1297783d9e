// Context bring-up and tear-down: bootstrap, device, interface, full mesh,
// progress; and the reverse, with deadlines on everything that waits.
#include <arpa/inet.h>
#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

namespace {

struct BootRecord {  // what each rank publishes through the bootstrap
    uint32_t ip;
    uint16_t port;
    uint16_t version;
    uint64_t job_key_candidate;
};
static_assert(sizeof(BootRecord) == 16);

constexpr uint32_t kSendBufs = 512;
constexpr uint32_t kInlineWanted = 256;

// Credits come from the SRQ depth the device can really give (a depth
// clamped after the credits were promised would let senders within their
// credits run the SRQ dry); a job too large for the device does not start.
rdmx_status_t size_queues(Ctx *c) {
    const uint32_t npeers = static_cast<uint32_t>(c->size - 1);
    const ibv_device_attr &a = c->dev.attr();
    auto lim = [](int v) { return v > 0 ? static_cast<uint32_t>(v) : 0u; };
    QueuePlan q = plan_queues(npeers, c->cfg.srq_depth, wire::kMaxCredits, lim(a.max_srq_wr), lim(a.max_cqe),
                              lim(a.max_qp_wr), c->cfg.sq_depth);
    if (q.limit != nullptr) {
        RDMX_ERROR("init: device %s cannot hold a job of %d ranks: its %s (max_srq_wr %d, max_cqe %d, max_qp_wr %d) "
                   "is below the %llu that %u credits per peer and %u-deep send queues need (hint: fewer ranks per "
                   "device, or a device with larger queues)", c->dev.name(), c->size, q.limit, a.max_srq_wr,
                   a.max_cqe, a.max_qp_wr, static_cast<unsigned long long>(q.need), kMinCredits, kMinSqDepth);
        return RDMX_ERR_NO_MEMORY;
    }
    if (q.srq_depth < c->cfg.srq_depth || q.credits < 8 || q.sq_depth < c->cfg.sq_depth)
        RDMX_WARN("init: device %s limits (max_srq_wr %d, max_cqe %d, max_qp_wr %d) for %d ranks: SRQ %u (asked %u), "
                  "%u credits per peer, send queues %u deep", c->dev.name(), a.max_srq_wr, a.max_cqe, a.max_qp_wr,
                  c->size, q.srq_depth, c->cfg.srq_depth, q.credits, q.sq_depth);
    c->cfg.srq_depth = q.srq_depth;
    c->credits = q.credits;
    c->sq_depth = q.sq_depth;
    c->cqe = q.cqe;
    return RDMX_OK;
}

rdmx_status_t exchange_addresses(Ctx *c, const sockaddr_in &me) {
    BootRecord mine{me.sin_addr.s_addr, ntohs(me.sin_port), wire::kVersion, random_u64()};
    std::vector<BootRecord> all(static_cast<size_t>(c->size));
    rdmx_status_t st = c->boot->allgather(&mine, all.data(), sizeof(mine));
    if (st != RDMX_OK) return st;
    c->job_key = all[0].job_key_candidate;  // rank 0's draw is the job's key
    c->addrs.resize(all.size());
    for (size_t r = 0; r < all.size(); ++r) {
        if (all[r].version != wire::kVersion) {
            RDMX_ERROR("bootstrap: rank %zu runs rdmx wire version %u, we run %u", r, all[r].version, wire::kVersion);
            return RDMX_ERR_CONNECT;
        }
        c->addrs[r] = sockaddr_in{};
        c->addrs[r].sin_family = AF_INET;
        c->addrs[r].sin_addr.s_addr = all[r].ip;
        c->addrs[r].sin_port = htons(all[r].port);
    }
    return RDMX_OK;
}

rdmx_status_t open_transport(Ctx *c) {
    DeviceChoice choice;
    rdmx_status_t st = select_device(c->cfg, c->boot->local_rank(), &choice);
    if (st != RDMX_OK) return st;
    if ((st = c->cm.listen(choice.addr)) != RDMX_OK) return st;
    if ((st = c->dev.open(c->cm.verbs(), c->cm.port_num())) != RDMX_OK) return st;
    if ((st = size_queues(c)) != RDMX_OK) return st;
    const size_t buf = c->eager_limit + sizeof(wire::MsgHdr);
    if ((st = c->iface.open(c->dev, c->cfg.srq_depth, buf, c->cqe)) != RDMX_OK) return st;
    if ((st = c->send_pool.init(c->dev.pd(), c->dev.name(), kSendBufs, buf, IBV_ACCESS_LOCAL_WRITE)) != RDMX_OK)
        return st;
    if ((st = c->credit_mem.init(c->dev.pd(), c->dev.name(), c->size, c->rank)) != RDMX_OK) return st;
    c->max_msg = c->dev.port_attr().max_msg_sz;
    rndv_setup(c);
    RDMX_INFO("device %s:%u at %s, SRQ %u x %zu B, %u credits per peer", c->dev.name(), c->dev.port(),
              sockaddr_str(c->cm.bound_addr()).c_str(), c->cfg.srq_depth, buf, c->credits);
    return RDMX_OK;
}

rdmx_status_t connect_mesh(Ctx *c) {
    c->eps.resize(static_cast<size_t>(c->size));
    for (int p = 0; p < c->size; ++p) {
        Endpoint &ep = c->eps[static_cast<size_t>(p)];
        ep.peer = p;
        ep.credit_slot = c->credit_mem.slot(p);
        ep.addr = sockaddr_str(c->addrs[static_cast<size_t>(p)]);
        ep.rx_granted = c->credits;
        ep.rx_granted_told = c->credits;
        if (p == c->rank) ep.state = ConnState::kConnected;
    }
    MeshParams mp;
    mp.rank = c->rank;
    mp.size = c->size;
    mp.job_key = c->job_key;
    mp.credits = c->credits;
    mp.sq_depth = c->sq_depth;
    mp.max_inline = kInlineWanted;
    mp.credit_slots = &c->credit_mem;
    mp.timeout = c->cfg.connect_timeout;
    uint64_t t0 = now_ns();
    rdmx_status_t st = c->cm.connect_all(mp, c->dev, c->iface, c->eps, c->addrs);
    c->connect_seconds = static_cast<double>(now_ns() - t0) * 1e-9;
    if (st != RDMX_OK) return st;
    c->max_inline = c->dev.max_inline();
    RDMX_INFO("full mesh of %d ranks up in %.3f s (inline %u B)", c->size, c->connect_seconds, c->max_inline);
    return RDMX_OK;
}

}  // namespace

rdmx_status_t context_init(Ctx *c, const rdmx_config_t *cfg) {
    rdmx_status_t st = c->cfg.load(cfg);
    if (st != RDMX_OK) return st;
    if ((st = bootstrap_create(c->cfg, &c->boot)) != RDMX_OK) return st;
    c->rank = c->boot->rank();
    c->size = c->boot->size();
    log_set_rank(c->rank);
    c->matcher.set_hash_key(random_u64());
    c->eager_limit = c->cfg.eager_limit;
    c->rndv_thresh = c->cfg.rndv_thresh;
    RDMX_INFO("bootstrap via %s: rank %d of %d", c->boot->name(), c->rank, c->size);
    if (c->size > 1) {
        if ((st = open_transport(c)) != RDMX_OK) return st;
        sockaddr_in me = c->cm.bound_addr();
        if ((st = exchange_addresses(c, me)) != RDMX_OK) return st;
        if ((st = connect_mesh(c)) != RDMX_OK) return st;
        c->transport = true;
    } else {
        c->eps.resize(1);
        c->eps[0].peer = 0;
        c->eps[0].state = ConnState::kConnected;
    }
    if (c->transport) start_progress_thread(c);  // a job of one has nothing to poll
    return RDMX_OK;
}

namespace {

// Posts a signalled credit write on every QP that still has unsignalled
// sends: its completion proves the peer acknowledged everything before it,
// so the disconnect below cannot flush eager data that is still on the wire.
void flush_send_queues(Ctx *c) {
    for (Endpoint &ep : c->eps) {
        if (!ep.usable() || ep.peer == c->rank || ep.sq_done == ep.sq_posted) continue;
        ep.rx_granted_told = ep.rx_granted - c->credits;  // forces return_credits to post
    }
    c->credits_dirty = true;
    return_credits(c);
}

bool quiet(Ctx *c) {
    if (!c->rndv_sends.empty() || !c->rndv_xfers.empty() || !c->rndv_puts.empty() || !c->stalled.empty() ||
        c->ctrl_waiting > 0)
        return false;
    for (const Endpoint &ep : c->eps)
        if (ep.usable() && ep.peer != c->rank && ep.sq_done != ep.sq_posted) return false;
    return true;
}

void drain(Ctx *c, double timeout) {
    Deadline d(timeout);
    bool flushed = false;
    for (;;) {
        c->lock.lock();
        if (c->rndv_sends.empty() && c->stalled.empty() && !flushed) {
            flush_send_queues(c);
            flushed = true;
        }
        bool done = flushed && quiet(c);
        progress_locked(c, true);
        c->lock.unlock();
        if (done) return;
        if (d.expired()) {
            RDMX_WARN("finalize: sends to peers still outstanding after %.1f s; closing anyway", timeout);
            return;
        }
        std::this_thread::yield();
    }
}

// Requests still pending at finalize are an application error (as in MPI):
// complete every one with RDMX_ERR_CANCELED (posted receives, and sends or
// transfers a peer never finished) so no thread waits forever, and say so.
// Nothing is polled afterwards (`closed`): the QPs are gone, and a late flush
// completion must not land on a request its waiter has already freed.
void cancel_leftovers(Ctx *c) {
    std::lock_guard<SpinLock> g(c->lock);
    c->matcher.for_each_posted([&](PostedEntry *pe) {
        c->matcher.cancel(pe);
        req_complete(c, static_cast<rdmx_request *>(pe), RDMX_ERR_CANCELED);
    });
    size_t in_flight = 0;
    for (auto &chunk : c->req_chunks) {
        for (size_t i = 0; i < kReqChunk; ++i) {
            rdmx_request *r = &chunk[i];
            if (r->pooled || r->done.load(std::memory_order_relaxed) != 0) continue;
            if (r->link.linked()) List::unlink(&r->link);
            req_complete(c, r, RDMX_ERR_CANCELED);
            ++in_flight;
        }
    }
    c->closed = true;
    note_change(c);  // wakes blocked probes (under the lock, like every note_change)
    if (in_flight != 0)
        RDMX_WARN("finalize: %zu send(s) or transfer(s) still in flight completed with RDMX_ERR_CANCELED", in_flight);
    if (c->live_reqs != 0)
        RDMX_WARN("finalize: %zu request handle(s) were never completed with rdmx_test/rdmx_wait; they are "
                  "invalid from now on", c->live_reqs);
}

}  // namespace

rdmx_status_t context_finalize(Ctx *c) {
    if (c->transport) {
        stop_progress_thread(c);
        drain(c, c->cfg.peer_timeout);
        c->cm.disconnect_all(c->cfg.peer_timeout < 5.0 ? c->cfg.peer_timeout : 5.0);
    } else {
        stop_progress_thread(c);
    }
    cancel_leftovers(c);
    notify_waiters(c);  // threads asleep in a wait or a probe: their requests are done now
    return RDMX_OK;
}

}  // namespace rdmx

rdmx_context::~rdmx_context() {
    rdmx::req_pool_retire(this);  // before the PD goes: requests may hold registrations
    if (wake_fd >= 0) close(wake_fd);
    for (uint8_t s = 0; s < rdmx::kNumSpaces; ++s)
        while (rdmx::UnexpEntry *u = matcher.find_unexpected({s, rdmx::kAnySource, rdmx::kAnyTag}, true))
            delete static_cast<rdmx::Unexp *>(u);
    eps.clear();  // QPs and ids before the CQ, SRQ and PD they use
}
