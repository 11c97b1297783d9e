#include "transport/iface.h"

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
    if (a.max_srq_wr > 0 && depth_ > static_cast<uint32_t>(a.max_srq_wr) - 1) depth_ = a.max_srq_wr - 1;
    if (static_cast<int>(cqe) > a.max_cqe) cqe = static_cast<uint32_t>(a.max_cqe);
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
    for (uint32_t i = 0; i < depth_; ++i)
        if ((st = repost(i)) != RDMX_OK) return st;
    if ((st = flush()) != RDMX_OK) return st;
    return arm_limit();
}

rdmx_status_t Iface::flush() {
    if (npending_ == 0) return RDMX_OK;
    ibv_sge sge[kBatch];
    ibv_recv_wr wr[kBatch];
    for (uint32_t i = 0; i < npending_; ++i) {
        sge[i] = {reinterpret_cast<uint64_t>(recv_.buf(pending_[i])), static_cast<uint32_t>(recv_.size()),
                  recv_.lkey()};
        wr[i] = {};
        wr[i].wr_id = (kWrRecv << kWrKindShift) | pending_[i];
        wr[i].sg_list = &sge[i];
        wr[i].num_sge = 1;
        wr[i].next = i + 1 < npending_ ? &wr[i + 1] : nullptr;
    }
    ibv_recv_wr *bad = nullptr;
    int e = vx::post_srq_recv(srq_.get(), wr, &bad);
    npending_ = 0;
    if (e != 0) {
        RDMX_ERROR("iface %s: ibv_post_srq_recv failed: %s", dev_->name(), strerror(e));
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
