// coll_vs_mpi: reductions (allreduce, reduce, reduce_scatter_block) for every
// datatype x op, compared with MPI on the same inputs.
#include "coll_select.h"  // kThresholds: the sizes that cross every threshold
#include "coll_test.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace colltest {

namespace {

using rdmx::coll::kThresholds;

template <class T>
std::string show(T v) {
    char b[64];
    if constexpr (std::is_floating_point_v<T>) std::snprintf(b, sizeof b, "%.17g", static_cast<double>(v));
    else if constexpr (std::is_signed_v<T>) std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
    else std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(v));
    return b;
}

template <class T>
std::vector<T> make_inputs(rdmx_op_t op, int rank, size_t n, uint64_t seed, int p) {
    std::vector<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = input<T>(op, rank, i, seed, p);
    return v;
}

// sum |x_r| (SUM) or prod |x_r| (PROD) of input element `i` over all ranks.
template <class T>
double magnitude(rdmx_op_t op, size_t i, uint64_t seed, int p) {
    double m = op == RDMX_PROD ? 1.0 : 0.0;
    for (int r = 0; r < p; ++r) {
        const double x = std::fabs(static_cast<double>(input<T>(op, r, i, seed, p)));
        m = op == RDMX_PROD ? m * x : m + x;
    }
    return m;
}

// The exact integer result of input element i (wrapping like the C types),
// to tell in a report whether rdmx or the MPI reference is off.
template <class T>
T exact_integer(rdmx_op_t op, size_t i, uint64_t seed, int p) {
    using W = std::make_unsigned_t<decltype(+T{})>;
    T acc = input<T>(op, 0, i, seed, p);
    for (int r = 1; r < p; ++r) {
        const T x = input<T>(op, r, i, seed, p);
        switch (op) {
        case RDMX_SUM: acc = static_cast<T>(static_cast<W>(acc) + static_cast<W>(x)); break;
        case RDMX_PROD: acc = static_cast<T>(static_cast<W>(acc) * static_cast<W>(x)); break;
        case RDMX_MIN: acc = x < acc ? x : acc; break;
        case RDMX_MAX: acc = acc < x ? x : acc; break;
        case RDMX_BAND: acc = static_cast<T>(acc & x); break;
        case RDMX_BOR: acc = static_cast<T>(acc | x); break;
        case RDMX_BXOR: acc = static_cast<T>(acc ^ x); break;
        case RDMX_MINLOC: case RDMX_MAXLOC: break;  // pair types only (coll_test_scan.cc)
        }
    }
    return acc;
}

// Compare `got` (raw bytes) with MPI's `ref`; result element i came from
// input element first + i. Integers, MIN and MAX: bitwise; floating SUM and
// PROD: within the documented tolerance of the algorithm.
template <class T>
void check_values(Harness &h, const Case &c, const uint8_t *got, const T *ref, size_t n, rdmx_op_t op,
                  uint64_t seed, size_t first) {
    const int depth = reduction_depth(c.algo, h.size);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        T g;
        std::memcpy(&g, got + i * sizeof(T), sizeof(T));
        bool ok = std::memcmp(&g, &ref[i], sizeof(T)) == 0;
        if (!ok && std::is_floating_point_v<T> && (op == RDMX_SUM || op == RDMX_PROD)) {
            const double tol = float_tolerance(op, std::numeric_limits<T>::epsilon(), depth, h.size,
                                               magnitude<T>(op, first + i, seed, h.size));
            ok = std::fabs(static_cast<double>(g) - static_cast<double>(ref[i])) <= tol;
        }
        if (ok || bad++ >= 3) continue;
        std::string got_s = show(g);
        if constexpr (std::is_integral_v<T>) got_s += " exact=" + show(exact_integer<T>(op, first + i, seed, h.size));
        h.mismatch(c, i, show(ref[i]), got_s);
    }
    if (bad) h.fail();
    else h.pass();
}

void check_guard(Harness &h, const Case &c, const std::vector<uint8_t> &buf, size_t used) {
    if (guard_intact(buf, used)) h.pass();
    else h.failure(c, "wrote past the end of recvbuf");
}

template <class T>
void allreduce_case(Harness &h, Case c, rdmx_datatype_t dt, rdmx_op_t op) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, bytes = n * sizeof(T);
    const std::vector<T> in = make_inputs<T>(op, h.rank, n, seed, h.size);
    std::vector<T> ref(n);
    MPI_Allreduce(in.data(), ref.data(), static_cast<int>(n), mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
    std::vector<uint8_t> out(bytes + kGuard, kGuardByte);
    if (c.in_place && n) std::memcpy(out.data(), in.data(), bytes);
    h.use("allreduce", c.algo);
    const void *send = c.in_place ? RDMX_IN_PLACE : static_cast<const void *>(in.data());
    h.require_ok(c, rdmx_allreduce(h.ctx, send, out.data(), n, dt, op));
    check_values<T>(h, c, out.data(), ref.data(), n, op, seed, 0);
    check_guard(h, c, out, bytes);
    if (same_everywhere(fnv1a(out.data(), bytes))) h.pass();
    else h.failure(c, "ranks hold different results");
}

template <class T>
void reduce_case(Harness &h, Case c, rdmx_datatype_t dt, rdmx_op_t op) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, bytes = n * sizeof(T);
    const bool is_root = h.rank == c.root;
    const std::vector<T> in = make_inputs<T>(op, h.rank, n, seed, h.size);
    std::vector<T> ref(is_root ? n : 0);
    MPI_Reduce(in.data(), ref.data(), static_cast<int>(n), mpi_type(dt), mpi_op(op), c.root, MPI_COMM_WORLD);
    // recvbuf is only significant at the root: the others pass NULL.
    std::vector<uint8_t> out(is_root ? bytes + kGuard : 0, kGuardByte);
    const bool in_place = c.in_place && is_root;
    if (in_place && n) std::memcpy(out.data(), in.data(), bytes);
    h.use("reduce", c.algo);
    const void *send = in_place ? RDMX_IN_PLACE : static_cast<const void *>(in.data());
    h.require_ok(c, rdmx_reduce(h.ctx, send, is_root ? out.data() : nullptr, n, dt, op, c.root));
    if (!is_root) return;
    check_values<T>(h, c, out.data(), ref.data(), n, op, seed, 0);
    check_guard(h, c, out, bytes);
}

template <class T>
void reduce_scatter_case(Harness &h, Case c, rdmx_datatype_t dt, rdmx_op_t op) {
    const uint64_t seed = h.next_seed();
    const size_t n = c.count, bytes = n * sizeof(T);
    const std::vector<T> in = make_inputs<T>(op, h.rank, n * static_cast<size_t>(h.size), seed, h.size);
    std::vector<T> ref(n);
    MPI_Reduce_scatter_block(in.data(), ref.data(), static_cast<int>(n), mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
    std::vector<uint8_t> out(bytes + kGuard, kGuardByte);
    h.use("reduce_scatter", c.algo);
    h.require_ok(c, rdmx_reduce_scatter_block(h.ctx, in.data(), out.data(), n, dt, op));
    check_values<T>(h, c, out.data(), ref.data(), n, op, seed, static_cast<size_t>(h.rank) * n);
    check_guard(h, c, out, bytes);
}

// Element counts: 0, 1, odd ones, and both sides of every byte threshold.
// The large sizes (beyond the bandwidth thresholds) cost the most: they run
// SUM on every datatype for every algorithm (the op does not change the
// traffic), rooted ones at one root.
std::vector<size_t> counts_for(const Harness &h, const std::string &coll, const std::string & /*algo*/, rdmx_op_t op,
                               size_t esz) {
    std::set<size_t> s = {0, 1, 7, 1001};
    const size_t p = static_cast<size_t>(h.size);
    auto cross = [&](size_t bytes) {
        const size_t n = std::max<size_t>(bytes / esz, 2);
        s.insert(n - 1);
        s.insert(n + 1);
    };
    // Counts past the large-message thresholds with SUM only (every algorithm,
    // every type): how an op combines two elements does not depend on the
    // size, and filling and checking megabytes for every op of every type
    // was most of this suite's time.
    const bool large = !h.opt.quick && op == RDMX_SUM;
    if (coll == "allreduce") {
        cross(kThresholds.allreduce_small_max);
        if (large) cross(kThresholds.allreduce_small_max_nonpow2);
        if (large) cross(kThresholds.allreduce_ring_min);
    } else if (coll == "reduce") {
        if (large) cross(kThresholds.reduce_large_min);
    } else {  // reduce_scatter: the threshold is on the total, p blocks
        cross(kThresholds.allreduce_small_max / p);
        if (large) cross(kThresholds.reduce_scatter_ring_min / p);
    }
    return {s.begin(), s.end()};
}

std::vector<int> roots_for(const Harness &h) {
    std::set<int> s = {0, h.size - 1};
    if (!h.opt.quick) s.insert(h.size / 2);
    return {s.begin(), s.end()};
}

// Every (algorithm, datatype, op, count[, root]) of one reduction.
template <class Run>
void sweep(Harness &h, const char *coll, bool rooted, Run run) {
    for (const std::string &algo : h.algos(coll)) {
        for (rdmx_datatype_t dt : kAllTypes) {
            for (rdmx_op_t op : kAllOps) {
                if (!valid_combo(dt, op)) continue;
                const std::vector<size_t> counts = counts_for(h, coll, algo, op, dt_bytes(dt));
                for (size_t k = 0; k < counts.size(); ++k) {
                    const bool in_place = (k + static_cast<size_t>(dt) + static_cast<size_t>(op)) % 2 == 1;
                    Case c{coll, algo, dt_name(dt), op_name(op), counts[k], -1, in_place};
                    if (!rooted) {
                        run(c, dt, op);
                        continue;
                    }
                    // Past the large threshold one root (the last rank, not
                    // 0): megabytes per case, and the root changes no code
                    // path that the smaller counts do not cover already.
                    const bool big = counts[k] * dt_bytes(dt) >= kThresholds.reduce_large_min / 2;
                    for (int root : big ? std::vector<int>{h.size - 1} : roots_for(h)) {
                        c.root = root;
                        run(c, dt, op);
                    }
                }
            }
        }
    }
}

}  // namespace

void run_allreduce(Harness &h) {
    sweep(h, "allreduce", false, [&](const Case &c, rdmx_datatype_t dt, rdmx_op_t op) {
        with_type(dt, [&]<class T>() { allreduce_case<T>(h, c, dt, op); });
    });
    h.use("allreduce", "auto");
}

void run_reduce(Harness &h) {
    sweep(h, "reduce", true, [&](const Case &c, rdmx_datatype_t dt, rdmx_op_t op) {
        with_type(dt, [&]<class T>() { reduce_case<T>(h, c, dt, op); });
    });
    h.use("reduce", "auto");
}

void run_reduce_scatter(Harness &h) {
    sweep(h, "reduce_scatter", false, [&](Case c, rdmx_datatype_t dt, rdmx_op_t op) {
        c.in_place = false;  // not a form of reduce_scatter_block
        with_type(dt, [&]<class T>() { reduce_scatter_case<T>(h, c, dt, op); });
    });
    h.use("reduce_scatter", "auto");
}

}  // namespace colltest
