// Point-to-point over real verbs, under mpirun: p2p_test <case> [args].
// Cases: mesh, sizes, order, truncate, probe, cancel, flood, threads, corrupt, overlap.
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "harness.h"

namespace {

rdmx_context_h ctx;
int me, np;

// Every ordered pair exchanges a message naming its sender.
void t_mesh() {
    std::vector<rdmx_request_h> reqs;
    std::vector<int> got(static_cast<size_t>(np), -1);
    std::vector<int> mine(static_cast<size_t>(np), me);
    for (int p = 0; p < np; ++p) {
        reqs.emplace_back();
        RT_OK(rdmx_irecv(ctx, &got[static_cast<size_t>(p)], sizeof(int), p, 7, &reqs.back()));
    }
    for (int p = 0; p < np; ++p) {
        reqs.emplace_back();
        RT_OK(rdmx_isend(ctx, &mine[static_cast<size_t>(p)], sizeof(int), p, 7, &reqs.back()));
    }
    RT_OK(rdmx_waitall(reqs.size(), reqs.data(), nullptr));
    for (int p = 0; p < np; ++p) RT_CHECK(got[static_cast<size_t>(p)] == p, "from %d got sender %d", p, got[static_cast<size_t>(p)]);
}

std::vector<size_t> boundary_sizes(size_t max) {
    std::vector<size_t> s{0, 1, 2, 3};
    for (size_t p = 4; p <= max; p *= 2)
        for (size_t d : {p - 1, p, p + 1})
            if (d <= max && d > s.back()) s.push_back(d);
    return s;
}

// Ring exchange of each size with each of the four wildcard combinations.
void t_sizes(size_t max) {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    for (size_t len : boundary_sizes(max)) {
        for (int mode = 0; mode < 4; ++mode) {
            int tag = static_cast<int>(len % 1000) * 4 + mode;
            std::vector<uint8_t> out(len), in(len + 16, 0xEE);
            rt::fill(out, me, tag);
            int src = (mode & 1) ? RDMX_ANY_SOURCE : from;
            int rtag = (mode & 2) ? RDMX_ANY_TAG : tag;
            rdmx_request_h r[2];
            RT_OK(rdmx_irecv(ctx, in.data(), len, src, rtag, &r[0]));
            RT_OK(rdmx_isend(ctx, out.data(), len, to, tag, &r[1]));
            rdmx_msg_info_t info[2];
            RT_OK(rdmx_waitall(2, r, info));
            RT_CHECK(info[0].source == from && info[0].tag == tag && info[0].length == len,
                     "len %zu mode %d: info src %d tag %d len %zu", len, mode, info[0].source, info[0].tag,
                     info[0].length);
            size_t bad = rt::verify(in.data(), len, from, tag, len);
            RT_CHECK(bad == SIZE_MAX, "len %zu mode %d: byte %zu wrong", len, mode, bad);
            RT_CHECK(in[len] == 0xEE, "len %zu mode %d: wrote past the buffer", len, mode);
        }
    }
}

// Rendezvous boundaries, both directions at once, wildcards mixed in.
void t_rndv() {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    const size_t t = 8193, m = 8u << 20;
    const size_t sizes[] = {t - 1, t, t + 1, m - 1, m, m + 1, 64u << 20};
    int k = 0;
    for (size_t len : sizes) {
        int tag = 40 + k;
        std::vector<uint8_t> out(len), in(len + 1, 0xEE);
        rt::fill(out, me, tag);
        rdmx_request_h r[2];
        RT_OK(rdmx_irecv(ctx, in.data(), len, (k++ % 2) ? RDMX_ANY_SOURCE : from, tag, &r[0]));
        RT_OK(rdmx_isend(ctx, out.data(), len, to, tag, &r[1]));
        rdmx_msg_info_t info[2];
        RT_OK(rdmx_waitall(2, r, info));
        RT_CHECK(info[0].source == from && info[0].length == len, "len %zu: src %d len %zu", len, info[0].source,
                 info[0].length);
        size_t bad = rt::verify(in.data(), len, from, tag, len);
        RT_CHECK(bad == SIZE_MAX, "len %zu: byte %zu wrong", len, bad);
        RT_CHECK(in[len] == 0xEE, "len %zu: wrote past the buffer", len);
    }
}

// Eager then rendezvous then eager from one sender: matched in send order.
void t_mixed_order() {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    std::vector<uint8_t> a(100), b(100000), c(10);
    rt::fill(a, me, 1);
    rt::fill(b, me, 2);
    rt::fill(c, me, 3);
    rdmx_request_h s[3];
    RT_OK(rdmx_isend(ctx, a.data(), a.size(), to, 8, &s[0]));
    RT_OK(rdmx_isend(ctx, b.data(), b.size(), to, 8, &s[1]));
    RT_OK(rdmx_isend(ctx, c.data(), c.size(), to, 8, &s[2]));
    std::vector<uint8_t> in(100000);
    const size_t want[3] = {100, 100000, 10};
    for (int i = 0; i < 3; ++i) {
        rdmx_msg_info_t info;
        RT_OK(rdmx_recv(ctx, in.data(), in.size(), RDMX_ANY_SOURCE, 8, &info));
        RT_CHECK(info.length == want[i], "message %d has length %zu, expected %zu", i, info.length, want[i]);
        RT_CHECK(rt::verify(in.data(), info.length, from, i + 1, info.length) == SIZE_MAX, "message %d corrupt", i);
    }
    RT_OK(rdmx_waitall(3, s, nullptr));
}

// Non-overtaking: many messages with one tag, received with wildcards.
void t_order(int count) {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    std::vector<uint32_t> out(static_cast<size_t>(count));
    std::vector<rdmx_request_h> sr(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
        out[static_cast<size_t>(i)] = static_cast<uint32_t>(i);
        RT_OK(rdmx_isend(ctx, &out[static_cast<size_t>(i)], 4, to, 5, &sr[static_cast<size_t>(i)]));
    }
    for (int i = 0; i < count; ++i) {
        uint32_t v = 0;
        rdmx_msg_info_t info;
        RT_OK(rdmx_recv(ctx, &v, 4, i % 2 ? RDMX_ANY_SOURCE : from, i % 3 ? RDMX_ANY_TAG : 5, &info));
        RT_CHECK(v == static_cast<uint32_t>(i) && info.source == from, "message %d arrived as %u from %d", i, v, info.source);
    }
    RT_OK(rdmx_waitall(sr.size(), sr.data(), nullptr));
}

void t_truncate(size_t len) {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    std::vector<uint8_t> out(len), in(len / 2 + 8, 0xEE);
    rt::fill(out, me, 3);
    rdmx_request_h r[2];
    RT_OK(rdmx_irecv(ctx, in.data(), len / 2, from, 3, &r[0]));
    RT_OK(rdmx_isend(ctx, out.data(), len, to, 3, &r[1]));
    rdmx_msg_info_t info;
    rdmx_status_t st = rdmx_wait(&r[0], &info);
    RT_CHECK(st == RDMX_ERR_TRUNCATE && info.length == len, "len %zu: status %d length %zu", len, st, info.length);
    RT_CHECK(rt::verify(in.data(), len / 2, from, 3, len) == SIZE_MAX, "len %zu: truncated prefix wrong", len);
    RT_CHECK(in[len / 2] == 0xEE, "len %zu: wrote past the buffer", len);
    RT_OK(rdmx_wait(&r[1], nullptr));
}

void t_probe(size_t len) {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    std::vector<uint8_t> out(len), in(len);
    rt::fill(out, me, 11);
    rdmx_request_h s;
    RT_OK(rdmx_isend(ctx, out.data(), len, to, 11, &s));
    rdmx_msg_info_t info;
    RT_OK(rdmx_probe(ctx, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &info));
    RT_CHECK(info.source == from && info.tag == 11 && info.length == len, "probe: %d %d %zu", info.source, info.tag, info.length);
    RT_OK(rdmx_recv(ctx, in.data(), len, info.source, info.tag, nullptr));
    RT_CHECK(rt::verify(in.data(), len, from, 11, len) == SIZE_MAX, "probe then recv: payload wrong");
    RT_OK(rdmx_wait(&s, nullptr));
}

void t_cancel() {
    char b[8];
    rdmx_request_h r;
    RT_OK(rdmx_irecv(ctx, b, sizeof(b), RDMX_ANY_SOURCE, 999, &r));
    RT_OK(rdmx_cancel(r));
    rdmx_status_t st = rdmx_wait(&r, nullptr);
    RT_CHECK(st == RDMX_ERR_CANCELED && r == nullptr, "cancel: status %d", st);
}

long rss_kib() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kHeapMeaningful = false;  // the sanitizers' allocators do not report to mallinfo2
#else
constexpr bool kHeapMeaningful = true;
#endif

long heap_kib() { return static_cast<long>(mallinfo2().uordblks / 1024); }

// Everyone floods rank 0, which sleeps before posting any receive: the heap
// its unexpected queue takes (sampled every 10 ms while it sleeps) must stay
// within RDMX_UNEXPECTED_MAX entries (half a KiB each is generous: about 200
// bytes are used) plus 256 KiB, however many messages wait. (Measured in the
// emulated guest with 256 entries: 65 KiB; with no entry bound, 1,261 KiB.)
void t_flood(int count, int sleep_s) {
    if (me != 0) {
        std::vector<uint64_t> v(static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) {
            v[static_cast<size_t>(i)] = (static_cast<uint64_t>(me) << 32) | static_cast<uint64_t>(i);
            RT_OK(rdmx_send(ctx, &v[static_cast<size_t>(i)], 8, 0, 1));
        }
        return;
    }
    long before = rss_kib();
    const long heap0 = heap_kib();
    long heap_peak = heap0;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(sleep_s);
         std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        heap_peak = std::max(heap_peak, heap_kib());
    }
    std::vector<int> next(static_cast<size_t>(np), 0);
    for (int i = 0; i < count * (np - 1); ++i) {
        uint64_t x = 0;
        rdmx_msg_info_t info;
        RT_OK(rdmx_recv(ctx, &x, 8, RDMX_ANY_SOURCE, 1, &info));
        int s = info.source;
        RT_CHECK(x == ((static_cast<uint64_t>(s) << 32) | static_cast<uint64_t>(next[static_cast<size_t>(s)])),
                 "from %d expected #%d got 0x%llx", s, next[static_cast<size_t>(s)], static_cast<unsigned long long>(x));
        ++next[static_cast<size_t>(s)];
    }
    const char *max = std::getenv("RDMX_UNEXPECTED_MAX");
    const long entries = max != nullptr ? std::atol(max) : 65536;
    const long allowed = entries / 2 + 256;
    std::printf("flood: %d messages from %d senders in order; max RSS %ld KiB before, %ld KiB after; heap grew by "
                "%ld KiB at most while they waited (%ld KiB allowed for %ld unexpected entries)\n", count * (np - 1),
                np - 1, before, rss_kib(), heap_peak - heap0, allowed, entries);
    RT_CHECK(!kHeapMeaningful || heap_peak - heap0 <= allowed,
             "the unexpected queue grew the heap by %ld KiB (bound %ld KiB for %ld entries)", heap_peak - heap0,
             allowed, entries);
}

// Four threads per rank exchange on distinct tags at once.
void t_threads(int per_thread) {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    std::atomic<int> failures{0};
    auto body = [&](int t) {
        for (int i = 0; i < per_thread; ++i) {
            int out = me * 1000000 + t * 10000 + i, in = -1;
            rdmx_request_h r[2];
            if (rdmx_irecv(ctx, &in, 4, from, 100 + t, &r[0]) != RDMX_OK ||
                rdmx_isend(ctx, &out, 4, to, 100 + t, &r[1]) != RDMX_OK || rdmx_waitall(2, r, nullptr) != RDMX_OK ||
                in != from * 1000000 + t * 10000 + i)
                failures.fetch_add(1);
        }
    };
    std::vector<std::thread> th;
    for (int t = 0; t < 4; ++t) th.emplace_back(body, t);
    for (auto &t : th) t.join();
    RT_CHECK(failures.load() == 0, "%d thread exchanges failed", failures.load());
}

// Proves verification can fail: the receiver flips one byte before checking.
void t_corrupt() {
    const int to = (me + 1) % np, from = (me + np - 1) % np;
    std::vector<uint8_t> out(100), in(100);
    rt::fill(out, me, 2);
    rdmx_request_h r[2];
    RT_OK(rdmx_irecv(ctx, in.data(), 100, from, 2, &r[0]));
    RT_OK(rdmx_isend(ctx, out.data(), 100, to, 2, &r[1]));
    RT_OK(rdmx_waitall(2, r, nullptr));
    in[50] ^= 0x01;
    RT_CHECK(rt::verify(in.data(), 100, from, 2, 100) == SIZE_MAX, "byte %zu wrong (injected)", rt::verify(in.data(), 100, from, 2, 100));
}

// RDMX_TEST_SHRINK=N: rt::shrunk (harness.h).
int shrunk(int count, int floor) { return static_cast<int>(rt::shrunk(count, floor)); }

// Background progress: rank 0 posts a rendezvous send (put protocol: rank
// 0 must answer rank 1's CTS with an RDMA WRITE) and more eager sends than
// one credit window holds, then computes without calling rdmx. Rank 1 must
// get everything long before the computation ends: rank 0's progress
// thread takes over while its application computes.
void t_overlap() {
    if (me > 1) return;
    using clk = std::chrono::steady_clock;
    constexpr size_t kBig = 1u << 20;
    constexpr int kSmall = 200;  // more than a peer's credits (at most 64)
    constexpr double kComputeS = 3.0;
    std::vector<uint8_t> big(kBig);
    std::vector<int> small(kSmall, -1);
    std::vector<rdmx_request_h> reqs(kSmall + 1);
    int token = 0;
    double took = 0;
    if (me == 0) {
        RT_OK(rdmx_recv(ctx, &token, sizeof(token), 1, 1, nullptr));  // rank 1's receives are posted
        rt::fill(big, 0, 2);
        RT_OK(rdmx_isend(ctx, big.data(), kBig, 1, 2, &reqs[0]));
        for (int i = 0; i < kSmall; ++i) {
            small[static_cast<size_t>(i)] = i;
            RT_OK(rdmx_isend(ctx, &small[static_cast<size_t>(i)], sizeof(int), 1, 3, &reqs[static_cast<size_t>(i) + 1]));
        }
        const clk::time_point t0 = clk::now();
        volatile uint64_t work = 0;
        while (std::chrono::duration<double>(clk::now() - t0).count() < kComputeS) work = work + 1;
        RT_OK(rdmx_waitall(reqs.size(), reqs.data(), nullptr));
        RT_OK(rdmx_recv(ctx, &took, sizeof(took), 1, 4, nullptr));
        RT_CHECK(took < kComputeS / 2, "rank 1 needed %.3f s for what rank 0 sent before computing %.1f s "
                 "without calls: no background progress", took, kComputeS);
        std::printf("overlap: rank 1 had everything after %.3f s of rank 0's %.1f s computation\n", took, kComputeS);
        return;
    }
    RT_OK(rdmx_irecv(ctx, big.data(), kBig, 0, 2, &reqs[0]));
    for (int i = 0; i < kSmall; ++i)
        RT_OK(rdmx_irecv(ctx, &small[static_cast<size_t>(i)], sizeof(int), 0, 3, &reqs[static_cast<size_t>(i) + 1]));
    const clk::time_point t0 = clk::now();
    RT_OK(rdmx_send(ctx, &token, sizeof(token), 0, 1));
    RT_OK(rdmx_waitall(reqs.size(), reqs.data(), nullptr));
    took = std::chrono::duration<double>(clk::now() - t0).count();
    size_t bad = rt::verify(big.data(), kBig, 0, 2, kBig);
    RT_CHECK(bad == SIZE_MAX, "rendezvous payload wrong at byte %zu", bad);
    for (int i = 0; i < kSmall; ++i)
        RT_CHECK(small[static_cast<size_t>(i)] == i, "eager message %d carried %d", i, small[static_cast<size_t>(i)]);
    RT_OK(rdmx_send(ctx, &took, sizeof(took), 0, 4));
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "mesh";
    rt::g_test = argv[1] ? argv[1] : "mesh";
    // Four threads call at once: the one case that needs RDMX_THREADS=multiple
    // whatever the suite runs with (the config field wins over the variable).
    rdmx_config_t cfg;
    rdmx_config_init(&cfg);
    if (which == "threads") cfg.threads = RDMX_THREADS_MULTIPLE;
    ctx = rt::init_or_skip(&cfg);
    me = rdmx_rank(ctx);
    np = rdmx_size(ctx);
    int reps = shrunk(argc > 2 ? std::atoi(argv[2]) : 1, 3);  // mesh: at least three bring-ups
    for (int i = 0; i < reps; ++i) {
        if (which == "mesh") {  // a fresh bring-up every repetition
            if (i > 0) {
                RT_OK(rdmx_finalize(ctx));
                ctx = rt::init_or_skip();
            }
            t_mesh();
        }
        else if (which == "sizes") t_sizes(argc > 3 ? std::strtoul(argv[3], nullptr, 0) : 64 * 1024);
        else if (which == "order") t_order(shrunk(2000, 200));
        else if (which == "rndv") t_rndv();
        else if (which == "mixed_order") t_mixed_order();
        else if (which == "truncate") { t_truncate(100); t_truncate(200000); }
        else if (which == "probe") { t_probe(64); t_probe(100000); }
        else if (which == "cancel") t_cancel();
        else if (which == "flood") t_flood(shrunk(argc > 3 ? std::atoi(argv[3]) : 100000, 10000), 5);
        else if (which == "threads") t_threads(shrunk(500, 50));
        else if (which == "corrupt") t_corrupt();
        else if (which == "overlap") t_overlap();
        else RT_CHECK(false, "unknown case %s", which.c_str());
    }
    RT_OK(rdmx_finalize(ctx));
    if (me == 0) std::printf("p2p_test %s: OK on %d ranks\n", which.c_str(), np);
    return 0;
}
