// A peer that speaks the protocol badly on purpose. The last MPI rank is the
// forger: it takes rank N-1's slot in the bootstrap (rdmx ranks bootstrap
// through an MPI_Allgather callback), accepts their connections with valid
// private_data, then
//   1. sends connect requests to rank 1 with forged private_data (bad magic,
//      bad version, wrong job key, short data, rank out of range, wrong
//      direction, duplicate rank) and checks each is refused with its reason;
//   2. sends rdmx rank i one malformed message, case (FIRST + i) % kCases of
//      the table in malformed() (headers: bad version, unknown type, eager
//      length mismatch, sequence gap, negative tag; rendezvous: FIN, CTS or
//      PutFin for a transfer never offered, RTS descriptors with an undefined
//      flag, that disagree with the header, wrap around the address space or carry an
//      rkey the forger never registered, and a CTS that asks to write more
//      than the message rank i really offered it): rank i must see its
//      connection to the forger closed (RDMX_ERR_PROTOCOL) and nothing else;
//   3. or, for cases 13-18 (attack() below), attacks rank i's flow control: it
//      sends past its credits while the victim holds its buffers, writes the
//      victim's credit slot for another rank, grants itself 2^31 credits,
//      RDMA-WRITEs with immediate into the victim's shared receive queue, and
//      floods zero-length messages and RTSs within its credits until the
//      victim's unexpected-entry bound holds its credits back, then sends
//      past the grant: each victim closes the forger (a refused write to
//      another rank's slot breaks the forger's own connection instead) and
//      nobody else.
// The rdmx ranks then exchange among themselves, undisturbed, and finalize.
//
//   hostile_test [FIRST]    (FIRST: the case rdmx rank 0 gets, default 0)
#include <mpi.h>

#include <arpa/inet.h>
#include <poll.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <cstring>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/wire.h"
#include "boot_mimic.h"
#include "harness.h"
#include "transport/device.h"

namespace {

using namespace rdmx;
namespace w = rdmx::wire;


int gather(const void *in, void *out, size_t len, void *) {
    return MPI_Allgather(in, static_cast<int>(len), MPI_BYTE, out, static_cast<int>(len), MPI_BYTE, MPI_COMM_WORLD);
}

constexpr int kCases = 19;
constexpr int kCaseCtsTooLong = 11;  // the one case where rank i first sends to the forger
// Flow-control attacks (run_attack): the victim sees its connection to the
// forger closed; the forger checks what the victim's hardware refused.
constexpr int kCaseOverrun = 13;      // more messages than granted, the victim holding their buffers
constexpr int kCaseForeignSlot = 14;  // RDMA WRITE into the victim's credit slot of another rank
constexpr int kCaseAbsurdGrant = 15;  // its own slot: 2^31 credits the victim never had
constexpr int kCaseWriteImm = 16;     // RDMA WRITE with immediate: consumes a shared receive
constexpr int kCaseZeroFlood = 17;    // zero-length messages within credits, never received
constexpr int kCaseRtsFlood = 18;     // RTSs within credits, never received
constexpr int kFirstAttack = kCaseOverrun;
constexpr int kTagForged = 5, kTagOffer = 6, kTagGo = 7, kTagFlood = 8;
constexpr size_t kFloodEntries = 128;   // RDMX_UNEXPECTED_MAX of the flood victims
constexpr int kFloodCap = 2048;         // no back-pressure by then: the victim's heap grows without bound
// A victim's wait for the forger's attack: the forger serves the victims in
// rank order, a flood taking several seconds under emulation.
constexpr double kDeadlineS = 60, kDeadlinePerRankS = 20;
int first_case = 0;
int case_of(int rank) { return (first_case + rank) % kCases; }

// ---- forger ------------------------------------------------------------------
struct Forger {
    rdma_event_channel *ch = nullptr;
    rdma_cm_id *listen_id = nullptr;
    ibv_pd *pd = nullptr;
    ibv_cq *cq = nullptr;
    std::vector<rdma_cm_id *> conns;   // by rdmx rank
    struct Granted {                   // what rank i's connect request told us
        uint32_t credits = 0;          // messages it lets us send before it grants more
        uint64_t slot = 0;             // where we may RDMA-WRITE our grants to it
        uint32_t rkey = 0;
    };
    std::vector<Granted> granted;      // by rdmx rank
    std::vector<uint32_t> seq;         // next message sequence number, by rdmx rank
    static constexpr size_t kSlot = 256;             // receive slot per rdmx rank, after the send staging area
    static constexpr size_t kGrants = 4096 - 64;     // rank i's credit grants to us land at kGrants + 8 i
    std::vector<char> buf = std::vector<char>(4096 + 64 * kSlot);
    std::vector<ibv_wc> arrived;                      // receive completions seen while waiting for sends
    ibv_mr *mr = nullptr;
    uint64_t key = 0;
    int me = 0;

    // In the order verbs requires: QPs and their ids, then the MR, CQ and PD
    // they use, then the listener and the channel.
    ~Forger() {
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
    rdma_cm_event *next_event(int timeout_ms) {
        pollfd p{ch->fd, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0) return nullptr;
        rdma_cm_event *ev = nullptr;
        return rdma_get_cm_event(ch, &ev) == 0 ? ev : nullptr;
    }
    void make_qp(rdma_cm_id *id) {
        if (pd == nullptr) {
            pd = ibv_alloc_pd(id->verbs);
            cq = ibv_create_cq(id->verbs, 256, nullptr, nullptr, 0);
            mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
            RT_CHECK(pd && cq && mr, "forger: verbs set-up failed");
        }
        ibv_qp_init_attr qa{};
        qa.send_cq = qa.recv_cq = cq;
        qa.qp_type = IBV_QPT_RC;
        qa.cap.max_send_wr = 128;  // a burst past the grant goes out at once (burst())
        qa.cap.max_recv_wr = 16;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        RT_CHECK(rdma_create_qp(id, pd, &qa) == 0, "forger: rdma_create_qp: %s", strerror(errno));
    }
    void accept_all(int nrdmx) {
        conns.assign(static_cast<size_t>(nrdmx), nullptr);
        granted.assign(static_cast<size_t>(nrdmx), Granted{});
        seq.assign(static_cast<size_t>(nrdmx), 0);
        int established = 0;
        while (established < nrdmx) {
            rdma_cm_event *ev = next_event(60000);
            RT_CHECK(ev != nullptr, "forger: no CM event while accepting");
            if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
                w::ConnectPriv cp{};
                RT_CHECK(w::decode_connect(ev->param.conn.private_data, ev->param.conn.private_data_len, &cp) ==
                             w::DecodeError::kOk, "forger: bad connect private data");
                RT_CHECK(cp.src_rank < conns.size() && cp.src_rank < 8, "forger: connect from rank %u", cp.src_rank);
                make_qp(ev->id);
                conns[cp.src_rank] = ev->id;
                granted[cp.src_rank] = {cp.credits, cp.credit_addr, cp.credit_rkey};
                post_recv(cp.src_rank);
                w::AcceptPriv ap{w::kMagic, w::kVersion, sizeof(ap), key, static_cast<uint32_t>(me), 64,
                                 reinterpret_cast<uint64_t>(grant_slot(cp.src_rank)), mr->rkey, 0};  // clear of the staging area
                rdma_conn_param p{};
                p.private_data = &ap;
                p.private_data_len = sizeof(ap);
                p.responder_resources = p.initiator_depth = 1;
                p.rnr_retry_count = 7;
                RT_CHECK(rdma_accept(ev->id, &p) == 0, "forger: rdma_accept: %s", strerror(errno));
            } else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
                ++established;
            }
            rdma_ack_cm_event(ev);
        }
    }
    // One forged connect request; returns the reject reason (or -1).
    int forge(const sockaddr_in &target, const void *priv, uint8_t len) {
        rdma_cm_id *id = nullptr;
        RT_CHECK(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) == 0, "forger: rdma_create_id");
        sockaddr_in dst = target;
        rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr *>(&dst), 2000);
        int reason = -1;
        for (;;) {
            rdma_cm_event *ev = next_event(20000);
            RT_CHECK(ev != nullptr, "forger: no CM event for a forged request");
            bool own = ev->id == id;
            rdma_cm_event_type t = ev->event;
            if (own && t == RDMA_CM_EVENT_ADDR_RESOLVED) {
                rdma_resolve_route(id, 2000);
            } else if (own && t == RDMA_CM_EVENT_ROUTE_RESOLVED) {
                make_qp(id);
                rdma_conn_param p{};
                p.private_data = priv;
                p.private_data_len = len;
                p.responder_resources = p.initiator_depth = 1;
                RT_CHECK(rdma_connect(id, &p) == 0, "forger: rdma_connect");
            } else if (own && t == RDMA_CM_EVENT_REJECTED) {
                w::RejectPriv rp{};
                if (w::decode_reject(ev->param.conn.private_data, ev->param.conn.private_data_len, &rp) ==
                    w::DecodeError::kOk)
                    reason = rp.reason;
                rdma_ack_cm_event(ev);
                break;
            } else if (own) {
                RT_CHECK(false, "forger: forged request got %s instead of REJECTED", rdma_event_str(t));
            }
            rdma_ack_cm_event(ev);
        }
        if (id->qp) rdma_destroy_qp(id);
        rdma_destroy_id(id);
        return reason;
    }
    void post_recv(uint32_t rank) {
        ibv_sge sge{reinterpret_cast<uint64_t>(buf.data() + 4096 + rank * kSlot), kSlot, mr->lkey};
        ibv_recv_wr wr{}, *bad = nullptr;
        wr.wr_id = rank;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        RT_CHECK(ibv_post_recv(conns[rank]->qp, &wr, &bad) == 0, "forger: post_recv");
    }
    // Polls the CQ for up to 60 s until `done` holds; receive completions are kept in `arrived`.
    template <class Pred> ibv_wc poll_until(Pred done, const char *what) {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (;;) {
            ibv_wc wc{};
            int n = ibv_poll_cq(cq, 1, &wc);
            RT_CHECK(n >= 0, "forger: ibv_poll_cq");
            if (n == 1 && done(wc)) return wc;
            if (n == 1 && (wc.opcode & IBV_WC_RECV)) arrived.push_back(wc);
            RT_CHECK(std::chrono::steady_clock::now() < until, "forger: no completion for %s in 60 s", what);
        }
    }
    void send_raw(int rank, const void *msg, size_t len) {
        std::memcpy(buf.data(), msg, len);
        ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), static_cast<uint32_t>(len), mr->lkey};
        ibv_send_wr wr{}, *bad = nullptr;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        RT_CHECK(ibv_post_send(conns[static_cast<size_t>(rank)]->qp, &wr, &bad) == 0, "forger: post_send");
        ibv_wc wc = poll_until([](const ibv_wc &c) { return (c.opcode & IBV_WC_RECV) == 0 || c.status != IBV_WC_SUCCESS; },
                               "a forged send");
        RT_CHECK(wc.status == IBV_WC_SUCCESS, "forger: send to rank %d: %s", rank, ibv_wc_status_str(wc.status));
    }
    volatile uint64_t *grant_slot(uint32_t rank) {
        return reinterpret_cast<volatile uint64_t *>(buf.data() + kGrants + 8 * rank);
    }
    // Posts one signalled work request to `rank`; returns its completion status.
    ibv_wc_status post_wait(int rank, ibv_send_wr *wr, const char *what) {
        wr->send_flags |= IBV_SEND_SIGNALED;
        ibv_send_wr *bad = nullptr;
        ibv_qp *qp = conns[static_cast<size_t>(rank)]->qp;
        RT_CHECK(ibv_post_send(qp, wr, &bad) == 0, "forger: post %s", what);
        // Only this QP's: a QP closed earlier flushes its posted receive.
        return poll_until([qp](const ibv_wc &c) {
            return c.qp_num == qp->qp_num && ((c.opcode & IBV_WC_RECV) == 0 || c.status != IBV_WC_SUCCESS);
        }, what).status;
    }
    // One message to `rank` with the next sequence number; its completion status.
    ibv_wc_status send_next(int rank, w::MsgHdr h, const std::vector<char> &body) {
        h.seq = seq[static_cast<size_t>(rank)]++;
        std::memcpy(buf.data(), &h, sizeof(h));
        if (!body.empty()) std::memcpy(buf.data() + sizeof(h), body.data(), body.size());
        ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), static_cast<uint32_t>(sizeof(h) + body.size()), mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        return post_wait(rank, &wr, "a SEND");
    }
    // `count` messages to `rank` posted at once, none awaited: the victim
    // closes the connection partway, and Soft-RoCE may retransmit what
    // follows into the closed QP for ever instead of failing it.
    void burst(int rank, w::MsgHdr h, const std::vector<char> &body, uint32_t count) {
        const size_t stride = (sizeof(h) + body.size() + 7) & ~size_t{7};
        RT_CHECK(count <= 120 && count * stride <= kGrants, "forger: burst too large");
        for (uint32_t i = 0; i < count; ++i) {
            char *b = buf.data() + i * stride;
            h.seq = seq[static_cast<size_t>(rank)]++;
            std::memcpy(b, &h, sizeof(h));
            if (!body.empty()) std::memcpy(b + sizeof(h), body.data(), body.size());
            ibv_sge sge{reinterpret_cast<uint64_t>(b), static_cast<uint32_t>(sizeof(h) + body.size()), mr->lkey};
            ibv_send_wr wr{}, *bad = nullptr;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_SEND;
            RT_CHECK(ibv_post_send(conns[static_cast<size_t>(rank)]->qp, &wr, &bad) == 0, "forger: burst post");
        }
    }
    // An 8-byte RDMA WRITE (with immediate if `imm`) of `value` to `addr` at `rank`.
    ibv_wc_status write_word(int rank, uint64_t addr, uint32_t rkey, uint64_t value, bool imm) {
        std::memcpy(buf.data(), &value, 8);
        ibv_sge sge{reinterpret_cast<uint64_t>(buf.data()), 8, mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
        wr.imm_data = htonl(0x1234);
        wr.wr.rdma.remote_addr = addr;
        wr.wr.rdma.rkey = rkey;
        return post_wait(rank, &wr, "an RDMA WRITE");
    }
    // Sends `h`+`body` to `rank` as long as its grants allow; returns how
    // many went before it stopped granting (kFloodCap: it never did).
    int flood(int rank, const w::MsgHdr &h, const std::vector<char> &body) {
        const size_t r = static_cast<size_t>(rank);
        uint32_t limit = granted[r].credits;  // cumulative: messages we may have sent in all
        int sent = 0;
        auto still = std::chrono::steady_clock::now();
        while (sent < kFloodCap) {
            const uint32_t g = static_cast<uint32_t>(*grant_slot(static_cast<uint32_t>(rank)));
            if (static_cast<int32_t>(g - limit) > 0) limit = g;
            if (static_cast<int32_t>(limit - seq[r]) > 0) {
                RT_CHECK(send_next(rank, h, body) == IBV_WC_SUCCESS, "forger: flood of rank %d broke", rank);
                ++sent;
                still = std::chrono::steady_clock::now();
            } else if (std::chrono::steady_clock::now() - still > std::chrono::seconds(3)) {
                return sent;  // out of credits and none came back: back-pressure
            }
        }
        return sent;
    }
    // The RTS rank `rank` sends for its offer; its header and descriptor.
    void wait_rts(int rank, w::MsgHdr *h, w::RndvDesc *d) {
        const uint32_t qpn = conns[static_cast<size_t>(rank)]->qp->qp_num;
        auto mine = [qpn](const ibv_wc &c) { return (c.opcode & IBV_WC_RECV) != 0 && c.qp_num == qpn; };
        ibv_wc wc{};
        bool seen = false;
        for (const ibv_wc &a : arrived) if (mine(a)) { wc = a; seen = true; }
        if (!seen) wc = poll_until(mine, "rank's RTS");
        RT_CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == sizeof(*h) + sizeof(*d),
                 "forger: rank %d's offer: %s, %u bytes", rank, ibv_wc_status_str(wc.status), wc.byte_len);
        const char *slot = buf.data() + 4096 + static_cast<size_t>(rank) * kSlot;
        std::memcpy(h, slot, sizeof(*h));
        std::memcpy(d, slot + sizeof(*h), sizeof(*d));
        RT_CHECK(h->type == static_cast<uint8_t>(w::MsgType::kRts), "forger: rank %d sent type %u, not an RTS", rank,
                 h->type);
    }
};

template <class T> void append(std::vector<char> *out, const T &v) {
    out->insert(out->end(), reinterpret_cast<const char *>(&v), reinterpret_cast<const char *>(&v) + sizeof(v));
}

// The malformed message for case c. `offer` is the RTS rank i sent (only
// for kCaseCtsTooLong); `mr` the forger's registration.
void malformed(int c, const Forger &f, const w::MsgHdr &offer, const w::RndvDesc &offer_desc,
               std::vector<char> *out) {
    using T = w::MsgType;
    w::MsgHdr h{w::kVersion, static_cast<uint8_t>(T::kEager), 0, 0, kTagForged, 0, 0, 4, 0, 0, 0};
    const uint64_t mine = reinterpret_cast<uint64_t>(f.buf.data());
    auto type = [&h](T t) { h.type = static_cast<uint8_t>(t); };
    std::vector<char> body(4, 'x');
    switch (c) {
    case 0: h.version = 9; break;                                      // bad version
    case 1: h.type = 77; break;                                        // unknown type
    case 2: h.length = 4000; break;                                    // length mismatch
    case 3: h.seq = 5; break;                                          // sequence gap
    case 4: type(T::kFin); h.cookie = 0xdead; body.assign(8, 0); h.length = 0; break;  // FIN, never offered
    case 5:  // RTS with a flag no version defines (an empty RTS is legal: a synchronous send of 0 bytes)
        type(T::kRts); h.length = 0; body.clear(); append(&body, w::RndvDesc{0x1000, 0, 0x1234, 0x80}); break;
    case 6: h.tag = -7; break;                                         // negative tag
    case 7:                                                            // CTS for a send never offered
        type(T::kCts); h.cookie = 0xbeef; h.length = 1; body.clear();
        append(&body, w::RndvDesc{mine, 64, f.mr->rkey, 0});
        break;
    case 8: type(T::kPutFin); h.cookie = 0xbeef; h.length = 0; body.assign(8, 0); break;  // PutFin, never offered
    case 9:                                                            // RTS: descriptor disagrees with header
        type(T::kRts); h.length = 100000; body.clear(); append(&body, w::RndvDesc{mine, 50000, f.mr->rkey, 0});
        break;
    case 10:                                                           // RTS: range wraps around
        type(T::kRts); h.length = 4096; body.clear(); append(&body, w::RndvDesc{~0ull - 100, 4096, f.mr->rkey, 0});
        break;
    case kCaseCtsTooLong:                                              // CTS: more than the message holds
        type(T::kCts); h.space = offer.space; h.cookie = offer.cookie; h.length = 1; body.clear();
        append(&body, w::RndvDesc{mine, offer_desc.length + 4096, f.mr->rkey, 0});
        break;
    case 12:                                                           // RTS (get): an rkey never registered
        type(T::kRts); h.length = 64; body.clear(); append(&body, w::RndvDesc{mine, 64, f.mr->rkey ^ 0x5a5a00u, 0});
        break;
    default: RT_CHECK(false, "no case %d", c);
    }
    out->clear();
    append(out, h);
    out->insert(out->end(), body.begin(), body.end());
}

// Flow-control attack `c` on rdmx rank `r` (one of n rdmx ranks); returns
// 1 when the victim's side let through what it must refuse.
int attack(Forger &f, int r, int n, int c) {
    using T = w::MsgType;
    const size_t ri = static_cast<size_t>(r);
    const Forger::Granted &g = f.granted[ri];
    w::MsgHdr h{w::kVersion, static_cast<uint8_t>(T::kEager), 0, 0, kTagFlood, 64, 0, 8, 0, 0, 0};
    std::vector<char> body(8, 'f');
    bool ok = true;
    const char *what = "";
    switch (c) {
    case kCaseOverrun: {  // credits + 4 eager messages, no grant awaited: the victim holds every buffer
        what = "credit overrun";
        f.burst(r, h, body, g.credits + 4);
        break;
    }
    case kCaseForeignSlot: {  // the slot rank r keeps for rank p, where one registration covered all slots
        what = "write to another rank's credit slot";
        const int p = (r + 1) % n;
        const uint64_t addr = g.slot - 8ull * static_cast<uint64_t>(f.me - p);
        ibv_wc_status st = f.write_word(r, addr, g.rkey, 0x7fffffff, false);
        ok = st == IBV_WC_REM_ACCESS_ERR;
        std::printf("forger: rank %d's credit slot for rank %d: %s\n", r, p, ibv_wc_status_str(st));
        rdma_disconnect(f.conns[ri]);  // our QP is in error now: tell rank r
        break;
    }
    case kCaseAbsurdGrant: {  // its own slot: 2^31 credits, then a message that says "send to me"
        what = "absurd grant";
        RT_CHECK(f.write_word(r, g.slot, g.rkey, 0x7fffffff, false) == IBV_WC_SUCCESS, "forger: grant write");
        h.tag = kTagGo;
        h.length = 0;
        RT_CHECK(f.send_next(r, h, {}) == IBV_WC_SUCCESS, "forger: go");
        break;
    }
    case kCaseWriteImm:  // a legal write to its own slot, but with an immediate: it takes a shared receive
        what = "RDMA WRITE with immediate";
        (void)f.write_word(r, g.slot, g.rkey, 0, true);
        break;
    case kCaseZeroFlood:
    case kCaseRtsFlood: {
        what = c == kCaseZeroFlood ? "zero-length flood" : "RTS flood";
        h.length = 0;
        body.clear();
        if (c == kCaseRtsFlood) {
            h.type = static_cast<uint8_t>(T::kRts);
            h.length = 100000;
            append(&body, w::RndvDesc{reinterpret_cast<uint64_t>(f.buf.data()), 100000, f.mr->rkey, 0});
        }
        int sent = f.flood(r, h, body);
        ok = sent < kFloodCap;
        std::printf("forger: %s of rank %d: %d messages within credits, then %s\n", what, r, sent,
                    ok ? "back-pressure" : "still granting");
        // Past the grant: rank r writes its grants back once half a window
        // is owed, so half a window more and one surely overruns it.
        f.burst(r, h, body, g.credits / 2 + 1);
        break;
    }
    default: RT_CHECK(false, "no attack %d", c);
    }
    if (!ok) std::printf("forger: %s on rank %d: WRONG (let through)\n", what, r);
    return ok ? 0 : 1;
}

int run_forger(int me, int np) {
    Forger f;
    f.me = me;
    Config cfg;
    RT_CHECK(cfg.load(nullptr) == RDMX_OK, "config");
    DeviceChoice dc;
    if (select_device(cfg, 0, &dc) != RDMX_OK) {
        rt::join_bootstrap(gather, np, 0, 0);
        return 77;
    }
    RT_CHECK((f.ch = rdma_create_event_channel()) != nullptr, "forger: channel");
    RT_CHECK(rdma_create_id(f.ch, &f.listen_id, nullptr, RDMA_PS_TCP) == 0, "forger: id");
    RT_CHECK(rdma_bind_addr(f.listen_id, reinterpret_cast<sockaddr *>(&dc.addr)) == 0, "forger: bind");
    RT_CHECK(rdma_listen(f.listen_id, 16) == 0, "forger: listen");
    std::vector<rdmx::RcRecord> all;
    f.key = rt::join_bootstrap(gather, np, dc.addr.sin_addr.s_addr, ntohs(rdma_get_src_port(f.listen_id)), &all);
    f.accept_all(np - 1);
    MPI_Barrier(MPI_COMM_WORLD);  // the mesh is up
    sockaddr_in r1{};
    r1.sin_family = AF_INET;
    r1.sin_addr.s_addr = all[1].addr.ip;
    r1.sin_port = htons(all[1].addr.port);
    using R = w::RejectReason;
    struct Case { const char *name; w::ConnectPriv cp; uint8_t len; R want; };
    auto base = [&](uint32_t src) {
        return w::ConnectPriv{w::kMagic, w::kVersion, sizeof(w::ConnectPriv), f.key, src, 1, 0, 0, 8};
    };
    std::vector<Case> cases = {{"bad magic", base(0), 40, R::kBadMagic}, {"bad version", base(0), 40, R::kBadVersion},
                               {"wrong job key", base(0), 40, R::kBadJobKey}, {"short data", base(0), 6, R::kShortData},
                               {"rank out of range", base(99), 40, R::kRankOutOfRange},
                               {"wrong direction", base(static_cast<uint32_t>(np - 2)), 40, R::kWrongDirection},
                               {"duplicate rank", base(0), 40, R::kDuplicateRank}};
    cases[0].cp.magic = 0x12345678;
    cases[1].cp.version = 99;
    cases[2].cp.job_key ^= 1;
    int bad = 0;
    for (auto &c : cases) {
        int got = f.forge(r1, &c.cp, c.len);
        bool ok = got == static_cast<int>(c.want);
        bad += !ok;
        std::printf("forger: %-18s -> %s (%s)\n", c.name, ok ? "refused as expected" : "WRONG",
                    got < 0 ? "no rdmx reason" : w::reject_reason_name(static_cast<R>(got)));
    }
    for (int r = 0; r < np - 1; ++r) {
        if (case_of(r) >= kFirstAttack) {
            bad += attack(f, r, np - 1, case_of(r));
            continue;
        }
        w::MsgHdr offer{};
        w::RndvDesc offer_desc{};
        if (case_of(r) == kCaseCtsTooLong) f.wait_rts(r, &offer, &offer_desc);
        std::vector<char> msg;
        malformed(case_of(r), f, offer, offer_desc, &msg);
        f.send_raw(r, msg.data(), msg.size());
    }
    MPI_Barrier(MPI_COMM_WORLD);  // rdmx ranks checked their side
    return bad;
}

// rdmx_wait with a deadline: an attack let through must fail the test, not hang it.
rdmx_status_t wait_bounded(rdmx_request_h *r, const char *what) {
    const double secs = kDeadlineS + kDeadlinePerRankS * rt::g_rank;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
    for (;;) {
        int done = 0;
        rdmx_status_t st = rdmx_test(r, &done, nullptr);
        if (done) return st;
        RT_CHECK(std::chrono::steady_clock::now() < until, "case %d: %s not complete after %.0f s", case_of(rt::g_rank),
                 what, secs);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

int run_rdmx(int me, int np) {
    const int c = case_of(me);
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.allgather = gather;
    cfg.rank = me;
    cfg.size = np;
    if (c == kCaseOverrun) cfg.unexpected_limit = 1;  // every 8-byte message keeps its receive buffer
    if (c == kCaseZeroFlood || c == kCaseRtsFlood)
        setenv("RDMX_UNEXPECTED_MAX", std::to_string(kFloodEntries).c_str(), 1);
    rdmx_context_h ctx = nullptr;
    rdmx_status_t st = rdmx_init(&cfg, &ctx);
    if (st == RDMX_ERR_NO_DEVICE) return 77;
    RT_CHECK(st == RDMX_OK, "rdmx_init: %s", rdmx_strerror(st));
    MPI_Barrier(MPI_COMM_WORLD);
    const int forger = np - 1;
    char sink[64];
    rdmx_request_h r;
    st = rdmx_irecv(ctx, sink, sizeof(sink), forger, kTagForged, &r);
    if (c == kCaseAbsurdGrant) {  // the forger granted itself plenty, then asks for a message
        rdmx_request_h go = nullptr, s = nullptr;
        RT_OK(rdmx_irecv(ctx, sink, sizeof(sink), forger, kTagGo, &go));
        RT_OK(wait_bounded(&go, "the forger's go"));
        int x = me;
        RT_OK(rdmx_isend(ctx, &x, sizeof(x), forger, kTagOffer, &s));
        rdmx_status_t ss = wait_bounded(&s, "the send after an absurd grant");
        RT_CHECK(ss == RDMX_ERR_PROTOCOL, "case %d: send to the forger ended with %d (%s)", c, ss, rdmx_strerror(ss));
    }
    if (c == kCaseCtsTooLong) {  // a rendezvous-sized offer the forger answers with a CTS that asks for more
        std::vector<char> offer(256 * 1024, 'o');
        rdmx_request_h s = nullptr;
        RT_OK(rdmx_isend(ctx, offer.data(), offer.size(), forger, kTagOffer, &s));
        rdmx_status_t ss = rdmx_wait(&s, nullptr);
        RT_CHECK(ss == RDMX_ERR_PROTOCOL, "case %d: send to the forger ended with %d (%s)", c, ss, rdmx_strerror(ss));
    }
    if (st == RDMX_OK) st = wait_bounded(&r, "the receive from the forger");
    // A write the forger's own QP had refused reaches us as its disconnect.
    const bool closed = st == RDMX_ERR_PROTOCOL || (c == kCaseForeignSlot && st == RDMX_ERR_PEER_LOST);
    RT_CHECK(closed, "case %d: receive from the forger ended with %d (%s)", c, st, rdmx_strerror(st));
    const int n = np - 1;  // the rdmx ranks, undisturbed
    for (int p = 1; p < n; ++p) {
        int to = (me + p) % n, from = (me - p + n) % n, got = -1;
        rdmx_request_h q[2];
        RT_OK(rdmx_irecv(ctx, &got, 4, from, 9, &q[0]));
        RT_OK(rdmx_isend(ctx, &me, 4, to, 9, &q[1]));
        RT_OK(rdmx_waitall(2, q, nullptr));
        RT_CHECK(got == from, "after the attack: from %d got %d", from, got);
    }
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
    rt::g_test = "hostile";
    RT_CHECK(np >= 3, "needs at least 3 processes");
    if (argc > 1) first_case = std::atoi(argv[1]);
    RT_CHECK(first_case >= 0 && first_case < kCases, "FIRST must be 0..%d", kCases - 1);
    RT_CHECK(np - 1 <= kCases, "at most %d rdmx ranks (one case each)", kCases);
    int rc = me == np - 1 ? run_forger(me, np) : run_rdmx(me, np);
    int worst = 0;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    if (worst == 77) return 77;
    if (me == 0 && worst == 0) std::printf("hostile: every forged request refused, every malformed message closed its connection, job undisturbed\n");
    return worst == 0 ? 0 : 1;
}
