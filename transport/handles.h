// RAII handles for every verbs and rdma_cm object rdmx creates. Owners
// declare them in creation order so destruction runs in reverse: QP before
// CQ and SRQ, MRs before the PD, ids before the event channel.
#pragma once
#include <memory>
#include <utility>

#include "transport/verbs_shim.h"

namespace rdmx {

template <typename T, int (*Destroy)(T *)>
struct VerbsDeleter {
    void operator()(T *p) const {
        if (p != nullptr) (void)Destroy(p);
    }
};

using PdHandle = std::unique_ptr<ibv_pd, VerbsDeleter<ibv_pd, vx::dealloc_pd>>;
using MrHandle = std::unique_ptr<ibv_mr, VerbsDeleter<ibv_mr, vx::dereg_mr>>;
using MwHandle = std::unique_ptr<ibv_mw, VerbsDeleter<ibv_mw, vx::dealloc_mw>>;
using CompChannelHandle = std::unique_ptr<ibv_comp_channel, VerbsDeleter<ibv_comp_channel, vx::destroy_comp_channel>>;
using CqHandle = std::unique_ptr<ibv_cq, VerbsDeleter<ibv_cq, vx::destroy_cq>>;
using SrqHandle = std::unique_ptr<ibv_srq, VerbsDeleter<ibv_srq, vx::destroy_srq>>;

inline void destroy_channel(rdma_event_channel *ch) { vx::destroy_event_channel(ch); }
struct EventChannelDeleter {
    void operator()(rdma_event_channel *ch) const {
        if (ch != nullptr) destroy_channel(ch);
    }
};
using EventChannelHandle = std::unique_ptr<rdma_event_channel, EventChannelDeleter>;

// An rdma_cm_id and the QP rdma_create_qp hung on it; the QP goes first.
struct CmIdDeleter {
    void operator()(rdma_cm_id *id) const {
        if (id == nullptr) return;
        if (id->qp != nullptr) vx::destroy_qp(id);
        (void)vx::destroy_id(id);
    }
};
using CmIdHandle = std::unique_ptr<rdma_cm_id, CmIdDeleter>;

// One CM event, acknowledged exactly once: when this object dies, on every
// path. rdma_destroy_id blocks until its events are acked, so never keep one
// across a destroy of the id it names.
class CmEvent {
public:
    CmEvent() = default;
    explicit CmEvent(rdma_cm_event *ev) : ev_(ev) {}
    CmEvent(CmEvent &&o) noexcept : ev_(std::exchange(o.ev_, nullptr)) {}
    CmEvent &operator=(CmEvent &&o) noexcept {
        if (this != &o) {
            reset();
            ev_ = std::exchange(o.ev_, nullptr);
        }
        return *this;
    }
    CmEvent(const CmEvent &) = delete;
    CmEvent &operator=(const CmEvent &) = delete;
    ~CmEvent() { reset(); }
    void reset() {
        if (ev_ != nullptr) (void)vx::ack_cm_event(std::exchange(ev_, nullptr));
    }
    rdma_cm_event *operator->() const { return ev_; }
    rdma_cm_event *get() const { return ev_; }
    explicit operator bool() const { return ev_ != nullptr; }

private:
    rdma_cm_event *ev_ = nullptr;
};

}  // namespace rdmx
