// The sm transport: ranks on one node exchange messages through
// single-producer rings in the receiver's memfd segment, and move bulk data
// either by cross-memory attach (process_vm_readv/writev, one copy) or by a
// copy pipeline through the exposer's segment (two copies). Two-phase setup:
// open() creates our segment and gives the SmAddress the engine publishes
// through its bootstrap; connect() maps every local peer's segment. See
// docs/design/sm.md.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/hot.h"
#include "transport/sm_shm.h"
#include "transport/transport.h"

namespace rdmx {

enum class SmCma : uint8_t { kAuto, kOn, kOff };

struct SmParams {
    int rank = 0;                     // our job rank
    int size = 1;                     // job size
    uint64_t job_key = 0;
    size_t eager_limit = 8192;        // slot payload = sizeof(MsgHdr) + eager_limit
    uint32_t slots = 64;              // slots per inbound ring (RDMX_SM_SLOTS)
    uint32_t max_locals = 0;          // rings in our segment: the launcher's local size (up to
                                      // kMaxLocals); 0 (not known): min(size, 64)
    double peer_timeout = 30.0;       // a pipelined copy making no progress this long loses the peer
    SmCma cma = SmCma::kAuto;         // RDMX_SM_CMA
    size_t cma_thresh = 0;            // RDMX_SM_CMA_THRESH: get/put of at least this use CMA (when allowed)
    uint32_t stage_chunk = 256u << 10;    // pipelined copy chunk
    size_t rma_chunk = 4u << 20;          // largest single get/put
    uint32_t rma_depth = 8;               // gets/puts in flight per peer
};

// What a peer needs to map our segment and wake us (published through the
// engine's bootstrap).
struct SmAddress {
    uint32_t pid;
    int32_t seg_fd;     // memfd holding our segment, opened via /proc/<pid>/fd
    int32_t event_fd;   // eventfd senders write when we sleep
    uint32_t nrings;    // local ranks our segment serves (a node with more cannot use sm)
    uint64_t seg_size;
    uint64_t job_key;
};
static_assert(std::is_trivially_copyable_v<SmAddress> && sizeof(SmAddress) <= 32);

struct SmPeer {
    int rank;           // job rank
    SmAddress addr;
};

class SmTransport final : public Transport {
public:
    // Creates our segment and eventfd. RDMX_OK, or a status after logging why.
    static rdmx_status_t open(const SmParams &p, TransportSink *sink, std::unique_ptr<SmTransport> *out);
    ~SmTransport() override;
    SmAddress address() const { return addr_; }
    // Maps every local rank's segment (ours included, skipped). Peers whose
    // segment fails validation are refused: RDMX_ERR_PROTOCOL/CONNECT naming them.
    rdmx_status_t connect(const std::vector<SmPeer> &locals);
    // Why CMA is off ("" when it is in use).
    const char *cma_off_reason() const { return cma_off_; }
    bool cma_enabled() const { return cma_off_[0] == '\0'; }

    TransportKind kind() const override { return TransportKind::kSm; }
    const char *name() const override { return "sm"; }
    bool usable(int peer) const override;
    void close_peer(int peer, rdmx_status_t why) override;
    const char *peer_addr(int peer) const override;

    bool can_send(int peer, size_t body_len, bool ctrl, unsigned extra = 0) override;
    bool send(int peer, const MsgOut &m, bool ctrl) override;
    Post try_send(int peer, const MsgOut &m) override;
    void release(int peer, uint64_t token) override;

    rdmx_status_t expose(int peer, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) override;
    bool can_expose(int) override { return true; }
    bool unexpose(int peer, XferMem *m, uint64_t id) override;
    rdmx_status_t prepare_local(void *, size_t, bool, XferMem *) override { return RDMX_OK; }
    void release_mem(int peer, XferMem *m) override;
    uint32_t rma_room(int peer, bool read, uint32_t in_flight) override;
    size_t rma_chunk() const override { return p_.rma_chunk; }
    bool get(int peer, void *dst, const XferMem &m, uint64_t raddr, uint32_t key, size_t len, uint64_t id) override;
    bool put(int peer, const void *src, const XferMem &m, uint64_t raddr, uint32_t key, size_t len,
             uint64_t id) override;

    int progress(bool housekeeping) override;
    // progress() with the sink's type known: the engine passes itself (a
    // final class), so on_arrival is a direct call it can inline. `sink` is
    // the one this transport was opened with. Defined in transport/sm_poll.h.
    template <class Sink> int progress_with(Sink &sink, bool housekeeping);
    bool arm() override;
    int fds(pollfd *out, int max, bool data) override;
    void after_sleep() override;

    bool quiet() override;
    void flush() override {}
    void disconnect_all(double timeout) override;

private:
    struct Exposure {
        void *buf = nullptr;
        size_t len = 0;
        int peer = -1;
        Access access = Access::kRemoteRead;
        uint16_t gen = 1;
        bool used = false;
    };
    struct RmaOp {            // a get/put we asked for (requester side)
        uint64_t id = 0;
        char *local = nullptr;
        uint64_t raddr = 0;
        uint64_t len = 0;
        uint64_t done = 0;     // bytes copied (pipeline)
        uint32_t key = 0;
        bool put = false;
        bool sent = false;     // the request went out
    };
    struct Served {           // a pipelined op a peer asked of us (exposer side)
        bool active = false;
        sm::PipeReq req{};
        char *buf = nullptr;   // our exposed bytes at req.raddr
        uint64_t done = 0;     // bytes handled
        uint32_t chunks = 0;   // chunks handled
        uint64_t next_seq = 0; // op_seq the next request must carry
    };
    struct Done {
        int peer;
        uint64_t id;
        uint32_t bytes;
        bool ok;
    };
    enum class PeerState : uint8_t { kNone, kUp, kFailing, kDown };
    struct Peer {
        int rank = -1;
        uint32_t idx = 0;              // local index: ring/stage in every segment
        PeerState state = PeerState::kNone;
        rdmx_status_t why = RDMX_OK;
        std::string reason;
        SmAddress addr{};
        char name[32] = {};
        char *seg = nullptr;           // peer's segment (we produce into ring[our idx])
        sm::Layout lay{};
        sm::SegInfo info{};
        int event_fd = -1;
        int pidfd = -1;
        // producer side (into the peer's segment)
        sm::RingCtl *out_ring = nullptr;
        char *out_slots = nullptr;
        uint64_t out_head = 0;
        uint64_t out_tail = 0;          // the peer's tail as last read (checked)
        uint32_t send_seq = 0;
        bool out_blocked = false;       // the last room check found the ring full
        // consumer side (the peer's ring in our segment)
        sm::RingCtl *in_ring = nullptr;
        char *in_slots = nullptr;
        uint64_t in_next = 0;           // next slot to read
        uint64_t in_tail = 0;           // slots given back
        uint64_t in_published = 0;      // the tail as last stored for the peer
        uint32_t recv_seq = 0;
        std::vector<uint8_t> held;      // per slot: delivered and not yet released
        // RMA
        std::vector<RmaOp> ops;         // pipelined ops, oldest first (front is in the pipe)
        uint64_t op_seq = 0;            // requester's count of pipelined ops started
        uint32_t op_chunks = 0;         // chunks of the front op copied (get) or filled (put)
        uint32_t op_freed = 0;          // put: chunks the exposer has drained
        uint64_t op_filled = 0;         // put: bytes written into chunks
        double op_progress_at = 0;      // last time the front op moved
        uint32_t in_flight = 0;         // gets/puts not yet reported
        Served served;
    };

    SmTransport(const SmParams &p, TransportSink *sink) : p_(p), sink_(sink) {}
    rdmx_status_t create_segment();
    rdmx_status_t map_peer(Peer &pe);
    rdmx_status_t init_cma();
    Peer *peer_of(int rank);
    const Peer *peer_of(int rank) const;
    RDMX_SLOW_PATH void fail(Peer &pe, rdmx_status_t why, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
    RDMX_SLOW_PATH void violation(Peer &pe, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
    RDMX_SLOW_PATH void report_failures();
    RDMX_SLOW_PATH void publish_closed(Peer &pe);
    bool ring_room(Peer &pe, uint32_t need);
    Post send_msg(Peer &pe, const MsgOut &m, bool ctrl);
    bool post_slot(Peer &pe, sm::SlotKind kind, const void *a, size_t alen, const void *b, size_t blen);
    // The slot at our head in the peer's ring (room checked by the caller),
    // and its publication once written: the head's release store, then a
    // wake-up if the peer sleeps.
    char *next_slot(Peer &pe) { return pe.out_slots + (pe.out_head & pe.lay.slot_mask) * pe.lay.slot_size; }
    void publish_slot(Peer &pe) {
        pe.out_ring->head.store(++pe.out_head, std::memory_order_release);
        wake(pe);
    }
    void wake(Peer &pe);
    template <class Sink> int poll_ring(Peer &pe, Sink &sink);
    void give_back(Peer &pe, uint64_t slot, bool publish);
    void publish_tail(Peer &pe);
    RDMX_SLOW_PATH void housekeep(Peer &pe, double now);
    // RMA (sm_rma.cc)
    bool use_cma(size_t len) const { return cma_enabled() && len >= p_.cma_thresh; }
    RDMX_SLOW_PATH bool cma_copy(Peer &pe, bool put, char *local, uint64_t raddr, size_t len, uint64_t id);
    RDMX_SLOW_PATH void cma_denied(const char *why);
    RDMX_SLOW_PATH
    bool queue_pipe(Peer &pe, bool put, char *local, uint64_t raddr, uint32_t key, size_t len, uint64_t id);
    RDMX_SLOW_PATH void serve_request(Peer &pe, const sm::PipeReq &r);
    RDMX_SLOW_PATH int pump_requester(Peer &pe, double now);
    bool drain_get(Peer &pe, RmaOp &op, uint32_t total, int *n);
    bool fill_put(Peer &pe, RmaOp &op, uint32_t total, int *n);
    RDMX_SLOW_PATH int pump_served(Peer &pe);
    sm::ChunkCtl *chunk_ctl(char *seg, const sm::Layout &l, uint32_t ring, uint32_t c);
    void fail_ops(Peer &pe);
    RDMX_SLOW_PATH int report_done();
    bool pending_work();

    SmParams p_;
    TransportSink *sink_;
    SmAddress addr_{};
    int seg_fd_ = -1;
    int event_fd_ = -1;
    char *seg_ = nullptr;           // our segment
    sm::Layout lay_{};
    sm::SegLive *live_ = nullptr;
    sm::SegClosed *closed_ = nullptr;
    uint32_t my_idx_ = 0;
    std::vector<int> rank_to_peer_;  // job rank -> index in peers_, -1 if not local
    std::vector<Peer> peers_;
    std::vector<Peer *> remote_;     // peers_ but ourselves: what a progress pass polls
    std::vector<Exposure> exposures_;
    std::vector<uint32_t> free_exp_;
    std::vector<Done> done_;        // completions waiting for progress()
    bool failures_pending_ = false;
    const char *cma_off_ = "";
    char cma_off_buf_[96] = {};
};

}  // namespace rdmx
