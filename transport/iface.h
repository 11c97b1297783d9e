// The per-context interface: one completion channel, one CQ for sends and
// receives, and one SRQ shared by every RC QP, fed from one registered pool.
// Receive buffers are re-posted in batches (one ibv_post_srq_recv per batch).
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "transport/device.h"
#include "transport/memory.h"

namespace rdmx {

// wr_id layout: top bits say what completed.
constexpr uint64_t kWrKindShift = 62;
constexpr uint64_t kWrRecv = 0;
constexpr uint64_t kWrSend = 1;
inline uint64_t wr_kind(uint64_t id) { return id >> kWrKindShift; }
inline uint64_t make_send_wrid(uint32_t peer, uint32_t seq) {
    return (kWrSend << kWrKindShift) | (static_cast<uint64_t>(peer) << 32) | seq;
}
inline uint32_t wrid_peer(uint64_t id) { return static_cast<uint32_t>((id >> 32) & 0x3fffffff); }
inline uint32_t wrid_seq(uint64_t id) { return static_cast<uint32_t>(id); }

class Iface {
public:
    Iface() = default;
    Iface(const Iface &) = delete;
    Iface &operator=(const Iface &) = delete;
    ~Iface();

    rdmx_status_t open(Device &dev, uint32_t srq_depth, size_t buf_size, uint32_t cqe);
    ibv_cq *cq() const { return cq_.get(); }
    ibv_srq *srq() const { return srq_.get(); }
    ibv_comp_channel *channel() const { return channel_.get(); }
    const Slab &recv_pool() const { return recv_; }
    char *recv_buf(uint32_t idx) const { return recv_.buf(idx); }

    // Queues a receive buffer for re-posting; posts when a batch is full.
    // (Capacity is the SRQ depth: a buffer is queued at most once.)
    rdmx_status_t repost(uint32_t idx) {
        pending_.push_back(idx);
        return pending_.size() >= kBatch ? flush() : RDMX_OK;
    }
    rdmx_status_t flush();
    // Re-arms the SRQ low watermark after IBV_EVENT_SRQ_LIMIT_REACHED.
    rdmx_status_t arm_limit();
    // Arms the CQ event and consumes pending channel events (non-blocking fd).
    rdmx_status_t arm_cq();
    void drain_channel();
    uint32_t srq_depth() const { return depth_; }

private:
    static constexpr uint32_t kBatch = 16;
    Device *dev_ = nullptr;
    uint32_t depth_ = 0;
    std::vector<uint32_t> pending_;  // buffers waiting to be re-posted, oldest first
    // Callers of drain_channel may race (caller-mode progress from several threads).
    std::atomic<unsigned> unacked_events_{0};
    // Creation order; destroyed in reverse (SRQ, CQ, channel, then the pool's MR).
    Slab recv_;
    CompChannelHandle channel_;
    CqHandle cq_;
    SrqHandle srq_;
};

}  // namespace rdmx
