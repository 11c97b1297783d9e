// RC transport bring-up and shutdown: device, queue sizing within the
// device's limits, pools, registration cache and rendezvous choices, the
// full mesh among the ranks that use rc; and the flush and disconnect at the
// end, with deadlines.
#include "transport/rc_transport.h"

#include <arpa/inet.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "core/memhooks.h"
#include "transport/connect_rule.h"

namespace rdmx {

namespace {
constexpr uint32_t kSendBufs = 512;
constexpr uint32_t kInlineWanted = 256;

size_t default_rcache_bytes() {
    size_t ram = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t bound = ram / 4;
    rlimit rl{};
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < bound)
        bound = static_cast<size_t>(rl.rlim_cur / 2);
    return bound;
}
}  // namespace

rdmx_status_t rc_open(const RcParams &p, TransportSink *sink, std::unique_ptr<Rc> *out) {
    auto t = std::make_unique<RcTransport>(p, sink);
    rdmx_status_t st = t->open();
    if (st == RDMX_OK) *out = std::move(t);
    return st;
}

RcTransport::~RcTransport() {
    eps_.clear();  // QPs and ids before the CQ, SRQ and PD they use
}

// Credits come from the SRQ depth the device can really give (a depth
// clamped after the credits were promised would let senders within their
// credits run the SRQ dry); a mesh too large for the device does not start.
// On demand the plan is for at most kLazyPlanPeers peers, and the queues'
// caps (lazy_caps) bound how many connections a process can hold.
rdmx_status_t RcTransport::size_queues() {
    const uint32_t npeers = static_cast<uint32_t>(p_.size - 1);
    const uint32_t plan_peers = lazy_ && npeers > cfg_.lazy_peers ? cfg_.lazy_peers : npeers;
    const ibv_device_attr &a = dev_.attr();
    auto lim = [](int v) { return v > 0 ? static_cast<uint32_t>(v) : 0u; };
    QueuePlan q = plan_queues(plan_peers, cfg_.srq_depth, wire::kMaxCredits, lim(a.max_srq_wr), lim(a.max_cqe),
                              lim(a.max_qp_wr), cfg_.sq_depth);
    if (q.limit != nullptr) {
        RDMX_ERROR("init: device %s cannot hold a job of %d ranks: its %s (max_srq_wr %d, max_cqe %d, max_qp_wr %d) "
                   "is below the %llu that %u credits per peer and %u-deep send queues need (hint: fewer ranks per "
                   "device, or a device with larger queues)", dev_.name(), p_.size, q.limit, a.max_srq_wr,
                   a.max_cqe, a.max_qp_wr, static_cast<unsigned long long>(q.need), kMinCredits, kMinSqDepth);
        return RDMX_ERR_NO_MEMORY;
    }
    if (q.srq_depth < cfg_.srq_depth || q.credits < 8 || q.sq_depth < cfg_.sq_depth)
        RDMX_WARN("init: device %s limits (max_srq_wr %d, max_cqe %d, max_qp_wr %d) for %d ranks: SRQ %u (asked %u), "
                  "%u credits per peer, send queues %u deep", dev_.name(), a.max_srq_wr, a.max_cqe, a.max_qp_wr,
                  p_.size, q.srq_depth, cfg_.srq_depth, q.credits, q.sq_depth);
    credits_ = q.credits;
    credit_write_at_ = (credits_ + 1) / 2;
    sq_depth_ = q.sq_depth;
    cqe_ = q.cqe;
    srq_depth_ = q.srq_depth;
    if (plan_peers < npeers) lazy_caps(npeers);
    return RDMX_OK;
}

// On demand in a job larger than the plan: the SRQ's ring and the CQ's cap
// are as large as every peer would need, or as the device allows. Buffers
// are still posted per connection (make_room); a connection past what the
// caps hold is refused there, by name, instead of the job refusing to start.
void RcTransport::lazy_caps(uint32_t npeers) {
    const ibv_device_attr &a = dev_.attr();
    const uint64_t srq_cap = a.max_srq_wr > 1 ? static_cast<uint64_t>(a.max_srq_wr) - 1 : ~0u;
    const uint64_t cq_cap = a.max_cqe > 0 ? static_cast<uint64_t>(a.max_cqe) : ~0u;
    const uint64_t whole = static_cast<uint64_t>(credits_) * npeers + kSrqSlack + npeers;
    srq_depth_ = static_cast<uint32_t>(std::max<uint64_t>(srq_depth_, std::min(whole, srq_cap)));
    const uint64_t cq_whole = srq_depth_ + static_cast<uint64_t>(npeers) * sq_depth_ + kCqSpare;
    cqe_ = static_cast<uint32_t>(std::max<uint64_t>(cqe_, std::min(cq_whole, cq_cap)));
    RDMX_INFO("init: on demand, %u credits per peer (planned as for %u peers of %u); room for %u connections "
              "(SRQ ring %u, CQ up to %u entries)", credits_, cfg_.lazy_peers, npeers, room(), srq_depth_, cqe_);
}

// Whether the SRQ's ring and the CQ's cap hold `qps` connections: their
// credits and control slack as posted buffers (registered in whole chunks of
// credits + 1, never past the ring), and every send-queue slot.
bool RcTransport::fits(uint32_t qps) const {
    const uint64_t bufs = buffers_for(qps);
    if (bufs > srq_depth_) return false;
    const uint64_t chunk = credits_ + 1ull;
    const uint64_t registered = std::min<uint64_t>((bufs + chunk - 1) / chunk * chunk, srq_depth_);
    return registered + static_cast<uint64_t>(qps) * sq_depth_ + kCqSpare <= cqe_;
}

// The most connections that fit (at most every peer).
uint32_t RcTransport::room() const {
    uint32_t lo = 0, hi = static_cast<uint32_t>(p_.size - 1);
    while (lo < hi) {
        const uint32_t mid = lo + (hi - lo + 1) / 2;
        if (fits(mid)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Registration cache, exposure and the rendezvous flavour on this device.
void RcTransport::setup_rndv() {
    rndv_reads_ = cfg_.rndv_reads;
    rndv_chunk_ = cfg_.rndv_chunk_for(max_msg_);
    rndv_put_ = cfg_.rndv_uses_put(dev_.attr().vendor_id);
    const char *why = "RDMX_RCACHE=0";
    if (cfg_.rcache != 0 && memhooks::install(&why)) {
        // Windows are opt-in (RDMX_RNDV_WINDOWS=1): Soft RoCE's type 2
        // windows fail under retransmission (bind errors and stalled
        // transfers, docs/design/protocols.md), and they have not yet run on
        // a device where they work. `auto` is off until a test there passes.
        rndv_mw_ = dev_.has_mw2() && cfg_.rndv_windows == 1;
        // Every registration gets local write plus what its use needs (the
        // cache keys on it): see the access arguments of rcache_->get.
        registrar_ = MrRegistrar{dev_.pd(), dev_.name(), IBV_ACCESS_LOCAL_WRITE};
        size_t bytes = cfg_.rcache_max != 0 ? cfg_.rcache_max : default_rcache_bytes();
        rcache_ = std::make_unique<RegCache>(RegCache::Ops{&MrRegistrar::reg, &MrRegistrar::dereg, &registrar_},
                                             bytes, cfg_.rcache_max_regions);
        RDMX_INFO("rndv: %s protocol; registration cache on (%zu MiB, %u regions); buffers exposed through %s",
                  rndv_put_ ? "put" : "get", bytes >> 20, cfg_.rcache_max_regions,
                  rndv_mw_ ? "type 2 memory windows" : "the cached registrations");
    } else {
        RDMX_INFO("rndv: %s protocol; registration cache off (%s): every transfer registers its buffer",
                  rndv_put_ ? "put" : "get", why);
    }
}

rdmx_status_t RcTransport::open() {
    DeviceChoice choice;
    rdmx_status_t st = select_device(cfg_, p_.local_rank, &choice);
    if (st != RDMX_OK) return st;
    if ((st = cm_.listen(choice.addr)) != RDMX_OK) return st;
    if ((st = dev_.open(cm_.verbs(), cm_.port_num())) != RDMX_OK) return st;
    name_ = std::string("rc ") + dev_.name() + ":" + std::to_string(dev_.port());
    lazy_ = cfg_.lazy_connect(p_.size);  // published by address(), checked against every peer's in connect()
    if ((st = size_queues()) != RDMX_OK) return st;
    if ((st = open_iface()) != RDMX_OK) return st;
    const size_t buf = p_.eager_limit + sizeof(wire::MsgHdr);
    if ((st = send_pool_.init(dev_.pd(), dev_.name(), kSendBufs, buf, IBV_ACCESS_LOCAL_WRITE)) != RDMX_OK) return st;
    if ((st = credit_mem_.init(dev_.pd(), dev_.name(), p_.size, p_.rank, !lazy_)) != RDMX_OK) return st;
    max_msg_ = dev_.port_attr().max_msg_sz;
    setup_rndv();
    RDMX_INFO("device %s:%u at %s, SRQ of %u (up to %u) x %zu B with %u posted%s, CQ of %u, %u credits per peer",
              dev_.name(), dev_.port(), sockaddr_str(cm_.bound_addr()).c_str(), iface_.srq_wr(), srq_depth_, buf,
              iface_.buffers(), lazy_ ? " (more as peers connect)" : "", iface_.cq_entries(), credits_);
    return RDMX_OK;
}

// A mesh posts every receive buffer now: all its peers connect inside
// rdmx_init. On demand the SRQ is still created for the whole job (its ring
// is small next to the buffers), but buffers are registered and posted a
// connection's worth at a time as peers connect (make_room), and the CQ
// grows with them; a process that talks to k peers pins buffers for k.
rdmx_status_t RcTransport::open_iface() {
    const size_t buf = p_.eager_limit + sizeof(wire::MsgHdr);
    if (!lazy_) return iface_.open(dev_, srq_depth_, buf, srq_depth_, srq_depth_, cqe_, cqe_);
    const uint32_t chunk = credits_ + 1;  // one more connection's credits and control-message slack
    const uint32_t first = (buffers_for(0) + chunk - 1) / chunk * chunk;
    const uint32_t cqe = first + kCqSpare < cqe_ ? first + kCqSpare : cqe_;
    return iface_.open(dev_, srq_depth_, buf, first, chunk, cqe, cqe_);
}

// Before a QP for `ep` exists, and before its credits and credit slot are
// promised in private_data: the slot is registered, and (on demand) the SRQ
// holds buffers for `qps` connections' credits, all posted, with a CQ to
// match. The credit rule holds: every credit granted is a buffer on the SRQ.
rdmx_status_t RcTransport::make_room(Endpoint &ep, uint32_t qps) {
    if (rdmx_status_t st = credit_mem_.ensure(ep.peer)) return st;  // logged where it failed
    if (!lazy_) return RDMX_OK;  // sized for every peer in rdmx_init
    // A crossed connect briefly holds two QPs for one peer; only one is
    // ever established, so credits for more than every peer are never used.
    const uint32_t npeers = static_cast<uint32_t>(p_.size - 1);
    if (qps > npeers) qps = npeers;
    if (!fits(qps)) {
        // Once as an error; a peer's retries would repeat it every backoff.
        const LogLevel level = refusals_++ == 0 ? LogLevel::kError : LogLevel::kDebug;
        RDMX_LOG(level, "rc: no room for a connection to rank %d: %u connections at %u credits need %u receive buffers "
                   "and %llu CQ entries, the device's queues hold %u connections (SRQ ring %u, max_srq_wr %d; CQ %u, "
                   "max_cqe %d) (hint: fewer peers per process, or fewer ranks per device)", ep.peer, qps, credits_,
                   buffers_for(qps), static_cast<unsigned long long>(buffers_for(qps)) + qps * sq_depth_ + kCqSpare,
                   room(), srq_depth_, dev_.attr().max_srq_wr, cqe_, dev_.attr().max_cqe);
        return RDMX_ERR_NO_MEMORY;
    }
    const uint32_t want = buffers_for(qps);
    if (rdmx_status_t st = iface_.grow(want, qps * sq_depth_ + kCqSpare)) return st;
    // Buffers a failed post left waiting are posted here too, or the
    // connection waits for a later attempt.
    return flush_srq();
}

RcAddr RcTransport::address() const {
    const sockaddr_in me = cm_.bound_addr();
    return RcAddr{me.sin_addr.s_addr, ntohs(me.sin_port), connect_mode_flags(lazy_)};
}

// Ranks that disagree on RDMX_CONNECT cannot connect (connect_rule.h): every
// rank that serves one of the others refuses the job here, naming the first
// it disagrees with, instead of waiting out the connect timeout.
rdmx_status_t RcTransport::check_connect_modes(const std::vector<RcAddr> &addrs,
                                               const std::vector<uint8_t> &serve) const {
    int first = -1, clashes = 0;
    for (size_t r = 0; r < addrs.size(); ++r) {
        if (serve[r] == 0 || static_cast<int>(r) == p_.rank || !connect_modes_clash(lazy_, addrs[r].flags)) continue;
        if (first < 0) first = static_cast<int>(r);
        ++clashes;
    }
    if (first < 0) return RDMX_OK;
    const char *mine = lazy_ ? "lazy" : "mesh";
    const char *theirs = lazy_ ? "mesh" : "lazy";
    RDMX_ERROR("init: rank %d resolved RDMX_CONNECT to %s but rank %d to %s (%d rc peer(s) of this rank "
               "disagree): the ranks of a job must all connect the same way, or their connections never come up "
               "(hint: give every rank the same RDMX_CONNECT; auto decides by the job size, so it agrees)",
               p_.rank, mine, first, theirs, clashes);
    return RDMX_ERR_INVALID_ARG;
}

rdmx_status_t RcTransport::connect(const std::vector<RcAddr> &addrs, const std::vector<uint8_t> &serve,
                                   uint64_t job_key, double *seconds) {
    if (rdmx_status_t st = check_connect_modes(addrs, serve)) return st;
    addrs_.resize(addrs.size());
    eps_.resize(addrs.size());
    for (size_t r = 0; r < addrs.size(); ++r) {
        addrs_[r] = sockaddr_in{};
        addrs_[r].sin_family = AF_INET;
        addrs_[r].sin_addr.s_addr = addrs[r].ip;
        addrs_[r].sin_port = htons(addrs[r].port);
        Endpoint &ep = eps_[r];
        ep.peer = static_cast<int>(r);
        ep.served = serve[r] != 0 && static_cast<int>(r) != p_.rank;
        ep.credit_slot = credit_mem_.slot(ep.peer);
        ep.addr = sockaddr_str(addrs_[r]);
        ep.rx_granted = credits_;
        ep.rx_granted_told = credits_;
    }
    MeshParams mp;
    mp.rank = p_.rank;
    mp.size = p_.size;
    mp.job_key = job_key;
    mp.credits = credits_;
    mp.sq_depth = sq_depth_;
    mp.max_inline = kInlineWanted;
    mp.credit_slots = &credit_mem_;
    mp.timeout = cfg_.connect_timeout;
    mp.lazy = lazy_;
    on_demand_ = lazy_;
    cm_.on_connected = [this](Endpoint &ep) { on_connected(ep); };
    cm_.make_room = [this](Endpoint &ep, uint32_t qps) { return make_room(ep, qps); };
    const uint64_t t0 = now_ns();
    if (lazy_) {
        // Nothing to connect now: the listening id is up (open), peers dial
        // it when they first need us, and we dial them likewise (can_send,
        // reach). Every QP asks for the same send queue, so the longest
        // signalling period is known without one.
        cm_.attach(mp, dev_, iface_, eps_, addrs_);
        *seconds = static_cast<double>(now_ns() - t0) * 1e-9;
        low_bounce_ = Endpoint::signal_period(sq_depth_);
        set_cm_hooks();
        RDMX_INFO("rc: connections on demand (RDMX_CONNECT), listening at %s", sockaddr_str(cm_.bound_addr()).c_str());
        return RDMX_OK;
    }
    rdmx_status_t st = cm_.connect_all(mp, dev_, iface_, eps_, addrs_);
    *seconds = static_cast<double>(now_ns() - t0) * 1e-9;
    if (st != RDMX_OK) return st;
    max_inline_ = dev_.max_inline();
    low_bounce_ = 1;
    for (const Endpoint &ep : eps_)
        if (ep.served && ep.signal_every > low_bounce_) low_bounce_ = ep.signal_every;
    set_cm_hooks();
    RDMX_INFO("rc: connections up in %.3f s (inline %u B)", *seconds, max_inline_);
    return RDMX_OK;
}

// A connection came up. owed_ lists a peer at most once (Endpoint::owed),
// and only peers that were connected: room for all of them now means no
// allocation on the data path.
void RcTransport::on_connected(Endpoint &ep) {
    live_.push_back(ep.peer);
    ++ever_connected_;
    if (owed_.capacity() < ever_connected_) owed_.reserve(2 * ever_connected_);
}

void RcTransport::drop_live(int peer) {
    for (size_t i = 0; i < live_.size(); ++i)
        if (live_[i] == peer) {
            live_[i] = live_.back();
            live_.pop_back();
            return;
        }
}

void RcTransport::close_peer(int peer, rdmx_status_t why) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    if (!ep.served) return;
    drop_live(peer);
    ep.reported = true;  // the engine closes it, or is about to be told
    if (ep.error == 0) ep.error = why;
    if (ep.state == ConnState::kFailed) return;
    ep.set_state(ConnState::kFailed);
    ep.invals.clear();
    if (ep.id) disconnect_lost(ep);
}

// Posts a signalled credit write on every QP that still has unsignalled
// sends: its completion proves the peer acknowledged everything before it,
// so the disconnect that follows cannot flush eager data still on the wire.
void RcTransport::flush() {
    for (int peer : live_) {
        Endpoint &ep = eps_[static_cast<size_t>(peer)];
        if (!ep.usable() || ep.sq_done == ep.sq_posted) continue;
        ep.rx_granted_told = ep.rx_granted - credits_;  // forces return_credits to post
        owe(ep);
    }
    return_credits();
}

bool RcTransport::quiet() {
    for (int peer : live_) {
        const Endpoint &ep = eps_[static_cast<size_t>(peer)];
        if (ep.usable() && ep.sq_done != ep.sq_posted) return false;
    }
    return true;
}

void RcTransport::disconnect_all(double timeout) { cm_.disconnect_all(timeout); }

}  // namespace rdmx
