#include "transport/cm.h"

#include <arpa/inet.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "transport/connect_rule.h"

namespace rdmx {

namespace {
constexpr int kResolveTimeoutMs = 2000;
constexpr int kMaxInFlight = 64;        // resolves/connects outstanding at once
// RC retry policy. retry_count 7 = the maximum transport retries before a
// dead peer surfaces as IBV_WC_RETRY_EXC_ERR (timeout ~ 4.096us * 2^timeout
// each). rnr_retry_count 7 = retry forever: with credit-based flow control an
// RNR NAK can only mean the SRQ briefly ran dry during a batch re-post, and
// the min RNR timer (set by rdma_cm) then paces it.
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetryCount = 7;
// Local ACK timeout exponent: 4.096us * 2^19 = 2.1 s. rdma_cm's default for
// RoCE (0.5 s) retransmits spuriously when a host is loaded or emulated,
// and duplicate READ requests are where soft RoCE is weakest; a dead peer
// still surfaces within 7 retries (~17 s, under RDMX_PEER_TIMEOUT).
constexpr uint8_t kAckTimeout = 19;
constexpr uint64_t kRefusalLogIntervalNs = 1000000000ull;  // at most one refusal line (plus a count) per second
// Lazy: a rank listens before it publishes its address, so a peer whose
// address keeps refusing at the transport (nobody listening) has exited.
// This many refusals in a row (about 0.3 s of backoff) lose it, rather than
// retrying until RDMX_CONNECT_TIMEOUT; one could be a listen backlog
// overflowing.
constexpr int kLazyRefusalsLost = 5;
// No verb reports a device's inline limit before a QP exists, and devices
// refuse a QP asking for more (EINVAL/ENOMEM): the request is halved down to
// this floor (a message header) before giving up on inline data altogether.
constexpr uint32_t kMinInlineTried = sizeof(wire::MsgHdr);

// An endpoint's state as the crossing rule (connect_rule.h) sees it.
PeerConn peer_conn(ConnState s) {
    switch (s) {
    case ConnState::kIdle:
    case ConnState::kBackoff: return PeerConn::kNone;
    case ConnState::kResolvingAddr:
    case ConnState::kResolvingRoute:
    case ConnState::kConnecting: return PeerConn::kDialing;
    case ConnState::kAwaitPeer: return PeerConn::kAwaiting;
    case ConnState::kAccepting: return PeerConn::kAccepting;
    default: return PeerConn::kUp;  // connected, closing or lost
    }
}
}  // namespace

// Runs after the owner destroyed the QPs, CQ, SRQ, MRs and PD: ids go last,
// since the last id on a device is what lets librdmacm close its context.
ConnManager::~ConnManager() {
    for (rdma_cm_id *id : graveyard_) CmIdDeleter{}(id);
    listen_id_.reset();
    if (device_removed_) {
        vx::release_removed_devices();
        RDMX_INFO("cm: resources on the removed device %s released", dev_ ? dev_->name() : "?");
    }
}

rdmx_status_t ConnManager::listen(const sockaddr_in &addr) {
    rdma_event_channel *ch = nullptr;
    if (int e = vx::create_event_channel(&ch)) {
        RDMX_ERROR("cm: rdma_create_event_channel failed: %s (is rdma_ucm loaded? /dev/infiniband/rdma_cm)",
                   strerror(e));
        return e == ENODEV || e == ENOENT ? RDMX_ERR_NO_DEVICE : RDMX_ERR_DEVICE;
    }
    channel_.reset(ch);
    (void)vx::set_nonblock(ch->fd);
    rdma_cm_id *id = nullptr;
    if (int e = vx::create_id(ch, &id, nullptr)) {
        RDMX_ERROR("cm: rdma_create_id failed: %s", strerror(e));
        return RDMX_ERR_DEVICE;
    }
    listen_id_.reset(id);
    sockaddr_in a = addr;
    if (int e = vx::bind_addr(id, reinterpret_cast<sockaddr *>(&a))) {
        RDMX_ERROR("cm: rdma_bind_addr(%s) failed: %s (hint: is that address on an RDMA netdev?)",
                   sockaddr_str(a).c_str(), strerror(e));
        return RDMX_ERR_NO_DEVICE;
    }
    if (id->verbs == nullptr) {
        RDMX_ERROR("cm: address %s is not on an RDMA device (set RDMX_DEVICE or RDMX_IFADDR)",
                   sockaddr_str(a).c_str());
        return RDMX_ERR_NO_DEVICE;
    }
    if (int e = vx::listen(id, 1024)) {
        RDMX_ERROR("cm: rdma_listen on %s failed: %s", sockaddr_str(a).c_str(), strerror(e));
        return RDMX_ERR_DEVICE;
    }
    return RDMX_OK;
}

sockaddr_in ConnManager::bound_addr() const {
    sockaddr_in a{};
    if (listen_id_) std::memcpy(&a, rdma_get_local_addr(listen_id_.get()), sizeof(a));
    return a;
}

void ConnManager::fill_conn_param(rdma_conn_param *cp, const void *priv, uint8_t len,
                                  const rdma_conn_param *req) const {
    std::memset(cp, 0, sizeof(*cp));
    cp->private_data = priv;
    cp->private_data_len = len;
    const ibv_device_attr &a = dev_->attr();
    // We serve the peer's READs (responder) and issue our own (initiator).
    cp->responder_resources = static_cast<uint8_t>(a.max_qp_rd_atom > 255 ? 255 : a.max_qp_rd_atom);
    cp->initiator_depth = static_cast<uint8_t>(a.max_qp_init_rd_atom > 255 ? 255 : a.max_qp_init_rd_atom);
    if (req != nullptr) {
        if (req->initiator_depth < cp->responder_resources) cp->responder_resources = req->initiator_depth;
        if (req->responder_resources < cp->initiator_depth) cp->initiator_depth = req->responder_resources;
    }
    cp->retry_count = kRetryCount;
    cp->rnr_retry_count = kRnrRetryCount;
}

rdmx_status_t ConnManager::setup_qp(Endpoint &ep, rdma_cm_id *id) {
    if (make_room)
        if (rdmx_status_t st = make_room(ep, qps_ + 1)) return st;
    ibv_qp_init_attr qa{};
    qa.send_cq = iface_->cq();
    qa.recv_cq = iface_->cq();
    qa.srq = iface_->srq();
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = p_.sq_depth;
    qa.cap.max_send_sge = 2;
    // The device's limit once one QP found it: later QPs ask for that.
    const uint32_t want = dev_->max_inline() != 0 && dev_->max_inline() < p_.max_inline ? dev_->max_inline()
                                                                                        : p_.max_inline;
    qa.cap.max_inline_data = want;
    int e = vx::create_qp(id, dev_->pd(), &qa);
    while (e != 0 && (e == EINVAL || e == ENOMEM) && qa.cap.max_inline_data > 0) {
        const uint32_t less = qa.cap.max_inline_data / 2;
        qa.cap.max_inline_data = less >= kMinInlineTried ? less : 0;
        qa.cap.max_send_wr = p_.sq_depth;
        e = vx::create_qp(id, dev_->pd(), &qa);
    }
    if (e != 0) {
        RDMX_ERROR("cm: rdma_create_qp for peer %d (%s) on %s failed: %s (sq %u, inline %u down to 0)", ep.peer,
                   ep.addr.c_str(), dev_->name(), strerror(e), p_.sq_depth, want);
        return RDMX_ERR_DEVICE;
    }
    if (qa.cap.max_inline_data < want)
        RDMX_DEBUG("cm: %s took inline data of %u B, not the %u asked", dev_->name(), qa.cap.max_inline_data, want);
    ++qps_;
    ep.qp = id->qp;
    ep.qp_num = id->qp->qp_num;
    ep.sq_depth = qa.cap.max_send_wr < p_.sq_depth ? qa.cap.max_send_wr : p_.sq_depth;
    ep.ring.assign(ep.sq_depth, SqSlot{});
    ep.signal_every = Endpoint::signal_period(ep.sq_depth);
    ep.sq_posted = ep.sq_done = ep.unsignaled = ep.sq_held = 0;
    if (dev_->max_inline() == 0 || qa.cap.max_inline_data < dev_->max_inline())
        dev_->set_max_inline(qa.cap.max_inline_data);
    qpn_to_peer.insert(ep.qp_num, ep.peer);
    return RDMX_OK;
}

void ConnManager::bury(Endpoint &ep) {
    if (ep.qp_num != 0) (void)qpn_to_peer.erase(ep.qp_num);
    if (ep.qp != nullptr) --qps_;
    if (ep.id) graveyard_.push_back(ep.id.release());
    ep.qp = nullptr;
    ep.qp_num = 0;
}

void ConnManager::fail(Endpoint &ep, rdmx_status_t st, const char *why) {
    RDMX_ERROR("cm: peer %d (%s): %s (last CM event %s, status %d)", ep.peer, ep.addr.c_str(), why, ep.last_event,
               ep.last_status);
    ep.error = st;
    ep.set_state(ConnState::kFailed);
}

// During the mesh bring-up a connection that cannot be made fails the whole
// bring-up (connect_all returns); a lazy one loses that peer alone, and what
// waits for it fails through on_peer_lost.
void ConnManager::give_up(Endpoint &ep, rdmx_status_t st, const char *why) {
    fail(ep, st, why);
    if (bringing_up_ || !p_.lazy) {
        fatal_ = true;
        return;
    }
    bury(ep);
    ep.wanted = false;
    if (on_peer_lost) on_peer_lost(ep.peer, st, "could not connect");
}

// Not connected yet (nor lost): a lazy failure here is retried, not a loss.
bool ConnManager::never_connected(const Endpoint &ep) const {
    switch (ep.state) {
    case ConnState::kIdle:
    case ConnState::kResolvingAddr:
    case ConnState::kResolvingRoute:
    case ConnState::kConnecting:
    case ConnState::kAccepting:
    case ConnState::kBackoff:
    case ConnState::kAwaitPeer: return true;
    default: return false;
    }
}

void ConnManager::start_connect(Endpoint &ep) {
    rdma_cm_id *id = nullptr;
    if (int e = vx::create_id(channel_.get(), &id, &ep)) return give_up(ep, RDMX_ERR_CONNECT, strerror(e));
    ep.id.reset(id);
    ++ep.attempts;
    sockaddr_in src = bound_addr();
    src.sin_port = 0;
    sockaddr_in dst = (*addrs_)[static_cast<size_t>(ep.peer)];
    if (int e = vx::resolve_addr(id, reinterpret_cast<sockaddr *>(&src), reinterpret_cast<sockaddr *>(&dst),
                                 kResolveTimeoutMs)) {
        backoff(ep, strerror(e));
        return;
    }
    ep.set_state(ConnState::kResolvingAddr);
}

void ConnManager::backoff(Endpoint &ep, const char *why) {
    bury(ep);
    uint64_t delay_ms = 10ull << (ep.attempts < 8 ? ep.attempts : 8);
    RDMX_DEBUG("cm: peer %d (%s): attempt %d failed (%s); retrying in %llu ms", ep.peer, ep.addr.c_str(),
               ep.attempts, why, static_cast<unsigned long long>(delay_ms));
    ep.retry_at_ns = now_ns() + delay_ms * 1000000ull;
    ep.set_state(ConnState::kBackoff);
}

void ConnManager::on_addr_resolved(Endpoint &ep) {
    if (int e = vx::resolve_route(ep.id.get(), kResolveTimeoutMs)) return backoff(ep, strerror(e));
    ep.set_state(ConnState::kResolvingRoute);
}

void ConnManager::on_route_resolved(Endpoint &ep) {
    if (rdmx_status_t st = setup_qp(ep, ep.id.get()))
        return give_up(ep, st, st == RDMX_ERR_NO_MEMORY ? "no room on this device's queues for another connection"
                                                        : "cannot create the QP");
    wire::ConnectPriv cp{wire::kMagic, wire::kVersion, sizeof(wire::ConnectPriv), p_.job_key,
                         static_cast<uint32_t>(p_.rank), static_cast<uint32_t>(ep.peer),
                         p_.credit_slots->addr(ep.peer), p_.credit_slots->rkey(ep.peer), p_.credits};
    rdma_conn_param param;
    fill_conn_param(&param, &cp, sizeof(cp), nullptr);
    (void)vx::set_ack_timeout(ep.id.get(), kAckTimeout);  // best effort: older stacks lack the option
    if (int e = vx::connect(ep.id.get(), &param)) return backoff(ep, strerror(e));
    ep.set_state(ConnState::kConnecting);
}

// The peer's credit slot for us and its window: what it announced, capped at
// the largest window any rdmx rank grants (a larger claim would let a forged
// grant pass as plausible, Endpoint::grant_plausible).
void ConnManager::record_credits(Endpoint &ep, uint64_t addr, uint32_t rkey, uint32_t credits) {
    ep.remote_credit_addr = addr;
    ep.remote_credit_rkey = rkey;
    ep.tx_window = credits < wire::kMaxCredits ? credits : wire::kMaxCredits;
    ep.tx_granted = ep.tx_window;
    ep.tx_consumed = 0;
    ep.credit_seen = 0;
    ep.grant_forged = false;
}

// Refusals are logged at most once per kRefusalLogIntervalNs, and deferred:
// this runs under the engine lock, and a process outside the job (or a port
// scanner) decides how often. The lines are written once the lock is released.
void ConnManager::log_refusal(rdma_cm_id *id, wire::RejectReason r, const char *detail) {
    const uint64_t now = now_ns();
    if (refusal_logged_ns_ != 0 && now - refusal_logged_ns_ < kRefusalLogIntervalNs) {
        ++refusals_unlogged_;
        return;
    }
    log_refusal_summary(now);
    refusal_logged_ns_ = now;
    const sockaddr *sa = rdma_get_peer_addr(id);
    std::string from = sa && sa->sa_family == AF_INET ? sockaddr_str(*reinterpret_cast<const sockaddr_in *>(sa)) : "?";
    RDMX_WARN_DEFERRED("cm: refusing a connect request from %s on %s: %s (%s); further refusals within %.0f s are "
                       "counted, not logged one by one", from.c_str(), dev_ ? dev_->name() : "?",
                       wire::reject_reason_name(r), detail, static_cast<double>(kRefusalLogIntervalNs) * 1e-9);
}

void ConnManager::log_refusal_summary(uint64_t now) {
    if (refusals_unlogged_ == 0 || now - refusal_logged_ns_ < kRefusalLogIntervalNs) return;
    RDMX_WARN_DEFERRED("cm: refused %llu more connect request(s) in the last %.1f s (hint: RDMX_LOG_LEVEL=3 names "
                       "each; a process outside the job keeps trying this address)",
                       static_cast<unsigned long long>(refusals_unlogged_),
                       static_cast<double>(now - refusal_logged_ns_) * 1e-9);
    refusals_unlogged_ = 0;
    refusal_logged_ns_ = now;
}

void ConnManager::reject(rdma_cm_id *id, wire::RejectReason r, const char *detail) {
    RDMX_DEBUG("cm: refusing a connect request: %s (%s)", wire::reject_reason_name(r), detail);
    if (r != wire::RejectReason::kCrossed) log_refusal(id, r, detail);  // crossing is routine, not a refusal
    wire::RejectPriv rp{wire::kMagic, wire::kVersion, static_cast<uint16_t>(r)};
    (void)vx::reject(id, &rp, sizeof(rp));
    graveyard_.push_back(id);  // a connect request's id is ours to destroy
}

}  // namespace rdmx

namespace rdmx {

namespace {
// The IPv4 address of a socket address (plain or v4-mapped IPv6); false for others.
bool ipv4_of(const sockaddr *sa, in_addr *out) {
    if (sa == nullptr) return false;
    if (sa->sa_family == AF_INET) {
        *out = reinterpret_cast<const sockaddr_in *>(sa)->sin_addr;
        return true;
    }
    if (sa->sa_family != AF_INET6) return false;
    const auto *a6 = reinterpret_cast<const sockaddr_in6 *>(sa);
    if (!IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) return false;
    std::memcpy(&out->s_addr, a6->sin6_addr.s6_addr + 12, sizeof(out->s_addr));
    return true;
}
}  // namespace

// A rank's claim in private_data is tied to the address it published in the
// bootstrap: ranks connect from the address they listen on (start_connect
// binds it), so a request for rank r from elsewhere is another process,
// whatever key it carries. The port is not compared (the active side's is
// ephemeral). This ties a claim to a host address, not to a process: a
// process on rank r's own host and address is not told apart here.
bool ConnManager::from_published_addr(rdma_cm_id *id, uint32_t rank, char *got, size_t got_len) const {
    in_addr src{};
    const sockaddr *sa = rdma_get_peer_addr(id);
    const bool v4 = ipv4_of(sa, &src);
    if (v4 && src.s_addr == (*addrs_)[rank].sin_addr.s_addr) return true;
    if (v4) inet_ntop(AF_INET, &src, got, static_cast<socklen_t>(got_len));
    else std::snprintf(got, got_len, "address family %d", sa ? sa->sa_family : -1);
    return false;
}

void ConnManager::on_connect_request(CmEvent &ev) {
    rdma_cm_id *id = ev->id;
    const auto &c = ev->param.conn;
    wire::ConnectPriv cp{};
    auto de = wire::decode_connect(c.private_data, c.private_data_len, &cp);
    using R = wire::RejectReason;
    if (de != wire::DecodeError::kOk) {
        R r = de == wire::DecodeError::kBadMagic     ? R::kBadMagic
              : de == wire::DecodeError::kBadVersion ? R::kBadVersion
                                                     : R::kShortData;
        return reject(id, r, wire::decode_error_name(de));
    }
    if (finalizing_) return reject(id, R::kShuttingDown, "finalizing");
    if (cp.job_key != p_.job_key) return reject(id, R::kBadJobKey, "job key differs");
    if (cp.src_rank >= static_cast<uint32_t>(p_.size) || cp.dst_rank != static_cast<uint32_t>(p_.rank))
        return reject(id, R::kRankOutOfRange, "src or dst rank out of range");
    if (!p_.lazy && cp.src_rank >= static_cast<uint32_t>(p_.rank))
        return reject(id, R::kWrongDirection, "higher rank connected");
    if (!(*eps_)[cp.src_rank].served) return reject(id, R::kWrongDirection, "that rank reaches us by another transport");
    if (char got[INET6_ADDRSTRLEN]; !from_published_addr(id, cp.src_rank, got, sizeof(got))) {
        char why[128];
        std::snprintf(why, sizeof(why), "claims rank %u, which published %s, from %s", cp.src_rank,
                      sockaddr_str((*addrs_)[cp.src_rank]).c_str(), got);
        return reject(id, R::kAddressMismatch, why);
    }
    Endpoint &ep = (*eps_)[cp.src_rank];
    switch (judge_request(p_.lazy, p_.rank, static_cast<int>(cp.src_rank), peer_conn(ep.state))) {
    case RequestVerdict::kRejectDuplicate:
        return reject(id, R::kDuplicateRank, ep.state == ConnState::kFailed ? "that rank is lost here" : "already connected");
    case RequestVerdict::kRejectDirection: return reject(id, R::kWrongDirection, "higher rank connected");
    case RequestVerdict::kRejectCrossed: return reject(id, R::kCrossed, "our own connect to that rank is under way");
    case RequestVerdict::kAcceptDropOwn:  // crossed: the lower rank's connection wins, ours is dropped
        RDMX_DEBUG("cm: peer %d: crossed connects, accepting the lower rank's", ep.peer);
        bury(ep);
        ep.set_state(ConnState::kIdle);  // if the accept below fails, a retry starts from here
        break;
    case RequestVerdict::kAccept:
        // A retry superseded the first request: newest wins. It comes from the
        // address that rank published (checked above), so it is that rank's or
        // its host's, not any job member's.
        if (ep.state == ConnState::kAccepting) bury(ep);
        break;
    }
    if (rdmx_status_t st = setup_qp(ep, id))
        return reject(id, R::kResources, st == RDMX_ERR_NO_MEMORY ? "no room for another connection" : "QP creation failed");
    ep.id.reset(id);
    id->context = &ep;
    record_credits(ep, cp.credit_addr, cp.credit_rkey, cp.credits);
    wire::AcceptPriv ap{wire::kMagic, wire::kVersion, sizeof(wire::AcceptPriv), p_.job_key,
                        static_cast<uint32_t>(p_.rank), p_.credits, p_.credit_slots->addr(ep.peer),
                        p_.credit_slots->rkey(ep.peer), 0};
    rdma_conn_param param;
    fill_conn_param(&param, &ap, sizeof(ap), &c);
    ep.max_rd_atomic = param.initiator_depth > 0 ? param.initiator_depth : 1;
    (void)vx::set_ack_timeout(id, kAckTimeout);
    if (int e = vx::accept(id, &param)) {
        RDMX_WARN("cm: rdma_accept for peer %u failed: %s", cp.src_rank, strerror(e));
        bury(ep);
        ep.set_state(ConnState::kIdle);
        return;
    }
    ep.set_state(ConnState::kAccepting);
}

void ConnManager::on_established(Endpoint &ep, const rdma_cm_event *ev) {
    if (ep.state == ConnState::kConnecting) {
        wire::AcceptPriv ap{};
        auto de = wire::decode_accept(ev->param.conn.private_data, ev->param.conn.private_data_len, &ap);
        if (de != wire::DecodeError::kOk || ap.job_key != p_.job_key ||
            ap.src_rank != static_cast<uint32_t>(ep.peer))
            return give_up(ep, RDMX_ERR_CONNECT, "accept private_data invalid (another job on that address?)");
        record_credits(ep, ap.credit_addr, ap.credit_rkey, ap.credits);
        ep.max_rd_atomic = ev->param.conn.initiator_depth > 0 ? ev->param.conn.initiator_depth : 1;
    }
    if (ep.state == ConnState::kConnected) return;  // COMM_EST got there first
    mark_connected(ep);
    ep.wanted = false;
    ep.refused = 0;
}

void ConnManager::mark_connected(Endpoint &ep) {
    ep.set_state(ConnState::kConnected);
    if (on_connected) on_connected(ep);
}

void ConnManager::on_rejected(Endpoint &ep, const rdma_cm_event *ev) {
    wire::RejectPriv rp{};
    if (wire::decode_reject(ev->param.conn.private_data, ev->param.conn.private_data_len, &rp) ==
        wire::DecodeError::kOk) {
        bury(ep);
        if (p_.lazy && rp.reason == static_cast<uint16_t>(wire::RejectReason::kCrossed)) {
            ep.set_state(ConnState::kAwaitPeer);  // the lower rank's request is on its way
            return;
        }
        char why[160];
        std::snprintf(why, sizeof(why), "connect refused by the peer: %s",
                      wire::reject_reason_name(static_cast<wire::RejectReason>(rp.reason)));
        return give_up(ep, RDMX_ERR_CONNECT, why);
    }
    // No rdmx reason: the transport refused (e.g. nobody listening yet).
    // ev->status is a transport reject reason, not an errno.
    char why[96];
    std::snprintf(why, sizeof(why), "rejected by the transport (reject reason %d)", ev->status);
    if (p_.lazy && !bringing_up_ && ++ep.refused >= kLazyRefusalsLost) {
        bury(ep);
        std::snprintf(why, sizeof(why), "%d connects in a row refused by the transport (nobody listens: exited?)",
                      ep.refused);
        return give_up(ep, RDMX_ERR_PEER_LOST, why);
    }
    backoff(ep, why);
}

void ConnManager::on_transient(Endpoint &ep, const rdma_cm_event *ev) {
    const bool lazy_retry = p_.lazy && never_connected(ep);  // lazy: retried until the deadline
    if (!bringing_up_ && !lazy_retry) {  // after bring-up nothing retries: the connection is gone
        if (ep.state == ConnState::kFailed) return;  // known already (CM timeouts repeat)
        RDMX_WARN("cm: peer %d (%s): %s (status %d) after bring-up: the connection is lost", ep.peer,
                  ep.addr.c_str(), rdma_event_str(ev->event), ev->status);
        return on_disconnected(ep);
    }
    if (ep.state == ConnState::kAccepting || (!p_.lazy && ep.peer < p_.rank)) {
        // passive side (in the mesh the lower rank dials, retry_due): the
        // active peer retries with a new request. The active side backs off
        // below, so a peer that refuses is not redialled in a tight loop.
        bury(ep);
        ep.set_state(ConnState::kIdle);
        return;
    }
    backoff(ep, rdma_event_str(ev->event));
}

void ConnManager::on_disconnected(Endpoint &ep) {
    if (finalizing_ || ep.state == ConnState::kDisconnecting) {
        ep.set_state(ConnState::kClosed);
        return;
    }
    if (ep.state == ConnState::kAccepting || (bringing_up_ && ep.peer < p_.rank)) {
        // Never came up, or torn down during bring-up (the IB CM drops a new
        // connection whose QP number it still remembers from a previous one
        // in timewait): the active peer retries with a new request.
        bury(ep);
        ep.set_state(ConnState::kIdle);
        return;
    }
    if (bringing_up_) return backoff(ep, "disconnected during bring-up");
    if (p_.lazy && never_connected(ep)) return backoff(ep, "disconnected before it was up");
    if (ep.error == 0) ep.error = RDMX_ERR_PEER_LOST;  // a first cause (e.g. PROTOCOL) stays
    RDMX_INFO("cm: peer %d (%s) disconnected (finished, exited or link lost)", ep.peer, ep.addr.c_str());
    (void)vx::disconnect(ep.id.get());
    ep.set_state(ConnState::kFailed);
    if (on_peer_lost) on_peer_lost(ep.peer, RDMX_ERR_PEER_LOST, "disconnected");
}

// Device-wide events arrive on every id of the device, the listening id
// (no endpoint) included: report once, act once.
void ConnManager::on_device_event(const rdma_cm_event *ev) {
    auto *ep = static_cast<Endpoint *>(ev->id->context);
    char where[48] = "the listening id";
    if (ep != nullptr && ep->id.get() == ev->id) std::snprintf(where, sizeof(where), "peer %d's connection", ep->peer);
    if (ev->event == RDMA_CM_EVENT_ADDR_CHANGE) {
        // One failover reaches every id on the device at once: warn for the
        // first, the rest of the burst only at debug level.
        const uint64_t now = now_ns();
        const bool repeat = addr_change_ns_ != 0 && now - addr_change_ns_ < 1000000000ull;
        addr_change_ns_ = now;
        if (repeat) {
            RDMX_DEBUG("cm: device %s: RDMA_CM_EVENT_ADDR_CHANGE also on %s", dev_ ? dev_->name() : "?", where);
            return;
        }
        RDMX_WARN("cm: device %s: RDMA_CM_EVENT_ADDR_CHANGE (first seen on %s): its bond failed over and its "
                  "hardware address changed; connections made before it are broken and are not re-established "
                  "(a send on one fails and that peer is lost; the peer learns it through its keepalive, within "
                  "2.5 x RDMX_PEER_TIMEOUT). Hint: a bond with fail_over_mac=none (the default) keeps its "
                  "address across failovers", dev_ ? dev_->name() : "?", where);
        return;
    }
    if (device_removed_) return;
    device_removed_ = true;
    RDMX_ERROR("cm: device %s was removed (RDMA_CM_EVENT_DEVICE_REMOVAL, first seen on %s): every operation "
               "now fails with \"%s\"; call rdmx_finalize to release it (the kernel completes the removal only "
               "then)", dev_ ? dev_->name() : "?", where, rdmx_strerror(RDMX_ERR_DEVICE));
    if (bringing_up_) {
        fatal_ = true;
        for (Endpoint &e : *eps_)
            if (e.served && e.state != ConnState::kConnected) e.error = RDMX_ERR_DEVICE;
    }
    if (on_device_removal) on_device_removal();
}

void ConnManager::dispatch(CmEvent &ev) {
    const rdma_cm_event_type type = ev->event;
    if (type == RDMA_CM_EVENT_CONNECT_REQUEST) return on_connect_request(ev);
    if (type == RDMA_CM_EVENT_DEVICE_REMOVAL || type == RDMA_CM_EVENT_ADDR_CHANGE) return on_device_event(ev.get());
    auto *ep = static_cast<Endpoint *>(ev->id->context);
    if (ep == nullptr || ep->id.get() != ev->id) {  // an id we already buried
        RDMX_DEBUG("cm: %s for a retired id (status %d)", rdma_event_str(type), ev->status);
        return;
    }
    ep->last_event = rdma_event_str(type);
    ep->last_status = ev->status;
    RDMX_DEBUG("cm: peer %d: %s (status %d) in %s", ep->peer, rdma_event_str(type), ev->status,
               conn_state_name(ep->state));
    switch (type) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return on_addr_resolved(*ep);
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return on_route_resolved(*ep);
    case RDMA_CM_EVENT_ESTABLISHED: return on_established(*ep, ev.get());
    case RDMA_CM_EVENT_REJECTED: return on_rejected(*ep, ev.get());
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR: return on_transient(*ep, ev.get());
    case RDMA_CM_EVENT_DISCONNECTED: return on_disconnected(*ep);
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return;
    case RDMA_CM_EVENT_CONNECT_RESPONSE:  // only for ids without a QP; ours always have one
    case RDMA_CM_EVENT_MULTICAST_JOIN:
    case RDMA_CM_EVENT_MULTICAST_ERROR:
    default:
        RDMX_WARN("cm: unexpected event %s for peer %d (status %d)", rdma_event_str(type), ep->peer, ev->status);
        return;
    }
}

int ConnManager::poll_events() {
    int n = 0;
    for (;;) {
        rdma_cm_event *raw = nullptr;
        if (vx::get_cm_event(channel_.get(), &raw) != 0) break;
        {
            CmEvent ev(raw);
            dispatch(ev);
        }  // acked here, before any id it names is destroyed
        for (rdma_cm_id *id : graveyard_) CmIdDeleter{}(id);
        graveyard_.clear();
        ++n;
    }
    log_refusals_due();
    return n;
}

void ConnManager::log_refusals_due() {
    if (refusals_unlogged_ != 0) log_refusal_summary(now_ns());
}

void ConnManager::notify_established(Endpoint &ep) {
    if (ep.id && ep.state == ConnState::kAccepting) {
        (void)vx::notify(ep.id.get(), IBV_EVENT_COMM_EST);
        mark_connected(ep);
    }
}

bool ConnManager::all_connected() const {
    for (const Endpoint &ep : *eps_)
        if (ep.served && ep.state != ConnState::kConnected) return false;
    return true;
}

rdmx_status_t ConnManager::report_unconnected(bool timed_out) const {
    for (const Endpoint &ep : *eps_) {
        if (!ep.served || ep.state == ConnState::kConnected) continue;
        RDMX_ERROR("cm: %s peer %d at %s: state %s after %d attempt(s), last CM event %s (status %d)%s",
                   timed_out ? "timed out connecting to" : "could not connect to", ep.peer, ep.addr.c_str(),
                   conn_state_name(ep.state), ep.attempts, ep.last_event, ep.last_status,
                   ep.peer < p_.rank ? " (waiting for it to connect to us: did it start?)" : "");
    }
    if (device_removed_) return RDMX_ERR_DEVICE;
    return timed_out ? RDMX_ERR_TIMEOUT : RDMX_ERR_CONNECT;
}

void ConnManager::retry_due() {
    uint64_t now = now_ns();
    int in_flight = 0;
    for (Endpoint &ep : *eps_)
        if (ep.state == ConnState::kResolvingAddr || ep.state == ConnState::kResolvingRoute ||
            ep.state == ConnState::kConnecting)
            ++in_flight;
    for (Endpoint &ep : *eps_) {
        if (in_flight >= kMaxInFlight) break;
        if (ep.peer <= p_.rank || !ep.served) continue;
        bool start = ep.state == ConnState::kIdle || (ep.state == ConnState::kBackoff && now >= ep.retry_at_ns);
        if (!start) continue;
        start_connect(ep);
        ++in_flight;
    }
}

rdmx_status_t ConnManager::connect_all(const MeshParams &p, Device &dev, Iface &iface, std::vector<Endpoint> &eps,
                                       const std::vector<sockaddr_in> &addrs) {
    attach(p, dev, iface, eps, addrs);
    Deadline deadline(p.timeout);
    pollfd pfd{channel_->fd, POLLIN, 0};
    bringing_up_ = true;
    struct Done {
        bool &flag;
        ~Done() {
            flag = false;
            log_flush_deferred();  // whatever the outcome: no engine lock during bring-up
        }
    } done{bringing_up_};
    while (!all_connected()) {
        retry_due();
        if (fatal_) return report_unconnected(false);
        if (deadline.expired()) return report_unconnected(true);
        if (poll(&pfd, 1, deadline.remaining_ms(20)) < 0 && errno != EINTR) {
            RDMX_ERROR("cm: poll on the event channel failed: %s", strerror(errno));
            return RDMX_ERR_INTERNAL;
        }
        poll_events();
        log_flush_deferred();
    }
    return RDMX_OK;
}

void ConnManager::attach(const MeshParams &p, Device &dev, Iface &iface, std::vector<Endpoint> &eps,
                         const std::vector<sockaddr_in> &addrs) {
    p_ = p;
    dev_ = &dev;
    iface_ = &iface;
    eps_ = &eps;
    addrs_ = &addrs;
    wanted_.reserve(eps.size());
}

// First use of a peer in lazy mode: the deadline starts now, and the
// connection too unless kMaxInFlight attempts are under way (tick starts it).
void ConnManager::start_wanted(Endpoint &ep) {
    if (!ep.served || eps_ == nullptr) return;
    if (!ep.wanted) {
        ep.wanted = true;
        ep.connect_deadline_ns = now_ns() + static_cast<uint64_t>(p_.timeout * 1e9);
        wanted_.push_back(ep.peer);
        RDMX_DEBUG("cm: peer %d (%s): first use, connecting on demand", ep.peer, ep.addr.c_str());
    }
    int in_flight = 0;
    for (int peer : wanted_) in_flight += peer_conn((*eps_)[static_cast<size_t>(peer)].state) == PeerConn::kDialing;
    if (in_flight < kMaxInFlight) start_connect(ep);
}

// Visits only the peers wanted and not yet connected: connected ones leave
// the list here, so the cost follows the connections under way.
void ConnManager::tick() {
    if (eps_ == nullptr || finalizing_) return;
    const uint64_t now = now_ns();
    int in_flight = 0;
    for (int peer : wanted_) in_flight += peer_conn((*eps_)[static_cast<size_t>(peer)].state) == PeerConn::kDialing;
    for (size_t i = 0; i < wanted_.size();) {
        Endpoint &ep = (*eps_)[static_cast<size_t>(wanted_[i])];
        if (ep.wanted && ep.state != ConnState::kConnected && ep.state != ConnState::kFailed &&
            now >= ep.connect_deadline_ns) {
            char why[128];
            std::snprintf(why, sizeof(why), "not connected within RDMX_CONNECT_TIMEOUT (%.1f s) of its first use",
                          p_.timeout);
            give_up(ep, RDMX_ERR_PEER_LOST, why);
        }
        if (!ep.wanted || ep.state == ConnState::kConnected || ep.state == ConnState::kFailed) {
            ep.wanted = false;
            wanted_[i] = wanted_.back();
            wanted_.pop_back();
            continue;
        }
        const bool due = ep.state == ConnState::kIdle || (ep.state == ConnState::kBackoff && now >= ep.retry_at_ns);
        if (due && in_flight < kMaxInFlight) {
            start_connect(ep);
            ++in_flight;
        }
        ++i;
    }
}

void ConnManager::disconnect_all(double timeout) {
    if (!channel_ || eps_ == nullptr) return;
    finalizing_ = true;
    for (Endpoint &ep : *eps_) {
        if (!ep.id) continue;
        // Lazy: a connection still being made is dropped with its id; no
        // DISCONNECTED is awaited from a peer that may never have answered.
        if (p_.lazy && never_connected(ep)) {
            ep.set_state(ConnState::kClosed);
            continue;
        }
        if (ep.state == ConnState::kConnected || ep.state == ConnState::kAccepting ||
            ep.state == ConnState::kConnecting || ep.state == ConnState::kFailed) {
            if (vx::disconnect(ep.id.get()) == 0 && ep.state != ConnState::kFailed)
                ep.set_state(ConnState::kDisconnecting);
            else ep.set_state(ConnState::kClosed);
        }
    }
    Deadline deadline(timeout);
    pollfd pfd{channel_->fd, POLLIN, 0};
    for (;;) {
        bool waiting = false;
        for (const Endpoint &ep : *eps_) waiting |= ep.state == ConnState::kDisconnecting;
        if (!waiting || deadline.expired()) break;
        (void)poll(&pfd, 1, deadline.remaining_ms(20));
        poll_events();
        log_flush_deferred();
    }
    for (const Endpoint &ep : *eps_)
        if (ep.state == ConnState::kDisconnecting)
            RDMX_WARN("cm: peer %d (%s) did not confirm the disconnect within %.1f s", ep.peer, ep.addr.c_str(),
                      timeout);
}

}  // namespace rdmx
