// coll_vs_mpi: every rdmx collective, algorithm, datatype, op and size class
// compared with MPI's result on the same inputs; plus argument checks, the
// tag-space isolation of collective traffic and (with the internal hooks)
// the RDMX_COLL_<NAME>_ALGO parsing.
//
// Usage: mpirun -np N coll_vs_mpi[_shim] [--quick] [--env-only] [--only=NAME]
//   --quick     smaller size sweeps (used under the slow RDMA emulator)
//   --env-only  do not force algorithms; run what RDMX_COLL_*_ALGO selects
//   --only=NAME one suite (env, invalid_args, faults, mismatch, barrier, bcast,
//               reduce, allreduce, reduce_scatter, allgather, gather,
//               scatter, alltoall, scan, loc, v, scan_v_args,
//               nbc)
// Exit: 0 all passed, 1 a check failed, 2 usage, 77 no RDMA device (skip).
#include "coll_test.h"
#include "coll_test_loc.h"

#if RDMX_COLL_TEST_HOOKS
#include "coll_select.h"
#include "mpi_p2p_shim.h"
#endif

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <utility>

namespace colltest {
void run_invalid_args(Harness &h);
void run_env_parsing(Harness &h);
void run_faults(Harness &h);
void run_mismatch(Harness &h);
void run_nbc(Harness &h);  // coll_test_nbc.cc
}  // namespace colltest

namespace {

using namespace colltest;

bool parse_args(int argc, char **argv, Options &opt) {
    // The sanitizer runs shrink every test's counts (RDMX_TEST_SHRINK, see
    // docs/testing.md): here that means the quick size sweeps.
    if (const char *v = std::getenv("RDMX_TEST_SHRINK"); v != nullptr && std::atoi(v) > 1) opt.quick = true;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--quick") opt.quick = true;
        else if (a == "--env-only") opt.env_only = true;
        else if (a.rfind("--only=", 0) == 0) opt.only = a.substr(7);
        else return false;
    }
#if !RDMX_COLL_TEST_HOOKS
    opt.env_only = true;  // linked against the real library: no forcing hook
#endif
    return true;
}

// Sum of a per-rank counter over the job.
uint64_t total(uint64_t mine) {
    uint64_t all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

// Requests alive between collectives (the user wildcard receive); a suite
// that leaves more behind leaked requests (checked where the shim counts).
[[maybe_unused]] long g_live_baseline = 0;

void check_no_leaked_requests(Harness &h, const char *suite) {
#if RDMX_COLL_TEST_HOOKS
    const long live = rdmx_shim::live_requests();
    if (live == g_live_baseline) h.pass();
    else h.failure(Case{suite}, "requests leaked: " + std::to_string(live - g_live_baseline));
#else
    (void)h;
    (void)suite;
#endif
}

void timed(Harness &h, const char *name, const std::function<void(Harness &)> &suite) {
    if (!h.wanted(name)) return;
    const uint64_t before = h.passed() + h.failed();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    suite(h);
    check_no_leaked_requests(h, name);
    MPI_Barrier(MPI_COMM_WORLD);
    const double dt = MPI_Wtime() - t0;
    const uint64_t n = total(h.passed() + h.failed() - before);
    if (h.rank == 0) std::printf("  %-15s %8llu checks %8.2f s\n", name, static_cast<unsigned long long>(n), dt);
    std::fflush(stdout);
}

// A user receive that matches anything in the user tag space must see none
// of the collectives' traffic: it stays pending until cancelled.
struct UserWildcard {
    char buf[64] = {};
    rdmx_request_h req = nullptr;
};

void post_wildcard(Harness &h, UserWildcard &w) {
    const Case c{"tagspace"};
    h.require_ok(c, rdmx_irecv(h.ctx, w.buf, sizeof w.buf, RDMX_ANY_SOURCE, RDMX_ANY_TAG, &w.req));
}

void check_wildcard(Harness &h, UserWildcard &w) {
    const Case c{"tagspace"};
    int done = 0;
    rdmx_status_t st = rdmx_test(&w.req, &done, nullptr);
    if (done) h.failure(c, std::string("user ANY_TAG receive matched collective traffic, status=") + rdmx_strerror(st));
    else h.pass();
    if (done) return;
    st = rdmx_cancel(w.req);
    if (st != RDMX_OK) h.failure(c, std::string("rdmx_cancel returned ") + rdmx_strerror(st));
    st = rdmx_wait(&w.req, nullptr);
    if (st == RDMX_ERR_CANCELED && w.req == nullptr) h.pass();
    else h.failure(c, std::string("cancelled receive completed with ") + rdmx_strerror(st));
}

int run(Harness &h) {
    const double t0 = MPI_Wtime();
    if (h.rank == 0)
        std::printf("coll_vs_mpi: np=%d quick=%d env_only=%d\n", h.size, h.opt.quick ? 1 : 0, h.opt.env_only ? 1 : 0);
    UserWildcard wildcard;
    post_wildcard(h, wildcard);
#if RDMX_COLL_TEST_HOOKS
    g_live_baseline = rdmx_shim::live_requests();
#endif
    timed(h, "env", run_env_parsing);
    timed(h, "invalid_args", run_invalid_args);
    timed(h, "faults", run_faults);
    timed(h, "mismatch", run_mismatch);
    timed(h, "barrier", run_barrier);
    timed(h, "bcast", run_bcast);
    timed(h, "reduce", run_reduce);
    timed(h, "allreduce", run_allreduce);
    timed(h, "reduce_scatter", run_reduce_scatter);
    timed(h, "allgather", run_allgather);
    timed(h, "gather", run_gather);
    timed(h, "scatter", run_scatter);
    timed(h, "alltoall", run_alltoall);
    timed(h, "scan", run_scan);
    timed(h, "loc", run_loc);
    timed(h, "v", run_v);
    timed(h, "scan_v_args", run_scan_v_args);
    timed(h, "nbc", run_nbc);
    check_wildcard(h, wildcard);
    const uint64_t passed = total(h.passed()), failed = total(h.failed());
    if (h.rank == 0) {
        std::printf("coll_vs_mpi: np=%d time=%.2f s\n", h.size, MPI_Wtime() - t0);
        std::printf("coll_vs_mpi: %llu passed, %llu failed\n", static_cast<unsigned long long>(passed),
                    static_cast<unsigned long long>(failed));
    }
    return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv) {
    // Open MPI 4.1's AVX reduction component saturates overflowing unsigned
    // 8/16-bit sums (open-mpi/ompi#8045): the reference must wrap like the
    // C types do. Ignored by other MPIs; an explicit setting wins.
    setenv("OMPI_MCA_op", "^avx", 0);
    // The MPI reference busy-polls; on a loaded host (CI, an emulator) with
    // no more ranks than cores it would starve the other ranks: yield.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    MPI_Init(&argc, &argv);
    Options opt;
    if (!parse_args(argc, argv, opt)) {
        std::fprintf(stderr, "usage: %s [--quick] [--env-only] [--only=NAME]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    rdmx_context_h ctx = nullptr;
    const rdmx_status_t st = rdmx_init(nullptr, &ctx);
    int bad = st != RDMX_OK, any_bad = 0, no_device = st == RDMX_ERR_NO_DEVICE, all_no_device = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&no_device, &all_no_device, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad) {
        std::fprintf(stderr, "coll_vs_mpi: rdmx_init: %s\n", rdmx_strerror(st));
        if (ctx) rdmx_finalize(ctx);
        MPI_Finalize();
        return all_no_device ? 77 : 1;
    }
    int rc = 0;
    {
        Harness h(ctx, opt);
        rc = run(h);
    }
    rdmx_finalize(ctx);
    MPI_Finalize();
    return rc;
}

// ---- argument checks and environment parsing ----------------------------------
namespace colltest {

namespace {

// Runs `body` with this rank's stderr silenced unless it is rank 0: the
// library logs one line per bad argument, once per job is enough to read.
template <class F>
void quiet_unless_rank0(const Harness &h, F &&body) {
    int saved = -1;
    if (h.rank != 0) {
        std::fflush(stderr);
        saved = dup(2);
        const int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, 2);
            close(devnull);
        }
    }
    body();
    if (saved >= 0) {
        std::fflush(stderr);
        dup2(saved, 2);
        close(saved);
    }
}

void expect(Harness &h, const char *what, rdmx_status_t got, rdmx_status_t want) {
    if (got == want) {
        h.pass();
        return;
    }
    const Case c{"invalid_args"};
    h.failure(c, std::string(what) + ": expected " + rdmx_strerror(want) + ", got " + rdmx_strerror(got));
}

}  // namespace

void run_invalid_args(Harness &h) {
    const rdmx_status_t kBad = RDMX_ERR_INVALID_ARG;
    const int p = h.size, me = h.rank;
    std::vector<double> d(16 * static_cast<size_t>(p) + 16, 1.0);
    std::vector<float> f(16, 1.0f);
    double *b = d.data();
    float *fl = f.data();
    quiet_unless_rank0(h, [&] {
        expect(h, "allreduce float BAND", rdmx_allreduce(h.ctx, fl, fl + 8, 4, RDMX_FLOAT, RDMX_BAND), kBad);
        expect(h, "allreduce double BXOR", rdmx_allreduce(h.ctx, b, b + 8, 4, RDMX_DOUBLE, RDMX_BXOR), kBad);
        expect(h, "reduce float BOR", rdmx_reduce(h.ctx, fl, fl + 8, 4, RDMX_FLOAT, RDMX_BOR, 0), kBad);
        expect(h, "reduce_scatter double BAND",
               rdmx_reduce_scatter_block(h.ctx, b, b + 8 * p, 1, RDMX_DOUBLE, RDMX_BAND), kBad);
        // Not enumerators, yet within the enums' value ranges (a C++ caller
        // cannot form others without undefined behaviour; C callers can, and
        // the library reads such values without an enum load).
        const auto bad_dt = static_cast<rdmx_datatype_t>(15);
        const auto bad_op = static_cast<rdmx_op_t>(9);
        expect(h, "allreduce bad dt", rdmx_allreduce(h.ctx, b, b + 8, 1, bad_dt, RDMX_SUM), kBad);
        expect(h, "allreduce bad op", rdmx_allreduce(h.ctx, b, b + 8, 1, RDMX_INT32, bad_op), kBad);
        expect(h, "reduce bad op", rdmx_reduce(h.ctx, b, b + 8, 1, RDMX_INT32, bad_op, 0), kBad);
        expect(h, "bcast root=size", rdmx_bcast(h.ctx, b, 8, p), kBad);
        expect(h, "bcast root=-1", rdmx_bcast(h.ctx, b, 8, -1), kBad);
        expect(h, "reduce root=size", rdmx_reduce(h.ctx, b, b + 8, 1, RDMX_DOUBLE, RDMX_SUM, p), kBad);
        expect(h, "gather root=-1", rdmx_gather(h.ctx, b, 8, b + 8, -1), kBad);
        expect(h, "scatter root=size", rdmx_scatter(h.ctx, b, 8, b + 8 * p, p), kBad);
        expect(h, "allreduce overlap", rdmx_allreduce(h.ctx, b, b + 1, 4, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "allreduce send==recv", rdmx_allreduce(h.ctx, b, b, 4, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "reduce overlap at root", rdmx_reduce(h.ctx, b + 2, b, 4, RDMX_DOUBLE, RDMX_SUM, me), kBad);
        expect(h, "reduce_scatter overlap",
               rdmx_reduce_scatter_block(h.ctx, b, b + p, 2, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "allgather own slot (not IN_PLACE)", rdmx_allgather(h.ctx, b + me, 8, b), kBad);
        expect(h, "gather overlap at root", rdmx_gather(h.ctx, b + me, 8, b, me), kBad);
        expect(h, "scatter overlap at root", rdmx_scatter(h.ctx, b, 8, b + p / 2, me), kBad);
        expect(h, "alltoall overlap", rdmx_alltoall(h.ctx, b, 8, b + p / 2), kBad);
        expect(h, "alltoall IN_PLACE", rdmx_alltoall(h.ctx, RDMX_IN_PLACE, 8, b), kBad);
        expect(h, "reduce_scatter IN_PLACE",
               rdmx_reduce_scatter_block(h.ctx, RDMX_IN_PLACE, b, 1, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "gather IN_PLACE", rdmx_gather(h.ctx, RDMX_IN_PLACE, 8, b, me), kBad);
        if (p > 1)
            expect(h, "reduce IN_PLACE off root",
                   rdmx_reduce(h.ctx, RDMX_IN_PLACE, b, 1, RDMX_DOUBLE, RDMX_SUM, (me + 1) % p), kBad);
        expect(h, "bcast NULL buf", rdmx_bcast(h.ctx, nullptr, 8, 0), kBad);
        expect(h, "allreduce NULL recvbuf", rdmx_allreduce(h.ctx, b, nullptr, 4, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "alltoall NULL sendbuf", rdmx_alltoall(h.ctx, nullptr, 8, b), kBad);
        expect(h, "barrier NULL ctx", rdmx_barrier(nullptr), kBad);
        expect(h, "allreduce NULL ctx", rdmx_allreduce(nullptr, b, b + 8, 1, RDMX_DOUBLE, RDMX_SUM), kBad);
    });
    // Count 0 with NULL buffers is a valid (empty) call, on every rank at once.
    expect(h, "allreduce count 0 NULL", rdmx_allreduce(h.ctx, nullptr, nullptr, 0, RDMX_INT32, RDMX_SUM), RDMX_OK);
    expect(h, "bcast len 0 NULL", rdmx_bcast(h.ctx, nullptr, 0, 0), RDMX_OK);
}

void run_env_parsing(Harness &h) {
#if RDMX_COLL_TEST_HOOKS
    using namespace rdmx::coll;
    const Case c{"env"};
    auto want = [&](const char *coll, const char *algo) {
        const char *got = forced_algorithm(coll);
        if (got != nullptr && std::string(got) == algo) h.pass();
        else h.failure(c, std::string(coll) + ": expected " + algo + ", got " + (got ? got : "(null)"));
    };
    if (h.opt.env_only) {  // the profile given in the environment must be in force
        for (const char *coll : {"bcast", "reduce", "allreduce", "reduce_scatter", "allgather"})
            want(coll, h.algos(coll).front().c_str());
        return;
    }
    setenv("RDMX_COLL_ALLREDUCE_ALGO", "ring", 1);
    setenv("RDMX_COLL_ALLGATHER_ALGO", "bruck", 1);
    setenv("RDMX_COLL_BCAST_ALGO", "no_such_algo", 1);  // one error line, then automatic
    quiet_unless_rank0(h, [] { reload_env(); });
    want("allreduce", "ring");
    want("allgather", "bruck");
    want("bcast", "auto");
    unsetenv("RDMX_COLL_ALLREDUCE_ALGO");
    unsetenv("RDMX_COLL_ALLGATHER_ALGO");
    unsetenv("RDMX_COLL_BCAST_ALGO");
    reload_env();
    want("allreduce", "auto");
    want("allgather", "auto");
    if (!force_algorithm("allreduce", "no_such_algo") && !force_algorithm("no_such_coll", "ring") &&
        forced_algorithm("no_such_coll") == nullptr && force_algorithm("reduce", "reduce_scatter_gather"))
        h.pass();
    else h.failure(c, "force_algorithm accepted an unknown name or refused a known one");
    want("reduce", "reduce_scatter_gather");
    force_algorithm("reduce", "auto");
    want("reduce", "auto");
#else
    (void)h;
#endif
}

// A point-to-point failure in the middle of a collective (injected by the
// shim into the nth request completion on every rank, at the same step of a
// symmetric algorithm): the collective must return that error, complete and
// free every request it posted, and leave the ranks in step.
void run_faults(Harness &h) {
#if RDMX_COLL_TEST_HOOKS
    if (h.opt.env_only) return;
    const int p = h.size;
    std::vector<double> a(64, 1.0), b(64);
    std::vector<uint8_t> s(64 * static_cast<size_t>(p), 1), r(64 * static_cast<size_t>(p));
    struct Fault {
        const char *coll, *algo;
        long nth;  // the first failing completion: in a step all ranks share
        std::function<rdmx_status_t()> call;
    };
    const Fault faults[] = {
        {"barrier", "dissemination", 1, [&] { return rdmx_barrier(h.ctx); }},
        {"allreduce", "ring", 3, [&] { return rdmx_allreduce(h.ctx, a.data(), b.data(), 64, RDMX_DOUBLE, RDMX_SUM); }},
        {"alltoall", "pairwise", 1, [&] { return rdmx_alltoall(h.ctx, s.data(), 64, r.data()); }},
    };
    for (const Fault &f : faults) {
        const Case c{f.coll, f.algo};
        h.use(f.coll, f.algo);
        rdmx_shim::fail_completion(f.nth, RDMX_ERR_PEER_LOST);
        const rdmx_status_t st = f.call();
        rdmx_shim::fail_completion(0, RDMX_OK);
        h.use(f.coll, "auto");
        expect(h, "injected failure returned", st, p > 1 ? RDMX_ERR_PEER_LOST : RDMX_OK);
        check_no_leaked_requests(h, f.coll);
        int64_t one = h.rank + 1, sum = 0;  // still in step?
        h.require_ok(c, rdmx_allreduce(h.ctx, &one, &sum, 1, RDMX_INT64, RDMX_SUM));
        if (sum == static_cast<int64_t>(p) * (p + 1) / 2) h.pass();
        else h.failure(c, "ranks out of step after an injected failure");
    }
#else
    (void)h;
#endif
}

// Ranks that disagree on a collective's arguments: the last rank passes
// another count, datatype, op, root or even another collective. Every rank
// must return RDMX_ERR_INVALID_ARG (none hangs, none truncates alone, none
// returns OK with unset bytes in its result), and afterwards the ranks are
// still in step and no request is left behind.
void run_mismatch(Harness &h) {
    const int p = h.size, me = h.rank;
    if (p == 1) return;
    const bool odd = me == p - 1;
    const size_t kBig = size_t{1} << 17;  // large enough to pick other algorithms than 8 elements do
    std::vector<double> a(kBig * static_cast<size_t>(p), 1.0), b(kBig * static_cast<size_t>(p), 0.0);
    double *x = a.data(), *y = b.data();
    const int other_root = p > 2 ? 1 : 0;
    struct Mismatch {
        const char *what;
        std::function<rdmx_status_t()> call;
    };
    const Mismatch cases[] = {
        {"allreduce count 8 vs 9", [&] { return rdmx_allreduce(h.ctx, x, y, odd ? 9 : 8, RDMX_DOUBLE, RDMX_SUM); }},
        {"allreduce count 8 vs 2^17",
         [&] { return rdmx_allreduce(h.ctx, x, y, odd ? kBig : 8, RDMX_DOUBLE, RDMX_SUM); }},
        {"allreduce datatype", [&] { return rdmx_allreduce(h.ctx, x, y, 8, odd ? RDMX_INT64 : RDMX_DOUBLE, RDMX_SUM); }},
        {"allreduce op", [&] { return rdmx_allreduce(h.ctx, x, y, 8, RDMX_DOUBLE, odd ? RDMX_MAX : RDMX_SUM); }},
        {"bcast shorter receiver", [&] { return rdmx_bcast(h.ctx, x, odd ? 32 : 64, 0); }},
        {"bcast longer receiver", [&] { return rdmx_bcast(h.ctx, x, odd ? 128 : 64, 0); }},
        {"bcast root", [&] { return rdmx_bcast(h.ctx, x, 64, odd ? other_root : p - 1); }},
        {"reduce count", [&] { return rdmx_reduce(h.ctx, x, y, odd ? 16 : 8, RDMX_DOUBLE, RDMX_SUM, 0); }},
        {"reduce_scatter count",
         [&] { return rdmx_reduce_scatter_block(h.ctx, x, y, odd ? 4 : 8, RDMX_DOUBLE, RDMX_SUM); }},
        {"allgather len", [&] { return rdmx_allgather(h.ctx, x, odd ? 16 : 64, y); }},
        {"gather len", [&] { return rdmx_gather(h.ctx, x, odd ? 16 : 64, y, 0); }},
        {"scatter len", [&] { return rdmx_scatter(h.ctx, x, odd ? 128 : 64, y, 0); }},
        {"alltoall len", [&] { return rdmx_alltoall(h.ctx, x, odd ? 8 : 64, y); }},
        {"barrier vs bcast", [&] { return odd ? rdmx_barrier(h.ctx) : rdmx_bcast(h.ctx, x, 64, 0); }},
    };
    for (const Mismatch &m : cases) {
        rdmx_status_t st = RDMX_OK;
        quiet_unless_rank0(h, [&] { st = m.call(); });
        const Case c{"mismatch", m.what};
        if (st == RDMX_ERR_INVALID_ARG) h.pass();
        else h.failure(c, std::string("expected ") + rdmx_strerror(RDMX_ERR_INVALID_ARG) + ", got " + rdmx_strerror(st));
        check_no_leaked_requests(h, "mismatch");
        int64_t one = me + 1, sum = 0;  // still in step?
        h.require_ok(c, rdmx_allreduce(h.ctx, &one, &sum, 1, RDMX_INT64, RDMX_SUM));
        if (sum == static_cast<int64_t>(p) * (p + 1) / 2) h.pass();
        else h.failure(c, "ranks out of step after a mismatch");
    }
}

}  // namespace colltest
