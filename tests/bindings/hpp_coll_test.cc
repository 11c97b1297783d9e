// The C++ layer's new collectives, under mpirun: hpp_coll_test <case>.
// Cases: scan (scan/exscan, in place and of one value), pairs (MINLOC and
// MAXLOC over FloatInt, DoubleInt and IntInt, ties included), v (allgatherv,
// gatherv, scatterv, alltoallv with uneven lengths, zeros included), nbc
// (every nonblocking collective, several outstanding at once, on the job and
// on a split). Each runs on the job and on a communicator split from it.
// Results are checked against closed forms (integers, exact).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "bind_check.h"

namespace {

constexpr int kScanCount = 5;   // elements per rank in the vector scans
constexpr size_t kBlock = 3;    // bytes per unit of the v-collectives' uneven lengths

// Rank r's value of element k in the scans.
int64_t scan_val(int r, int k) { return static_cast<int64_t>(r) * 10 + k + 1; }
// Sum over ranks 0..n-1 of scan_val(r, k).
int64_t scan_sum(int n, int k) { return 10 * static_cast<int64_t>(n) * (n - 1) / 2 + static_cast<int64_t>(n) * (k + 1); }

void t_scan(rdmx::CommRef c) {
    const int me = c.rank();
    std::vector<int64_t> in(kScanCount), out(kScanCount, -1);
    for (int k = 0; k < kScanCount; ++k) in[static_cast<size_t>(k)] = scan_val(me, k);
    c.scan(std::span<const int64_t>(in), std::span(out), RDMX_SUM);
    for (int k = 0; k < kScanCount; ++k)
        BT_CHECK(out[static_cast<size_t>(k)] == scan_sum(me + 1, k), "scan[%d] %lld", k,
                 static_cast<long long>(out[static_cast<size_t>(k)]));
    std::vector<int64_t> inout = in;
    c.scan(std::span(inout), RDMX_MAX);
    BT_CHECK(inout == in, "in-place scan MAX: own values are the largest so far");

    std::fill(out.begin(), out.end(), -1);
    c.exscan(std::span<const int64_t>(in), std::span(out), RDMX_SUM);
    for (int k = 0; k < kScanCount; ++k) {
        const int64_t want = me == 0 ? -1 : scan_sum(me, k);   // rank 0's untouched
        BT_CHECK(out[static_cast<size_t>(k)] == want, "exscan[%d] %lld want %lld", k,
                 static_cast<long long>(out[static_cast<size_t>(k)]), static_cast<long long>(want));
    }
    // One value: the offset of this rank's part when rank r holds r + 1 items.
    const uint64_t offset = c.exscan(static_cast<uint64_t>(me + 1), RDMX_SUM);
    BT_CHECK(offset == static_cast<uint64_t>(me) * (me + 1) / 2, "exscan offset %llu",
             static_cast<unsigned long long>(offset));
    BT_CHECK(c.scan(1, RDMX_SUM) == me + 1, "scan of one value");
}

// Values with ties: ranks r and r^1 share a value, so the lower index must win.
template <class P>
void check_pairs(rdmx::CommRef c) {
    const int me = c.rank(), np = c.size();
    using V = decltype(P{}.v);
    const P mine{static_cast<V>((me / 2) % 3), me};
    const P mn = c.allreduce(mine, RDMX_MINLOC), mx = c.allreduce(mine, RDMX_MAXLOC);
    P want_min{static_cast<V>(3), np}, want_max{static_cast<V>(-1), np};
    for (int r = 0; r < np; ++r) {
        const V v = static_cast<V>((r / 2) % 3);
        if (v < want_min.v) want_min = P{v, r};
        if (v > want_max.v) want_max = P{v, r};
    }
    BT_CHECK(mn == want_min, "MINLOC (%g, %d) want (%g, %d)", static_cast<double>(mn.v), mn.i,
             static_cast<double>(want_min.v), want_min.i);
    BT_CHECK(mx == want_max, "MAXLOC (%g, %d) want (%g, %d)", static_cast<double>(mx.v), mx.i,
             static_cast<double>(want_max.v), want_max.i);
    // Prefix MAXLOC: the largest value so far with its lowest index.
    const P pre = c.scan(mine, RDMX_MAXLOC);
    P want_pre{static_cast<V>(-1), me};
    for (int r = 0; r <= me; ++r) {
        const V v = static_cast<V>((r / 2) % 3);
        if (v > want_pre.v) want_pre = P{v, r};
    }
    BT_CHECK(pre == want_pre, "scan MAXLOC (%g, %d)", static_cast<double>(pre.v), pre.i);
}

void t_pairs(rdmx::CommRef c) {
    static_assert(rdmx::datatype_of<rdmx::FloatInt>() == RDMX_FLOAT_INT);
    static_assert(rdmx::datatype_of<rdmx::DoubleInt>() == RDMX_DOUBLE_INT);
    static_assert(rdmx::datatype_of<rdmx::IntInt>() == RDMX_INT_INT);
    check_pairs<rdmx::FloatInt>(c);
    check_pairs<rdmx::DoubleInt>(c);
    check_pairs<rdmx::IntInt>(c);
    // A pair type with another op: the C API refuses it.
    try {
        (void)c.allreduce(rdmx::IntInt{1, 1}, RDMX_SUM);
        BT_CHECK(false, "SUM over IntInt did not throw");
    } catch (const rdmx::Error &e) {
        BT_CHECK(e.status() == RDMX_ERR_INVALID_ARG, "SUM over IntInt: %s", e.what());
    }
}

// Uneven layout: rank r contributes (r % 3) * kBlock bytes (zero for every
// third rank), packed in rank order with a gap of one byte between blocks.
struct Layout {
    std::vector<size_t> lens, displs;
    size_t total = 0;
};
Layout uneven(int np, int shift) {
    Layout l;
    for (int r = 0; r < np; ++r) {
        l.lens.push_back(static_cast<size_t>((r + shift) % 3) * kBlock);
        l.displs.push_back(l.total);
        l.total += l.lens.back() + 1;
    }
    return l;
}
uint8_t byte_of(int from, int to, size_t i) { return static_cast<uint8_t>(from * 37 + to * 11 + static_cast<int>(i)); }

void t_v(rdmx::CommRef c) {
    const int me = c.rank(), np = c.size();
    const Layout l = uneven(np, 0);
    std::vector<uint8_t> mine(l.lens[static_cast<size_t>(me)]);
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(me, 0, i);

    std::vector<uint8_t> all(l.total, 0xEE);
    c.allgatherv(std::span(mine), std::span(all), l.lens, l.displs);
    for (int r = 0; r < np; ++r)
        for (size_t i = 0; i < l.lens[static_cast<size_t>(r)]; ++i)
            BT_CHECK(all[l.displs[static_cast<size_t>(r)] + i] == byte_of(r, 0, i), "allgatherv rank %d byte %zu", r, i);
    for (int r = 0; r < np; ++r)   // the gaps are untouched
        BT_CHECK(all[l.displs[static_cast<size_t>(r)] + l.lens[static_cast<size_t>(r)]] == 0xEE, "allgatherv gap %d", r);

    const int root = np - 1;
    std::vector<uint8_t> at_root(me == root ? l.total : 0, 0xEE);
    c.gatherv(std::span(mine), std::span(at_root), l.lens, l.displs, root);
    if (me == root) BT_CHECK(at_root == all, "gatherv differs from allgatherv");

    std::vector<uint8_t> back(l.lens[static_cast<size_t>(me)], 0);
    c.scatterv(std::span(at_root), l.lens, l.displs, std::span(back), root);
    BT_CHECK(back == mine, "scatterv gave rank %d other bytes", me);

    // alltoallv: rank s sends rank d (s + d) % 3 * kBlock bytes.
    std::vector<size_t> sl, sd, rl, rd;
    size_t st = 0, rt = 0;
    for (int p = 0; p < np; ++p) {
        sl.push_back(static_cast<size_t>((me + p) % 3) * kBlock);
        sd.push_back(st);
        st += sl.back();
        rl.push_back(static_cast<size_t>((p + me) % 3) * kBlock);
        rd.push_back(rt);
        rt += rl.back();
    }
    std::vector<uint8_t> sbuf(st), rbuf(rt, 0xEE);
    for (int p = 0; p < np; ++p)
        for (size_t i = 0; i < sl[static_cast<size_t>(p)]; ++i) sbuf[sd[static_cast<size_t>(p)] + i] = byte_of(me, p, i);
    c.alltoallv(std::span(sbuf), sl, sd, std::span(rbuf), rl, rd);
    for (int p = 0; p < np; ++p)
        for (size_t i = 0; i < rl[static_cast<size_t>(p)]; ++i)
            BT_CHECK(rbuf[rd[static_cast<size_t>(p)] + i] == byte_of(p, me, i), "alltoallv from %d byte %zu", p, i);

    // A layout that does not fit the span is refused before the C call.
    try {
        std::vector<uint8_t> small(1);
        c.allgatherv(std::span(mine), std::span(small), l.lens, l.displs);
        BT_CHECK(np == 1 && l.total <= 1, "allgatherv into a short span did not throw");
    } catch (const rdmx::Error &e) {
        BT_CHECK(e.status() == RDMX_ERR_INVALID_ARG, "short span: %s", e.what());
    }
}

void t_nbc(rdmx::CommRef c) {
    const int me = c.rank(), np = c.size();
    const int root = np / 2;
    std::vector<int> bc(4, me == root ? 77 : 0);
    std::vector<int64_t> red_in{me, 2 * me}, red_out(2, -1), ared(2, -1);
    std::vector<int> inplace{1, me};
    std::vector<int> g_in{me}, g_out(static_cast<size_t>(np), -1);
    std::vector<int> a_in(static_cast<size_t>(np)), a_out(static_cast<size_t>(np), -1);
    for (int p = 0; p < np; ++p) a_in[static_cast<size_t>(p)] = me * 100 + p;
    const Layout l = uneven(np, 1);
    std::vector<size_t> sl(static_cast<size_t>(np), l.lens[static_cast<size_t>(me)]), sd(static_cast<size_t>(np));
    for (int p = 0; p < np; ++p) sd[static_cast<size_t>(p)] = 0;   // the same bytes to everyone
    std::vector<uint8_t> v_in(l.lens[static_cast<size_t>(me)]), v_out(l.total, 0xEE);
    for (size_t i = 0; i < v_in.size(); ++i) v_in[i] = byte_of(me, 1, i);

    // All outstanding at once, started in the same order everywhere.
    std::vector<rdmx::Request> reqs;
    reqs.push_back(c.ibarrier());
    reqs.push_back(c.ibcast(std::span(bc), root));
    reqs.push_back(c.ireduce(std::span<const int64_t>(red_in), std::span(red_out), RDMX_SUM, root));
    reqs.push_back(c.iallreduce(std::span<const int64_t>(red_in), std::span(ared), RDMX_MAX));
    reqs.push_back(c.iallreduce(std::span(inplace), RDMX_SUM));
    reqs.push_back(c.iallgather(std::span(g_in), std::span(g_out)));
    reqs.push_back(c.ialltoall(std::span(a_in), std::span(a_out)));
    reqs.push_back(c.ialltoallv(std::span(v_in), sl, sd, std::span(v_out), l.lens, l.displs));
    volatile double work = 0;   // computation the collectives overlap
    for (int i = 0; i < 100000; ++i) work = work + i * 0.5;
    rdmx::wait_all(reqs);

    BT_CHECK(std::all_of(bc.begin(), bc.end(), [](int x) { return x == 77; }), "ibcast");
    const int64_t sum = static_cast<int64_t>(np) * (np - 1) / 2;
    if (me == root) BT_CHECK(red_out[0] == sum && red_out[1] == 2 * sum, "ireduce %lld", static_cast<long long>(red_out[0]));
    BT_CHECK(ared[0] == np - 1 && ared[1] == 2 * (np - 1), "iallreduce MAX %lld", static_cast<long long>(ared[0]));
    BT_CHECK(inplace[0] == np && inplace[1] == sum, "iallreduce in place %d %d", inplace[0], inplace[1]);
    for (int p = 0; p < np; ++p) {
        BT_CHECK(g_out[static_cast<size_t>(p)] == p, "iallgather[%d] %d", p, g_out[static_cast<size_t>(p)]);
        BT_CHECK(a_out[static_cast<size_t>(p)] == p * 100 + me, "ialltoall from %d: %d", p, a_out[static_cast<size_t>(p)]);
        for (size_t i = 0; i < l.lens[static_cast<size_t>(p)]; ++i)
            BT_CHECK(v_out[l.displs[static_cast<size_t>(p)] + i] == byte_of(p, 1, i), "ialltoallv from %d byte %zu", p, i);
    }
}

}  // namespace

int main(int argc, char **argv) {
    bt::g_case = argc > 1 ? argv[1] : "scan";
    rdmx::Context ctx = bt::open_or_skip(rdmx::Context::default_config());
    const std::string &which = bt::g_case;
    int rc = bt::run_case([&] {
        // The job, then the odd and even ranks' halves (ordered backwards).
        rdmx::Communicator half = ctx.split(ctx.rank() % 2, -ctx.rank());
        for (rdmx::CommRef c : {rdmx::CommRef(ctx), rdmx::CommRef(half)}) {
            if (which == "scan") t_scan(c);
            else if (which == "pairs") t_pairs(c);
            else if (which == "v") t_v(c);
            else if (which == "nbc") t_nbc(c);
            else BT_CHECK(false, "unknown case %s", which.c_str());
        }
        ctx.barrier();
    });
    if (rc != 0) return rc;
    const int me = ctx.rank(), np = ctx.size();
    ctx.finalize();
    if (me == 0) std::printf("hpp_coll_test %s: OK on %d ranks\n", which.c_str(), np);
    return 0;
}
