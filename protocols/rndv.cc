// Rendezvous (get): the sender registers exactly the message's bytes for
// REMOTE_READ and advertises them in an RTS; the receiver, once matched,
// pulls them with RDMA READ straight into the user's buffer, in chunks no
// larger than the port's max_msg_sz with at most initiator_depth READs in
// flight, then sends FIN, which releases the sender and its registration.
#include <cstring>

#include "core/log.h"
#include "protocols/context.h"

namespace rdmx {

namespace {
constexpr size_t kChunk = 4u << 20;  // bounded READs keep the wire shared fairly
void unlink_req(rdmx_request *r) {
    if (r->link.linked()) List::unlink(&r->link);
}
}  // namespace

rdmx_status_t rndv_send_start(Ctx *c, Endpoint &ep, rdmx_request *r) {
    rdmx_status_t st = register_memory(c->dev.pd(), c->dev.name(), r->buf, r->len, IBV_ACCESS_REMOTE_READ, &r->mr);
    if (st != RDMX_OK) {
        req_complete(c, r, st);
        return st;
    }
    r->cookie = c->next_cookie++;
    wire::RndvDesc d{reinterpret_cast<uint64_t>(r->buf), r->len, r->mr->rkey, 0};
    c->rndv_sends[r->cookie] = r;
    if (!post_msg(c, ep, wire::MsgType::kRts, r->space, r->tag, r->len, r->cookie, &d, sizeof(d), false)) {
        c->rndv_sends.erase(r->cookie);
        req_complete(c, r, ep.error != 0 ? static_cast<rdmx_status_t>(ep.error) : RDMX_ERR_PEER_LOST);
        return RDMX_ERR_PEER_LOST;
    }
    r->stage = SendStage::kRtsSent;
    return RDMX_OK;
}

// The FIN names a transfer by cookie: it must be one we advertised to this peer.
void rndv_on_fin(Ctx *c, Endpoint &ep, const wire::MsgHdr &h, const wire::FinBody &f) {
    auto it = c->rndv_sends.find(h.cookie);
    if (it == c->rndv_sends.end() || it->second->peer != ep.peer) {
        RDMX_ERROR("rndv: peer %d sent FIN for transfer %llu it was never offered: closing its connection", ep.peer,
                   static_cast<unsigned long long>(h.cookie));
        fail_peer(c, ep.peer, RDMX_ERR_PROTOCOL, "FIN for an unknown transfer");
        return;
    }
    rdmx_request *r = it->second;
    c->rndv_sends.erase(it);
    r->stage = SendStage::kDone;
    rdmx_status_t st = f.status == 0 || f.status == RDMX_ERR_TRUNCATE ? RDMX_OK : RDMX_ERR_PEER_LOST;
    req_complete(c, r, st);
}

static void send_fin(Ctx *c, Endpoint &ep, uint64_t cookie, int32_t status) {
    wire::FinBody f{status, 0};
    // FIN must not wait behind queued sends forever: it uses the reserve
    // SQ slot and goes even at zero credits (the peer's SRQ holds more
    // buffers than all credits granted, see docs/design/protocols.md).
    if (!ep.usable()) return;
    if (ep.tx_credits() == 0) ++ep.tx_granted;
    (void)post_msg(c, ep, wire::MsgType::kFin, 0, 0, 0, cookie, &f, sizeof(f), false);
}

static void finish_recv(Ctx *c, rdmx_request *r, rdmx_status_t st) {
    Endpoint &ep = c->eps[static_cast<size_t>(r->peer)];
    send_fin(c, ep, r->cookie, st == RDMX_OK ? 0 : st);
    unlink_req(r);
    req_complete(c, r, st != RDMX_OK ? st : (r->remote.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK));
}

void rndv_recv_start(Ctx *c, rdmx_request *r, int peer, int tag, const wire::RndvDesc &d, uint64_t cookie) {
    r->matched = true;
    r->peer = peer;
    r->remote = d;
    r->cookie = cookie;
    r->info = {peer, tag, static_cast<size_t>(d.length), RDMX_OK};
    r->copy_len = d.length < r->len ? static_cast<size_t>(d.length) : r->len;
    r->rd_issued = r->rd_done = 0;
    if (peer == c->rank) return;  // self transfers never get here
    Endpoint &ep = c->eps[static_cast<size_t>(peer)];
    if (r->copy_len == 0) {
        send_fin(c, ep, cookie, 0);
        req_complete(c, r, d.length > r->len ? RDMX_ERR_TRUNCATE : RDMX_OK);
        return;
    }
    rdmx_status_t st = register_memory(c->dev.pd(), c->dev.name(), r->buf, r->copy_len, IBV_ACCESS_LOCAL_WRITE,
                                       &r->mr);
    if (st != RDMX_OK) {
        send_fin(c, ep, cookie, st);
        req_complete(c, r, st);
        return;
    }
    c->rndv_recvs[reinterpret_cast<uint64_t>(r)] = r;
    ep.reads.push_back(&r->link);
    rndv_issue_reads(c, ep);
}

static bool post_read(Ctx *c, Endpoint &ep, rdmx_request *r) {
    size_t n = r->copy_len - r->rd_issued;
    size_t cap = c->max_msg < kChunk ? c->max_msg : kChunk;
    if (n > cap) n = cap;
    ibv_sge sge{reinterpret_cast<uint64_t>(r->buf) + r->rd_issued, static_cast<uint32_t>(n), r->mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = make_send_wrid(static_cast<uint32_t>(ep.peer), ep.sq_posted);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = r->remote.addr + r->rd_issued;
    wr.wr.rdma.rkey = r->remote.rkey;
    ibv_send_wr *bad = nullptr;
    if (int e = vx::post_send(ep.qp, &wr, &bad)) {
        RDMX_ERROR("rndv: RDMA READ of %zu bytes from peer %d qp 0x%x failed to post: %s", n, ep.peer, ep.qp_num,
                   strerror(e));
        return false;
    }
    ep.ring[ep.sq_posted & (ep.sq_depth - 1)] = SqSlot{-1, reinterpret_cast<uint64_t>(r), static_cast<uint32_t>(n)};
    ++ep.sq_posted;
    ep.unsignaled = 0;
    ++ep.reads_in_flight;
    r->rd_issued += n;
    return true;
}

void rndv_issue_reads(Ctx *c, Endpoint &ep) {
    while (ListNode *n = ep.reads.first()) {
        auto *r = container_of<rdmx_request, &rdmx_request::link>(n);
        while (r->rd_issued < r->copy_len && ep.reads_in_flight < ep.max_rd_atomic && ep.sq_free() > 2) {
            if (!post_read(c, ep, r)) {
                c->rndv_recvs.erase(reinterpret_cast<uint64_t>(r));
                unlink_req(r);
                req_complete(c, r, RDMX_ERR_PEER_LOST);
                return fail_peer(c, ep.peer, RDMX_ERR_PEER_LOST, "RDMA READ post failed");
            }
        }
        if (r->rd_issued < r->copy_len) return;  // out of READ slots: wait for completions
        List::unlink(n);                          // all issued: wait for the READs
        ep.reads_done.push_back(n);
    }
}

void rndv_on_read_done(Ctx *c, uint64_t id, uint32_t bytes, bool ok) {
    auto it = c->rndv_recvs.find(id);
    if (it == c->rndv_recvs.end()) return;
    rdmx_request *r = it->second;
    Endpoint &ep = c->eps[static_cast<size_t>(r->peer)];
    --ep.reads_in_flight;
    if (!ok) {
        c->rndv_recvs.erase(it);
        unlink_req(r);
        req_complete(c, r, ep.error != 0 ? static_cast<rdmx_status_t>(ep.error) : RDMX_ERR_PEER_LOST);
        return;
    }
    r->rd_done += bytes;
    if (r->rd_done == r->copy_len) {
        c->rndv_recvs.erase(it);
        finish_recv(c, r, RDMX_OK);
    }
    rndv_issue_reads(c, ep);
}

void rndv_fail_peer(Ctx *c, int peer, rdmx_status_t why) {
    for (auto it = c->rndv_sends.begin(); it != c->rndv_sends.end();) {
        if (it->second->peer == peer) {
            req_complete(c, it->second, why);
            it = c->rndv_sends.erase(it);
        } else {
            ++it;
        }
    }
    for (auto it = c->rndv_recvs.begin(); it != c->rndv_recvs.end();) {
        if (it->second->peer == peer) {
            unlink_req(it->second);
            req_complete(c, it->second, why);
            it = c->rndv_recvs.erase(it);
        } else {
            ++it;
        }
    }
}

}  // namespace rdmx
