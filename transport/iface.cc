#include "transport/iface.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace rdmx {

Iface::~Iface() {
    srq_.reset();
    if (unsigned n = unacked_events_.load(); cq_ && n != 0) vx::ack_cq_events(cq_.get(), n);
    cq_.reset();
    channel_.reset();
    mrs_.clear();  // deregistered before the memory they cover goes
    if (base_ != nullptr) munmap(base_, bytes_);
}

// The address range for every buffer the SRQ can hold, reserved without
// backing (MAP_NORESERVE): pages cost nothing until a chunk is touched.
rdmx_status_t Iface::reserve(uint32_t depth, size_t buf_size) {
    size_ = buf_size;
    stride_ = (buf_size + 63) & ~static_cast<size_t>(63);
    bytes_ = stride_ * depth;
    void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        RDMX_ERROR("iface %s: reserving %zu bytes for %u receive buffers failed: %s", dev_->name(), bytes_, depth,
                   strerror(errno));
        bytes_ = 0;
        return RDMX_ERR_NO_MEMORY;
    }
    base_ = static_cast<char *>(p);
    return RDMX_OK;
}

// Whole chunks (the last may be short, at the depth) until `buffers` are
// registered; each new buffer waits in pending_ for the next flush.
rdmx_status_t Iface::add_chunks(uint32_t buffers) {
    if (buffers > depth_) buffers = depth_;
    while (registered_ < buffers) {
        const uint32_t first = registered_;
        const uint32_t n = std::min(chunk_, depth_ - first);
        char *at = recv_buf(first);
        const size_t len = static_cast<size_t>(n) * stride_;
        std::memset(at, 0, len);  // first touch: pages land on this thread's node
        MrHandle mr;
        if (rdmx_status_t st = register_memory(dev_->pd(), dev_->name(), at, len, IBV_ACCESS_LOCAL_WRITE, &mr))
            return st;
        mrs_.push_back(std::move(mr));
        registered_ += n;
        pending_.reserve(registered_);  // every buffer may wait for a re-post at once: no allocation later
        for (uint32_t i = first; i < registered_; ++i) pending_.push_back(Repost{i, -1});
    }
    // The SRQ limit event (arm_limit) fires at an eighth of the buffers:
    // flushing below a quarter keeps a partial batch from ever being why.
    low_water_ = registered_ / kLowWaterDiv;
    refresh_due();
    return RDMX_OK;
}

rdmx_status_t Iface::resize_cq(uint32_t cqe) {
    if (cqe <= cq_entries()) return RDMX_OK;
    uint32_t want = cq_entries() * 2 > cqe ? cq_entries() * 2 : cqe;
    if (want > cqe_cap_) want = cqe < cqe_cap_ ? cqe_cap_ : cqe;
    if (int e = vx::resize_cq(cq_.get(), static_cast<int>(want))) {
        RDMX_ERROR("iface %s: ibv_resize_cq from %u to %u entries failed: %s (device max_cqe %d; hint: "
                   "RDMX_CONNECT=mesh sizes the CQ once, in rdmx_init)", dev_->name(), cq_entries(), want,
                   strerror(e), dev_->attr().max_cqe);
        return e == ENOMEM ? RDMX_ERR_NO_MEMORY : RDMX_ERR_DEVICE;
    }
    return RDMX_OK;
}

// The SRQ's ring holds `buffers` (whole chunks, at most the depth), grown
// by doubling where the device allows; otherwise it was created that deep.
rdmx_status_t Iface::ensure_srq(uint32_t buffers) {
    const uint32_t need = whole_chunks(buffers);
    if (need <= srq_wr_) return RDMX_OK;
    const uint32_t want = std::min(depth_, std::max(need, srq_wr_ * 2));
    if (int e = vx::resize_srq(srq_.get(), want)) {
        RDMX_ERROR("iface %s: ibv_modify_srq(max_wr) from %u to %u failed: %s (device max_srq_wr %d; hint: "
                   "RDMX_CONNECT=mesh sizes the SRQ once, in rdmx_init)", dev_->name(), srq_wr_, want, strerror(e),
                   dev_->attr().max_srq_wr);
        return e == ENOMEM ? RDMX_ERR_NO_MEMORY : RDMX_ERR_DEVICE;
    }
    srq_wr_ = want;
    return RDMX_OK;
}

rdmx_status_t Iface::grow(uint32_t buffers, uint32_t other_cqe) {
    const uint32_t had = registered_;
    if (rdmx_status_t st = ensure_srq(buffers)) return st;
    if (rdmx_status_t st = add_chunks(buffers)) return st;
    if (rdmx_status_t st = resize_cq(registered_ + other_cqe)) return st;
    if (registered_ != had) {
        RDMX_DEBUG("iface %s: %u receive buffers registered (%zu KiB pinned, SRQ of %u, at most %u), CQ of %u entries",
                   dev_->name(), registered_, pinned_bytes() >> 10, srq_wr_, depth_, cq_entries());
        (void)arm_limit();
    }
    return RDMX_OK;
}

rdmx_status_t Iface::open(Device &dev, uint32_t depth, size_t buf_size, uint32_t first, uint32_t chunk, uint32_t cqe,
                          uint32_t cqe_cap) {
    dev_ = &dev;
    const ibv_device_attr &a = dev.attr();
    depth_ = depth;
    chunk_ = chunk > 0 ? chunk : 1;
    cqe_cap_ = cqe_cap;
    // The caller sized the queues within these limits (plan_queues): a depth
    // clamped here would break the credits it promised peers.
    if ((a.max_srq_wr > 0 && depth_ > static_cast<uint32_t>(a.max_srq_wr) - 1) ||
        (a.max_cqe > 0 && cqe_cap > static_cast<uint32_t>(a.max_cqe))) {
        RDMX_ERROR("iface %s: SRQ depth %u / CQ %u entries exceed the device's max_srq_wr %d / max_cqe %d",
                   dev.name(), depth_, cqe_cap, a.max_srq_wr, a.max_cqe);
        return RDMX_ERR_INTERNAL;
    }
    rdmx_status_t st = reserve(depth_, buf_size);
    if (st != RDMX_OK) return st;
    for (uint32_t i = 0; i < kBatch; ++i) {
        rx_sge_[i].length = static_cast<uint32_t>(size_);
        rx_wr_[i].sg_list = &rx_sge_[i];
        rx_wr_[i].num_sge = 1;
        rx_wr_[i].next = i + 1 < kBatch ? &rx_wr_[i + 1] : nullptr;
    }
    ibv_comp_channel *ch = nullptr;
    if (int e = vx::create_comp_channel(dev.ctx(), &ch)) {
        RDMX_ERROR("iface %s: ibv_create_comp_channel failed: %s", dev.name(), strerror(e));
        return RDMX_ERR_DEVICE;
    }
    channel_.reset(ch);
    (void)vx::set_nonblock(ch->fd);
    ibv_cq *cq = nullptr;
    if (int e = vx::create_cq(dev.ctx(), static_cast<int>(cqe), ch, &cq)) {
        RDMX_ERROR("iface %s: ibv_create_cq(%u entries) failed: %s (device max_cqe %d)", dev.name(), cqe,
                   strerror(e), a.max_cqe);
        return RDMX_ERR_DEVICE;
    }
    cq_.reset(cq);
    const uint32_t first_bufs = whole_chunks(first);
    const bool grows = first_bufs < depth_ && (a.device_cap_flags & IBV_DEVICE_SRQ_RESIZE) != 0;
    srq_wr_ = grows ? std::max(first_bufs, 1u) : depth_;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = srq_wr_;
    sa.attr.max_sge = 1;
    ibv_srq *srq = nullptr;
    if (int e = vx::create_srq(dev.pd(), &sa, &srq)) {
        RDMX_ERROR("iface %s: ibv_create_srq(max_wr %u) failed: %s (device max_srq_wr %d)", dev.name(), srq_wr_,
                   strerror(e), a.max_srq_wr);
        return RDMX_ERR_DEVICE;
    }
    srq_.reset(srq);
    if ((st = add_chunks(first)) != RDMX_OK) return st;
    if ((st = flush([](int32_t, uint32_t) {})) != RDMX_OK) return st;  // nothing owned yet: no credit to grant
    return arm_limit();
}

// Posts what waits, oldest first, a batch per call to the device. A failed
// post keeps every buffer it did not take (the WRs from `bad` on) for the
// next flush: a receive buffer is never lost. *done: how many were posted.
rdmx_status_t Iface::post_pending(size_t *done_out) {
    size_t done = 0;
    int e = 0;
    while (done < pending_.size() && e == 0) {
        const uint32_t n = static_cast<uint32_t>(std::min<size_t>(kBatch, pending_.size() - done));
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t idx = pending_[done + i].idx;
            rx_sge_[i].addr = reinterpret_cast<uint64_t>(recv_buf(idx));
            rx_sge_[i].lkey = mrs_[idx / chunk_]->lkey;
            rx_wr_[i].wr_id = (kWrRecv << kWrKindShift) | idx;
        }
        rx_wr_[n - 1].next = nullptr;
        ibv_recv_wr *bad = nullptr;
        e = vx::post_srq_recv(srq_.get(), rx_wr_, &bad);
        if (n < kBatch) rx_wr_[n - 1].next = &rx_wr_[n];  // the chain whole again for the next batch
        done += e == 0 ? n : (bad != nullptr ? static_cast<size_t>(bad - rx_wr_) : 0);
    }
    *done_out = done;
    posted_ += static_cast<uint32_t>(done);
    post_failed_ = e != 0;
    if (e != 0) {
        RDMX_ERROR("iface %s: ibv_post_srq_recv failed: %s (%zu receive buffers wait for the next attempt)",
                   dev_->name(), strerror(e), pending_.size() - done);
        return RDMX_ERR_DEVICE;
    }
    return RDMX_OK;
}

rdmx_status_t Iface::arm_limit() {
    if (int e = vx::arm_srq_limit(srq_.get(), registered_ / 8 > 0 ? registered_ / 8 : 1)) {
        // rxe and most HCAs support it; without it we only lose an early warning.
        RDMX_DEBUG("iface %s: ibv_modify_srq(srq_limit) failed: %s", dev_->name(), strerror(e));
    }
    return RDMX_OK;
}

rdmx_status_t Iface::arm_cq() {
    if (int e = vx::req_notify_cq(cq_.get())) {
        RDMX_ERROR("iface %s: ibv_req_notify_cq failed: %s", dev_->name(), strerror(e));
        return RDMX_ERR_DEVICE;
    }
    return RDMX_OK;
}

void Iface::drain_channel() {
    ibv_cq *cq = nullptr;
    while (vx::get_cq_event(channel_.get(), &cq) == 0) unacked_events_.fetch_add(1, std::memory_order_relaxed);
    if (unacked_events_.load(std::memory_order_relaxed) >= 64) {
        // exchange: each event is acked by exactly one of the racing callers
        if (unsigned n = unacked_events_.exchange(0, std::memory_order_relaxed); n != 0)
            vx::ack_cq_events(cq_.get(), n);
    }
}

}  // namespace rdmx
