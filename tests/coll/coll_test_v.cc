// coll_vs_mpi: the v-collectives (allgatherv, gatherv, scatterv, alltoallv)
// with uneven lengths, zeros and gaps between the blocks, compared with MPI;
// and the argument checks and mismatches of the v-collectives, scan, exscan
// and MINLOC/MAXLOC.
#include "coll_test_loc.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>

namespace colltest {

namespace {

constexpr uint8_t kJunk = 0x5A;  // bytes a collective must not write (gaps) or must overwrite (blocks)
constexpr size_t kGap = 3;       // bytes between consecutive blocks, never written

std::vector<uint8_t> payload(uint64_t seed, int rank, size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = byte_at(seed, rank, i);
    return v;
}

/** Block length of (a, b) for a case: about a third are 0, the others
 *  spread below `max_len` (the same on every rank). */
size_t block_len(uint64_t seed, int a, int b, size_t max_len) {
    const uint64_t x = hash3(seed, a, static_cast<size_t>(b) + 0x10000);
    return x % 3 == 0 ? 0 : static_cast<size_t>((x >> 2) % (max_len + 1));
}

/** Displacements of the blocks laid out in reverse rank order (or forward)
 *  with kGap bytes between them; returns the buffer size. */
size_t layout(const std::vector<size_t> &lens, bool reverse, std::vector<size_t> &displs) {
    const size_t n = lens.size();
    displs.assign(n, 0);
    size_t at = kGap;
    for (size_t k = 0; k < n; ++k) {
        const size_t j = reverse ? n - 1 - k : k;
        displs[j] = at;
        at += lens[j] + kGap;
    }
    return at;
}

std::vector<int> to_int(const std::vector<size_t> &v) { return {v.begin(), v.end()}; }

// The whole buffer (gaps and the guard after it included) must equal MPI's.
void check_buffer(Harness &h, const Case &c, const std::vector<uint8_t> &got, const std::vector<uint8_t> &ref) {
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != ref[i] && bad++ < 3) h.mismatch(c, i, show_byte(ref[i]), show_byte(got[i]));
    if (bad) h.fail();
    else h.pass();
}

std::vector<uint8_t> junk(size_t n) { return std::vector<uint8_t>(n + kGuard, kJunk); }

void allgatherv_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const int p = h.size;
    std::vector<size_t> lens(static_cast<size_t>(p)), displs;
    for (int j = 0; j < p; ++j) lens[static_cast<size_t>(j)] = block_len(seed, j, 0, c.count);
    const size_t total = layout(lens, (seed >> 7) & 1, displs);
    const size_t mine = lens[static_cast<size_t>(h.rank)];
    const std::vector<uint8_t> src = payload(seed, h.rank, mine);
    std::vector<uint8_t> ref = junk(total), out = junk(total);
    MPI_Allgatherv(src.data(), static_cast<int>(mine), MPI_BYTE, ref.data(), to_int(lens).data(),
                   to_int(displs).data(), MPI_BYTE, MPI_COMM_WORLD);
    // (An empty block's vector may hold no memory: memcpy from NULL is undefined.)
    if (c.in_place && mine > 0) std::memcpy(out.data() + displs[static_cast<size_t>(h.rank)], src.data(), mine);
    h.use("allgatherv", c.algo);
    const void *send = c.in_place ? RDMX_IN_PLACE : static_cast<const void *>(src.data());
    h.require_ok(c, rdmx_allgatherv(h.ctx, send, mine, out.data(), lens.data(), displs.data()));
    check_buffer(h, c, out, ref);
}

void gatherv_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const int p = h.size;
    const bool is_root = h.rank == c.root;
    std::vector<size_t> lens(static_cast<size_t>(p)), displs;
    for (int j = 0; j < p; ++j) lens[static_cast<size_t>(j)] = block_len(seed, j, 0, c.count);
    const size_t total = layout(lens, c.in_place, displs);
    const size_t mine = lens[static_cast<size_t>(h.rank)];
    const std::vector<uint8_t> src = payload(seed, h.rank, mine);
    std::vector<uint8_t> ref = junk(is_root ? total : 0), out = junk(is_root ? total : 0);
    MPI_Gatherv(src.data(), static_cast<int>(mine), MPI_BYTE, ref.data(), to_int(lens).data(),
                to_int(displs).data(), MPI_BYTE, c.root, MPI_COMM_WORLD);
    h.use("gatherv", c.algo);
    // Off the root, recvbuf, lens and displs are not significant: NULL.
    h.require_ok(c, rdmx_gatherv(h.ctx, src.data(), mine, is_root ? out.data() : nullptr,
                                 is_root ? lens.data() : nullptr, is_root ? displs.data() : nullptr, c.root));
    if (is_root) check_buffer(h, c, out, ref);
}

void scatterv_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const int p = h.size;
    const bool is_root = h.rank == c.root;
    std::vector<size_t> lens(static_cast<size_t>(p)), displs;
    for (int j = 0; j < p; ++j) lens[static_cast<size_t>(j)] = block_len(seed, j, 0, c.count);
    const size_t total = layout(lens, c.in_place, displs);
    const size_t mine = lens[static_cast<size_t>(h.rank)];
    const std::vector<uint8_t> src = is_root ? payload(seed, h.rank, total) : std::vector<uint8_t>();
    std::vector<uint8_t> ref = junk(mine), out = junk(mine);
    MPI_Scatterv(src.data(), to_int(lens).data(), to_int(displs).data(), MPI_BYTE, ref.data(),
                 static_cast<int>(mine), MPI_BYTE, c.root, MPI_COMM_WORLD);
    h.use("scatterv", c.algo);
    h.require_ok(c, rdmx_scatterv(h.ctx, is_root ? src.data() : nullptr, is_root ? lens.data() : nullptr,
                                  is_root ? displs.data() : nullptr, out.data(), mine, c.root));
    check_buffer(h, c, out, ref);
}

void alltoallv_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const int p = h.size, me = h.rank;
    std::vector<size_t> slens(static_cast<size_t>(p)), rlens(static_cast<size_t>(p)), sdispls, rdispls;
    for (int j = 0; j < p; ++j) {
        slens[static_cast<size_t>(j)] = block_len(seed, me, j, c.count);  // me -> j
        rlens[static_cast<size_t>(j)] = block_len(seed, j, me, c.count);  // j -> me
    }
    const size_t stotal = layout(slens, true, sdispls), rtotal = layout(rlens, false, rdispls);
    const std::vector<uint8_t> src = payload(seed, me, stotal);
    std::vector<uint8_t> ref = junk(rtotal), out = junk(rtotal);
    MPI_Alltoallv(src.data(), to_int(slens).data(), to_int(sdispls).data(), MPI_BYTE, ref.data(),
                  to_int(rlens).data(), to_int(rdispls).data(), MPI_BYTE, MPI_COMM_WORLD);
    h.use("alltoallv", c.algo);
    h.require_ok(c, rdmx_alltoallv(h.ctx, src.data(), slens.data(), sdispls.data(), out.data(), rlens.data(),
                                   rdispls.data()));
    check_buffer(h, c, out, ref);
}

// Maximum block lengths: all zeros, tiny, around the eager size, large.
std::vector<size_t> max_lens(const Harness &h) {
    std::vector<size_t> v = {0, 1, 64, 4099};
    if (!h.opt.quick) v.push_back(70001);
    return v;
}

template <class Run>
void v_sweep(Harness &h, const char *coll, bool rooted, Run run) {
    for (const std::string &algo : h.algos(coll)) {
        int k = 0;
        for (size_t m : max_lens(h)) {
            for (int rep = 0; rep < 2; ++rep, ++k) {  // two draws of lengths per size, both layouts
                Case c{coll, algo, "-", "-", m, -1, k % 2 == 1};
                if (rooted) c.root = (k * 5 + 1) % h.size;
                run(c);
            }
        }
    }
    h.use(coll, "auto");
}

// ---- argument checks and mismatches ----------------------------------------------
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
    if (got == want) return h.pass();
    h.failure(Case{"invalid_args"},
              std::string(what) + ": expected " + rdmx_strerror(want) + ", got " + rdmx_strerror(got));
}

// Every call fails the same way on every rank (root-only checks use root =
// this rank), so no rank waits for another.
void invalid_args(Harness &h) {
    const rdmx_status_t kBad = RDMX_ERR_INVALID_ARG;
    const int p = h.size, me = h.rank;
    const size_t up = static_cast<size_t>(p);
    std::vector<uint8_t> buf(64 * up + 256);
    uint8_t *b = buf.data();
    std::vector<size_t> lens(up, 8), displs(up), big(up, 8);
    for (size_t j = 0; j < up; ++j) displs[j] = 8 * j;
    std::vector<size_t> overlapping = displs;
    overlapping[up - 1] = p > 1 ? 4 : 0;  // into block 0 (p > 1) / onto the send block (p == 1, below)
    big[static_cast<size_t>(me)] = 9;
    std::vector<size_t> huge = displs;
    huge[0] = SIZE_MAX - 4;
    uint8_t *r = b + 8 * up + 64;  // a receive area after the send area
    FloatInt fi[4] = {};
    double d[4] = {};
    quiet_unless_rank0(h, [&] {
        expect(h, "scan float BAND", rdmx_scan(h.ctx, d, d + 2, 1, RDMX_DOUBLE, RDMX_BAND), kBad);
        expect(h, "scan int32 MINLOC", rdmx_scan(h.ctx, d, d + 2, 1, RDMX_INT32, RDMX_MINLOC), kBad);
        expect(h, "exscan float_int SUM", rdmx_exscan(h.ctx, fi, fi + 2, 1, RDMX_FLOAT_INT, RDMX_SUM), kBad);
        expect(h, "allreduce double MAXLOC", rdmx_allreduce(h.ctx, d, d + 2, 1, RDMX_DOUBLE, RDMX_MAXLOC), kBad);
        expect(h, "allreduce int_int MAX", rdmx_allreduce(h.ctx, fi, fi + 2, 1, RDMX_INT_INT, RDMX_MAX), kBad);
        expect(h, "reduce double_int BOR", rdmx_reduce(h.ctx, d, d + 2, 1, RDMX_DOUBLE_INT, RDMX_BOR, me), kBad);
        expect(h, "reduce_scatter float_int PROD",
               rdmx_reduce_scatter_block(h.ctx, fi, d, 1, RDMX_FLOAT_INT, RDMX_PROD), kBad);
        expect(h, "scan op 9", rdmx_scan(h.ctx, fi, fi + 2, 1, RDMX_FLOAT_INT, static_cast<rdmx_op_t>(9)), kBad);
        expect(h, "scan dt 13", rdmx_scan(h.ctx, fi, fi + 2, 1, static_cast<rdmx_datatype_t>(13), RDMX_MINLOC), kBad);
        expect(h, "scan overlap", rdmx_scan(h.ctx, d, d + 1, 2, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "exscan NULL recvbuf", rdmx_exscan(h.ctx, d, nullptr, 1, RDMX_DOUBLE, RDMX_SUM), kBad);
        expect(h, "allgatherv NULL lens", rdmx_allgatherv(h.ctx, b, 8, r, nullptr, displs.data()), kBad);
        expect(h, "allgatherv NULL displs", rdmx_allgatherv(h.ctx, b, 8, r, lens.data(), nullptr), kBad);
        expect(h, "allgatherv len != lens[rank]", rdmx_allgatherv(h.ctx, b, 8, r, big.data(), displs.data()), kBad);
        expect(h, "allgatherv displs overflow", rdmx_allgatherv(h.ctx, b, 8, r, lens.data(), huge.data()), kBad);
        expect(h, "allgatherv recv blocks overlap",
               rdmx_allgatherv(h.ctx, p > 1 ? b : r + 4, 8, r, lens.data(), overlapping.data()), kBad);
        expect(h, "allgatherv send in a recv block",
               rdmx_allgatherv(h.ctx, r + 1, 8, r, lens.data(), displs.data()), kBad);
        expect(h, "allgatherv NULL recvbuf", rdmx_allgatherv(h.ctx, b, 8, nullptr, lens.data(), displs.data()), kBad);
        expect(h, "gatherv NULL lens at root", rdmx_gatherv(h.ctx, b, 8, r, nullptr, displs.data(), me), kBad);
        expect(h, "gatherv root=size", rdmx_gatherv(h.ctx, b, 8, r, lens.data(), displs.data(), p), kBad);
        expect(h, "gatherv IN_PLACE", rdmx_gatherv(h.ctx, RDMX_IN_PLACE, 8, r, lens.data(), displs.data(), me), kBad);
        expect(h, "gatherv overlap at root", rdmx_gatherv(h.ctx, r, 8, r, lens.data(), displs.data(), me), kBad);
        expect(h, "scatterv NULL displs at root", rdmx_scatterv(h.ctx, b, lens.data(), nullptr, r, 8, me), kBad);
        expect(h, "scatterv len != lens[root]", rdmx_scatterv(h.ctx, b, big.data(), displs.data(), r, 8, me), kBad);
        expect(h, "scatterv overlap at root", rdmx_scatterv(h.ctx, b, lens.data(), displs.data(), b, 8, me), kBad);
        expect(h, "alltoallv NULL sendlens",
               rdmx_alltoallv(h.ctx, b, nullptr, displs.data(), r, lens.data(), displs.data()), kBad);
        expect(h, "alltoallv IN_PLACE",
               rdmx_alltoallv(h.ctx, RDMX_IN_PLACE, lens.data(), displs.data(), r, lens.data(), displs.data()), kBad);
        expect(h, "alltoallv overlap",
               rdmx_alltoallv(h.ctx, b, lens.data(), displs.data(), b + 4, lens.data(), displs.data()), kBad);
        expect(h, "alltoallv own block lengths differ",
               rdmx_alltoallv(h.ctx, b, lens.data(), displs.data(), r, big.data(), displs.data()), kBad);
        expect(h, "allgatherv NULL ctx", rdmx_allgatherv(nullptr, b, 8, r, lens.data(), displs.data()), kBad);
    });
    // Empty calls: every length 0, NULL buffers.
    std::vector<size_t> zeros(up, 0);
    expect(h, "allgatherv all 0, NULL", rdmx_allgatherv(h.ctx, nullptr, 0, nullptr, zeros.data(), zeros.data()),
           RDMX_OK);
    expect(h, "alltoallv all 0, NULL",
           rdmx_alltoallv(h.ctx, nullptr, zeros.data(), zeros.data(), nullptr, zeros.data(), zeros.data()), RDMX_OK);
    expect(h, "scan count 0 NULL", rdmx_scan(h.ctx, nullptr, nullptr, 0, RDMX_INT_INT, RDMX_MAXLOC), RDMX_OK);
}

// Ranks that disagree: every rank must return RDMX_ERR_INVALID_ARG where
// the signature check sees it, and stay in step.
void mismatches(Harness &h) {
    const int p = h.size, me = h.rank;
    if (p == 1) return;
    const bool odd = me == p - 1;
    const size_t up = static_cast<size_t>(p);
    std::vector<uint8_t> s(64 * up), r(128 * up);
    std::vector<size_t> lens(up, 8), displs(up);
    for (size_t j = 0; j < up; ++j) displs[j] = 16 * j;
    if (odd) lens[0] = 16;  // the total differs
    double x[8] = {}, y[8] = {};
    struct Mismatch {
        const char *what;
        std::function<rdmx_status_t()> call;
    };
    const Mismatch cases[] = {
        {"allgatherv total", [&] {
             return rdmx_allgatherv(h.ctx, s.data(), lens[static_cast<size_t>(me)], r.data(), lens.data(),
                                    displs.data());
         }},
        {"scan vs exscan", [&] {
             return odd ? rdmx_exscan(h.ctx, x, y, 8, RDMX_DOUBLE, RDMX_SUM)
                        : rdmx_scan(h.ctx, x, y, 8, RDMX_DOUBLE, RDMX_SUM);
         }},
        {"scan op", [&] { return rdmx_scan(h.ctx, x, y, 8, RDMX_INT64, odd ? RDMX_MAX : RDMX_SUM); }},
        {"gatherv root", [&] {
             const int root = odd ? 0 : p - 1;
             const bool is_root = me == root;
             return rdmx_gatherv(h.ctx, s.data(), 8, is_root ? r.data() : nullptr, is_root ? lens.data() : nullptr,
                                 is_root ? displs.data() : nullptr, root);
         }},
    };
    for (const Mismatch &m : cases) {
        rdmx_status_t st = RDMX_OK;
        quiet_unless_rank0(h, [&] { st = m.call(); });
        const Case c{"mismatch", m.what};
        if (st == RDMX_ERR_INVALID_ARG) h.pass();
        else h.failure(c, std::string("expected ") + rdmx_strerror(RDMX_ERR_INVALID_ARG) + ", got " +
                              rdmx_strerror(st));
        int64_t one = me + 1, sum = 0;  // still in step?
        h.require_ok(c, rdmx_allreduce(h.ctx, &one, &sum, 1, RDMX_INT64, RDMX_SUM));
        if (sum == static_cast<int64_t>(p) * (p + 1) / 2) h.pass();
        else h.failure(c, "ranks out of step after a mismatch");
    }
}

}  // namespace

void run_v(Harness &h) {
    v_sweep(h, "allgatherv", false, [&](const Case &c) { allgatherv_case(h, c); });
    v_sweep(h, "gatherv", true, [&](const Case &c) { gatherv_case(h, c); });
    v_sweep(h, "scatterv", true, [&](const Case &c) { scatterv_case(h, c); });
    v_sweep(h, "alltoallv", false, [&](const Case &c) { alltoallv_case(h, c); });
}

void run_scan_v_args(Harness &h) {
    invalid_args(h);
    mismatches(h);
}

}  // namespace colltest
