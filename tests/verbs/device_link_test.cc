// Device and link faults on Soft-RoCE, run as root in the test guest (or on
// a host with rxe devices), with RDMX_DEVICE=rxe0,rxe1 so even ranks sit on
// rxe0 (netdev rv0) and odd ranks on rxe1 (rv1). Cases:
//   remove   - while every rank streams to every other, rank 0 runs
//              `rdma link delete rxe1`. Odd ranks: every operation fails with
//              RDMX_ERR_DEVICE within the bound, later calls fail at once,
//              rdmx_finalize completes, and the kernel then finishes the
//              removal while the process is still alive (rdmx released
//              everything it held on the device). Even ranks: operations with
//              odd ranks fail with RDMX_ERR_PEER_LOST (a peer whose device
//              vanished looks like a peer that died); the even ranks then
//              exchange checked payloads and finalize.
//   linkdown - `ip link set rv1 down` for 12 s while even and odd ranks
//              stream to each other, with an idle receive posted across the
//              link as well: every stream and idle receive across it fails
//              with RDMX_ERR_PEER_LOST within the bound (Soft-RoCE fails a
//              send it cannot transmit at once, the CM reports UNREACHABLE,
//              and whatever is left goes when the port has been down
//              RDMX_PEER_TIMEOUT, 10 s here, or, for a connection its peer
//              dropped while this side was idle, when a keepalive write finds
//              it dead); the link comes back and every rank finalizes.
// The ctest wrapper (link_restore.sh) rebuilds rxe0 and rxe1 afterwards.
#include <sys/stat.h>

#include "fault_util.h"

namespace {

using rt::Clock;
using rt::since;

bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

// Streams with every peer in `peers` until each stream has ended with an
// error or `rounds` rounds passed; `tick` runs once per round (triggers).
template <typename F>
std::vector<rt::Stream> stream(rdmx_context_h ctx, int me, const std::vector<int> &peers, int rounds, double bound,
                               F &&tick) {
    std::vector<rt::Stream> s(peers.size());
    for (size_t i = 0; i < peers.size(); ++i) s[i].peer = peers[i];
    auto t0 = Clock::now();
    for (int r = 0; r < rounds; ++r) {
        tick(r);
        bool any = false;
        for (auto &x : s)
            if (x.active) x.post(ctx, me), any = true;
        if (!any) break;
        for (auto &x : s)
            if (x.active) x.complete(bound, t0);
        RT_CHECK(since(t0) < bound + 30, "streaming ran %.0f s", since(t0));
    }
    return s;
}

std::vector<int> others(int me, int np) {
    std::vector<int> v;
    for (int p = 0; p < np; ++p)
        if (p != me) v.push_back(p);
    return v;
}

void t_remove(rdmx_context_h ctx, int me, int np) {
    const bool victim = me % 2 == 1;
    const double bound = 30.0;
    pid_t del = -1;
    Clock::time_point t_del;
    auto tick = [&](int r) {
        if (me == 0 && r == 10) {  // traffic is flowing everywhere by now
            std::printf("rank 0: rdma link delete rxe1\n");
            std::fflush(stdout);
            t_del = Clock::now();
            del = rt::spawn_sh("exec rdma link delete rxe1");
        }
    };
    // Odd ranks stream with everyone, even ranks with the odd ones (pairs of
    // even ranks never fail, so they exchange after the fault instead).
    std::vector<int> peers;
    for (int p : others(me, np))
        if (victim || p % 2 == 1) peers.push_back(p);
    auto s = stream(ctx, me, peers, 1 << 30, bound, tick);
    for (const auto &x : s) {
        const rdmx_status_t want = victim ? RDMX_ERR_DEVICE : RDMX_ERR_PEER_LOST;
        // Two ranks on the removed device: the one that sees the removal
        // first may finalize, and its disconnect can reach the other before
        // that one's own DEVICE_REMOVAL event; then the stream ended because
        // the peer went away, which is what it says. Its calls after that
        // must still fail with RDMX_ERR_DEVICE (checked below).
        const bool raced = victim && x.peer % 2 == 1 && x.end == RDMX_ERR_PEER_LOST;
        RT_CHECK(x.end == want || raced, "stream with %d ended with %d (%s), want %s after %d rounds", x.peer, x.end,
                 rdmx_strerror(x.end), rdmx_strerror(want), x.round);
        std::printf("rank %d: stream with %d ended after %d rounds, %.2f s: %s\n", me, x.peer, x.round, x.end_s,
                    rdmx_strerror(x.end));
    }
    if (victim) {
        rdmx_request_h r = nullptr;
        int v = 0;
        rdmx_status_t st = rdmx_isend(ctx, &v, 4, 0, 7, &r);
        RT_CHECK(st == RDMX_ERR_DEVICE && r == nullptr, "isend after removal: %d", st);
        st = rdmx_irecv(ctx, &v, 4, RDMX_ANY_SOURCE, 7, &r);
        RT_CHECK(st == RDMX_ERR_DEVICE && r == nullptr, "irecv after removal: %d", st);
        auto t0 = Clock::now();
        RT_OK(rdmx_finalize(ctx));
        RT_CHECK(since(t0) < 15, "finalize took %.1f s", since(t0));
        // The kernel completes the removal only once no process holds the
        // device: it must do so now, while we are still alive.
        auto t1 = Clock::now();
        while (exists("/sys/class/infiniband/rxe1") && since(t1) < 30)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        RT_CHECK(!exists("/sys/class/infiniband/rxe1"), "rxe1 still present 30 s after finalize released it");
        std::printf("rank %d: finalize %.2f s, device gone %.2f s later\n", me, since(t0) - since(t1), since(t1));
        return;
    }
    std::vector<int> evens;
    for (int p = 0; p < np; p += 2) evens.push_back(p);
    rt::group_exchange(ctx, me, evens, 500);
    rdmx_request_h r = nullptr;
    int v = 0;
    rdmx_status_t st = rdmx_isend(ctx, &v, 4, 1, 8, &r);
    if (st == RDMX_OK) st = rt::wait_bounded(&r, 5, "a send to a lost peer");
    RT_CHECK(st == RDMX_ERR_PEER_LOST, "send to a rank on the removed device: %d (%s)", st, rdmx_strerror(st));
    if (me == 0) {
        int rc = rt::wait_child(del, bound);
        RT_CHECK(rc == 0, "rdma link delete rxe1 exited %d after %.1f s", rc, since(t_del));
        std::printf("rank 0: rdma link delete returned after %.2f s\n", since(t_del));
    }
    RT_OK(rdmx_finalize(ctx));
}

std::string port_state(const char *dev) {
    std::string path = std::string("/sys/class/infiniband/") + dev + "/ports/1/state";
    FILE *f = std::fopen(path.c_str(), "r");
    char buf[64] = "";
    if (f != nullptr) {
        if (std::fgets(buf, sizeof(buf), f) == nullptr) buf[0] = 0;
        std::fclose(f);
    }
    return buf;
}

// Waits until the port's ACTIVE state equals `active`; false after `secs`.
bool wait_port(const char *dev, bool active, double secs) {
    auto t0 = Clock::now();
    while (since(t0) < secs) {
        if ((port_state(dev).find("ACTIVE") != std::string::npos) == active) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

std::vector<int> everyone(int np) {
    std::vector<int> v;
    for (int p = 0; p < np; ++p) v.push_back(p);
    return v;
}

void t_linkdown(rdmx_context_h ctx, int me, int np, double peer_timeout, double outage) {
    const char *mydev = me % 2 == 0 ? "rxe0" : "rxe1";
    rt::group_exchange(ctx, me, everyone(np), 600);
    // Streams and idle receives only across the link (even with odd ranks).
    std::vector<int> across;
    for (int p : others(me, np))
        if (p % 2 != me % 2) across.push_back(p);
    std::vector<rdmx_request_h> idle;
    int sink[16] = {};
    for (int p : across) {
        rdmx_request_h r;
        RT_OK(rdmx_irecv(ctx, &sink[p % 16], 4, p, 700, &r));  // never sent: ends only by the fault
        idle.push_back(r);
    }
    // The link goes down under traffic for `outage` seconds, timed by a
    // process of its own, so it comes back whatever the ranks are doing.
    Clock::time_point t_down;
    auto tick = [&](int r) {
        if (me == 0 && r == 10) {
            t_down = Clock::now();
            rt::spawn_sh("ip link set rv1 down; sleep " + std::to_string(outage) + "; ip link set rv1 up");
        }
    };
    const double bound = outage + peer_timeout + 30;
    auto t0 = Clock::now();
    auto s = stream(ctx, me, across, 1 << 30, bound, tick);
    for (const auto &x : s) {
        RT_CHECK(x.end == RDMX_ERR_PEER_LOST, "stream with %d ended with %d (%s) after %d rounds", x.peer, x.end,
                 rdmx_strerror(x.end), x.round);
        std::printf("rank %d: stream with %d: %s after %d rounds, %.2f s\n", me, x.peer, rdmx_strerror(x.end),
                    x.round, x.end_s);
    }
    for (auto &r : idle) {
        rdmx_status_t st = rt::wait_bounded(&r, bound, "an idle receive across the downed link");
        RT_CHECK(st == RDMX_ERR_PEER_LOST, "idle receive ended with %d (%s)", st, rdmx_strerror(st));
    }
    std::printf("rank %d: every peer across the link lost %.2f s after streaming began\n", me, since(t0));
    RT_CHECK(wait_port(mydev, true, outage + 20), "%s not ACTIVE after the link came back", mydev);
    auto t1 = Clock::now();
    RT_OK(rdmx_finalize(ctx));
    RT_CHECK(since(t1) < 15, "finalize took %.1f s", since(t1));
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "remove";
    rt::g_test = which.c_str();
    if (geteuid() != 0 || !exists("/sys/class/infiniband/rxe1") || !exists("/sys/class/net/rv1")) {
        std::fprintf(stderr, "SKIP: needs root and the test bed's rxe1 on rv1\n");
        return 77;
    }
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    // Generous for a loaded, emulated test bed: a rendezvous READ can stall
    // for seconds there, and the stalled-transfer watchdog uses this too.
    const double peer_timeout = 10.0;
    cfg.peer_timeout = peer_timeout;
    rdmx_context_h ctx = rt::init_or_skip(&cfg);
    int me = rdmx_rank(ctx), np = rdmx_size(ctx);
    RT_CHECK(np >= 2, "needs 2 or more ranks");
    if (which == "remove") t_remove(ctx, me, np);
    else if (which == "linkdown") t_linkdown(ctx, me, np, peer_timeout, 12);
    else RT_CHECK(false, "unknown case %s", which.c_str());
    std::printf("%s: rank %d OK\n", which.c_str(), me);
    return 0;
}
