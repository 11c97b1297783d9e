// Connection manager: one rdma_event_channel per context, a listening id,
// and RC QPs built from RDMA CM events: a full mesh inside rdmx_init
// (connect_all: the lower rank connects, the higher accepts), or each on
// first use (attach, want, tick: either side dials, crossed connects settled
// by connect_rule.h). Ranks travel in the connect's private_data.
// Every event is acked exactly once (CmEvent); ids are destroyed only after
// their events are acked.
#pragma once
#include <netinet/in.h>

#include <functional>
#include <vector>

#include "core/hot.h"
#include "core/wire.h"
#include "transport/device.h"
#include "transport/endpoint.h"
#include "transport/iface.h"
#include "transport/memory.h"
#include "transport/qp_table.h"

namespace rdmx {

struct MeshParams {
    int rank = 0;
    int size = 1;
    uint64_t job_key = 0;
    uint32_t credits = 0;          // receive credits granted to each peer
    uint32_t sq_depth = 128;
    uint32_t max_inline = 0;       // requested; the QP's real value is stored back
    const CreditSlots *credit_slots = nullptr;  // peer i writes slot i, through its own rkey
    double timeout = 60.0;         // mesh: the whole bring-up; lazy: one connection from its first use
    bool lazy = false;             // connect on demand (want), not all at once
};

class ConnManager {
public:
    using PeerLostFn = std::function<void(int peer, rdmx_status_t why, const char *reason)>;
    using QpEventFn = std::function<void()>;
    using ConnectedFn = std::function<void(Endpoint &ep)>;
    using RoomFn = std::function<rdmx_status_t(Endpoint &ep, uint32_t qps)>;

    ConnManager() = default;
    ConnManager(const ConnManager &) = delete;
    ConnManager &operator=(const ConnManager &) = delete;
    ~ConnManager();

    // Creates the channel and the listening id bound to addr (port 0 = any).
    rdmx_status_t listen(const sockaddr_in &addr);
    ibv_context *verbs() const { return listen_id_ ? listen_id_->verbs : nullptr; }
    uint8_t port_num() const { return listen_id_ ? listen_id_->port_num : 1; }
    sockaddr_in bound_addr() const;
    int fd() const { return channel_ ? channel_->fd : -1; }

    // Connects every pair; returns when all are CONNECTED or fails by the deadline.
    rdmx_status_t connect_all(const MeshParams &p, Device &dev, Iface &iface, std::vector<Endpoint> &eps,
                              const std::vector<sockaddr_in> &addrs);
    // Lazy mode: takes the parameters connect_all would, connects nothing.
    void attach(const MeshParams &p, Device &dev, Iface &iface, std::vector<Endpoint> &eps,
                const std::vector<sockaddr_in> &addrs);
    // Lazy mode: something waits for `ep`; starts connecting if nothing has.
    // Cheap when called again (every send retry asks).
    void want(Endpoint &ep) {
        if (ep.state == ConnState::kIdle && !finalizing_) start_wanted(ep);
    }
    // Lazy mode, from housekeeping: retries due, deadlines passed.
    void tick();
    // Non-blocking: handles whatever CM events are pending (after bring-up).
    int poll_events();
    // Logs the refusals counted since the last line, once their interval is
    // up (poll_events does this too; housekeeping calls it when it skips
    // poll_events, having found the channel empty).
    void log_refusals_due();
    // Data reached a passive QP before ESTABLISHED: tell the CM (rdma_notify).
    RDMX_SLOW_PATH void notify_established(Endpoint &ep);
    // Disconnects every endpoint and waits (bounded) for DISCONNECTED.
    void disconnect_all(double timeout);
    // RDMA_CM_EVENT_DEVICE_REMOVAL was seen: the owner fails everything and
    // releases its verbs objects; this object then releases the ids and lets
    // librdmacm close the device (see the destructor).
    bool device_removed() const { return device_removed_; }

    PeerLostFn on_peer_lost;
    QpEventFn on_device_removal;
    // Once per connection, when it becomes CONNECTED (mesh and lazy alike).
    ConnectedFn on_connected;
    // Before a QP is created for `ep`, and so before its credits and credit
    // slot are promised in private_data: the owner makes the shared SRQ, CQ
    // and credit slot ready for `qps` QPs. An error (logged by the owner)
    // fails this connection attempt; RDMX_ERR_NO_MEMORY: the device's
    // queues hold no more connections.
    RoomFn make_room;
    uint32_t qps() const { return qps_; }  // QPs alive (created, not yet buried)
    QpTable qpn_to_peer;  // looked up on every receive completion

private:
    void dispatch(CmEvent &ev);
    void on_device_event(const rdma_cm_event *ev);
    void on_addr_resolved(Endpoint &ep);
    void on_route_resolved(Endpoint &ep);
    void on_connect_request(CmEvent &ev);
    void on_established(Endpoint &ep, const rdma_cm_event *ev);
    void on_rejected(Endpoint &ep, const rdma_cm_event *ev);
    void on_transient(Endpoint &ep, const rdma_cm_event *ev);
    void on_disconnected(Endpoint &ep);
    void mark_connected(Endpoint &ep);
    void start_connect(Endpoint &ep);
    RDMX_SLOW_PATH void start_wanted(Endpoint &ep);
    void give_up(Endpoint &ep, rdmx_status_t st, const char *why);
    bool never_connected(const Endpoint &ep) const;
    void backoff(Endpoint &ep, const char *why);
    rdmx_status_t setup_qp(Endpoint &ep, rdma_cm_id *id);
    void fail(Endpoint &ep, rdmx_status_t st, const char *why);
    void reject(rdma_cm_id *id, wire::RejectReason r, const char *detail);
    static void record_credits(Endpoint &ep, uint64_t addr, uint32_t rkey, uint32_t credits);
    bool from_published_addr(rdma_cm_id *id, uint32_t rank, char *got, size_t got_len) const;
    void log_refusal(rdma_cm_id *id, wire::RejectReason r, const char *detail);
    void log_refusal_summary(uint64_t now);
    void bury(Endpoint &ep);
    void fill_conn_param(rdma_conn_param *cp, const void *priv, uint8_t len, const rdma_conn_param *req) const;
    bool all_connected() const;
    rdmx_status_t report_unconnected(bool timed_out) const;
    void retry_due();

    MeshParams p_;
    Device *dev_ = nullptr;
    Iface *iface_ = nullptr;
    std::vector<Endpoint> *eps_ = nullptr;
    const std::vector<sockaddr_in> *addrs_ = nullptr;
    bool fatal_ = false;
    bool finalizing_ = false;
    bool bringing_up_ = false;          // inside connect_all
    bool device_removed_ = false;
    uint64_t addr_change_ns_ = 0;  // last ADDR_CHANGE warned about: one warning per failover burst
    // Refused connect requests: one line per interval, the rest counted (a
    // flood from outside the job must not turn into a flood of log writes).
    uint64_t refusal_logged_ns_ = 0;    // when the last refusal line was written
    uint64_t refusals_unlogged_ = 0;    // refused since, not logged one by one
    uint32_t qps_ = 0;
    std::vector<int> wanted_;           // lazy: peers wanted and not yet connected (Endpoint::wanted)
    std::vector<rdma_cm_id *> graveyard_;  // destroyed after the current event is acked
    EventChannelHandle channel_;
    CmIdHandle listen_id_;
};

}  // namespace rdmx
