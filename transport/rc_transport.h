// The RC verbs transport: one device context (listening id, PD, one CQ and
// one SRQ shared by every QP, send bounce buffers, credit slots), an RC QP
// per peer built by the connection manager, credits, inline sends, READ/WRITE
// for the engine's rendezvous, registrations through the cache, memory
// windows. Split by concern: rc_transport.cc (bring-up, queue sizing,
// shutdown), rc_msg.cc (messages, credits, arrivals), rc_rma.cc (exposure,
// windows, READ/WRITE), rc_progress.cc (completions, async and CM events,
// keepalive, sleeping), rc_hooks.cc (test hooks).
#pragma once
#include <netinet/in.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/copy.h"
#include "core/hot.h"
#include "core/rcache.h"
#include "transport/cm.h"
#include "transport/device.h"
#include "transport/endpoint.h"
#include "transport/iface.h"
#include "transport/memory.h"
#include "transport/rc.h"

namespace rdmx {

// What a failed work completion means for the operations on that QP.
rdmx_status_t rc_wc_status(ibv_wc_status st);

class RcTransport final : public Rc {
public:
    RcTransport(const RcParams &p, TransportSink *sink) : p_(p), cfg_(*p.cfg), sink_(sink) {}
    ~RcTransport() override;
    rdmx_status_t open();

    // Rc
    rdmx_status_t connect(const std::vector<RcAddr> &addrs, const std::vector<uint8_t> &serve, uint64_t job_key,
                          double *seconds) override;
    RcAddr address() const override;
    const char *device_name() const override { return dev_.name(); }
    void fill_stats(rdmx_stats_t *s) const override;
    rdmx_status_t hold_send_completions(int peer) override;
    void release_send_completions() override;
    rdmx_status_t check(const std::vector<uint32_t> &rma_in_flight, std::string *why) override;
    rdmx_status_t inject_async_event(const char *event, int peer) override;

    // Transport
    TransportKind kind() const override { return TransportKind::kRc; }
    const char *name() const override { return name_.c_str(); }
    bool usable(int peer) const override { return eps_[static_cast<size_t>(peer)].usable(); }
    void close_peer(int peer, rdmx_status_t why) override;
    const char *peer_addr(int peer) const override { return eps_[static_cast<size_t>(peer)].addr.c_str(); }
    void reach(int peer) override { cm_.want(eps_[static_cast<size_t>(peer)]); }
    bool can_send(int peer, size_t body_len, bool ctrl, unsigned extra) override;
    bool send(int peer, const MsgOut &m, bool ctrl) override;
    Post try_send(int peer, const MsgOut &m) override;
    void release(int peer, uint64_t token) override;
    rdmx_status_t expose(int peer, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) override;
    bool can_expose(int peer) override;
    bool unexpose(int peer, XferMem *m, uint64_t id) override;
    rdmx_status_t prepare_local(void *buf, size_t len, bool write, XferMem *m) override;
    void release_mem(int peer, XferMem *m) override;
    uint32_t rma_room(int peer, bool read, uint32_t in_flight) override;
    size_t rma_chunk() const override { return rndv_chunk_; }
    bool prefer_put() const override { return rndv_put_; }
    bool get(int peer, void *dst, const XferMem &m, uint64_t raddr, uint32_t key, size_t len, uint64_t id) override;
    bool put(int peer, const void *src, const XferMem &m, uint64_t raddr, uint32_t key, size_t len,
             uint64_t id) override;
    int progress(bool housekeeping) override;
    bool arm() override;
    int fds(pollfd *out, int max, bool data) override;
    void after_sleep() override;
    bool quiet() override;
    void flush() override;
    void disconnect_all(double timeout) override;

private:
    // Marked RDMX_SLOW_PATH: failures, housekeeping and protocol breaches,
    // which a small message does not reach; kept out of try_send's and
    // progress' bodies (rc_try_send_eager, rc_progress) so those stay small.
    // rc_transport.cc
    rdmx_status_t size_queues();
    rdmx_status_t open_iface();
    rdmx_status_t make_room(Endpoint &ep, uint32_t qps);
    void lazy_caps(uint32_t npeers);
    bool fits(uint32_t qps) const;
    uint32_t room() const;
    // Receive buffers that back `qps` connections' credits and control
    // messages (plan_queues' depth for that many peers, without its floor).
    uint32_t buffers_for(uint32_t qps) const { return credits_ * qps + kSrqSlack + qps; }
    rdmx_status_t check_connect_modes(const std::vector<RcAddr> &addrs, const std::vector<uint8_t> &serve) const;
    void setup_rndv();
    // rc_msg.cc
    bool post_msg(Endpoint &ep, const MsgOut &m);
    RDMX_SLOW_PATH bool post_bounced(Endpoint &ep, const MsgOut &m);  // a body past the inline limit
    RDMX_HOT_INLINE bool post_wr(Endpoint &ep, ibv_send_wr *wr, const SqSlot &slot);
    bool room(Endpoint &ep, size_t body_len, bool ctrl, unsigned extra);  // can_send on a found endpoint
    void return_credits();
    void write_credits(Endpoint &ep);
    void owe(Endpoint &ep);
    // Owed this many grants or more, a peer is told by a credit write.
    uint32_t credit_write_at() const { return credit_write_at_; }
    void recycle(Endpoint *ep, uint32_t idx);
    // Once per batch of re-posts: a call (it inlined into each of recycle's callers).
    RDMX_SLOW_PATH rdmx_status_t flush_srq();  // a failed post is logged by the interface and retried by progress
    void handle_recv(const ibv_wc &wc);
    void check_message(Endpoint &ep, const ibv_wc &wc, uint32_t idx);
    RDMX_SLOW_PATH void violation(Endpoint &ep, uint32_t idx, const char *what);
    RDMX_SLOW_PATH void credit_forged(Endpoint &ep);
    // rc_rma.cc
    bool bind_window(Endpoint &ep, void *buf, size_t len, int access, XferMem *m, uint32_t *rkey);
    void post_invalidation(Endpoint &ep, const PendingInv &inv);
    RDMX_SLOW_PATH void post_invalidations(Endpoint &ep);
    bool post_rdma(Endpoint &ep, bool read, void *local, const XferMem &m, uint64_t raddr, uint32_t rkey,
                   size_t len, uint64_t id);
    // rc_progress.cc
    RDMX_SLOW_PATH int housekeep();        // progress' slower pace: CM and async events, keepalive
    RDMX_SLOW_PATH int progress_failed();  // after a device failure: events only
    int poll_batch();
    RDMX_SLOW_PATH void hold_wc(const ibv_wc &wc) { held_wcs_.push_back(wc); }  // test hook: a slow flush
    void drain_cq();
    void handle_send_wc(const ibv_wc &wc);
    void release_ring(Endpoint &ep, uint32_t upto, bool ok);
    RDMX_SLOW_PATH void fail_peer(int peer, rdmx_status_t why, const char *reason);
    RDMX_SLOW_PATH void fail_device(rdmx_status_t why);
    RDMX_SLOW_PATH void disconnect_lost(Endpoint &ep);
    void send_deferred_disconnects();
    bool port_active();
    Endpoint *ep_of_qp(ibv_qp *qp);
    RDMX_SLOW_PATH void handle_async();
    void dispatch_async(const ibv_async_event &ev);
    void on_qp_event(const ibv_async_event &ev);
    void on_port_event(const ibv_async_event &ev);
    void check_port_down();
    bool probe_unanswered(Endpoint &ep, uint64_t now);
    RDMX_SLOW_PATH void keepalive();
    RDMX_SLOW_PATH void report_forged();
    RDMX_SLOW_PATH void set_cm_hooks();
    void on_connected(Endpoint &ep);
    void drop_live(int peer);

    RcParams p_;
    const Config &cfg_;
    TransportSink *sink_;
    std::string name_ = "rc";
    rdmx_status_t fatal_ = RDMX_OK;    // device-wide failure
    uint64_t port_down_ns_ = 0;        // when the port went down (PORT_ERR), 0 while up
    uint64_t keepalive_ns_ = 0;        // next check for silent peers (fast_ns)
    // Peers with a connection up, in no order: what keepalive, flush and
    // quiet visit, so their cost follows the connections, not the job.
    // Added when a connection comes up, removed when it is closed or fails.
    std::vector<int> live_;
    size_t ever_connected_ = 0;        // connections that came up: owed_'s capacity
    std::vector<int> owed_;            // peers granted something since return_credits last looked (Endpoint::owed)
    bool forged_ = false;              // some endpoint's credit slot held a forged grant
    bool hooks_set_ = false;
    bool lazy_ = false;                // RDMX_CONNECT=lazy (or auto above its threshold): connect on first use
    int held_peer_ = -1;               // test hook: send completions of this peer are held
    std::vector<ibv_wc> held_wcs_;

    // Creation order: destroyed in reverse, as verbs requires.
    ConnManager cm_;
    Device dev_;
    Iface iface_;
    Slab send_pool_;
    CreditSlots credit_mem_;
    MrRegistrar registrar_;
    std::unique_ptr<RegCache> rcache_;  // null: register per transfer
    bool rndv_mw_ = false;              // buffers exposed through type 2 windows
    bool rndv_put_ = false;
    uint32_t rndv_reads_ = 8;
    size_t rndv_chunk_ = 1u << 20;
    std::vector<Endpoint> eps_;
    std::vector<sockaddr_in> addrs_;
    uint32_t credits_ = 0;
    uint32_t credit_write_at_ = 0;  // half the window, rounded up: (credits_ + 1) / 2, read per arrival
    uint32_t refusals_ = 0;  // connections make_room refused (no room on the device's queues)
    uint32_t sq_depth_ = 0;
    uint32_t cqe_ = 0;
    uint32_t srq_depth_ = 0;
    uint32_t max_inline_ = 0;
    // Fewer bounce buffers free than one peer may hold unsignalled (the
    // longest signalling period of any QP): every SEND is signalled.
    size_t low_bounce_ = Endpoint::kMaxSignalEvery;
    uint32_t max_msg_ = 1u << 30;
    // The inline SEND's work request, built once (UCX keeps its inline
    // active message's the same way): a post writes only what changes. The
    // provider copies inline data at ibv_post_send, so the one header
    // buffer serves every post; posts run one at a time (under the engine
    // lock, or on the one thread with RDMX_THREADS=single). A body of up to
    // kGatherMax bytes is copied behind the header (`tail`), so the WR has
    // one gather entry: the provider's inline copy is a loop over the
    // entries with a memcpy call for each, which costs more than our copy
    // of a few bytes.
    static constexpr size_t kGatherMax = kInlineCopyMax;
    struct InlineSend {
        wire::MsgHdr hdr{};
        unsigned char tail[kGatherMax]{};  // right behind hdr (static_assert below)
        ibv_sge sge[2]{};
        ibv_send_wr wr{};
        InlineSend() {
            hdr.version = static_cast<uint8_t>(wire::kVersion);
            sge[0] = {reinterpret_cast<uint64_t>(&hdr), sizeof(hdr), 0};
            wr.sg_list = sge;
            wr.opcode = IBV_WR_SEND;
        }
        InlineSend(const InlineSend &) = delete;  // sge and wr point into this object
        InlineSend &operator=(const InlineSend &) = delete;
    } isend_;
    static_assert(offsetof(InlineSend, tail) == sizeof(wire::MsgHdr), "the gathered body must follow the header");
};

}  // namespace rdmx
