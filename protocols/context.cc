// Context bring-up and tear-down: bootstrap, the lanes (self, and rc with
// its full mesh), progress; and the reverse, with deadlines on everything
// that waits.
#include <arpa/inet.h>
#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"
#include "transport/self.h"

namespace rdmx {

namespace {

struct BootRecord {  // what each rank publishes through the bootstrap
    RcAddr rc;
    uint16_t version;
    uint16_t reserved[3];
    uint64_t job_key_candidate;
};
static_assert(sizeof(BootRecord) == 24);

// Every rank's record; rank 0's random draw becomes the job's key.
rdmx_status_t exchange_records(Ctx *c, const BootRecord &mine, std::vector<BootRecord> *all) {
    all->resize(static_cast<size_t>(c->size));
    rdmx_status_t st = c->boot->allgather(&mine, all->data(), sizeof(mine));
    if (st != RDMX_OK) return st;
    c->job_key = (*all)[0].job_key_candidate;
    for (size_t r = 0; r < all->size(); ++r)
        if ((*all)[r].version != wire::kVersion) {
            RDMX_ERROR("bootstrap: rank %zu runs rdmx wire version %u, we run %u", r, (*all)[r].version,
                       wire::kVersion);
            return RDMX_ERR_CONNECT;
        }
    return RDMX_OK;
}

// Opens rc, exchanges addresses and connects the full mesh; every other
// rank's lane is rc, ours is self.
rdmx_status_t open_lanes(Ctx *c) {
    RcParams rp;
    rp.cfg = &c->cfg;
    rp.rank = c->rank;
    rp.size = c->size;
    rp.local_rank = c->boot->local_rank();
    rp.eager_limit = c->eager_limit;
    rdmx_status_t st = rc_open(rp, c, &c->rc);
    if (st != RDMX_OK) return st;
    BootRecord mine{c->rc->address(), wire::kVersion, {0, 0, 0}, random_u64()};
    std::vector<BootRecord> all;
    if ((st = exchange_records(c, mine, &all)) != RDMX_OK) return st;
    std::vector<RcAddr> addrs(all.size());
    std::vector<uint8_t> serve(all.size(), 1);
    for (size_t r = 0; r < all.size(); ++r) addrs[r] = all[r].rc;
    serve[static_cast<size_t>(c->rank)] = 0;
    if ((st = c->rc->connect(addrs, serve, c->job_key, &c->connect_seconds)) != RDMX_OK) return st;
    c->transports.push_back(c->rc.get());
    for (size_t r = 0; r < all.size(); ++r)
        if (serve[r]) c->peers[r].t = c->rc.get();
    RDMX_INFO("full mesh of %d ranks up in %.3f s", c->size, c->connect_seconds);
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
    c->peers.resize(static_cast<size_t>(c->size));
    c->self_lane = self_open(c->rank, c->eager_limit, c);
    c->transports.push_back(c->self_lane.get());
    c->peers[static_cast<size_t>(c->rank)].t = c->self_lane.get();
    if (c->size > 1) {
        if ((st = open_lanes(c)) != RDMX_OK) return st;
        c->transport = true;
    }
    if (c->transport) start_progress_thread(c);  // a job of one has nothing to poll
    return RDMX_OK;
}

namespace {

// Asks every transport for the acknowledgements that prove nothing posted
// is still in flight (rc: a signalled write behind unsignalled sends).
void flush_lanes(Ctx *c) {
    for (Transport *t : c->transports) t->flush();
}

bool quiet(Ctx *c) {
    if (!c->rndv_sends.empty() || !c->rndv_xfers.empty() || !c->rndv_puts.empty() || !c->stalled.empty() ||
        c->ctrl_waiting > 0)
        return false;
    for (Transport *t : c->transports)
        if (!t->quiet()) return false;
    return true;
}

void drain(Ctx *c, double timeout) {
    Deadline d(timeout);
    bool flushed = false;
    for (;;) {
        c->lock.lock();
        if (c->rndv_sends.empty() && c->stalled.empty() && !flushed) {
            flush_lanes(c);
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
        for (Transport *t : c->transports) t->disconnect_all(c->cfg.peer_timeout < 5.0 ? c->cfg.peer_timeout : 5.0);
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
    transports.clear();
    rc.reset();  // after the requests let go of its registrations
}
