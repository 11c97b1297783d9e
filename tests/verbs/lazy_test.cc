// Connections made on first use (RDMX_CONNECT=lazy), over rc. Cases:
//   crossed    every rank posts wildcard receives, then sends its first
//              message to every peer at once: both sides of every pair dial
//              together (crossed connects), each pair must end with one
//              connection carrying every message, eager and rendezvous,
//              in order.
//   anysource  rank 0 posts ANY_SOURCE receives before any connection
//              exists; the others connect to it later by sending.
//   peerlost   the last rank exits right after rdmx_init (it never answers
//              a connect); the others' send to it and receive naming it end
//              with RDMX_ERR_PEER_LOST within RDMX_CONNECT_TIMEOUT plus a
//              margin, while their traffic with each other goes on; finalize
//              does not wait for it.
//   mixed      ranks that disagree on RDMX_CONNECT (the test line gives
//              some mesh, some lazy): every rank's rdmx_init fails with
//              RDMX_ERR_INVALID_ARG well within the connect timeout,
//              instead of waiting for connections that never come.
//   ring       each rank talks to its two ring neighbours only, more
//              messages than one window of credits each way: lazily it
//              ends with exactly those connections (a mesh with all), every
//              message in order. Prints, per rank, its connections, pinned
//              memory (VmPin) and bring-up times, for docs/scale.md.
//   bringup    prints rdmx_init's time and the first exchange of one byte
//              with every peer (the slowest rank's), for the mesh vs lazy
//              figures of docs/scale.md; checks the bytes.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace {

constexpr int kTagFirst = 7;
constexpr int kTagOrder = 8;
constexpr int kTagBig = 9;
constexpr int kOrderMsgs = 20;          // per pair, after the first: order is kept
constexpr size_t kBigLen = 256 * 1024;  // rendezvous over a lazily made connection
// A margin over RDMX_CONNECT_TIMEOUT for a loss to be noticed: housekeeping
// runs every millisecond, the emulated guest is slow.
constexpr double kLossMarginS = 15.0;
// ring: messages each way per neighbour, over three windows of the largest
// credit grant (64), so receive buffers recycle and credits return.
constexpr int kRingMsgs = 200;
// mixed: rdmx_init must refuse the job well before RDMX_CONNECT_TIMEOUT
// (the test line sets it to twice this) would end it.
constexpr double kMixedBoundS = 30.0;

// Peers this rank has an rc connection to now.
uint64_t rc_connections(rdmx_context_h ctx) {
    rdmx_stats_t st;
    rdmx_stats_init(&st);
    RT_OK(rdmx_get_stats(ctx, &st));
    return st.rc_connections;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void crossed(rdmx_context_h ctx) {
    const int me = rdmx_rank(ctx), n = rdmx_size(ctx);
    const size_t peers = static_cast<size_t>(n - 1);
    // Wildcard receives name nobody: only the sends below start connections.
    std::vector<int> in(peers, -1);
    std::vector<rdmx_request_h> rr(peers, nullptr), sr(peers, nullptr);
    for (size_t i = 0; i < peers; ++i) RT_OK(rdmx_irecv(ctx, &in[i], sizeof(int), RDMX_ANY_SOURCE, kTagFirst, &rr[i]));
    std::vector<int> out(static_cast<size_t>(n));
    size_t k = 0;
    for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        out[static_cast<size_t>(p)] = me * 1000 + p;
        RT_OK(rdmx_isend(ctx, &out[static_cast<size_t>(p)], sizeof(int), p, kTagFirst, &sr[k++]));
    }
    std::vector<rdmx_msg_info_t> info(peers);
    RT_OK(rdmx_waitall(peers, sr.data(), nullptr));
    RT_OK(rdmx_waitall(peers, rr.data(), info.data()));
    std::vector<int> seen(static_cast<size_t>(n), 0);
    for (size_t i = 0; i < peers; ++i) {
        const int src = info[i].source;
        RT_CHECK(src >= 0 && src < n && src != me, "first message from source %d", src);
        RT_CHECK(in[i] == src * 1000 + me, "first message from %d holds %d, want %d", src, in[i], src * 1000 + me);
        ++seen[static_cast<size_t>(src)];
    }
    for (int p = 0; p < n; ++p) RT_CHECK(p == me || seen[static_cast<size_t>(p)] == 1, "%d messages from %d", seen[static_cast<size_t>(p)], p);
    RT_CHECK(rc_connections(ctx) == peers, "%llu rc connections after talking to all %zu peers",
             static_cast<unsigned long long>(rc_connections(ctx)), peers);
    // Order per pair, then a rendezvous each way, on the same connections.
    std::vector<rdmx_request_h> reqs;
    std::vector<int> ord_in(peers * kOrderMsgs), ord_out(kOrderMsgs);
    for (int j = 0; j < kOrderMsgs; ++j) ord_out[static_cast<size_t>(j)] = j;
    k = 0;
    for (int p = 0; p < n; ++p) {
        if (p == me) continue;
        for (int j = 0; j < kOrderMsgs; ++j) {
            reqs.push_back(nullptr);
            RT_OK(rdmx_irecv(ctx, &ord_in[k * kOrderMsgs + static_cast<size_t>(j)], sizeof(int), p, kTagOrder, &reqs.back()));
        }
        for (int j = 0; j < kOrderMsgs; ++j) {
            reqs.push_back(nullptr);
            RT_OK(rdmx_isend(ctx, &ord_out[static_cast<size_t>(j)], sizeof(int), p, kTagOrder, &reqs.back()));
        }
        ++k;
    }
    RT_OK(rdmx_waitall(reqs.size(), reqs.data(), nullptr));
    for (size_t i = 0; i < peers * kOrderMsgs; ++i)
        RT_CHECK(ord_in[i] == static_cast<int>(i % kOrderMsgs), "message %zu of a pair arrived as %d (order)", i % kOrderMsgs, ord_in[i]);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    std::vector<uint8_t> big(kBigLen), got(kBigLen);
    rt::fill(big, me, kTagBig);
    rdmx_request_h b[2] = {nullptr, nullptr};
    RT_OK(rdmx_irecv(ctx, got.data(), got.size(), left, kTagBig, &b[0]));
    RT_OK(rdmx_isend(ctx, big.data(), big.size(), right, kTagBig, &b[1]));
    RT_OK(rdmx_waitall(2, b, nullptr));
    const size_t bad = rt::verify(got.data(), got.size(), left, kTagBig, kBigLen);
    RT_CHECK(bad == SIZE_MAX, "rendezvous from %d: byte %zu wrong", left, bad);
    std::printf("lazy crossed: rank %d OK (%d peers)\n", me, n - 1);
}

void anysource(rdmx_context_h ctx) {
    const int me = rdmx_rank(ctx), n = rdmx_size(ctx);
    if (me == 0) {
        const size_t peers = static_cast<size_t>(n - 1);
        std::vector<int> in(peers, -1);
        std::vector<rdmx_request_h> rr(peers, nullptr);
        for (size_t i = 0; i < peers; ++i)
            RT_OK(rdmx_irecv(ctx, &in[i], sizeof(int), RDMX_ANY_SOURCE, kTagFirst, &rr[i]));
        std::vector<rdmx_msg_info_t> info(peers);
        RT_OK(rdmx_waitall(peers, rr.data(), info.data()));
        std::vector<int> seen(static_cast<size_t>(n), 0);
        for (size_t i = 0; i < peers; ++i) {
            RT_CHECK(info[i].source > 0 && info[i].source < n, "source %d", info[i].source);
            RT_CHECK(in[i] == info[i].source * 3 + 1, "from %d: %d", info[i].source, in[i]);
            ++seen[static_cast<size_t>(info[i].source)];
        }
        for (int p = 1; p < n; ++p) RT_CHECK(seen[static_cast<size_t>(p)] == 1, "%d messages from %d", seen[static_cast<size_t>(p)], p);
        // Every sender waits for the answer below, so all are still connected.
        RT_CHECK(rc_connections(ctx) == peers, "%llu rc connections, want %zu",
                 static_cast<unsigned long long>(rc_connections(ctx)), peers);
        for (int p = 1; p < n; ++p) RT_OK(rdmx_send(ctx, &p, sizeof(p), p, kTagOrder));
        // Stay until every sender has counted its connections: finalize
        // disconnects, and a sender counting after that would see none.
        for (int p = 1; p < n; ++p) {
            int ack = -1;
            RT_OK(rdmx_recv(ctx, &ack, sizeof(ack), p, kTagBig, nullptr));
            RT_CHECK(ack == p, "rank %d acknowledged as %d", p, ack);
        }
    } else {
        // Late: rank 0's receives are posted (and no connection exists) by then.
        std::this_thread::sleep_for(std::chrono::milliseconds(300 + 50 * me));
        const int v = me * 3 + 1;
        RT_OK(rdmx_send(ctx, &v, sizeof(v), 0, kTagFirst));
        int back = -1;
        RT_OK(rdmx_recv(ctx, &back, sizeof(back), 0, kTagOrder, nullptr));
        RT_CHECK(back == me, "rank 0 answered %d", back);
        // Lazy really is lazy: only rank 0 was used (the send completed, so
        // that connection is up), and nobody dials a rank that only sends.
        RT_CHECK(rc_connections(ctx) == 1, "%llu rc connections after talking to rank 0 alone",
                 static_cast<unsigned long long>(rc_connections(ctx)));
        RT_OK(rdmx_send(ctx, &me, sizeof(me), 0, kTagBig));
    }
    std::printf("lazy anysource: rank %d OK\n", me);
}

void peerlost(rdmx_context_h ctx) {
    const int me = rdmx_rank(ctx), n = rdmx_size(ctx);
    const int gone = n - 1;
    if (me == gone) {
        std::fflush(stdout);
        _exit(0);  // before any contact: nobody ever connects to it
    }
    const char *t = std::getenv("RDMX_CONNECT_TIMEOUT");
    const double timeout = t != nullptr ? std::atof(t) : 60.0;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its listener is gone by then
    const double t0 = now_s();
    int v = me, w = -1;
    rdmx_request_h lost[2] = {nullptr, nullptr};
    RT_OK(rdmx_isend(ctx, &v, sizeof(v), gone, kTagFirst, &lost[0]));
    RT_OK(rdmx_irecv(ctx, &w, sizeof(w), gone, kTagFirst, &lost[1]));
    // The survivors' traffic with each other goes on meanwhile.
    for (int round = 0; round < 3 && n > 2; ++round) {
        const int right = (me + 1) % gone, left = (me + gone - 1) % gone;
        int x = me * 10 + round, y = -1;
        RT_OK(rdmx_sendrecv(ctx, &x, sizeof(x), right, kTagOrder, &y, sizeof(y), left, kTagOrder, nullptr));
        RT_CHECK(y == left * 10 + round, "from %d: %d", left, y);
    }
    rdmx_msg_info_t info[2];
    const rdmx_status_t st = rdmx_waitall(2, lost, info);
    const double took = now_s() - t0;
    RT_CHECK(st == RDMX_ERR_PEER_LOST, "waitall on the dead peer: %s", rdmx_strerror(st));
    RT_CHECK(info[0].error == RDMX_ERR_PEER_LOST && info[1].error == RDMX_ERR_PEER_LOST, "send %s, receive %s",
             rdmx_strerror(info[0].error), rdmx_strerror(info[1].error));
    RT_CHECK(took <= timeout + kLossMarginS, "lost after %.1f s, bound %.1f + %.1f s", took, timeout, kLossMarginS);
    // Later operations fail at once.
    RT_CHECK(rdmx_send(ctx, &v, sizeof(v), gone, kTagFirst) == RDMX_ERR_PEER_LOST, "a later send");
    const double f0 = now_s();
    RT_OK(rdmx_finalize(ctx));
    const double fin = now_s() - f0;
    RT_CHECK(fin < timeout, "finalize took %.1f s", fin);
    std::printf("lazy peerlost: rank %d OK (lost after %.1f s, finalize %.2f s)\n", me, took, fin);
    if (me == 0) std::printf("lazy peerlost: survivors OK\n");
    std::fflush(stdout);
    std::exit(0);
}

void bringup(rdmx_context_h ctx, double init_s) {
    const int me = rdmx_rank(ctx), n = rdmx_size(ctx);
    const size_t peers = static_cast<size_t>(n);
    const char *mode = std::getenv("RDMX_CONNECT");
    const bool lazy = mode != nullptr && std::string(mode) == "lazy";
    // A mesh is whole after rdmx_init. (Lazy: peers that left rdmx_init
    // first may have connected to this rank already, so no count holds.)
    const uint64_t up = rc_connections(ctx);
    RT_CHECK(lazy || up == peers - 1, "%llu rc connections after rdmx_init (RDMX_CONNECT=%s)",
             static_cast<unsigned long long>(up), mode ? mode : "mesh");
    std::vector<uint8_t> out(peers), in(peers, 0);
    std::vector<rdmx_request_h> reqs;
    const double t0 = now_s();
    for (int k = 1; k < n; ++k) {
        const int src = (me - k + n) % n;
        reqs.push_back(nullptr);
        RT_OK(rdmx_irecv(ctx, &in[static_cast<size_t>(src)], 1, src, kTagFirst, &reqs.back()));
    }
    for (int k = 1; k < n; ++k) {
        const int dst = (me + k) % n;
        out[static_cast<size_t>(dst)] = static_cast<uint8_t>(me * 7 + dst);
        reqs.push_back(nullptr);
        RT_OK(rdmx_isend(ctx, &out[static_cast<size_t>(dst)], 1, dst, kTagFirst, &reqs.back()));
    }
    RT_OK(rdmx_waitall(reqs.size(), reqs.data(), nullptr));
    const double exch_s = now_s() - t0;
    for (int p = 0; p < n; ++p)
        RT_CHECK(p == me || in[static_cast<size_t>(p)] == static_cast<uint8_t>(p * 7 + me), "byte from %d", p);
    double mine[2] = {init_s, exch_s}, worst[2] = {0, 0};
    RT_OK(rdmx_allreduce(ctx, mine, worst, 2, RDMX_DOUBLE, RDMX_MAX));
    if (me == 0)
        std::printf("lazy bringup: RDMX_CONNECT=%s np %d: init %.1f ms, first exchange with every peer %.1f ms, "
                    "sum %.1f ms (slowest rank)\n", mode ? mode : "mesh", n, worst[0] * 1e3, worst[1] * 1e3,
                    (worst[0] + worst[1]) * 1e3);
}

// A "Field:   123 kB" line of /proc/self/status, in kB; -1 when absent.
long status_kb(const char *field) {
    FILE *f = std::fopen("/proc/self/status", "r");
    if (f == nullptr) return -1;
    char line[256];
    long kb = -1;
    const size_t len = std::strlen(field);
    while (std::fgets(line, sizeof(line), f) != nullptr)
        if (std::strncmp(line, field, len) == 0 && line[len] == ':') {
            kb = std::strtol(line + len + 1, nullptr, 10);
            break;
        }
    std::fclose(f);
    return kb;
}

// Nobody finalizes (and disconnects) before every rank has counted its
// connections: a token goes round the ring twice, the first time passed on
// by each rank after its count, the second time telling each that all have
// counted. Neighbours only, so on demand it makes no new connection (a
// collective would).
void pass_token_twice(rdmx_context_h ctx, int left, int right) {
    for (int round = 0; round < 2; ++round) {
        int token = round;
        if (rdmx_rank(ctx) == 0) {
            RT_OK(rdmx_send(ctx, &token, sizeof(token), right, kTagBig));
            RT_OK(rdmx_recv(ctx, &token, sizeof(token), left, kTagBig, nullptr));
        } else {
            RT_OK(rdmx_recv(ctx, &token, sizeof(token), left, kTagBig, nullptr));
            RT_OK(rdmx_send(ctx, &token, sizeof(token), right, kTagBig));
        }
        RT_CHECK(token == round, "token of round %d holds %d", round, token);
    }
}

// No collective here: one would connect this rank to more peers lazily.
void ring(rdmx_context_h ctx, double init_s) {
    const int me = rdmx_rank(ctx), n = rdmx_size(ctx);
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const char *mode = std::getenv("RDMX_CONNECT");
    const bool lazy = mode != nullptr && std::string(mode) == "lazy";
    const int nbrs = n > 2 ? 2 : 1;
    const int side[2] = {left, right};
    std::vector<int> in(static_cast<size_t>(2 * kRingMsgs), -1), out(kRingMsgs);
    for (int j = 0; j < kRingMsgs; ++j) out[static_cast<size_t>(j)] = me * 100000 + j;
    std::vector<rdmx_request_h> reqs;
    const double t0 = now_s();
    for (int s = 0; s < nbrs; ++s)
        for (int j = 0; j < kRingMsgs; ++j) {
            reqs.push_back(nullptr);
            RT_OK(rdmx_irecv(ctx, &in[static_cast<size_t>(s * kRingMsgs + j)], sizeof(int), side[s], kTagOrder,
                             &reqs.back()));
        }
    for (int s = 0; s < nbrs; ++s)
        for (int j = 0; j < kRingMsgs; ++j) {
            reqs.push_back(nullptr);
            RT_OK(rdmx_isend(ctx, &out[static_cast<size_t>(j)], sizeof(int), side[s], kTagOrder, &reqs.back()));
        }
    RT_OK(rdmx_waitall(reqs.size(), reqs.data(), nullptr));
    const double exch_s = now_s() - t0;
    for (int s = 0; s < nbrs; ++s)
        for (int j = 0; j < kRingMsgs; ++j)
            RT_CHECK(in[static_cast<size_t>(s * kRingMsgs + j)] == side[s] * 100000 + j, "message %d from %d holds %d",
                     j, side[s], in[static_cast<size_t>(s * kRingMsgs + j)]);
    const uint64_t conns = rc_connections(ctx);
    const uint64_t want = lazy ? static_cast<uint64_t>(nbrs) : static_cast<uint64_t>(n - 1);
    RT_CHECK(conns == want, "%llu rc connections after talking to %d neighbours (RDMX_CONNECT=%s), want %llu",
             static_cast<unsigned long long>(conns), nbrs, mode ? mode : "mesh", static_cast<unsigned long long>(want));
    const long pinned_kb = status_kb("VmPin");
    pass_token_twice(ctx, left, right);
    std::printf("lazy ring: RDMX_CONNECT=%s np %d rank %d: %llu rc connections, VmPin %ld kB, init %.1f ms, "
                "first exchange with the neighbours %.1f ms\n", mode ? mode : "mesh", n, me,
                static_cast<unsigned long long>(conns), pinned_kb, init_s * 1e3, exch_s * 1e3);
    std::fflush(stdout);
}

// Not through init_or_skip: the failure is the expected outcome.
int mixed() {
    const char *mode = std::getenv("RDMX_CONNECT");
    const double t0 = now_s();
    rdmx_context_h ctx = nullptr;
    const rdmx_status_t st = rdmx_init(nullptr, &ctx);
    const double took = now_s() - t0;
    if (st == RDMX_ERR_NO_DEVICE) {
        std::fprintf(stderr, "SKIP: no RDMA device (%s)\n", rdmx_strerror(st));
        return 77;
    }
    if (st == RDMX_OK) (void)rdmx_finalize(ctx);
    RT_CHECK(st == RDMX_ERR_INVALID_ARG, "rdmx_init with RDMX_CONNECT=%s among ranks that disagree: %s, want %s",
             mode ? mode : "(unset)", rdmx_strerror(st), rdmx_strerror(RDMX_ERR_INVALID_ARG));
    RT_CHECK(took < kMixedBoundS, "rdmx_init took %.1f s to refuse the job (bound %.0f s)", took, kMixedBoundS);
    std::printf("lazy mixed: RDMX_CONNECT=%s refused in %.2f s\n", mode ? mode : "(unset)", took);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    rt::g_test = argc > 1 ? argv[1] : "?";
    if (mode == "mixed") return mixed();
    const double t0 = now_s();
    rdmx_context_h ctx = rt::init_or_skip();
    const double init_s = now_s() - t0;
    if (rdmx_size(ctx) < 2) {
        std::fprintf(stderr, "SKIP: needs at least 2 ranks\n");
        return 77;
    }
    if (mode == "crossed") crossed(ctx);
    else if (mode == "anysource") anysource(ctx);
    else if (mode == "peerlost") peerlost(ctx);
    else if (mode == "bringup") bringup(ctx, init_s);
    else if (mode == "ring") ring(ctx, init_s);
    else RT_CHECK(false, "unknown case '%s' (crossed, anysource, peerlost, mixed, ring, bringup)", mode.c_str());
    RT_OK(rdmx_finalize(ctx));
    return 0;
}
