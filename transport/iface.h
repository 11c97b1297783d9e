// The per-context interface: one completion channel, one CQ for sends and
// receives, and one SRQ shared by every RC QP, fed from registered receive
// buffers. Receive buffers are re-posted in batches (one ibv_post_srq_recv
// per batch); each remembers the peer to credit once it is back on the SRQ,
// so a credit never runs ahead of the buffer that backs it.
//
// The buffers behind the SRQ can arrive in chunks: the address range for
// all of them (the depth) is reserved at open, each chunk is touched,
// registered and posted only when grow() asks for it, and the CQ is resized
// to match. On a device that can resize an SRQ (IBV_DEVICE_SRQ_RESIZE) its
// ring grows with them too, doubling; elsewhere it is created at the full
// depth (its work-request ring is small next to the buffers). A mesh opens
// with every buffer; connections on demand start with a few and grow as
// peers connect (RcTransport::make_room).
#pragma once
#include <algorithm>
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

    // depth: the SRQ's size, the most receive buffers it will ever hold.
    // first: buffers registered and posted now, rounded up to whole chunks of
    // `chunk`. cqe: the CQ's entries now; cqe_cap: the most grow() may ask.
    rdmx_status_t open(Device &dev, uint32_t depth, size_t buf_size, uint32_t first, uint32_t chunk, uint32_t cqe,
                       uint32_t cqe_cap);
    // Registers receive buffers in whole chunks until at least `buffers` are
    // registered (at most the depth) and queues them for posting (the
    // caller's next flush posts them), and resizes the CQ to hold a
    // completion for every registered buffer plus `other_cqe` (doubling, so
    // that it resizes rarely, up to cqe_cap). Failures are logged here;
    // nothing granted so far is affected.
    rdmx_status_t grow(uint32_t buffers, uint32_t other_cqe);
    ibv_cq *cq() const { return cq_.get(); }
    ibv_srq *srq() const { return srq_.get(); }
    ibv_comp_channel *channel() const { return channel_.get(); }
    char *recv_buf(uint32_t idx) const { return base_ + static_cast<size_t>(idx) * stride_; }
    uint32_t buffers() const { return registered_; }   // receive buffers registered (on the SRQ or in use)
    uint32_t srq_wr() const { return srq_wr_; }        // the SRQ's ring now (the depth, unless it grows)
    size_t pinned_bytes() const { return static_cast<size_t>(registered_) * stride_; }
    uint32_t cq_entries() const { return cq_ ? static_cast<uint32_t>(cq_->cqe) : 0; }

    // Queues a receive buffer for re-posting, to be credited to `owner` (a
    // peer, or -1) once posted. True when the caller should flush now: a
    // batch is full, the SRQ runs low, or an earlier post failed.
    // (Capacity is the buffers registered: a buffer is queued at most once.)
    bool repost(uint32_t idx, int32_t owner) {
        pending_.push_back(Repost{idx, owner});
        // refresh_due() with what a repost can change: the queue, now not
        // empty (a low SRQ already set due_ in consumed()).
        due_ = due_ || pending_.size() >= kBatch || post_failed_;
        return due_;
    }
    // Read on every progress pass, so kept as a flag, updated where its
    // inputs change (repost, consumed, flush, add_chunks).
    bool flush_due() const { return due_; }
    // A receive completion took a buffer off the SRQ.
    void consumed() {
        --posted_;
        due_ = due_ || posted_ < low_water_;
    }
    // Posts what waits, then calls on_posted(owner, n) for the posted
    // buffers that have one, n for a run of buffers of the same owner (the
    // caller grants their credits there, and only there).
    template <class OnPosted>
    rdmx_status_t flush(OnPosted &&on_posted) {
        size_t done = 0;
        const rdmx_status_t st = post_pending(&done);
        for (size_t i = 0; i < done;) {
            const int32_t owner = pending_[i].owner;
            uint32_t n = 1;
            while (i + n < done && pending_[i + n].owner == owner) ++n;
            if (owner >= 0) on_posted(owner, n);
            i += n;
        }
        if (done == pending_.size()) pending_.clear();
        else pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
        refresh_due();
        return st;
    }
    // Re-arms the SRQ low watermark (an eighth of the buffers registered)
    // after IBV_EVENT_SRQ_LIMIT_REACHED.
    rdmx_status_t arm_limit();
    // Arms the CQ event and consumes pending channel events (non-blocking fd).
    rdmx_status_t arm_cq();
    void drain_channel();
    uint32_t srq_depth() const { return depth_; }

private:
    static constexpr uint32_t kBatch = 16;
    static constexpr uint32_t kLowWaterDiv = 4;  // flush at once below depth / this posted
    struct Repost {
        uint32_t idx;    // receive buffer
        int32_t owner;   // peer credited once it is posted, or -1
    };
    rdmx_status_t post_pending(size_t *done);
    // A batch is full, the SRQ runs low, or an earlier post failed.
    void refresh_due() {
        due_ = pending_.size() >= kBatch || posted_ < low_water_ || (post_failed_ && !pending_.empty());
    }
    rdmx_status_t reserve(uint32_t depth, size_t buf_size);
    rdmx_status_t add_chunks(uint32_t buffers);
    rdmx_status_t resize_cq(uint32_t cqe);
    rdmx_status_t ensure_srq(uint32_t buffers);
    // What add_chunks registers for `buffers`: whole chunks, at most the depth.
    uint32_t whole_chunks(uint32_t buffers) const {
        return std::min(depth_, (buffers + chunk_ - 1) / chunk_ * chunk_);
    }

    Device *dev_ = nullptr;
    uint32_t depth_ = 0;
    uint32_t chunk_ = 1;        // buffers registered at a time, one MR each
    uint32_t registered_ = 0;   // buffers registered so far (a whole number of chunks, or the depth)
    uint32_t srq_wr_ = 0;       // the SRQ's max_wr now: at least registered_, at most depth_ (from open, on
                                // a device that cannot resize SRQs)
    uint32_t cqe_cap_ = 0;
    uint32_t posted_ = 0;     // buffers on the SRQ now
    uint32_t low_water_ = 0;  // fewer than this posted: flush without waiting for a batch
    bool post_failed_ = false;
    bool due_ = false;        // refresh_due()'s verdict: flush_due()
    std::vector<Repost> pending_;  // buffers waiting to be re-posted, oldest first
    // A batch's work requests, linked and pointed at their sges once (at
    // open): a flush writes only each buffer's address, key and id, and
    // cuts the chain after the batch's last.
    ibv_sge rx_sge_[kBatch]{};
    ibv_recv_wr rx_wr_[kBatch]{};
    // Callers of drain_channel may race (caller-mode progress from several threads).
    std::atomic<unsigned> unacked_events_{0};
    // The receive buffers: one reserved range, registered chunk by chunk.
    // Creation order; destroyed in reverse (SRQ, CQ, channel, the MRs, then
    // the range, unmapped by the destructor).
    char *base_ = nullptr;
    size_t bytes_ = 0;          // reserved
    size_t size_ = 0;           // a buffer's usable bytes
    size_t stride_ = 0;         // size_ rounded up to 64
    std::vector<MrHandle> mrs_; // chunk i covers buffers [i * chunk_, (i + 1) * chunk_)
    CompChannelHandle channel_;
    CqHandle cq_;
    SrqHandle srq_;
};

}  // namespace rdmx
