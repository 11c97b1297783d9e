// The sm transport alone, 2 processes pinned to cores 0 and 1: 8 B one-way
// latency (ping-pong / 2), 8 B message rate, and get bandwidth 16 KiB-4 MiB
// through CMA, through the copy pipeline, and a one-core memcpy for scale.
// Prints medians of `reps` runs. Usage: rdmx_sm_bench [reps] [stage chunk KiB]
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "sm_harness.h"

using namespace smtest;

namespace {

constexpr int kPingIters = 100000;
constexpr int kRateMsgs = 1000000;
constexpr size_t kSizes[] = {16u << 10, 64u << 10, 256u << 10, 1u << 20, 4u << 20};
constexpr int kNumSizes = sizeof(kSizes) / sizeof(kSizes[0]);
constexpr size_t kBytesPerPoint = 512u << 20;  // bytes moved per bandwidth point

void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof(s), &s);
}

double secs_since(uint64_t t0) { return static_cast<double>(rdmx::now_ns() - t0) * 1e-9; }

rdmx::MsgOut msg8(const char *b) {
    rdmx::MsgOut m;
    m.length = 8;
    m.body = b;
    m.body_len = 8;
    return m;
}

void ping_pong(Ctx &c, double *out) {
    const char b[8] = {};
    const int peer = 1 - c.rank;
    SM_CHECK(c.barrier());
    const uint64_t t0 = rdmx::now_ns();
    for (int i = 0; i < kPingIters; ++i) {
        if (c.rank == 0) {
            SM_CHECK(c.t->send(peer, msg8(b), false));
            while (c.sink.arrivals.size() == 0) c.t->progress(false);
        } else {
            while (c.sink.arrivals.size() == 0) c.t->progress(false);
            SM_CHECK(c.t->send(peer, msg8(b), false));
        }
        c.sink.arrivals.clear();
    }
    *out = secs_since(t0) / (2.0 * kPingIters) * 1e6;
}

void rate(Ctx &c, double *out) {
    const char b[8] = {};
    SM_CHECK(c.barrier());
    const uint64_t t0 = rdmx::now_ns();
    if (c.rank == 0) {
        for (int i = 0; i < kRateMsgs; ++i) {
            while (!c.t->can_send(1, 8, false)) c.t->progress(false);
            SM_CHECK(c.t->send(1, msg8(b), false));
        }
    } else {
        size_t got = 0;
        while (got < static_cast<size_t>(kRateMsgs)) {
            c.t->progress(false);
            got += c.sink.arrivals.size();
            c.sink.arrivals.clear();
        }
        *out = kRateMsgs / secs_since(t0) * 1e-6;
    }
    SM_CHECK(c.barrier());
}

// Rank 1 exposes; rank 0 gets. Returns GB/s per size.
void get_bw(Ctx &c, std::vector<double> *out) {
    std::vector<char> buf(4u << 20, 1);
    Board *b = c.board;
    if (c.rank == 1) {
        rdmx::XferMem m;
        uint32_t key = 0;
        SM_CHECK(c.t->expose(0, buf.data(), buf.size(), rdmx::Access::kRemoteRead, &m, &key) == RDMX_OK);
        b->word[0] = reinterpret_cast<uint64_t>(buf.data());
        b->word[1] = key;
    }
    SM_CHECK(c.barrier());
    for (size_t len : kSizes) {
        const size_t iters = kBytesPerPoint / len;
        if (c.rank == 0) {
            rdmx::XferMem m;
            const uint64_t t0 = rdmx::now_ns();
            for (size_t i = 0; i < iters; ++i) {
                c.sink.rma.clear();
                SM_CHECK(c.t->get(1, buf.data(), m, b->word[0], static_cast<uint32_t>(b->word[1]), len, i));
                while (c.sink.rma.empty()) c.t->progress(false);
                SM_CHECK(c.sink.rma[0].ok);
            }
            out->push_back(static_cast<double>(iters * len) / secs_since(t0) * 1e-9);
        }
        SM_CHECK(c.barrier());
    }
}

double memcpy_bw(size_t len) {
    std::vector<char> a(len, 1), b(len, 2);
    const size_t iters = kBytesPerPoint / len;
    const uint64_t t0 = rdmx::now_ns();
    for (size_t i = 0; i < iters; ++i) {
        std::memcpy(b.data(), a.data(), len);
        asm volatile("" : : "r"(b.data()) : "memory");
    }
    return static_cast<double>(iters * len) / secs_since(t0) * 1e-9;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char **argv) {
    const int reps = argc > 1 ? std::atoi(argv[1]) : 3;
    const uint32_t chunk_kib = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 256;
    std::vector<double> lat, rt, cma[kNumSizes], pipe[kNumSizes], mc[kNumSizes];
    for (int rep = 0; rep < reps; ++rep) {
        for (int mode = 0; mode < 2; ++mode) {  // 0: pipeline, 1: CMA
            Board *b = nullptr;
            auto r = run_job(2, [mode](Ctx &c) {
                pin(c.rank);
                double l = 0, m = 0;
                std::vector<double> bw;
                if (mode == 0) {
                    ping_pong(c, &l);
                    rate(c, &m);
                }
                get_bw(c, &bw);
                if (c.rank == 0) {
                    std::memcpy(&c.board->word[4], &l, sizeof(l));
                    std::memcpy(&c.board->word[8], bw.data(), bw.size() * sizeof(double));
                } else {
                    std::memcpy(&c.board->word[5], &m, sizeof(m));
                }
                SM_CHECK(c.barrier());
            }, [mode, chunk_kib](int, SmParams &p) {
                p.cma = mode == 1 ? rdmx::SmCma::kOn : rdmx::SmCma::kOff;
                p.stage_chunk = chunk_kib << 10;
                p.slots = 64;
            }, &b);
            if (r.timed_out || !r.ok(0) || !r.ok(1)) {
                std::fprintf(stderr, "benchmark job failed\n");
                return 1;
            }
            double d[4 + kNumSizes];
            std::memcpy(d, &b->word[4], sizeof(d));
            if (mode == 0) {
                lat.push_back(d[0]);
                rt.push_back(d[1]);
            }
            for (int i = 0; i < kNumSizes; ++i) (mode == 0 ? pipe : cma)[i].push_back(d[4 + i]);
            munmap(b, sizeof(Board));
        }
        pin(0);
        for (int i = 0; i < kNumSizes; ++i) mc[i].push_back(memcpy_bw(kSizes[i]));
    }
    std::printf("sm, 2 processes on cores 0 and 1, medians of %d runs, pipeline chunk %u KiB\n", reps, chunk_kib);
    std::printf("8 B one-way latency: %.3f us\n8 B message rate: %.2f M/s\n", median(lat), median(rt));
    std::printf("get bandwidth, GB/s:\n%10s %10s %10s %10s\n", "size", "CMA", "pipeline", "memcpy");
    for (int i = 0; i < kNumSizes; ++i)
        std::printf("%9zuK %10.2f %10.2f %10.2f\n", kSizes[i] >> 10, median(cma[i]), median(pipe[i]), median(mc[i]));
    return 0;
}
