#include "transport/iface.h"

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
}

rdmx_status_t Iface::open(Device &dev, uint32_t srq_depth, size_t buf_size, uint32_t cqe) {
    dev_ = &dev;
    const ibv_device_attr &a = dev.attr();
    depth_ = srq_depth;
    // The caller sized the queues within these limits (plan_queues): a depth
    // clamped here would break the credits it promised peers.
    if ((a.max_srq_wr > 0 && depth_ > static_cast<uint32_t>(a.max_srq_wr) - 1) ||
        (a.max_cqe > 0 && cqe > static_cast<uint32_t>(a.max_cqe))) {
        RDMX_ERROR("iface %s: SRQ depth %u / CQ %u entries exceed the device's max_srq_wr %d / max_cqe %d",
                   dev.name(), depth_, cqe, a.max_srq_wr, a.max_cqe);
        return RDMX_ERR_INTERNAL;
    }
    pending_.reserve(depth_);  // every buffer may wait for a re-post at once: no allocation later
    rdmx_status_t st = recv_.init(dev.pd(), dev.name(), depth_, buf_size, IBV_ACCESS_LOCAL_WRITE);
    if (st != RDMX_OK) return st;
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
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = depth_;
    sa.attr.max_sge = 1;
    ibv_srq *srq = nullptr;
    if (int e = vx::create_srq(dev.pd(), &sa, &srq)) {
        RDMX_ERROR("iface %s: ibv_create_srq(max_wr %u) failed: %s (device max_srq_wr %d)", dev.name(), depth_,
                   strerror(e), a.max_srq_wr);
        return RDMX_ERR_DEVICE;
    }
    srq_.reset(srq);
    // The SRQ limit event (arm_limit) fires at depth/8: flushing below
    // depth/4 keeps a partial batch from ever being the reason it fires.
    low_water_ = depth_ / kLowWaterDiv;
    for (uint32_t i = 0; i < depth_; ++i) (void)repost(i, -1);
    if ((st = flush([](int32_t) {})) != RDMX_OK) return st;
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
        ibv_sge sge[kBatch];
        ibv_recv_wr wr[kBatch];
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t idx = pending_[done + i].idx;
            sge[i] = {reinterpret_cast<uint64_t>(recv_.buf(idx)), static_cast<uint32_t>(recv_.size()), recv_.lkey()};
            wr[i] = {};
            wr[i].wr_id = (kWrRecv << kWrKindShift) | idx;
            wr[i].sg_list = &sge[i];
            wr[i].num_sge = 1;
            wr[i].next = i + 1 < n ? &wr[i + 1] : nullptr;
        }
        ibv_recv_wr *bad = nullptr;
        e = vx::post_srq_recv(srq_.get(), wr, &bad);
        done += e == 0 ? n : (bad != nullptr ? static_cast<size_t>(bad - wr) : 0);
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
    if (int e = vx::arm_srq_limit(srq_.get(), depth_ / 8 > 0 ? depth_ / 8 : 1)) {
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
