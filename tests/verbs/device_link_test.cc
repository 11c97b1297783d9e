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
//   addrchange BOND - 2 ranks, rank 0 on an rxe over BOND (an active-backup
//              bond with fail_over_mac=active, built by addr_change.sh), rank 1
//              on an rxe facing it. Both stream to each other, one lane per
//              direction; rank 0 makes the backup slave active, so BOND's MAC
//              changes and rdma_cm sends ADDR_CHANGE. What was measured on
//              Soft-RoCE (Linux 6.1) is what is asserted: see t_addrchange.
// The ctest wrapper (link_restore.sh) rebuilds rxe0 and rxe1 after the first
// two; addr_change.sh builds and removes the bonded bed around the third.
#include <sys/stat.h>

#include <fstream>
#include <sstream>

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

std::string read_line(const std::string &path) {
    std::ifstream f(path);
    std::string s;
    std::getline(f, s);
    return s;
}

// One direction of traffic with the peer, one request in flight: a receive
// lane proves delivery (an eager send completes locally once copied, so only
// the receiver can tell whether a direction still flows).
struct Lane {
    bool send = false;
    int peer = -1, n = 0, n_after = 0;  // completed, and completed after the failover
    rdmx_request_h req = nullptr;
    std::vector<uint8_t> buf;
    bool live = true;
    rdmx_status_t end = RDMX_OK;
    double end_s = -1, last_ok_s = -1;  // seconds after the failover (-1: before it)

    void post(rdmx_context_h ctx, int me) {
        const size_t len = rt::Stream::size_of(n);
        const int tag = 1000 + n;
        buf.assign(len, 0);
        if (send) rt::fill(buf, me, tag);
        rdmx_status_t st = send ? rdmx_isend(ctx, buf.data(), len, peer, tag, &req)
                                : rdmx_irecv(ctx, buf.data(), len, peer, tag, &req);
        if (st != RDMX_OK) finish(st, 0);
    }
    void finish(rdmx_status_t st, double t) { live = false, end = st, end_s = t, req = nullptr; }
    // Tests the request; on success checks it and posts the next one.
    void poll(rdmx_context_h ctx, int me, double t, bool after) {
        int done = 0;
        rdmx_status_t st = rdmx_test(&req, &done, nullptr);
        if (!done) return;
        if (st != RDMX_OK) return finish(st, t);
        if (!send) {
            size_t bad = rt::verify(buf.data(), buf.size(), peer, 1000 + n, buf.size());
            RT_CHECK(bad == SIZE_MAX, "message %d from %d: byte %zu of %zu wrong", n, peer, bad, buf.size());
        }
        ++n, n_after += after, last_ok_s = t;
        post(ctx, me);
    }
};

// Makes BOND's backup slave the active one; returns the new active slave.
std::string fail_over(const std::string &bond) {
    const std::string dir = "/sys/class/net/" + bond + "/bonding/";
    const std::string cur = read_line(dir + "active_slave");
    std::istringstream slaves(read_line(dir + "slaves"));
    std::string s, next;
    while (slaves >> s)
        if (s != cur) next = s;
    RT_CHECK(!next.empty(), "%s has no backup slave (slaves: %s)", bond.c_str(), read_line(dir + "slaves").c_str());
    std::ofstream f(dir + "active_slave");
    f << next << '\n';
    f.flush();
    RT_CHECK(f.good(), "cannot make %s the active slave of %s", next.c_str(), bond.c_str());
    return next;
}

// Runs both lanes until both have ended or `observe` s have passed since the
// failover, which rank 0 forces once each lane has moved `warm` messages.
// Both ranks see the failover in sysfs (one host), so their times compare.
void run_lanes(rdmx_context_h ctx, int me, Lane (&l)[2], const std::string &bond, double observe, double bound) {
    const std::string path = "/sys/class/net/" + bond + "/bonding/active_slave";
    const std::string before = read_line(path);
    const int warm = 30;
    auto t0 = Clock::now(), tf = t0, t_look = t0;
    bool after = false;
    for (auto &x : l) x.post(ctx, me);
    while ((l[0].live || l[1].live) && !(after && since(tf) > observe)) {
        RT_CHECK(since(t0) < bound, "lanes ran %.0f s (failed over: %d; sent %d, received %d)", since(t0), after,
                 l[0].n, l[1].n);
        if (!after && me == 0 && l[0].n >= warm && l[1].n >= warm) {
            const std::string now = fail_over(bond);
            after = true, tf = Clock::now();
            std::printf("rank 0: %s: active slave %s -> %s\n", bond.c_str(), before.c_str(), now.c_str());
            std::fflush(stdout);
        }
        if (!after && since(t_look) > 0.01) {
            t_look = Clock::now();
            if (read_line(path) != before) after = true, tf = t_look;
        }
        for (auto &x : l)
            if (x.live) x.poll(ctx, me, after ? since(tf) : -1, after);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    RT_CHECK(after, "no failover seen");
}

// Measured on Soft-RoCE (Linux 6.1), and asserted: the bond side's first
// send posted after the failover completes with LOC_QP_OP_ERR (the QP's
// source address is stale), so it loses the peer at once; a rendezvous
// whose RDMA was already on the wire at the failover instead stalls, and the
// engine's stall watchdog loses the peer RDMX_PEER_TIMEOUT later (seen under
// ASan, where the failover landed on a 256 KiB put: 6.04 s). Either way
// within one RDMX_PEER_TIMEOUT and a housekeeping pass; nothing is delivered
// either way after that. The far side is not told (its packets go to the old
// MAC, the bond side's disconnect never reaches it, and rxe retransmits to
// the old address forever): its keepalive probes the silent peer after
// RDMX_PEER_TIMEOUT / 2 and loses it when the probe is still unacknowledged
// RDMX_PEER_TIMEOUT later, so every request of both sides ends PEER_LOST
// within 2.5 x RDMX_PEER_TIMEOUT (the keepalive runs every half timeout).
void t_addrchange(rdmx_context_h ctx, int me, int np, const std::string &bond, double peer_timeout) {
    RT_CHECK(np == 2, "addrchange runs on 2 ranks (rank 0 on the bond), not %d", np);
    const int peer = 1 - me;
    rt::group_exchange(ctx, me, everyone(np), 600);
    Lane l[2];
    l[0].send = true;
    l[0].peer = l[1].peer = peer;
    const double bound = 2.5 * peer_timeout + 3, late = 2;
    run_lanes(ctx, me, l, bond, bound, bound + 60);
    for (const auto &x : l) {
        std::printf("rank %d: %s %d: %d messages, %d after the failover, last at %.2f s; %s", me, x.send ? "to" : "from",
                    peer, x.n, x.n_after, x.last_ok_s, x.live ? "still pending" : rdmx_strerror(x.end));
        std::printf(x.live ? " %.0f s after it\n" : " at %.2f s\n", x.live ? bound : x.end_s);
        // Only a receive proves delivery (an eager send may complete once copied).
        RT_CHECK(x.send || x.last_ok_s < late, "a message from %d arrived %.2f s after the failover", peer,
                 x.last_ok_s);
        RT_CHECK(!x.live, "a %s still waits %.0f s after the failover", x.send ? "send" : "receive", bound);
        RT_CHECK(x.end == RDMX_ERR_PEER_LOST, "lane ended with %d (%s)", x.end, rdmx_strerror(x.end));
    }
    std::fflush(stdout);
    RT_CHECK(me != 0 || l[0].end_s < peer_timeout + 2, "the bond side's sends failed only %.1f s after the failover "
             "(RDMX_PEER_TIMEOUT %.0f s)", l[0].end_s, peer_timeout);
    auto t1 = Clock::now();
    RT_OK(rdmx_finalize(ctx));
    RT_CHECK(since(t1) < 15, "finalize took %.1f s", since(t1));
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "remove";
    rt::g_test = which.c_str();
    const std::string bond = which == "addrchange" && argc > 2 ? argv[2] : "";
    if (which == "addrchange" && bond.empty()) {
        std::fprintf(stderr, "usage: %s addrchange BOND (the bond under rank 0's rxe)\n", argv[0]);
        return 2;
    }
    if (geteuid() != 0) {
        std::fprintf(stderr, "SKIP: needs root\n");
        return 77;
    }
    if (bond.empty() && (!exists("/sys/class/infiniband/rxe1") || !exists("/sys/class/net/rv1"))) {
        std::fprintf(stderr, "SKIP: needs the test bed's rxe1 on rv1\n");
        return 77;
    }
    if (!bond.empty() && !exists(("/sys/class/net/" + bond + "/bonding").c_str())) {
        std::fprintf(stderr, "SKIP: no bond %s (addr_change.sh builds it)\n", bond.c_str());
        return 77;
    }
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    // Generous for a loaded, emulated test bed: a rendezvous READ can stall
    // for seconds there, and the stalled-transfer watchdog uses this too.
    // addrchange: shorter, so its bound (2.5 x) stays short; its traffic
    // stops at the failover, so no long transfer can trip the watchdog.
    const double peer_timeout = which == "addrchange" ? 6.0 : 10.0;
    cfg.peer_timeout = peer_timeout;
    rdmx_context_h ctx = rt::init_or_skip(&cfg);
    int me = rdmx_rank(ctx), np = rdmx_size(ctx);
    RT_CHECK(np >= 2, "needs 2 or more ranks");
    if (which == "remove") t_remove(ctx, me, np);
    else if (which == "linkdown") t_linkdown(ctx, me, np, peer_timeout, 12);
    else if (which == "addrchange") t_addrchange(ctx, me, np, bond, peer_timeout);
    else RT_CHECK(false, "unknown case %s", which.c_str());
    std::printf("%s: rank %d OK\n", which.c_str(), me);
    return 0;
}
