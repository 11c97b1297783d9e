// Checks that one communicator works as a context of its own: point-to-point
// (ranks numbered within it, payloads tagged with the sender's job rank so a
// wrong rank mapping shows) and every collective, blocking and nonblocking,
// each result compared with what it must be. Used by comm_test.cc.
#pragma once
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "harness.h"

namespace ct {

constexpr size_t kRndvLen = 100000;  // above every eager limit rdmx uses by default
constexpr int kTagP2p = 31;

// A communicator as one of its members sees it.
struct View {
    rdmx_context_h c = nullptr;
    const char *name = "?";
    int r = -1, n = 0;
    std::vector<int> world;  // job rank of each member
    int wr() const { return world[static_cast<size_t>(r)]; }
    int w(int i) const { return world[static_cast<size_t>(i)]; }
};

inline View view_of(rdmx_context_h c, const char *name) {
    View v;
    v.c = c;
    v.name = name;
    v.r = rdmx_rank(c);
    v.n = rdmx_size(c);
    RT_CHECK(v.n >= 1 && v.r >= 0 && v.r < v.n, "%s: rank %d of size %d", name, v.r, v.n);
    for (int i = 0; i < v.n; ++i) v.world.push_back(rdmx_comm_world_rank(c, i));
    RT_CHECK(rdmx_comm_world_rank(c, -1) == -1 && rdmx_comm_world_rank(c, v.n) == -1,
             "%s: comm_world_rank out of range gave %d and %d, not -1", name, rdmx_comm_world_rank(c, -1),
             rdmx_comm_world_rank(c, v.n));
    return v;
}

// Ring exchange of each size, exact and wildcard receives.
inline void check_p2p(const View &v) {
    const int next = (v.r + 1) % v.n, prev = (v.r + v.n - 1) % v.n;
    for (size_t len : {size_t{0}, size_t{8}, size_t{4000}, kRndvLen}) {
        std::vector<uint8_t> out(len), in(len + 1);
        rt::fill(out, v.wr(), kTagP2p);
        for (int wild = 0; wild < 2; ++wild) {
            std::fill(in.begin(), in.end(), uint8_t{0xEE});
            rdmx_request_h q[2];
            RT_OK(rdmx_irecv(v.c, in.data(), len, wild ? RDMX_ANY_SOURCE : prev, wild ? RDMX_ANY_TAG : kTagP2p, &q[0]));
            RT_OK(rdmx_isend(v.c, out.data(), len, next, kTagP2p, &q[1]));
            rdmx_msg_info_t info[2];
            RT_OK(rdmx_waitall(2, q, info));
            RT_CHECK(info[0].source == prev && info[0].tag == kTagP2p && info[0].length == len,
                     "%s p2p len %zu wild %d: source %d tag %d length %zu, expected %d %d %zu", v.name, len, wild,
                     info[0].source, info[0].tag, info[0].length, prev, kTagP2p, len);
            size_t bad = rt::verify(in.data(), len, v.w(prev), kTagP2p, len);
            RT_CHECK(bad == SIZE_MAX && in[len] == 0xEE,
                     "%s p2p len %zu wild %d: byte %zu wrong (not from job rank %d?)", v.name, len, wild,
                     bad == SIZE_MAX ? len : bad, v.w(prev));
        }
    }
}

inline void check_bcast(const View &v) {
    for (int root = 0; root < v.n; ++root) {
        const size_t len = root == v.n - 1 ? kRndvLen : 1000 + static_cast<size_t>(root);
        std::vector<uint8_t> b(len, 0);
        if (v.r == root) rt::fill(b, v.w(root), 900 + root);
        RT_OK(rdmx_bcast(v.c, b.data(), len, root));
        size_t bad = rt::verify(b.data(), len, v.w(root), 900 + root, len);
        RT_CHECK(bad == SIZE_MAX, "%s bcast root %d len %zu: byte %zu wrong", v.name, root, len, bad);
    }
}

inline void check_reductions(const View &v) {
    int64_t sum = 0, mx = 0;
    for (int i = 0; i < v.n; ++i) {
        sum += v.w(i) + 1;
        mx = std::max<int64_t>(mx, v.w(i) + 1);
    }
    const int64_t mine = v.wr() + 1;
    int64_t in3[3] = {mine, 2 * mine, -mine}, out3[3] = {0, 0, 0};
    RT_OK(rdmx_allreduce(v.c, in3, out3, 3, RDMX_INT64, RDMX_SUM));
    RT_CHECK(out3[0] == sum && out3[1] == 2 * sum && out3[2] == -sum, "%s allreduce SUM: %lld %lld %lld, expected %lld",
             v.name, static_cast<long long>(out3[0]), static_cast<long long>(out3[1]),
             static_cast<long long>(out3[2]), static_cast<long long>(sum));
    int64_t m = mine;
    RT_OK(rdmx_allreduce(v.c, RDMX_IN_PLACE, &m, 1, RDMX_INT64, RDMX_MAX));
    RT_CHECK(m == mx, "%s allreduce MAX in place: %lld, expected %lld", v.name, static_cast<long long>(m),
             static_cast<long long>(mx));
    double d = v.r + 0.5, dsum = 0;  // sums of halves: exact in any order
    RT_OK(rdmx_allreduce(v.c, &d, &dsum, 1, RDMX_DOUBLE, RDMX_SUM));
    RT_CHECK(dsum == v.n * v.n / 2.0, "%s allreduce DOUBLE SUM: %.17g, expected %.17g", v.name, dsum, v.n * v.n / 2.0);
    for (int root = 0; root < v.n; ++root) {
        int32_t x = v.r + 1, y = -1;
        RT_OK(rdmx_reduce(v.c, &x, v.r == root ? &y : nullptr, 1, RDMX_INT32, RDMX_SUM, root));
        RT_CHECK(v.r != root || y == v.n * (v.n + 1) / 2, "%s reduce to %d: %d, expected %d", v.name, root, y,
                 v.n * (v.n + 1) / 2);
    }
    // reduce_scatter_block, two elements per rank: element k from rank s is k + 100 s.
    std::vector<int32_t> rs(static_cast<size_t>(2 * v.n)), rr(2, -1);
    for (size_t k = 0; k < rs.size(); ++k) rs[k] = static_cast<int32_t>(k) + 100 * v.r;
    RT_OK(rdmx_reduce_scatter_block(v.c, rs.data(), rr.data(), 2, RDMX_INT32, RDMX_SUM));
    for (int i = 0; i < 2; ++i) {
        const int want = v.n * (2 * v.r + i) + 100 * v.n * (v.n - 1) / 2;
        RT_CHECK(rr[static_cast<size_t>(i)] == want, "%s reduce_scatter_block [%d]: %d, expected %d", v.name, i,
                 rr[static_cast<size_t>(i)], want);
    }
}

inline void check_scans(const View &v) {
    int64_t x = v.r + 1, y = -12345;
    RT_OK(rdmx_scan(v.c, &x, &y, 1, RDMX_INT64, RDMX_SUM));
    RT_CHECK(y == static_cast<int64_t>(v.r + 1) * (v.r + 2) / 2, "%s scan: %lld, expected %d", v.name,
             static_cast<long long>(y), (v.r + 1) * (v.r + 2) / 2);
    y = -12345;
    RT_OK(rdmx_exscan(v.c, &x, &y, 1, RDMX_INT64, RDMX_SUM));
    const int64_t want = v.r == 0 ? -12345 : static_cast<int64_t>(v.r) * (v.r + 1) / 2;
    RT_CHECK(y == want, "%s exscan: %lld, expected %lld (rank 0: untouched)", v.name, static_cast<long long>(y),
             static_cast<long long>(want));
    // MINLOC/MAXLOC with ties: value r % 2 (double) and r / 2 (int); the lowest index wins.
    struct DI { double v; int i; } di{static_cast<double>(v.r % 2), v.r}, dmin{}, dmax{};
    RT_OK(rdmx_allreduce(v.c, &di, &dmin, 1, RDMX_DOUBLE_INT, RDMX_MINLOC));
    RT_OK(rdmx_allreduce(v.c, &di, &dmax, 1, RDMX_DOUBLE_INT, RDMX_MAXLOC));
    const int maxi = v.n > 1 ? 1 : 0;
    RT_CHECK(dmin.v == 0 && dmin.i == 0 && dmax.v == maxi && dmax.i == maxi,
             "%s MINLOC (%g,%d) MAXLOC (%g,%d), expected (0,0) and (%d,%d)", v.name, dmin.v, dmin.i, dmax.v, dmax.i,
             maxi, maxi);
    struct II { int v; int i; } ii{v.r / 2, v.r}, imax{};
    RT_OK(rdmx_allreduce(v.c, &ii, &imax, 1, RDMX_INT_INT, RDMX_MAXLOC));
    const int top = (v.n - 1) / 2;
    RT_CHECK(imax.v == top && imax.i == 2 * top, "%s INT_INT MAXLOC (%d,%d), expected (%d,%d)", v.name, imax.v, imax.i,
             top, 2 * top);
}

// allgather, gather, scatter, alltoall of 4-byte values.
inline void check_gathers(const View &v) {
    const size_t n = static_cast<size_t>(v.n);
    std::vector<int32_t> all(n, -1);
    int32_t me = v.wr();
    RT_OK(rdmx_allgather(v.c, &me, sizeof(me), all.data()));
    for (size_t i = 0; i < n; ++i)
        RT_CHECK(all[i] == v.world[i], "%s allgather [%zu]: %d, expected job rank %d", v.name, i, all[i], v.world[i]);
    const int groot = v.n - 1, sroot = 0;
    std::fill(all.begin(), all.end(), -1);
    RT_OK(rdmx_gather(v.c, &me, sizeof(me), v.r == groot ? all.data() : nullptr, groot));
    for (size_t i = 0; v.r == groot && i < n; ++i)
        RT_CHECK(all[i] == v.world[i], "%s gather [%zu]: %d, expected %d", v.name, i, all[i], v.world[i]);
    std::vector<int32_t> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = static_cast<int32_t>(i) * 7 + 1;
    int32_t got = -1;
    RT_OK(rdmx_scatter(v.c, v.r == sroot ? src.data() : nullptr, sizeof(int32_t), &got, sroot));
    RT_CHECK(got == v.r * 7 + 1, "%s scatter: %d, expected %d", v.name, got, v.r * 7 + 1);
    std::vector<int32_t> a2a(n), back(n, -1);
    for (size_t j = 0; j < n; ++j) a2a[j] = v.r * 1000 + static_cast<int32_t>(j);
    RT_OK(rdmx_alltoall(v.c, a2a.data(), sizeof(int32_t), back.data()));
    for (size_t j = 0; j < n; ++j)
        RT_CHECK(back[j] == static_cast<int32_t>(j) * 1000 + v.r, "%s alltoall from %zu: %d", v.name, j, back[j]);
}

// Uneven layouts (rank i: 3 i bytes, rank 0 none) with a one-byte gap after
// each block that nothing may write.
struct VLayout {
    std::vector<size_t> lens, displs;
    size_t total = 0;
    explicit VLayout(int n) {
        for (int i = 0; i < n; ++i) {
            lens.push_back(3 * static_cast<size_t>(i));
            displs.push_back(total);
            total += lens.back() + 1;
        }
    }
};
inline uint8_t vbyte(int from, int to, size_t k) {
    return static_cast<uint8_t>(from * 31 + to * 7 + static_cast<int>(k));
}

inline void check_vlayout(const View &v, const VLayout &lay, const std::vector<uint8_t> &buf, const char *what,
                          int to) {
    for (int i = 0; i < v.n; ++i) {
        const size_t at = lay.displs[static_cast<size_t>(i)], len = lay.lens[static_cast<size_t>(i)];
        for (size_t k = 0; k < len; ++k)
            RT_CHECK(buf[at + k] == vbyte(v.w(i), to, k), "%s %s: block of rank %d byte %zu wrong", v.name, what, i, k);
        RT_CHECK(buf[at + len] == 0xEE, "%s %s: the gap after rank %d's block was written", v.name, what, i);
    }
}

inline void check_vcollectives(const View &v) {
    const VLayout lay(v.n);
    const size_t mylen = lay.lens[static_cast<size_t>(v.r)];
    std::vector<uint8_t> mine(mylen), buf(lay.total, 0xEE);
    for (size_t k = 0; k < mylen; ++k) mine[k] = vbyte(v.wr(), -1, k);
    RT_OK(rdmx_allgatherv(v.c, mine.data(), mylen, buf.data(), lay.lens.data(), lay.displs.data()));
    check_vlayout(v, lay, buf, "allgatherv", -1);
    const int root = v.n / 2;
    std::fill(buf.begin(), buf.end(), uint8_t{0xEE});
    RT_OK(rdmx_gatherv(v.c, mine.data(), mylen, v.r == root ? buf.data() : nullptr, lay.lens.data(), lay.displs.data(),
                       root));
    if (v.r == root) check_vlayout(v, lay, buf, "gatherv", -1);
    // scatterv: the root's block for rank i holds vbyte(i's job rank, -1, k).
    std::vector<uint8_t> part(mylen + 1, 0xEE);
    if (v.r == root) {
        std::fill(buf.begin(), buf.end(), uint8_t{0xEE});
        for (int i = 0; i < v.n; ++i)
            for (size_t k = 0; k < lay.lens[static_cast<size_t>(i)]; ++k)
                buf[lay.displs[static_cast<size_t>(i)] + k] = vbyte(v.w(i), -1, k);
    }
    RT_OK(rdmx_scatterv(v.c, v.r == root ? buf.data() : nullptr, lay.lens.data(), lay.displs.data(), part.data(), mylen,
                        root));
    for (size_t k = 0; k < mylen; ++k) RT_CHECK(part[k] == mine[k], "%s scatterv: byte %zu wrong", v.name, k);
    RT_CHECK(part[mylen] == 0xEE, "%s scatterv wrote past its %zu bytes", v.name, mylen);
}

// alltoallv: rank s sends ((s + t) % 3) * 5 bytes to rank t (zeros included).
struct A2AV {
    std::vector<size_t> slens, sdispls, rlens, rdispls;
    std::vector<uint8_t> sbuf, rbuf;
    A2AV(const View &v) {
        size_t st = 0, rt_ = 0;
        for (int j = 0; j < v.n; ++j) {
            const size_t len = static_cast<size_t>((v.r + j) % 3) * 5;
            slens.push_back(len);
            sdispls.push_back(st);
            rlens.push_back(len);
            rdispls.push_back(rt_);
            for (size_t k = 0; k < len; ++k) sbuf.push_back(vbyte(v.wr(), v.w(j), k));
            st += len;
            rt_ += len;
        }
        rbuf.assign(rt_ + 1, 0xEE);
    }
    void check(const View &v, const char *what) const {
        for (int j = 0; j < v.n; ++j)
            for (size_t k = 0; k < rlens[static_cast<size_t>(j)]; ++k)
                RT_CHECK(rbuf[rdispls[static_cast<size_t>(j)] + k] == vbyte(v.w(j), v.wr(), k),
                         "%s %s: from rank %d byte %zu wrong", v.name, what, j, k);
        RT_CHECK(rbuf.back() == 0xEE, "%s %s wrote past the receive layout", v.name, what);
    }
};

inline void check_alltoallv(const View &v) {
    A2AV x(v);
    RT_OK(rdmx_alltoallv(v.c, x.sbuf.data(), x.slens.data(), x.sdispls.data(), x.rbuf.data(), x.rlens.data(),
                         x.rdispls.data()));
    x.check(v, "alltoallv");
}

// Seven nonblocking collectives outstanding at once, then checked.
inline void check_nonblocking(const View &v) {
    const size_t n = static_cast<size_t>(v.n);
    rdmx_request_h q[7] = {};
    std::vector<uint8_t> bc(5000, 0);
    if (v.r == 0) rt::fill(bc, v.w(0), 77);
    int64_t x = v.r + 1, sum = -1, red = -1;
    int32_t me = v.wr();
    std::vector<int32_t> all(n, -1), a2a(n), back(n, -1);
    for (size_t j = 0; j < n; ++j) a2a[j] = v.r * 1000 + static_cast<int32_t>(j);
    A2AV xv(v);
    RT_OK(rdmx_ibarrier(v.c, &q[0]));
    RT_OK(rdmx_ibcast(v.c, bc.data(), bc.size(), 0, &q[1]));
    RT_OK(rdmx_iallreduce(v.c, &x, &sum, 1, RDMX_INT64, RDMX_SUM, &q[2]));
    RT_OK(rdmx_iallgather(v.c, &me, sizeof(me), all.data(), &q[3]));
    RT_OK(rdmx_ialltoall(v.c, a2a.data(), sizeof(int32_t), back.data(), &q[4]));
    RT_OK(rdmx_ireduce(v.c, &x, v.r == v.n - 1 ? &red : nullptr, 1, RDMX_INT64, RDMX_SUM, v.n - 1, &q[5]));
    RT_OK(rdmx_ialltoallv(v.c, xv.sbuf.data(), xv.slens.data(), xv.sdispls.data(), xv.rbuf.data(), xv.rlens.data(),
                          xv.rdispls.data(), &q[6]));
    RT_OK(rdmx_waitall(7, q, nullptr));
    const int64_t want = static_cast<int64_t>(v.n) * (v.n + 1) / 2;
    RT_CHECK(rt::verify(bc.data(), bc.size(), v.w(0), 77, bc.size()) == SIZE_MAX, "%s ibcast: payload wrong", v.name);
    RT_CHECK(sum == want, "%s iallreduce: %lld, expected %lld", v.name, static_cast<long long>(sum),
             static_cast<long long>(want));
    RT_CHECK(v.r != v.n - 1 || red == want, "%s ireduce: %lld, expected %lld", v.name, static_cast<long long>(red),
             static_cast<long long>(want));
    for (size_t i = 0; i < n; ++i) {
        RT_CHECK(all[i] == v.world[i], "%s iallgather [%zu]: %d, expected %d", v.name, i, all[i], v.world[i]);
        RT_CHECK(back[i] == static_cast<int32_t>(i) * 1000 + v.r, "%s ialltoall from %zu: %d", v.name, i, back[i]);
    }
    xv.check(v, "ialltoallv");
}

// Everything above, on one communicator.
inline void check_all(const View &v) {
    check_p2p(v);
    RT_OK(rdmx_barrier(v.c));
    check_bcast(v);
    check_reductions(v);
    check_scans(v);
    check_gathers(v);
    check_vcollectives(v);
    check_alltoallv(v);
    check_nonblocking(v);
    RT_OK(rdmx_barrier(v.c));
}

}  // namespace ct
