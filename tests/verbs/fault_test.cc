// Faults under mpirun --enable-recovery. Cases:
//   kill   - the last rank sends one message to rank 0, then SIGKILLs itself
//            with a rendezvous send outstanding. Rank 0 still receives the
//            message that arrived; every pending and later operation naming
//            the dead rank completes with RDMX_ERR_PEER_LOST within the
//            bound; wildcard receives stay usable; survivors exchange and
//            finalize.
//   async  - synthetic asynchronous events (np 5). Every rank first gets the
//            harmless ones (SRQ_LIMIT_REACHED, PORT_ERR then PORT_ACTIVE,
//            LID_CHANGE) and all pairs still exchange. Then rank 0 gets
//            QP_FATAL on its QP to rank 1, rank 3 CQ_ERR and rank 4
//            DEVICE_FATAL: 0 and 1 lose each other (PEER_LOST), 3 and 4 see
//            RDMX_ERR_DEVICE on every operation, the others lose 3 and 4
//            (PEER_LOST); 0, 1 and 2 still exchange; everyone finalizes.
//   lazyroom - on demand (RDMX_CONNECT=lazy, RDMX_LAZY_PEERS=2), rank 0 on
//            a device whose SRQ holds two connections' credits (max_srq_wr
//            150; np 4): rdmx_init starts, 0, 1 and 2 connect and exchange;
//            then (told through 1) 3 receives from 0 while 0 sends to 3:
//            that third connection of rank 0 is refused by name (its send
//            ends in RDMX_ERR_NO_MEMORY, 3's receive in an error within the
//            connect timeout), and 0, 1 and 2 still exchange afterwards.
#include <cstdlib>
#include <cstring>
#include <string>

#include "fault_util.h"
#include "protocols/fault_inject.h"
#include "transport/verbs_shim.h"

namespace {

using rt::since;

void survivors_exchange(rdmx_context_h ctx, int me, int alive) {
    for (int p = 1; p < alive; ++p) {
        int to = (me + p) % alive, from = (me - p + alive) % alive, got = -1;
        rdmx_request_h r[2];
        RT_OK(rdmx_irecv(ctx, &got, 4, from, 21, &r[0]));
        RT_OK(rdmx_isend(ctx, &me, 4, to, 21, &r[1]));
        RT_OK(rdmx_waitall(2, r, nullptr));
        RT_CHECK(got == from, "survivor exchange: from %d got %d", from, got);
    }
}

void t_kill(rdmx_context_h ctx, int me, int np, double bound) {
    const int victim = np - 1;
    static std::vector<uint8_t> big(1 << 20, 0x5a);
    if (me == victim) {
        int hello = 42;
        RT_OK(rdmx_send(ctx, &hello, 4, 0, 1));
        rdmx_request_h r;
        RT_OK(rdmx_isend(ctx, big.data(), big.size(), 0, 2, &r));  // RTS out, never completed
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        raise(SIGKILL);
    }
    if (me == 0) {
        int hello = 0;
        RT_OK(rdmx_recv(ctx, &hello, 4, victim, 1, nullptr));
        RT_CHECK(hello == 42, "message sent before the death was lost (%d)", hello);
    }
    auto t0 = std::chrono::steady_clock::now();
    // A receive naming the dead rank fails; a wildcard one stays posted.
    int sink = 0;
    rdmx_request_h dead_recv, any_recv;
    rdmx_status_t st = rdmx_irecv(ctx, &sink, 4, victim, 3, &dead_recv);
    RT_CHECK(st == RDMX_OK || st == RDMX_ERR_PEER_LOST, "irecv from the dead rank returned %d", st);
    if (st == RDMX_OK) {
        st = rdmx_wait(&dead_recv, nullptr);
        RT_CHECK(st == RDMX_ERR_PEER_LOST, "receive from the dead rank completed with %d (%s)", st, rdmx_strerror(st));
    }
    RT_CHECK(since(t0) < bound, "peer loss took %.1f s (bound %.1f s)", since(t0), bound);
    RT_OK(rdmx_irecv(ctx, &sink, 4, RDMX_ANY_SOURCE, 4, &any_recv));
    // A later send to the dead rank fails at once or on completion.
    rdmx_request_h s;
    st = rdmx_isend(ctx, big.data(), 100, victim, 5, &s);
    if (st == RDMX_OK) st = rdmx_wait(&s, nullptr);
    RT_CHECK(st == RDMX_ERR_PEER_LOST, "send to the dead rank returned %d (%s)", st, rdmx_strerror(st));
    // The wildcard receive is matched by a survivor.
    int token = me;
    if (me == 0) RT_OK(rdmx_send(ctx, &token, 4, 1 % (np - 1), 4));
    if (me == 1 % (np - 1)) {
        RT_OK(rdmx_wait(&any_recv, nullptr));
        RT_CHECK(sink == 0, "wildcard receive got %d", sink);
    } else {
        RT_OK(rdmx_cancel(any_recv));
        st = rdmx_wait(&any_recv, nullptr);
        RT_CHECK(st == RDMX_ERR_CANCELED, "cancel after loss: %d", st);
    }
    survivors_exchange(ctx, me, np - 1);
    std::printf("rank %d: peer loss reported in %.2f s\n", me, since(t0));
}

// Waits on a receive from `from` that is never sent; it must end with `want`.
void expect_loss(rdmx_context_h ctx, int from, rdmx_status_t want, double bound) {
    int sink = 0;
    rdmx_request_h r = nullptr;
    auto t0 = std::chrono::steady_clock::now();
    rdmx_status_t st = rdmx_irecv(ctx, &sink, 4, from, 77, &r);
    if (st == RDMX_OK) st = rt::wait_bounded(&r, bound, "a receive from a failed peer");
    RT_CHECK(st == want, "receive from %d ended with %d (%s), want %s", from, st, rdmx_strerror(st),
             rdmx_strerror(want));
    std::printf("rank %d: receive from %d: %s after %.2f s\n", rt::g_rank, from, rdmx_strerror(st), since(t0));
}

void t_async(rdmx_context_h ctx, int me, int np, double bound) {
    std::vector<int> all;
    for (int p = 0; p < np; ++p) all.push_back(p);
    for (const char *ev : {"srq_limit", "port_err", "port_active", "lid_change"})
        RT_OK(rdmx::inject_async_event(ctx, ev, -1));
    rt::group_exchange(ctx, me, all, 100);
    RT_CHECK(rdmx::inject_async_event(ctx, "no_such_event", -1) == RDMX_ERR_INVALID_ARG, "unknown event accepted");
    RT_CHECK(rdmx::inject_async_event(ctx, "qp_fatal", me) == RDMX_ERR_INVALID_ARG, "QP event on self accepted");
    if (me == 0) RT_OK(rdmx::inject_async_event(ctx, "qp_fatal", 1));
    if (me == 3) RT_OK(rdmx::inject_async_event(ctx, "cq_err", -1));
    if (me == 4) RT_OK(rdmx::inject_async_event(ctx, "device_fatal", -1));
    if (me >= 3) {
        expect_loss(ctx, 0, RDMX_ERR_DEVICE, bound);
        int v = 0;
        rdmx_request_h r = nullptr;
        rdmx_status_t st = rdmx_isend(ctx, &v, 4, 2, 5, &r);
        RT_CHECK(st == RDMX_ERR_DEVICE && r == nullptr, "isend after a device failure returned %d", st);
        return;
    }
    if (me <= 1) expect_loss(ctx, 1 - me, RDMX_ERR_PEER_LOST, bound);
    expect_loss(ctx, 3, RDMX_ERR_PEER_LOST, bound);
    expect_loss(ctx, 4, RDMX_ERR_PEER_LOST, bound);
    rt::group_exchange(ctx, me, me == 2 ? std::vector<int>{0, 1, 2} : std::vector<int>{me, 2}, 200);
    if (me <= 1) {
        int v = 0;
        rdmx_request_h r = nullptr;
        rdmx_status_t st = rdmx_isend(ctx, &v, 4, 1 - me, 6, &r);
        if (st == RDMX_OK) st = rt::wait_bounded(&r, bound, "a send to a failed peer");
        RT_CHECK(st == RDMX_ERR_PEER_LOST, "send after QP_FATAL returned %d", st);
    }
}

// Every rank's next four SRQ re-posts fail (ENOMEM) while all pairs
// exchange 300 small messages each way: the buffers of a failed post must be
// posted later, not lost (4 x 16 lost would leave the 34-deep SRQ empty and
// every sender stalled on RNR).
void t_srqpost(rdmx_context_h ctx, int me, int np) {
    rdmx::vx::inject_failure("post_srq_recv", ENOMEM, 4);
    constexpr int kMsgs = 300;
    std::vector<int> in(static_cast<size_t>(np) * kMsgs, -1), out(static_cast<size_t>(kMsgs));
    std::vector<rdmx_request_h> reqs;
    for (int p = 0; p < np; ++p) {
        if (p == me) continue;
        for (int i = 0; i < kMsgs; ++i) {
            reqs.emplace_back();
            RT_OK(rdmx_irecv(ctx, &in[static_cast<size_t>(p * kMsgs + i)], 4, p, 30, &reqs.back()));
        }
    }
    for (int i = 0; i < kMsgs; ++i) out[static_cast<size_t>(i)] = me * 100000 + i;
    for (int p = 0; p < np; ++p) {
        if (p == me) continue;
        for (int i = 0; i < kMsgs; ++i) {
            reqs.emplace_back();
            RT_OK(rdmx_isend(ctx, &out[static_cast<size_t>(i)], 4, p, 30, &reqs.back()));
        }
    }
    for (rdmx_request_h &r : reqs) RT_OK(rt::wait_bounded(&r, 30, "an exchange after failed SRQ posts"));
    for (int p = 0; p < np; ++p)
        for (int i = 0; p != me && i < kMsgs; ++i)
            RT_CHECK(in[static_cast<size_t>(p * kMsgs + i)] == p * 100000 + i, "from %d message %d: %d", p, i,
                     in[static_cast<size_t>(p * kMsgs + i)]);
}

void relay(rdmx_context_h ctx, int from, int to) {  // a token from `from` (or none), then on to `to`
    int v = 0;
    rdmx_request_h r = nullptr;
    if (from >= 0) {
        RT_OK(rdmx_irecv(ctx, &v, 4, from, 11, &r));
        RT_OK(rt::wait_bounded(&r, 30, "the go-ahead"));
    }
    if (to < 0) return;
    RT_OK(rdmx_isend(ctx, &v, 4, to, 11, &r));
    RT_OK(rt::wait_bounded(&r, 30, "passing the go-ahead on"));
}

void t_lazyroom(rdmx_context_h ctx, int me) {
    // Rank 3 must not take one of rank 0's two places first: it starts only
    // once 0 has connected to 1 and 2 (0 -> 1 -> 3).
    if (me <= 2) rt::group_exchange(ctx, me, {0, 1, 2}, 100);
    if (me == 0) relay(ctx, -1, 1);
    if (me == 1) relay(ctx, 0, 3);
    if (me == 3) relay(ctx, 1, -1);
    if (me == 0) {
        int v = 0;
        rdmx_request_h r = nullptr;
        auto t0 = std::chrono::steady_clock::now();
        rdmx_status_t st = rdmx_isend(ctx, &v, 4, 3, 9, &r);
        if (st == RDMX_OK) st = rt::wait_bounded(&r, 30, "a send past the connections the device holds");
        RT_CHECK(st == RDMX_ERR_NO_MEMORY, "a third connection on a device sized for two: %s", rdmx_strerror(st));
        std::printf("rank 0: send to 3: %s after %.2f s\n", rdmx_strerror(st), since(t0));
    }
    if (me == 3) {
        int v = 0;
        rdmx_request_h r = nullptr;
        rdmx_status_t st = rdmx_irecv(ctx, &v, 4, 0, 9, &r);
        if (st == RDMX_OK) st = rt::wait_bounded(&r, 30, "a receive from a rank with no room for us");
        RT_CHECK(st != RDMX_OK, "a receive from rank 0 completed though it has no room for us");
        std::printf("rank 3: receive from 0: %s\n", rdmx_strerror(st));
    }
    if (me <= 2) rt::group_exchange(ctx, me, {0, 1, 2}, 100);
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "kill";
    rt::g_test = which.c_str();
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.peer_timeout = 5.0;
    if (which == "lazyroom") {
        cfg.connect_timeout = 5.0;
        const char *launcher_rank = std::getenv("OMPI_COMM_WORLD_RANK");  // rdmx's own is known after init
        if (launcher_rank != nullptr && std::strcmp(launcher_rank, "0") == 0) rdmx::vx::limit_device(150, 0);
    }
    rdmx_context_h ctx = rt::init_or_skip(&cfg);
    int me = rdmx_rank(ctx), np = rdmx_size(ctx);
    RT_CHECK(np >= 3, "needs 3 or more ranks");
    if (which == "kill") t_kill(ctx, me, np, 30.0);
    else if (which == "async") {
        RT_CHECK(np == 5, "async needs 5 ranks");
        t_async(ctx, me, np, 20.0);
    }
    else if (which == "srqpost") t_srqpost(ctx, me, np);
    else if (which == "lazyroom") {
        RT_CHECK(np == 4, "lazyroom needs 4 ranks");
        t_lazyroom(ctx, me);
    }
    else RT_CHECK(false, "unknown case %s", which.c_str());
    RT_OK(rdmx_finalize(ctx));
    std::printf("fault %s: rank %d survived OK\n", which.c_str(), me);
    if (me == 0) std::printf("fault %s: survivors OK\n", which.c_str());
    return 0;
}
