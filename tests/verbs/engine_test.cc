// Engine invariants under mpirun, with test hooks (protocols/test_hooks.h,
// protocols/fault_inject.h) standing in for what the test bed cannot make
// happen on its own. Cases:
//   sqfull - (np 2, RDMX_SQ_DEPTH=4) both ranks stream eager and rendezvous
//            messages at each other, rank 0 by get and rank 1 by put, so FIN,
//            CTS and PutFin fall due while the 4-slot send rings are full.
//            Every payload is checked, every wait is bounded, and the
//            engine's bookkeeping (ring occupancy, bounce buffers, READ/WRITE
//            counts) must balance afterwards.
//   reuse  - (np 3, get) rank 0 holds the send completions of its QP to rank
//            1 (a device slow to flush), starts reading rank 1's message,
//            then fails rank 1 (injected QP_FATAL): that receive ends
//            PEER_LOST. Its request is freed and handed out again (the pool
//            is last-in first-out) to a receive matching rank 2's message,
//            whose READs start; only then are rank 1's READ and flush
//            completions released. Rank 2's transfer must still complete
//            with the right bytes and rank 2's READ count stay right.
//   invdev - (np 2, RDMX_RNDV_WINDOWS=1) rank 0 sends by get and receives by
//            put through memory windows while holding its send completions
//            for rank 1, so once FIN and PutFin have arrived both requests
//            wait for their window's LOCAL_INV to complete. A device failure
//            (injected DEVICE_FATAL) must complete both; rank 1 stays until it
//            loses rank 0. Skipped (77) where windows are off: they need the
//            registration cache, which sanitizer runtimes turn off.
//   quiet  - (np 2, RDMX_PROGRESS=thread) a blocking 8-byte ping-pong for
//            1.5 s: rank 0's progress thread, asleep while its application
//            drives progress, must wake by timeout at most half as often as
//            its base pace (every 10 ms) would make it: its sleeps lengthen
//            (DelegatedPace). Then rank 0 posts a nonblocking receive of a
//            rendezvous message and computes 3 s without calling rdmx; the
//            receive wakes the lengthened sleep, the progress thread takes
//            over, and rank 1's blocking send of it must return within the
//            first half of the computation.
//   spin   - (np 2, RDMX_PROGRESS=caller, RDMX_SPIN_MAX_US below the floor: a
//            fixed budget) rank 1 sleeps 300 us before each of 40 replies.
//            With a CPU each, RDMX_SPIN_US=auto spins 2 ms: at most a
//            quarter of rank 0's waits may sleep; with RDMX_SPIN_US=100 at
//            least half must. With "crowded" both ranks pin themselves to
//            CPU 0 first, and auto must come to 200 us.
#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fault_util.h"
#include "protocols/fault_inject.h"
#include "protocols/test_hooks.h"

namespace {

using rt::since;

void check_engine(rdmx_context_h ctx, const char *when) {
    std::string why;
    rdmx_status_t st = rdmx::check_engine(ctx, &why);
    RT_CHECK(st == RDMX_OK, "engine bookkeeping %s: %s", when, why.c_str());
}

// Waits for every request (bounded), returning the first error.
rdmx_status_t wait_all_bounded(std::vector<rdmx_request_h> &reqs, double secs, const char *what) {
    rdmx_status_t first = RDMX_OK;
    for (rdmx_request_h &r : reqs) {
        rdmx_status_t st = rt::wait_bounded(&r, secs, what);
        if (first == RDMX_OK) first = st;
    }
    return first;
}

// ---- sqfull ------------------------------------------------------------

size_t sqfull_size(int i) {
    static const size_t sizes[] = {64, 1024, 20000, 3000, 100000, 8};  // inline, bounce, rndv
    return sizes[i % 6];
}

void t_sqfull(rdmx_context_h ctx, int me) {
    const int peer = 1 - me;
    constexpr int kRounds = 4, kMsgs = 48;
    for (int round = 0; round < kRounds; ++round) {
        std::vector<std::vector<uint8_t>> out(kMsgs), in(kMsgs);
        std::vector<rdmx_request_h> reqs;
        for (int i = 0; i < kMsgs; ++i) {
            const int tag = round * kMsgs + i;
            in[static_cast<size_t>(i)].assign(sqfull_size(i), 0);
            reqs.emplace_back();
            RT_OK(rdmx_irecv(ctx, in[static_cast<size_t>(i)].data(), sqfull_size(i), peer, tag, &reqs.back()));
        }
        for (int i = 0; i < kMsgs; ++i) {
            const int tag = round * kMsgs + i;
            out[static_cast<size_t>(i)].resize(sqfull_size(i));
            rt::fill(out[static_cast<size_t>(i)], me, tag);
            reqs.emplace_back();
            RT_OK(rdmx_isend(ctx, out[static_cast<size_t>(i)].data(), sqfull_size(i), peer, tag, &reqs.back()));
        }
        RT_OK(wait_all_bounded(reqs, 60, "a transfer through a full send queue"));
        for (int i = 0; i < kMsgs; ++i) {
            const std::vector<uint8_t> &b = in[static_cast<size_t>(i)];
            size_t bad = rt::verify(b.data(), b.size(), peer, round * kMsgs + i, b.size());
            RT_CHECK(bad == SIZE_MAX, "round %d message %d (%zu B): byte %zu wrong", round, i, b.size(), bad);
        }
    }
    // Both sides are done with each other's messages; one more exchange lets
    // the last completions (FIN, PutFin) land before the books are checked.
    int token = me, got = -1;
    rdmx_request_h t[2];
    RT_OK(rdmx_irecv(ctx, &got, sizeof(got), peer, 9999, &t[0]));
    RT_OK(rdmx_isend(ctx, &token, sizeof(token), peer, 9999, &t[1]));
    RT_OK(rdmx_waitall(2, t, nullptr));
    RT_CHECK(got == peer, "token %d", got);
    check_engine(ctx, "after the full-queue stream");
    std::printf("sqfull: rank %d OK (%d rounds of %d messages each way)\n", me, kRounds, kMsgs);
}

// ---- reuse ---------------------------------------------------------------

constexpr size_t kReuseBytes = 8u << 20;

void t_reuse(rdmx_context_h ctx, int me) {
    std::vector<uint8_t> buf(kReuseBytes);
    if (me == 1 || me == 2) {  // senders: rank 1's connection is failed under its transfer
        rt::fill(buf, me, me);
        rdmx_request_h s = nullptr;
        RT_OK(rdmx_isend(ctx, buf.data(), buf.size(), 0, me, &s));
        rdmx_status_t st = rt::wait_bounded(&s, 60, "a rendezvous send");
        if (me == 2) RT_CHECK(st == RDMX_OK, "rank 2's send ended %d (%s)", st, rdmx_strerror(st));
        else RT_CHECK(st == RDMX_ERR_PEER_LOST, "rank 1's send ended %d (%s), want PEER_LOST", st, rdmx_strerror(st));
        if (me == 2) {
            int token = 0;
            RT_OK(rdmx_recv(ctx, &token, sizeof(token), 0, 50, nullptr));
            RT_CHECK(token == 50, "token %d", token);
            rt::group_exchange(ctx, me, {0, 2}, 60);
        }
        return;
    }
    // Both RTSs are here before anything starts.
    RT_OK(rdmx_probe(ctx, 1, 1, nullptr));
    RT_OK(rdmx_probe(ctx, 2, 2, nullptr));
    RT_OK(rdmx::hold_send_completions(ctx, 1));
    rdmx_request_h r1 = nullptr;
    RT_OK(rdmx_irecv(ctx, buf.data(), buf.size(), 1, 1, &r1));  // READs from rank 1 go out
    const rdmx_request_h first = r1;
    RT_OK(rdmx::inject_async_event(ctx, "qp_fatal", 1));
    rdmx_status_t st = rt::wait_bounded(&r1, 20, "the receive from the failed peer");
    RT_CHECK(st == RDMX_ERR_PEER_LOST, "receive from rank 1 ended %d (%s)", st, rdmx_strerror(st));
    // Let the flush of rank 1's READs reach the CQ (and be set aside).
    auto t0 = rt::Clock::now();
    while (since(t0) < 0.5) (void)rdmx_progress(ctx);
    std::vector<uint8_t> in(kReuseBytes, 0);
    rdmx_request_h r2 = nullptr;
    RT_OK(rdmx_irecv(ctx, in.data(), in.size(), 2, 2, &r2));  // matches rank 2's RTS: READs go out
    RT_CHECK(r2 == first, "the pool did not hand the freed request out again (%p, %p): the case is not exercised",
             static_cast<void *>(r2), static_cast<void *>(first));
    rdmx::release_send_completions(ctx);  // rank 1's READ completions and flushes, late
    rdmx_msg_info_t info{};
    t0 = rt::Clock::now();
    for (;;) {
        int done = 0;
        st = rdmx_test(&r2, &done, &info);
        if (done) break;
        RT_CHECK(since(t0) < 60, "the receive from rank 2 did not complete in 60 s");
    }
    RT_CHECK(st == RDMX_OK, "receive from rank 2 (reusing the failed receive's request) ended %d (%s)", st,
             rdmx_strerror(st));
    RT_CHECK(info.source == 2 && info.length == kReuseBytes, "source %d length %zu", info.source, info.length);
    size_t bad = rt::verify(in.data(), in.size(), 2, 2, in.size());
    RT_CHECK(bad == SIZE_MAX, "rank 2's payload wrong at byte %zu", bad);
    check_engine(ctx, "after the reuse");
    int token = 50;
    RT_OK(rdmx_send(ctx, &token, sizeof(token), 2, 50));
    rt::group_exchange(ctx, me, {0, 2}, 60);
    check_engine(ctx, "after the survivors' exchange");
    std::printf("reuse: rank 0 OK\n");
}

// ---- quiet --------------------------------------------------------------

constexpr double kQuietPingPongS = 1.5;
constexpr double kQuietComputeS = 3.0;
constexpr double kQuietBaseSleepS = 0.010;  // DelegatedPace::kBaseMs
constexpr size_t kQuietBig = 1u << 20;      // rendezvous
constexpr int64_t kQuietStop = -1;

void t_quiet(rdmx_context_h ctx, int me) {
    std::vector<uint8_t> big(kQuietBig);
    int64_t v = 0;
    if (me == 1) {
        for (;;) {  // pong until rank 0 says stop
            RT_OK(rdmx_recv(ctx, &v, sizeof v, 0, 1, nullptr));
            if (v == kQuietStop) break;
            RT_OK(rdmx_send(ctx, &v, sizeof v, 0, 1));
        }
        RT_OK(rdmx_recv(ctx, &v, sizeof v, 0, 3, nullptr));  // rank 0's receive is posted
        rt::fill(big, 1, 2);
        const auto t0 = rt::Clock::now();
        RT_OK(rdmx_send(ctx, big.data(), big.size(), 0, 2));  // returns once rank 0 has the bytes
        const double took = since(t0);
        RT_OK(rdmx_send(ctx, &took, sizeof took, 0, 4));
        return;
    }
    const uint64_t before = rdmx::delegated_timeouts(ctx);
    const auto t0 = rt::Clock::now();
    long iters = 0;
    for (; since(t0) < kQuietPingPongS; ++iters) {
        v = iters;
        RT_OK(rdmx_send(ctx, &v, sizeof v, 1, 1));
        RT_OK(rdmx_recv(ctx, &v, sizeof v, 1, 1, nullptr));
        RT_CHECK(v == iters, "pong %ld carried %lld", iters, static_cast<long long>(v));
    }
    const double pinged = since(t0);
    const uint64_t wakes = rdmx::delegated_timeouts(ctx) - before;
    v = kQuietStop;
    RT_OK(rdmx_send(ctx, &v, sizeof v, 1, 1));
    std::printf("quiet: %ld round trips in %.2f s, the progress thread woke %llu times by timeout (%.0f at its "
                "base pace)\n", iters, pinged, static_cast<unsigned long long>(wakes), pinged / kQuietBaseSleepS);
    RT_CHECK(static_cast<double>(wakes) <= pinged / kQuietBaseSleepS / 2,
             "the progress thread woke %llu times in %.2f s of blocking ping-pong: its sleeps did not lengthen",
             static_cast<unsigned long long>(wakes), pinged);
    rdmx_request_h r = nullptr;
    RT_OK(rdmx_irecv(ctx, big.data(), big.size(), 1, 2, &r));
    RT_OK(rdmx_send(ctx, &v, sizeof v, 1, 3));
    const auto c0 = rt::Clock::now();
    volatile uint64_t work = 0;
    while (since(c0) < kQuietComputeS) work = work + 1;
    RT_OK(rt::wait_bounded(&r, 30, "the rendezvous receive"));
    double took = 0;
    RT_OK(rdmx_recv(ctx, &took, sizeof took, 1, 4, nullptr));
    const size_t bad = rt::verify(big.data(), big.size(), 1, 2, big.size());
    RT_CHECK(bad == SIZE_MAX, "rendezvous payload wrong at byte %zu", bad);
    RT_CHECK(took < kQuietComputeS / 2, "rank 1's send took %.3f s while rank 0 computed %.1f s without calls: "
             "no background progress after the lengthened sleeps", took, kQuietComputeS);
    std::printf("quiet: rank 1's rendezvous send returned after %.3f s of rank 0's %.1f s computation\n", took,
                kQuietComputeS);
}

// ---- invdev -------------------------------------------------------------

constexpr size_t kInvBytes = 256u * 1024;

// Windows need the registration cache, which is off under sanitizer
// runtimes (docs/design/protocols.md): there this case cannot run.
bool windows_on(rdmx_context_h ctx) {
    rdmx_stats_t st;
    rdmx_stats_init(&st);
    RT_OK(rdmx_get_stats(ctx, &st));
    return st.rndv_windows != 0;
}

void t_invdev(rdmx_context_h ctx, int me) {
    const int peer = 1 - me;
    std::vector<uint8_t> out(kInvBytes), in(kInvBytes, 0);
    rt::fill(out, me, 3);
    if (me == 0) RT_OK(rdmx::hold_send_completions(ctx, 1));
    rdmx_request_h r[2] = {nullptr, nullptr};
    RT_OK(rdmx_irecv(ctx, in.data(), in.size(), peer, 3, &r[0]));
    RT_OK(rdmx_isend(ctx, out.data(), out.size(), peer, 3, &r[1]));
    int token = 0;
    if (me == 1) {  // both transfers done here: FIN and PutFin are on their way to rank 0
        RT_OK(rt::wait_bounded(&r[0], 60, "rank 1's receive"));
        RT_OK(rt::wait_bounded(&r[1], 60, "rank 1's send"));
        RT_CHECK(rt::verify(in.data(), in.size(), 0, 3, in.size()) == SIZE_MAX, "rank 0's payload wrong");
        token = 7;
        RT_OK(rdmx_send(ctx, &token, sizeof(token), 0, 4));
        // Stay connected until rank 0's device failure takes the connection:
        // leaving earlier would fail rank 0's requests by a peer loss first.
        rdmx_request_h never = nullptr;
        RT_OK(rdmx_irecv(ctx, &token, sizeof(token), 0, 5, &never));
        rdmx_status_t st = rt::wait_bounded(&never, 60, "the loss of rank 0");
        RT_CHECK(st == RDMX_ERR_PEER_LOST, "rank 0's device failure reached rank 1 as %d (%s)", st, rdmx_strerror(st));
        return;
    }
    // Arrives after FIN and PutFin (one connection, in order): both requests
    // now wait for their window's LOCAL_INV, whose completion is held.
    RT_OK(rdmx_recv(ctx, &token, sizeof(token), 1, 4, nullptr));
    RT_CHECK(token == 7, "token %d", token);
    for (int i = 0; i < 2; ++i) {
        int done = 0;
        rdmx_status_t st = rdmx_test(&r[i], &done, nullptr);
        RT_CHECK(!done, "the %s completed (%s) before its window was revoked: the case is not exercised",
                 i == 0 ? "put receive" : "get send", rdmx_strerror(st));
    }
    RT_OK(rdmx::inject_async_event(ctx, "device_fatal", -1));
    // The data moved and FIN/PutFin said so: both complete, successfully.
    RT_OK(rt::wait_bounded(&r[0], 20, "a put receive waiting for its LOCAL_INV when the device failed"));
    RT_OK(rt::wait_bounded(&r[1], 20, "a get send waiting for its LOCAL_INV when the device failed"));
    RT_CHECK(rt::verify(in.data(), in.size(), 1, 3, in.size()) == SIZE_MAX, "rank 1's payload wrong");
    std::printf("invdev: rank 0 OK\n");
}

// ---- spin ---------------------------------------------------------------

// RDMX_SPIN_US=auto: ranks with a CPU each spin kSpinSpareCpuUs before a
// wait sleeps, so a wait of a few hundred microseconds (the peer answers
// late) is spun through; crowded onto one CPU ("crowded": both
// ranks pin themselves to CPU 0 before rdmx_init) the budget is
// kSpinCrowdedUs. RDMX_SPIN_MAX_US below the floor fixes the budget (no
// adaptation), so the count of sleeps shows which budget the waits used.
constexpr int kSpinRounds = 40;
constexpr double kSpinReplyS = 300e-6;

void t_spin(rdmx_context_h ctx, int me, bool crowded) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) < rdmx_size(ctx)) crowded = true;
    const char *set = std::getenv("RDMX_SPIN_US");
    const unsigned want = set != nullptr ? static_cast<unsigned>(std::atoi(set)) : crowded ? 200u : 2000u;
    const unsigned floor_us = rdmx::spin_floor_us(ctx);
    RT_CHECK(floor_us == want, "rank %d: waits start from a %u us spin, want %u (%s, RDMX_SPIN_US %s)", me, floor_us,
             want, crowded ? "fewer CPUs than ranks" : "a CPU each", set != nullptr ? set : "auto");
    int64_t v = 0;
    if (me == 1) {
        for (int i = 0; i < kSpinRounds; ++i) {
            RT_OK(rdmx_recv(ctx, &v, sizeof v, 0, 1, nullptr));
            std::this_thread::sleep_for(std::chrono::duration<double>(kSpinReplyS));
            RT_OK(rdmx_send(ctx, &v, sizeof v, 0, 1));
        }
        return;
    }
    const uint64_t before = rdmx::wait_sleeps(ctx);
    for (int i = 0; i < kSpinRounds; ++i) {
        v = i;
        RT_OK(rdmx_send(ctx, &v, sizeof v, 1, 1));
        RT_OK(rdmx_recv(ctx, &v, sizeof v, 1, 1, nullptr));
        RT_CHECK(v == i, "reply %d carried %lld", i, static_cast<long long>(v));
    }
    const uint64_t slept = rdmx::wait_sleeps(ctx) - before;
    std::printf("spin: %u us budget, %llu of %d waits for a reply %.0f us away slept\n", floor_us,
                static_cast<unsigned long long>(slept), kSpinRounds, kSpinReplyS * 1e6);
    // Crowded, only the floor is checked: the ranks take turns on the CPU.
    // With a CPU each, the budget decides. Load moves the counts: other
    // processes on the CPUs delay rank 1's answer past a long spin (the
    // reason sm.spin_spare runs alone), and a short-spin wait preempted in
    // mid-spin finds the answer on its return and does not sleep. Under
    // TSan, the long spin running alone slept 0 times in 40, the short one
    // 36-40 times beside other tests. So: at most a quarter with the long
    // spin, at least half with the short one.
    if (crowded) return;
    if (floor_us * 1e-6 >= 4 * kSpinReplyS)
        RT_CHECK(slept <= kSpinRounds / 4, "%llu of %d waits slept with a %u us spin",
                 static_cast<unsigned long long>(slept), kSpinRounds, floor_us);
    else if (floor_us * 1e-6 < kSpinReplyS / 1.5)
        RT_CHECK(slept >= kSpinRounds / 2, "only %llu of %d waits slept with a %u us spin",
                 static_cast<unsigned long long>(slept), kSpinRounds, floor_us);
}

// Open MPI's rank, before rdmx_init knows it: rank-dependent settings.
int launcher_rank() {
    const char *s = std::getenv("OMPI_COMM_WORLD_RANK");
    return s != nullptr ? std::atoi(s) : -1;
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "sqfull";
    rt::g_test = argv[1] ? argv[1] : "sqfull";
    // sqfull and invdev: rank 0 sends by get, rank 1 by put (FIN, CTS and
    // PutFin all flow; receivers follow the sender's choice).
    if (which != "reuse" && launcher_rank() >= 0)
        setenv("RDMX_RNDV_PROTO", launcher_rank() % 2 == 0 ? "get" : "put", 1);
    if (which == "spin" && argc > 2 && std::string(argv[2]) == "crowded") {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        RT_CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "sched_setaffinity(CPU 0): %s", std::strerror(errno));
    }
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    cfg.peer_timeout = 10.0;
    rdmx_context_h ctx = rt::init_or_skip(&cfg);
    const int me = rdmx_rank(ctx), np = rdmx_size(ctx);
    if (which == "sqfull") {
        RT_CHECK(np == 2, "sqfull needs 2 ranks");
        t_sqfull(ctx, me);
    } else if (which == "reuse") {
        RT_CHECK(np == 3, "reuse needs 3 ranks");
        t_reuse(ctx, me);
    } else if (which == "invdev") {
        RT_CHECK(np == 2, "invdev needs 2 ranks");
        if (!windows_on(ctx)) {
            std::fprintf(stderr, "SKIP: rank %d: no memory windows (registration cache off, e.g. under a sanitizer)\n",
                         me);
            RT_OK(rdmx_finalize(ctx));
            return 77;
        }
        t_invdev(ctx, me);
    } else if (which == "quiet") {
        RT_CHECK(np == 2, "quiet needs 2 ranks");
        t_quiet(ctx, me);
    } else if (which == "spin") {
        RT_CHECK(np == 2, "spin needs 2 ranks");
        t_spin(ctx, me, argc > 2 && std::string(argv[2]) == "crowded");
    } else {
        RT_CHECK(false, "unknown case %s", which.c_str());
    }
    // After an injected failure finalize may report it; the full-queue run must end clean.
    rdmx_status_t st = rdmx_finalize(ctx);
    if (which == "sqfull" || which == "quiet" || which == "spin") RT_OK(st);
    std::printf("engine %s: rank %d OK\n", which.c_str(), me);
    return 0;
}
