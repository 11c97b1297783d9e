// Context bring-up and tear-down: bootstrap, the lanes (self, and rc with
// its full mesh), progress; and the reverse, with deadlines on everything
// that waits.
#include <arpa/inet.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "protocols/context.h"
#include "protocols/boot_record.h"
#include "transport/self.h"

namespace rdmx {

namespace {

// FNV-1a: node identities only need to be equal where the strings are.
uint64_t hash_str(const std::string &s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
    return h;
}

// The host: hostname and boot id (a host name can repeat across
// containers; a boot id does not).
uint64_t host_identity() {
    char host[256] = {};
    (void)gethostname(host, sizeof(host) - 1);
    std::string id = std::string("host:") + host;
    if (FILE *f = std::fopen("/proc/sys/kernel/random/boot_id", "r")) {
        char boot[64] = {};
        if (std::fgets(boot, sizeof(boot), f) != nullptr) id += std::string("/") + boot;
        std::fclose(f);
    }
    return hash_str(id);
}

// Ranks with the same node identity share memory: RDMX_NODE_ID when set
// (pretend nodes on one host), else the host's.
uint64_t node_identity(const Config &cfg, uint64_t host) {
    return cfg.node_id.empty() ? host : hash_str("id:" + cfg.node_id);
}

// The CPUs this process may run on, into the record.
void record_cpus(BootRecord *mine) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        mine->cpus = n > 0 ? static_cast<uint32_t>(n) : 1;
        for (size_t cpu = 0; cpu < kCpuMaskBits && cpu < mine->cpus; ++cpu) mine->cpu_mask[cpu / 64] |= 1ull << (cpu % 64);
        return;
    }
    mine->cpus = static_cast<uint32_t>(CPU_COUNT(&set));
    for (size_t cpu = 0; cpu < kCpuMaskBits && cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) mine->cpu_mask[cpu / 64] |= 1ull << (cpu % 64);
}

// The spin budget's bounds. RDMX_SPIN_US=auto spins long where every local
// rank has a CPU of its own: a wait that outlasts the spin sleeps, and the
// sleep and its wake-up (arming the CQ, poll, the scheduler) lengthen an
// iteration that was already slow; a few such iterations per thousand set
// a run's average (docs/design/protocols.md, "The adaptive spin"). Crowded,
// a spinning rank holds the CPU a peer needs: a short spin, then sleep.
void set_spin_bounds(Ctx *c, bool crowded) {
    const unsigned us = c->cfg.spin_us != Config::kSpinAuto ? c->cfg.spin_us
                        : crowded                           ? Config::kSpinCrowdedUs
                                                            : Config::kSpinSpareCpuUs;
    c->spin_floor_ns = uint64_t{us} * 1000;
    c->spin_cap_ns = std::max(c->spin_floor_ns, uint64_t{c->cfg.spin_max_us} * 1000);
}

// Whether idle waits yield (RDMX_YIELD): auto yields when the ranks on our
// host outnumber the CPUs they may run on together (the union of their
// affinity masks; a mask reaching past CPU 255 counts its size instead).
// Spinning there was measured to cost a scheduler slice per message: an
// 8-byte barrier of 5 ranks on 2 cores took 12 ms, 13 us with the yield.
void decide_yield(Ctx *c, const BootRecord &mine, const std::vector<BootRecord> &all) {
    size_t local = 0;
    uint64_t mask[kCpuMaskBits / 64] = {};
    uint32_t widest = 0;
    for (const BootRecord &r : all) {
        if (r.host != mine.host) continue;
        ++local;
        for (size_t w = 0; w < kCpuMaskBits / 64; ++w) mask[w] |= r.cpu_mask[w];
        widest = std::max(widest, r.cpus);
    }
    size_t cpus = 0;
    for (uint64_t w : mask) cpus += static_cast<size_t>(__builtin_popcountll(w));
    cpus = std::max<size_t>({cpus, widest, 1});
    const bool crowded = local > cpus;
    c->yield_idle = c->cfg.yield == Config::YieldMode::kAlways || (c->cfg.yield == Config::YieldMode::kAuto && crowded);
    set_spin_bounds(c, crowded);
    RDMX_INFO("%zu rank(s) on this host, %zu CPU(s) between them: idle waits %s (RDMX_YIELD=%s), spin %llu us "
              "before sleeping (RDMX_SPIN_US=%s)", local, cpus, c->yield_idle ? "yield the CPU" : "spin",
              c->cfg.yield == Config::YieldMode::kAuto ? "auto" : c->yield_idle ? "always" : "never",
              static_cast<unsigned long long>(c->spin_floor_ns / 1000),
              c->cfg.spin_us == Config::kSpinAuto ? "auto" : "set");
}

// Round one: every rank's record; rank 0's random draw is the job's key.
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

// Opens our segment (a failure only costs us the sm lane: rc carries those
// peers instead, if it may) and fills our round-one record.
rdmx_status_t open_sm(Ctx *c, BootRecord *mine) {
    SmParams sp;
    sp.rank = c->rank;
    sp.size = c->size;
    sp.eager_limit = c->eager_limit;
    sp.slots = c->cfg.sm_slots;
    sp.peer_timeout = c->cfg.peer_timeout;
    sp.cma = c->cfg.sm_cma == Config::SmCmaMode::kOn    ? SmCma::kOn
             : c->cfg.sm_cma == Config::SmCmaMode::kOff ? SmCma::kOff
                                                         : SmCma::kAuto;
    sp.cma_thresh = c->cfg.sm_cma_thresh;
    sp.rma_depth = c->cfg.rndv_reads;
    // One ring per local sender: the node's ranks, not the job's (a job of
    // many small nodes would otherwise zero 64 rings per process).
    sp.max_locals = static_cast<uint32_t>(c->boot->local_size() > 0 ? c->boot->local_size() : 0);
    if (SmTransport::open(sp, c, &c->sm) != RDMX_OK) {
        RDMX_WARN("sm: shared memory unavailable (see above); ranks on this node use rc instead");
        return RDMX_OK;
    }
    static_assert(sizeof(SmAddress) <= kSmAddressMax);
    const SmAddress a = c->sm->address();
    std::memcpy(mine->sm, &a, sizeof(a));
    mine->lanes |= kLaneSm;
    return RDMX_OK;
}

// Whether every segment on our node has a ring for each of the node's ranks
// that offer sm. A launcher that undercounted the node (its local size sized
// the rings) would otherwise fail sm's connect; instead the whole node, which
// sees the same records, leaves sm to rc.
bool node_fits_sm(const Ctx *c, const std::vector<BootRecord> &all) {
    const BootRecord &me = all[static_cast<size_t>(c->rank)];
    if ((me.lanes & kLaneSm) == 0) return true;
    uint32_t count = 0, fewest = ~0u;
    size_t smallest = 0;
    for (size_t r = 0; r < all.size(); ++r) {
        if ((all[r].lanes & kLaneSm) == 0 || all[r].node != me.node) continue;
        ++count;
        SmAddress a;
        std::memcpy(&a, all[r].sm, sizeof(a));
        if (a.nrings < fewest) {
            fewest = a.nrings;
            smallest = r;
        }
    }
    if (count <= fewest) return true;
    RDMX_WARN("sm: %u ranks on this node offer shared memory, but rank %zu's segment serves %u (the launcher's local "
              "size): the node's pairs use rc instead (hint: launch with a PMIx or PMI launcher that reports the "
              "node's ranks)", count, smallest, fewest);
    return false;
}

// The lane of every pair, the same on both sides: sm when both offer it on
// one node (whose segments can serve all its ranks), else rc when both
// offer it; a pair with neither cannot talk.
rdmx_status_t choose_lanes(Ctx *c, const std::vector<BootRecord> &all, std::vector<uint8_t> *rc_peers) {
    rc_peers->assign(all.size(), 0);
    const bool sm_fits = node_fits_sm(c, all);
    for (size_t i = 0; i < all.size(); ++i)
        for (size_t j = i + 1; j < all.size(); ++j) {
            const bool sm = sm_fits && (all[i].lanes & all[j].lanes & kLaneSm) != 0 && all[i].node == all[j].node;
            const bool rc = !sm && (all[i].lanes & all[j].lanes & kLaneRc) != 0;
            if (!sm && !rc && (static_cast<int>(i) == c->rank || static_cast<int>(j) == c->rank)) {
                const size_t other = static_cast<int>(i) == c->rank ? j : i;
                RDMX_ERROR("init: no transport reaches rank %zu from rank %d: %s (RDMX_TRANSPORTS=%s here; rc needs "
                           "both ranks to allow it, sm one node)", other, c->rank,
                           all[i].node != all[j].node ? "another node, rc not allowed"
                           : sm_fits              ? "same node, no common transport"
                                                  : "same node, but its sm segments serve too few ranks (above)",
                           c->cfg.transports.c_str());
                return RDMX_ERR_CONNECT;
            }
            if (rc && static_cast<int>(i) == c->rank) (*rc_peers)[j] = 1;
            if (rc && static_cast<int>(j) == c->rank) (*rc_peers)[i] = 1;
            if (sm && static_cast<int>(i) == c->rank) set_lane(c->peers[j], c->sm.get(), Lane::kSm);
            if (sm && static_cast<int>(j) == c->rank) set_lane(c->peers[i], c->sm.get(), Lane::kSm);
        }
    return RDMX_OK;
}

rdmx_status_t connect_sm(Ctx *c, const std::vector<BootRecord> &all) {
    if (!c->sm) return RDMX_OK;
    std::vector<SmPeer> locals;
    for (size_t r = 0; r < all.size(); ++r)
        if (c->peers[r].t == c->sm.get() || static_cast<int>(r) == c->rank) {
            SmPeer p{static_cast<int>(r), {}};
            std::memcpy(&p.addr, all[r].sm, sizeof(p.addr));
            locals.push_back(p);
        }
    if (locals.size() == 1) {  // nobody to share with: no sm lane
        c->sm.reset();
        return RDMX_OK;
    }
    if (rdmx_status_t st = c->sm->connect(locals)) return st;
    c->transports.push_back(c->sm.get());
    c->sm_lane = c->sm.get();
    RDMX_INFO("sm: %zu ranks on this node share memory%s%s", locals.size(),
              c->sm->cma_enabled() ? "" : "; no CMA: ", c->sm->cma_off_reason());
    return RDMX_OK;
}

// Round two, after sm connected (it doubles as the barrier after which a
// rank may close what its local peers mapped): rc addresses, and whether
// each rank's device opened. A device that failed anywhere fails the job
// everywhere, the same way, rather than leaving ranks waiting to connect.
rdmx_status_t open_rc(Ctx *c, const std::vector<uint8_t> &rc_peers) {
    RcRecord mine{};
    rdmx_status_t mine_st = RDMX_OK;
    const bool need = std::find(rc_peers.begin(), rc_peers.end(), 1) != rc_peers.end();
    if (need) {
        RcParams rp;
        rp.cfg = &c->cfg;
        rp.rank = c->rank;
        rp.size = c->size;
        rp.local_rank = c->boot->local_rank();
        rp.eager_limit = c->eager_limit;
        mine_st = rc_open(rp, c, &c->rc);
        if (mine_st == RDMX_OK) mine.addr = c->rc->address();
        else mine.failed = 1;
    }
    std::vector<RcRecord> all(static_cast<size_t>(c->size));
    if (rdmx_status_t st = c->boot->allgather(&mine, all.data(), sizeof(mine))) return st;
    if (mine_st != RDMX_OK) return mine_st;
    for (size_t r = 0; r < all.size(); ++r)
        if (all[r].failed) {
            RDMX_ERROR("init: rank %zu could not open its RDMA device (its log says why): the job cannot connect", r);
            return RDMX_ERR_CONNECT;
        }
    if (!need) return RDMX_OK;
    std::vector<RcAddr> addrs(all.size());
    for (size_t r = 0; r < all.size(); ++r) addrs[r] = all[r].addr;
    if (rdmx_status_t st = c->rc->connect(addrs, rc_peers, c->job_key, &c->connect_seconds)) return st;
    c->transports.push_back(c->rc.get());
    c->rc_lane = c->rc.get();
    for (size_t r = 0; r < all.size(); ++r)
        if (rc_peers[r]) set_lane(c->peers[r], c->rc.get(), Lane::kRc);
    return RDMX_OK;
}

// Both rounds of the bootstrap, and every lane connected.
rdmx_status_t open_lanes(Ctx *c) {
    BootRecord mine{};
    mine.version = wire::kVersion;
    mine.job_key_candidate = random_u64();
    mine.host = host_identity();
    mine.node = node_identity(c->cfg, mine.host);
    record_cpus(&mine);
    if (c->cfg.allows_transport("rc")) mine.lanes |= kLaneRc;
    if (c->cfg.allows_transport("sm")) (void)open_sm(c, &mine);
    std::vector<BootRecord> all;
    rdmx_status_t st = exchange_records(c, mine, &all);
    if (st != RDMX_OK) return st;
    c->comms.node_of.resize(all.size());
    for (size_t r = 0; r < all.size(); ++r) c->comms.node_of[r] = all[r].node;
    decide_yield(c, mine, all);
    std::vector<uint8_t> rc_peers;
    if ((st = choose_lanes(c, all, &rc_peers)) != RDMX_OK) return st;
    if ((st = connect_sm(c, all)) != RDMX_OK) return st;
    if ((st = open_rc(c, rc_peers)) != RDMX_OK) return st;
    size_t n_sm = 0, n_rc = 0;
    for (const Peer &p : c->peers) {
        n_sm += p.t != nullptr && p.t->kind() == TransportKind::kSm;
        n_rc += p.t != nullptr && p.t->kind() == TransportKind::kRc;
    }
    if (n_rc > 0 && c->cfg.lazy_connect(c->size))
        RDMX_INFO("lanes of %d ranks up: %zu peer(s) over sm, %zu over rc (connected on first use, RDMX_CONNECT)",
                  c->size, n_sm, n_rc);
    else
        RDMX_INFO("lanes of %d ranks up: %zu peer(s) over sm, %zu over rc (full mesh in %.3f s)", c->size, n_sm, n_rc,
                  c->connect_seconds);
    return RDMX_OK;
}

// Measured (docs/performance.md, instructions per 8 B round trip over sm):
// with a progress thread the lock stays, since that thread runs the same
// progress code whenever the application computes; taking it uncontended
// costs a compare-and-swap and releasing it an exchange, per call.
void set_thread_level(Ctx *c) {
    const bool progress_thread = c->transport && c->cfg.progress == RDMX_PROGRESS_THREAD;
    c->app_mt = c->cfg.threads != RDMX_THREADS_SINGLE;
    c->check_args = c->cfg.check_args != RDMX_CHECK_HANDLES;
    c->engine_mt = c->app_mt || progress_thread;
    c->progress_thread_on = progress_thread;
    c->spin_ns.store(c->spin_floor_ns, std::memory_order_relaxed);
    c->lock.set_enabled(c->engine_mt);
    RDMX_DEBUG("thread level %s%s: engine lock %s", c->app_mt ? "multiple" : "single",
               progress_thread ? " with a progress thread" : "", c->engine_mt ? "on" : "off");
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
    set_lane(c->peers[static_cast<size_t>(c->rank)], c->self_lane.get(), Lane::kOther);
    c->peers[static_cast<size_t>(c->rank)].self = true;
    if (c->size > 1) {
        if ((st = open_lanes(c)) != RDMX_OK) return st;  // decides the spin with the yield
        c->transport = true;
    } else {
        set_spin_bounds(c, false);  // a job of one: no other rank to crowd its CPUs
    }
    set_thread_level(c);
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
    // How often waits fell asleep and the progress thread woke beside a busy
    // application: what a latency tail longer than the wire's comes from.
    RDMX_DEBUG("progress: %llu wait(s) outlasted the spin and slept (budget now %llu us); %llu delegated "
               "sleep(s) of the progress thread timed out",
               static_cast<unsigned long long>(c->wait_sleeps.load(std::memory_order_relaxed)),
               static_cast<unsigned long long>(c->spin_ns.load(std::memory_order_relaxed) / 1000),
               static_cast<unsigned long long>(c->delegated_timeouts.load(std::memory_order_relaxed)));
    return RDMX_OK;
}

}  // namespace rdmx

rdmx_context::~rdmx_context() {
    rdmx::req_pool_retire(this);  // before the PD goes: requests may hold registrations
    if (wake_fd >= 0) close(wake_fd);
    matcher.remove_unexpected_if([](const rdmx::UnexpEntry *) { return true; },
                                 [](rdmx::UnexpEntry *u) { delete static_cast<rdmx::Unexp *>(u); });
    while (rdmx::ListNode *n = matched_msgs.first()) {  // matched by a probe, never received
        rdmx::List::unlink(n);
        delete static_cast<rdmx::Unexp *>(rdmx::container_of<rdmx::UnexpEntry, &rdmx::UnexpEntry::order_node>(n));
    }
    transports.clear();
    sm_lane = nullptr;
    rc_lane = nullptr;
    rc.reset();  // after the requests let go of its registrations
}
