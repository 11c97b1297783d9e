// What a rendezvous exposes to the peer it is meant for, and nothing more.
// Three MPI processes: rdmx ranks 0 and 1 and a raw-verbs peer that takes
// rank 2's slot in the bootstrap (an MPI_Allgather callback) and abuses the
// keys it is given:
//   get: rank 0 sends it a rendezvous-sized message (RDMX_RNDV_PROTO=get);
//        with the RTS's rkey the peer may READ the message, and it tries to
//        WRITE into it. The WRITE must fail, and rank 0's buffer must be
//        unchanged.
//   put: the peer offers rank 1 a put (an RTS with kDescPut); rank 1 answers
//        with a CTS naming its receive buffer for the peer to WRITE, and the
//        peer tries to READ it instead. The READ must fail.
// The peer then drops both connections; ranks 0 and 1 see their transfer end
// with an error, check their buffers and exchange a message with each other.
// Windows off (the default): this is the exposure of the cached
// registrations, the path every device without type 2 windows takes.
#include <mpi.h>

#include <arpa/inet.h>
#include <poll.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "core/config.h"
#include "core/wire.h"
#include "boot_mimic.h"
#include "harness.h"
#include "transport/device.h"

namespace {

using namespace rdmx;
namespace w = rdmx::wire;

constexpr int kPeer = 2;
constexpr int kTag = 6;
constexpr size_t kLen = 256 * 1024;  // rendezvous-sized
constexpr size_t kProbe = 16;        // bytes the peer tries to write or read
constexpr size_t kSlot = 256;        // receive slot per connection


int gather(const void *in, void *out, size_t len, void *) {
    return MPI_Allgather(in, static_cast<int>(len), MPI_BYTE, out, static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD);
}

struct Peer {
    rdma_event_channel *ch = nullptr;
    rdma_cm_id *listen_id = nullptr;
    ibv_pd *pd = nullptr;
    ibv_cq *cq = nullptr;
    ibv_mr *mr = nullptr;
    std::vector<char> buf = std::vector<char>(kLen + 4 * kSlot);
    rdma_cm_id *conns[2] = {nullptr, nullptr};
    uint64_t key = 0;

    ~Peer() {
        for (rdma_cm_id *id : conns) {
            if (id == nullptr) continue;
            if (id->qp) rdma_destroy_qp(id);
            rdma_destroy_id(id);
        }
        if (mr) ibv_dereg_mr(mr);
        if (cq) ibv_destroy_cq(cq);
        if (pd) ibv_dealloc_pd(pd);
        if (listen_id) rdma_destroy_id(listen_id);
        if (ch) rdma_destroy_event_channel(ch);
    }
    char *slot(int rank) { return buf.data() + kLen + static_cast<size_t>(rank) * kSlot; }
    char *staging() { return buf.data() + kLen + 2 * kSlot; }
    void make_qp(rdma_cm_id *id) {
        if (pd == nullptr) {
            pd = ibv_alloc_pd(id->verbs);
            cq = ibv_create_cq(id->verbs, 64, nullptr, nullptr, 0);
            mr = ibv_reg_mr(pd, buf.data(), buf.size(),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
            RT_CHECK(pd && cq && mr, "peer: verbs set-up failed");
        }
        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = cq;
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = qa.cap.max_recv_wr = 8;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        RT_CHECK(rdma_create_qp(id, pd, &qa) == 0, "peer: rdma_create_qp: %s", strerror(errno));
    }
    void post_recv(int rank) {
        ibv_sge sge{reinterpret_cast<uint64_t>(slot(rank)), kSlot, mr->lkey};
        ibv_recv_wr wr{}, *bad = nullptr;
        wr.wr_id = static_cast<uint64_t>(rank);
        wr.sg_list = &sge;
        wr.num_sge = 1;
        RT_CHECK(ibv_post_recv(conns[rank]->qp, &wr, &bad) == 0, "peer: post_recv");
    }
    void accept_both() {
        int established = 0;
        while (established < 2) {
            pollfd p{ch->fd, POLLIN, 0};
            RT_CHECK(poll(&p, 1, 60000) > 0, "peer: no CM event while accepting");
            rdma_cm_event *ev = nullptr;
            if (rdma_get_cm_event(ch, &ev) != 0) continue;
            if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
                w::ConnectPriv cp{};
                RT_CHECK(w::decode_connect(ev->param.conn.private_data, ev->param.conn.private_data_len, &cp) ==
                             w::DecodeError::kOk && cp.src_rank < 2, "peer: bad connect request");
                make_qp(ev->id);
                conns[cp.src_rank] = ev->id;
                post_recv(static_cast<int>(cp.src_rank));
                w::AcceptPriv ap{};
                ap.magic = w::kMagic;
                ap.version = w::kVersion;
                ap.length = sizeof(ap);
                ap.job_key = key;
                ap.src_rank = kPeer;
                ap.credits = 8;
                ap.credit_addr = reinterpret_cast<uint64_t>(staging() + kSlot - 64);  // credits land here
                ap.credit_rkey = mr->rkey;
                rdma_conn_param prm{};
                prm.private_data = &ap;
                prm.private_data_len = sizeof(ap);
                prm.responder_resources = prm.initiator_depth = 1;
                prm.rnr_retry_count = 7;
                RT_CHECK(rdma_accept(ev->id, &prm) == 0, "peer: rdma_accept: %s", strerror(errno));
            } else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
                ++established;
            }
            rdma_ack_cm_event(ev);
        }
    }
    ibv_wc poll_one(const char *what) {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (;;) {
            ibv_wc wc{};
            int n = ibv_poll_cq(cq, 1, &wc);
            RT_CHECK(n >= 0, "peer: ibv_poll_cq");
            if (n == 1) return wc;
            RT_CHECK(std::chrono::steady_clock::now() < until, "peer: no completion for %s in 60 s", what);
        }
    }
    // The next message from `rank`: its header and rendezvous descriptor.
    void recv_desc(int rank, w::MsgType want, w::MsgHdr *h, w::RndvDesc *d) {
        ibv_wc wc = poll_one("a message");
        RT_CHECK(wc.status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV) && wc.wr_id == static_cast<uint64_t>(rank) &&
                     wc.byte_len == sizeof(*h) + sizeof(*d),
                 "peer: from rank %d: %s, %u bytes", rank, ibv_wc_status_str(wc.status), wc.byte_len);
        std::memcpy(h, slot(rank), sizeof(*h));
        std::memcpy(d, slot(rank) + sizeof(*h), sizeof(*d));
        RT_CHECK(h->type == static_cast<uint8_t>(want), "peer: rank %d sent type %u, not %u", rank, h->type,
                 static_cast<unsigned>(want));
    }
    // One RDMA WRITE or READ of kProbe bytes at the peer's (addr, rkey); its status.
    ibv_wc_status rdma(int rank, ibv_wr_opcode op, uint64_t addr, uint32_t rkey) {
        std::memset(staging(), 'Z', kProbe);
        ibv_sge sge{reinterpret_cast<uint64_t>(staging()), kProbe, mr->lkey};
        ibv_send_wr wr{}, *bad = nullptr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = addr;
        wr.wr.rdma.rkey = rkey;
        RT_CHECK(ibv_post_send(conns[rank]->qp, &wr, &bad) == 0, "peer: post_send");
        return poll_one(op == IBV_WR_RDMA_WRITE ? "the WRITE" : "the READ").status;
    }
    void send(int rank, const void *msg, size_t len) {
        std::memcpy(staging(), msg, len);
        ibv_sge sge{reinterpret_cast<uint64_t>(staging()), static_cast<uint32_t>(len), mr->lkey};
        ibv_send_wr wr{}, *bad = nullptr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        RT_CHECK(ibv_post_send(conns[rank]->qp, &wr, &bad) == 0, "peer: post_send");
        ibv_wc wc = poll_one("an RTS");
        RT_CHECK(wc.status == IBV_WC_SUCCESS, "peer: RTS to rank %d: %s", rank, ibv_wc_status_str(wc.status));
    }
};

int run_peer(int np) {
    Peer f;
    Config cfg;
    RT_CHECK(cfg.load(nullptr) == RDMX_OK, "config");
    DeviceChoice dc;
    if (select_device(cfg, 0, &dc) != RDMX_OK) {
        rt::join_bootstrap(gather, np, 0, 0);
        return 77;
    }
    RT_CHECK((f.ch = rdma_create_event_channel()) != nullptr, "peer: channel");
    RT_CHECK(rdma_create_id(f.ch, &f.listen_id, nullptr, RDMA_PS_TCP) == 0, "peer: id");
    RT_CHECK(rdma_bind_addr(f.listen_id, reinterpret_cast<sockaddr *>(&dc.addr)) == 0, "peer: bind");
    RT_CHECK(rdma_listen(f.listen_id, 16) == 0, "peer: listen");
    f.key = rt::join_bootstrap(gather, np, dc.addr.sin_addr.s_addr, ntohs(rdma_get_src_port(f.listen_id)));
    f.accept_both();
    MPI_Barrier(MPI_COMM_WORLD);  // the mesh is up
    int bad = 0;
    // get: rank 0's RTS exposes its message for READ; a WRITE must fail.
    w::MsgHdr h{};
    w::RndvDesc d{};
    f.recv_desc(0, w::MsgType::kRts, &h, &d);
    RT_CHECK(!(d.flags & w::kDescPut), "rank 0 offered a put: RDMX_RNDV_PROTO=get not in effect");
    ibv_wc_status st = f.rdma(0, IBV_WR_RDMA_WRITE, d.addr, d.rkey);
    std::printf("peer: WRITE into a get sender's message with its rkey -> %s (%s)\n", ibv_wc_status_str(st),
                st == IBV_WC_SUCCESS ? "WRONG: the receiver can write the sender's memory" : "refused as expected");
    bad += st == IBV_WC_SUCCESS;
    // put: rank 1's CTS exposes its receive buffer for WRITE; a READ must fail.
    w::MsgHdr rts{w::kVersion, static_cast<uint8_t>(w::MsgType::kRts), RDMX_TAGSPACE_USER, 0, kTag, 0, 0, kLen, 1};
    w::RndvDesc offer{reinterpret_cast<uint64_t>(f.buf.data()), kLen, f.mr->rkey, w::kDescPut};
    char msg[sizeof(rts) + sizeof(offer)];
    std::memcpy(msg, &rts, sizeof(rts));
    std::memcpy(msg + sizeof(rts), &offer, sizeof(offer));
    f.send(1, msg, sizeof(msg));
    f.recv_desc(1, w::MsgType::kCts, &h, &d);
    st = f.rdma(1, IBV_WR_RDMA_READ, d.addr, d.rkey);
    std::printf("peer: READ of a put receiver's buffer with its CTS rkey -> %s (%s)\n", ibv_wc_status_str(st),
                st == IBV_WC_SUCCESS ? "WRONG: the sender can read the receiver's memory" : "refused as expected");
    bad += st == IBV_WC_SUCCESS;
    std::fflush(stdout);
    for (rdma_cm_id *id : f.conns) rdma_disconnect(id);  // both transfers end with an error
    MPI_Barrier(MPI_COMM_WORLD);
    return bad;
}

int run_rdmx(int me, int np) {
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.allgather = gather;
    cfg.rank = me;
    cfg.size = np;
    rdmx_context_h ctx = nullptr;
    rdmx_status_t st = rdmx_init(&cfg, &ctx);
    if (st == RDMX_ERR_NO_DEVICE) return 77;
    RT_CHECK(st == RDMX_OK, "rdmx_init: %s", rdmx_strerror(st));
    MPI_Barrier(MPI_COMM_WORLD);
    std::vector<char> mem(kLen, me == 0 ? 'A' : 'B');
    rdmx_request_h r = nullptr;
    if (me == 0) RT_OK(rdmx_isend(ctx, mem.data(), mem.size(), kPeer, kTag, &r));
    else RT_OK(rdmx_irecv(ctx, mem.data(), mem.size(), kPeer, kTag, &r));
    st = rdmx_wait(&r, nullptr);
    RT_CHECK(st != RDMX_OK, "the %s ended OK though the peer never finished it", me == 0 ? "send" : "receive");
    size_t changed = 0;
    for (char ch : mem) changed += ch != (me == 0 ? 'A' : 'B');
    RT_CHECK(changed == 0, "%zu bytes of rank %d's %s buffer were changed by the peer", changed, me,
             me == 0 ? "send" : "receive");
    int got = -1, out = me;
    rdmx_request_h q[2];
    RT_OK(rdmx_irecv(ctx, &got, sizeof(got), 1 - me, 9, &q[0]));
    RT_OK(rdmx_isend(ctx, &out, sizeof(out), 1 - me, 9, &q[1]));
    RT_OK(rdmx_waitall(2, q, nullptr));
    RT_CHECK(got == 1 - me, "after the peer's attempt: got %d", got);
    MPI_Barrier(MPI_COMM_WORLD);
    RT_OK(rdmx_finalize(ctx));
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me = 0, np = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rt::g_rank = me;
    rt::g_test = "exposure";
    RT_CHECK(np == 3, "needs exactly 3 processes");
    int rc = me == kPeer ? run_peer(np) : run_rdmx(me, np);
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    if (worst == 77) return 77;
    if (me == 0 && worst == 0)
        std::printf("exposure: a get sender's message cannot be written, a put receiver's buffer cannot be read\n");
    return worst == 0 ? 0 : 1;
}
