// coll_vs_mpi: the byte collectives (bcast, allgather, gather, scatter,
// alltoall) compared with MPI, and the barrier's ordering guarantee.
#include "coll_select.h"  // kThresholds: the sizes that cross every threshold
#include "coll_test.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

namespace colltest {

namespace {

using rdmx::coll::kThresholds;

constexpr uint8_t kJunk = 0x5A;  // initial content of bytes a collective must overwrite

std::vector<uint8_t> payload(uint64_t seed, int rank, size_t n) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = byte_at(seed, rank, i);
    return v;
}

// got[0..n) must equal ref[0..n) and the guard after got[n] be intact.
void check_bytes(Harness &h, const Case &c, const std::vector<uint8_t> &got, const std::vector<uint8_t> &ref,
                 size_t n) {
    int bad = 0;
    for (size_t i = 0; i < n; ++i)
        if (got[i] != ref[i] && bad++ < 3) h.mismatch(c, i, show_byte(ref[i]), show_byte(got[i]));
    if (bad) h.fail();
    else h.pass();
    if (guard_intact(got, n)) h.pass();
    else h.failure(c, "wrote past the end of recvbuf");
}

std::vector<size_t> sizes(const Harness &h, std::initializer_list<size_t> crossing, size_t big) {
    std::set<size_t> s = {0, 1, 7, 1001};
    for (size_t b : crossing) {
        s.insert(b - 1);
        s.insert(b + 1);
    }
    if (!h.opt.quick) s.insert(big);
    return {s.begin(), s.end()};
}

std::vector<int> roots(const Harness &h) {
    std::set<int> s = {0, h.size - 1};
    if (!h.opt.quick) s.insert(h.size / 2);
    return {s.begin(), s.end()};
}

void bcast_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count;
    const bool is_root = h.rank == c.root;
    std::vector<uint8_t> ref = is_root ? payload(seed, h.rank, n) : std::vector<uint8_t>(n);
    MPI_Bcast(ref.data(), static_cast<int>(n), MPI_BYTE, c.root, MPI_COMM_WORLD);
    std::vector<uint8_t> buf(n + kGuard, kGuardByte);
    for (size_t i = 0; i < n; ++i) buf[i] = is_root ? ref[i] : kJunk;
    h.use("bcast", c.algo);
    h.require_ok(c, rdmx_bcast(h.ctx, buf.data(), n, c.root));
    check_bytes(h, c, buf, ref, n);
}

void allgather_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, total = n * static_cast<size_t>(h.size);
    const std::vector<uint8_t> mine = payload(seed, h.rank, n);
    std::vector<uint8_t> ref(total);
    MPI_Allgather(mine.data(), static_cast<int>(n), MPI_BYTE, ref.data(), static_cast<int>(n), MPI_BYTE,
                  MPI_COMM_WORLD);
    std::vector<uint8_t> out(total + kGuard, kGuardByte);
    std::fill(out.begin(), out.begin() + static_cast<long>(total), kJunk);
    if (c.in_place && n) std::memcpy(out.data() + static_cast<size_t>(h.rank) * n, mine.data(), n);
    h.use("allgather", c.algo);
    const void *send = c.in_place ? RDMX_IN_PLACE : static_cast<const void *>(mine.data());
    h.require_ok(c, rdmx_allgather(h.ctx, send, n, out.data()));
    check_bytes(h, c, out, ref, total);
}

void gather_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, total = n * static_cast<size_t>(h.size);
    const bool is_root = h.rank == c.root;
    const std::vector<uint8_t> mine = payload(seed, h.rank, n);
    std::vector<uint8_t> ref(is_root ? total : 0);
    MPI_Gather(mine.data(), static_cast<int>(n), MPI_BYTE, ref.data(), static_cast<int>(n), MPI_BYTE, c.root,
               MPI_COMM_WORLD);
    std::vector<uint8_t> out(is_root ? total + kGuard : 0, kGuardByte);
    std::fill(out.begin(), out.begin() + static_cast<long>(is_root ? total : 0), kJunk);
    h.use("gather", c.algo);
    h.require_ok(c, rdmx_gather(h.ctx, mine.data(), n, is_root ? out.data() : nullptr, c.root));
    if (is_root) check_bytes(h, c, out, ref, total);
}

void scatter_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, total = n * static_cast<size_t>(h.size);
    const bool is_root = h.rank == c.root;
    const std::vector<uint8_t> src = is_root ? payload(seed, h.rank, total) : std::vector<uint8_t>();
    std::vector<uint8_t> ref(n);
    MPI_Scatter(src.data(), static_cast<int>(n), MPI_BYTE, ref.data(), static_cast<int>(n), MPI_BYTE, c.root,
                MPI_COMM_WORLD);
    std::vector<uint8_t> out(n + kGuard, kGuardByte);
    std::fill(out.begin(), out.begin() + static_cast<long>(n), kJunk);
    h.use("scatter", c.algo);
    h.require_ok(c, rdmx_scatter(h.ctx, is_root ? src.data() : nullptr, n, out.data(), c.root));
    check_bytes(h, c, out, ref, n);
}

void alltoall_case(Harness &h, const Case &c) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, total = n * static_cast<size_t>(h.size);
    const std::vector<uint8_t> src = payload(seed, h.rank, total);
    std::vector<uint8_t> ref(total);
    MPI_Alltoall(src.data(), static_cast<int>(n), MPI_BYTE, ref.data(), static_cast<int>(n), MPI_BYTE,
                 MPI_COMM_WORLD);
    std::vector<uint8_t> out(total + kGuard, kGuardByte);
    std::fill(out.begin(), out.begin() + static_cast<long>(total), kJunk);
    h.use("alltoall", c.algo);
    h.require_ok(c, rdmx_alltoall(h.ctx, src.data(), n, out.data()));
    check_bytes(h, c, out, ref, total);
}

template <class Run>
void sweep(Harness &h, const char *coll, const std::vector<size_t> &lens, bool rooted, Run run) {
    for (const std::string &algo : h.algos(coll)) {
        for (size_t k = 0; k < lens.size(); ++k) {
            Case c{coll, algo, "-", "-", lens[k], -1, k % 2 == 1};
            if (!rooted) {
                run(c);
                continue;
            }
            for (int root : roots(h)) {
                c.root = root;
                run(c);
            }
        }
    }
    h.use(coll, "auto");
}

double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One rank enters late; nobody may leave before it entered. Exact with the
// system-wide monotonic clock when every rank is on this host.
void barrier_order_case(Harness &h, const Case &c, int late) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (h.rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    double entered = now();
    h.require_ok(c, rdmx_barrier(h.ctx));
    const double left = now();
    MPI_Bcast(&entered, 1, MPI_DOUBLE, late, MPI_COMM_WORLD);
    if (left >= entered) h.pass();
    else h.failure(c, "left the barrier before rank " + std::to_string(late) + " entered it");
}

}  // namespace

void run_barrier(Harness &h) {
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    const bool one_host = same_everywhere(fnv1a(host, static_cast<size_t>(len)));
    for (const std::string &algo : h.algos("barrier")) {
        h.use("barrier", algo);
        Case c{"barrier", algo};
        for (int i = 0; i < 20; ++i) h.require_ok(c, rdmx_barrier(h.ctx));
        h.pass();
        if (!one_host) continue;
        for (int late : std::set<int>{0, h.size / 2, h.size - 1}) barrier_order_case(h, c, late);
    }
    h.use("barrier", "auto");
}

void run_bcast(Harness &h) {
    const auto lens = sizes(h, {kThresholds.bcast_large_min}, 200003);
    sweep(h, "bcast", lens, true, [&](const Case &c) { bcast_case(h, c); });
}

void run_allgather(Harness &h) {
    const size_t p = static_cast<size_t>(h.size);
    // Past the threshold, and past the eager limit (rendezvous blocks).
    const auto lens = sizes(h, {kThresholds.allgather_ring_min / p}, std::max<size_t>(3 * kThresholds.allgather_ring_min / p + 1, 65537));
    sweep(h, "allgather", lens, false, [&](const Case &c) { allgather_case(h, c); });
}

void run_gather(Harness &h) {
    const auto lens = sizes(h, {4 * rdmx::coll::KiB}, 65537);
    sweep(h, "gather", lens, true, [&](const Case &c) { gather_case(h, c); });
}

void run_scatter(Harness &h) {
    const auto lens = sizes(h, {4 * rdmx::coll::KiB}, 65537);
    sweep(h, "scatter", lens, true, [&](const Case &c) { scatter_case(h, c); });
}

void run_alltoall(Harness &h) {
    const auto lens = sizes(h, {kThresholds.alltoall_small_max}, 32771);
    sweep(h, "alltoall", lens, false, [&](const Case &c) { alltoall_case(h, c); });
}

}  // namespace colltest
