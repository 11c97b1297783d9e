// RC zero copy for the engine's rendezvous: exposure of a buffer to one
// peer (a type 2 window bound through that peer's QP, a cached registration
// with remote access, or a registration for the transfer alone), local
// registrations for the other side, RDMA READ/WRITE, and the revocation of
// windows by a signalled LOCAL_INV.
//
// Exposure: with the registration cache and windows (opt-in,
// RDMX_RNDV_WINDOWS=1) the buffer's cached MR carries no remote access; a
// window bound to this peer's QP over exactly the message grants it, and is
// invalidated before the transfer completes. Without windows but with the
// cache (the default) the cached MR carries REMOTE_READ or REMOTE_WRITE
// (never both): whole pages, possibly merged with neighbouring transfers,
// valid until evicted or the memory is freed, for any peer that learnt its
// rkey. Without the cache exactly the message is registered, for the
// transfer only.
#include <cstring>

#include "core/log.h"
#include "transport/rc_transport.h"

namespace rdmx {

namespace {
int remote_access(Access a) { return a == Access::kRemoteRead ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE; }
ibv_mr *reg_of(const XferMem &m) { return static_cast<ibv_mr *>(m.reg); }
RegCache::Region *cached_of(const XferMem &m) { return static_cast<RegCache::Region *>(m.cached); }
}  // namespace

void RcTransport::release_mem(int peer, XferMem *m) {
    if (m->reg != nullptr) MrHandle{reg_of(*m)};  // deregisters
    m->reg = nullptr;
    if (m->window >= 0) {  // still bound (never revoked: its peer failed): destroy it
        Endpoint &ep = eps_[static_cast<size_t>(peer)];
        const auto w = static_cast<size_t>(m->window);
        if (w < ep.mws.size() && ep.mw_bound[w]) {
            ep.mws[w].reset();
            ep.mw_bound[w] = 0;
        }
        m->window = -1;
    }
    if (m->cached != nullptr) rcache_->put(cached_of(*m));
    m->cached = nullptr;
    m->lkey = 0;
}

static ibv_mw *take_window(Endpoint &ep, ibv_pd *pd, const char *dev, int32_t *idx) {
    while (!ep.mw_free.empty()) {
        uint32_t i = ep.mw_free.back();
        ep.mw_free.pop_back();
        if (ep.mws[i]) {
            *idx = static_cast<int32_t>(i);
            return ep.mws[i].get();
        }
    }
    ibv_mw *mw = nullptr;
    if (int e = vx::alloc_mw(pd, IBV_MW_TYPE_2, &mw)) {
        RDMX_WARN("rndv: ibv_alloc_mw on %s failed: %s; exposing by registration instead", dev, strerror(e));
        return nullptr;
    }
    ep.mws.emplace_back(mw);
    ep.mw_bound.push_back(0);
    *idx = static_cast<int32_t>(ep.mws.size() - 1);
    return mw;
}

// Binds a window over exactly [buf, buf + len) with `access`, usable by this
// QP (this peer) only.
bool RcTransport::bind_window(Endpoint &ep, void *buf, size_t len, int access, XferMem *m, uint32_t *rkey) {
    RegCache::Region *region = nullptr;
    if (rcache_->get(buf, len, IBV_ACCESS_MW_BIND, &region) != RDMX_OK) return false;
    m->cached = region;
    int32_t idx = -1;
    ibv_mw *mw = take_window(ep, dev_.pd(), dev_.name(), &idx);
    if (mw == nullptr) return false;  // release_mem puts the region back
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.opcode = IBV_WR_BIND_MW;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    wr.bind_mw.bind_info.mr = static_cast<ibv_mr *>(region->handle);
    wr.bind_mw.bind_info.addr = reinterpret_cast<uint64_t>(buf);
    wr.bind_mw.bind_info.length = len;
    wr.bind_mw.bind_info.mw_access_flags = static_cast<unsigned>(access);
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: binding a memory window for %zu bytes to peer %d qp 0x%x failed: %s", len, ep.peer,
                   ep.qp_num, strerror(e));
        ep.mw_free.push_back(static_cast<uint32_t>(idx));
        return false;
    }
    mw->rkey = wr.bind_mw.rkey;  // type 2 keys are the consumer's to track
    ep.record_empty_wr();
    ep.mw_bound[static_cast<size_t>(idx)] = 1;
    m->window = idx;
    *rkey = mw->rkey;
    return true;
}

bool RcTransport::can_expose(int peer) { return !rndv_mw_ || eps_[static_cast<size_t>(peer)].sq_free() >= 2; }

rdmx_status_t RcTransport::expose(int peer, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    const int access = remote_access(a);
    if (rndv_mw_ && bind_window(ep, buf, len, access, m, key)) return RDMX_OK;
    release_mem(peer, m);
    RegCache::Region *region = nullptr;
    if (rcache_ && !rndv_mw_ && rcache_->get(buf, len, static_cast<uint32_t>(access), &region) == RDMX_OK) {
        m->cached = region;
        *key = static_cast<ibv_mr *>(region->handle)->rkey;
        return RDMX_OK;
    }
    // A put receiver's buffer is written locally too (the device writes it).
    MrHandle mr;
    const int extra = a == Access::kRemoteWrite ? IBV_ACCESS_LOCAL_WRITE : 0;
    rdmx_status_t st = register_memory(dev_.pd(), dev_.name(), buf, len, access | extra, &mr);
    if (st != RDMX_OK) return st;
    *key = mr->rkey;
    m->reg = mr.release();
    return RDMX_OK;
}

// Local side of a READ (written) or WRITE (read only): the cache with no
// remote access; pages it cannot take (or no cache): this transfer alone.
rdmx_status_t RcTransport::prepare_local(void *buf, size_t len, bool write, XferMem *m) {
    RegCache::Region *region = nullptr;
    rdmx_status_t st = rcache_ ? rcache_->get(buf, len, 0, &region) : RDMX_ERR_NO_MEMORY;
    if (st == RDMX_OK) {
        m->cached = region;
        m->lkey = static_cast<ibv_mr *>(region->handle)->lkey;
        return RDMX_OK;
    }
    MrHandle mr;
    st = register_memory(dev_.pd(), dev_.name(), buf, len, write ? IBV_ACCESS_LOCAL_WRITE : 0, &mr);
    if (st != RDMX_OK) return st;
    m->lkey = mr->lkey;
    m->reg = mr.release();
    return RDMX_OK;
}

void RcTransport::post_invalidation(Endpoint &ep, const PendingInv &inv) {
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = ep.mws[static_cast<size_t>(inv.window)]->rkey;
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: invalidating a memory window with peer %d qp 0x%x failed: %s", ep.peer, ep.qp_num,
                   strerror(e));
        // Access ends anyway: release_mem destroys the window.
        return sink_->on_unexposed(ep.peer, inv.id, false);
    }
    ep.record_wr(SqSlot{-1, 0, 0, inv.id, inv.window});
    ep.unsignaled = 0;
}

void RcTransport::post_invalidations(Endpoint &ep) {
    size_t i = 0;
    for (; i < ep.invals.size() && ep.sq_free() >= 2 && ep.usable(); ++i) post_invalidation(ep, ep.invals[i]);
    ep.invals.erase(ep.invals.begin(), ep.invals.begin() + static_cast<std::ptrdiff_t>(i));
}

// A window is revoked with a signalled LOCAL_INV (on_unexposed when it
// completes); a cached or per-transfer registration is simply let go.
bool RcTransport::unexpose(int peer, XferMem *m, uint64_t id) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    if (m->window < 0 || !ep.usable()) {
        release_mem(peer, m);
        return true;
    }
    const PendingInv inv{id, m->window};
    if (ep.sq_free() < 2 || !ep.invals.empty()) ep.invals.push_back(inv);
    else post_invalidation(ep, inv);
    return false;
}

uint32_t RcTransport::rma_room(int peer, bool read, uint32_t in_flight) {
    Endpoint &ep = eps_[static_cast<size_t>(peer)];
    const uint32_t cap = read && ep.max_rd_atomic < rndv_reads_ ? ep.max_rd_atomic : rndv_reads_;
    if (in_flight >= cap || ep.sq_free() <= 2) return 0;
    const uint32_t slots = ep.sq_free() - 2;
    return cap - in_flight < slots ? cap - in_flight : slots;
}

bool RcTransport::post_rdma(Endpoint &ep, bool read, void *local, const XferMem &m, uint64_t raddr, uint32_t rkey,
                            size_t len, uint64_t id) {
    ibv_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(len), m.lkey};
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: RDMA %s of %zu bytes with peer %d qp 0x%x failed to post: %s", read ? "READ" : "WRITE", len,
                   ep.peer, ep.qp_num, strerror(e));
        fail_peer(ep.peer, RDMX_ERR_PEER_LOST, "RDMA post failed");
        return false;
    }
    ep.record_wr(SqSlot{-1, id, static_cast<uint32_t>(len)});
    ep.unsignaled = 0;
    return true;
}

bool RcTransport::get(int peer, void *dst, const XferMem &m, uint64_t raddr, uint32_t key, size_t len, uint64_t id) {
    return post_rdma(eps_[static_cast<size_t>(peer)], true, dst, m, raddr, key, len, id);
}

bool RcTransport::put(int peer, const void *src, const XferMem &m, uint64_t raddr, uint32_t key, size_t len,
                      uint64_t id) {
    return post_rdma(eps_[static_cast<size_t>(peer)], false, const_cast<void *>(src), m, raddr, key, len, id);
}

}  // namespace rdmx
