// coll_vs_mpi: rdmx_scan and rdmx_exscan for every datatype x op (the pair
// types with MINLOC/MAXLOC), and MINLOC/MAXLOC with ties in reduce,
// allreduce and reduce_scatter_block under every algorithm, compared with
// MPI on the same inputs.
#include "coll_select.h"  // kThresholds: sizes that cross the thresholds
#include "coll_test_loc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace colltest {

namespace {

using rdmx::coll::kThresholds;

constexpr uint8_t kJunk = 0x5A;  // recvbuf bytes before the call (exscan's rank 0 must keep them)

template <class T>
std::string show_scalar(T v) {
    char b[64];
    if constexpr (std::is_floating_point_v<T>) std::snprintf(b, sizeof b, "%.17g", static_cast<double>(v));
    else if constexpr (std::is_signed_v<T>) std::snprintf(b, sizeof b, "%lld", static_cast<long long>(v));
    else std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(v));
    return b;
}

// sum |x_r| (SUM) or prod |x_r| (PROD) of element i over ranks 0..last.
template <class T>
double magnitude(rdmx_op_t op, size_t i, uint64_t seed, int p, int last) {
    double m = op == RDMX_PROD ? 1.0 : 0.0;
    for (int r = 0; r <= last; ++r) {
        const double x = std::fabs(static_cast<double>(input<T>(op, r, i, seed, p)));
        m = op == RDMX_PROD ? m * x : m + x;
    }
    return m;
}

void check_guard(Harness &h, const Case &c, const std::vector<uint8_t> &buf, size_t used) {
    if (guard_intact(buf, used)) h.pass();
    else h.failure(c, "wrote past the end of recvbuf");
}

// Exscan at rank 0: recvbuf must hold exactly what it held before the call.
void check_untouched(Harness &h, const Case &c, const std::vector<uint8_t> &got, const std::vector<uint8_t> &before) {
    if (got == before) h.pass();
    else h.failure(c, "exscan wrote rank 0's recvbuf");
}

struct ScanKind {
    const char *name;  // "scan" or "exscan"
    bool exclusive;
};

rdmx_status_t call_scan(const ScanKind &k, rdmx_context_h ctx, const void *send, void *recv, size_t n,
                        rdmx_datatype_t dt, rdmx_op_t op) {
    return k.exclusive ? rdmx_exscan(ctx, send, recv, n, dt, op) : rdmx_scan(ctx, send, recv, n, dt, op);
}

void mpi_scan(const ScanKind &k, const void *send, void *recv, size_t n, rdmx_datatype_t dt, rdmx_op_t op) {
    if (k.exclusive) MPI_Exscan(send, recv, static_cast<int>(n), mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
    else MPI_Scan(send, recv, static_cast<int>(n), mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
}

// One scan/exscan of element type E (scalar or pair); `in` is this rank's
// input, `same(i, got, ref)` judges one element.
template <class E, class Same, class Show>
void scan_case(Harness &h, const Case &c, const ScanKind &k, rdmx_datatype_t dt, rdmx_op_t op,
               const std::vector<E> &in, Same same, Show show) {
    const size_t n = c.count, bytes = n * sizeof(E);
    std::vector<E> ref(n);
    mpi_scan(k, in.data(), ref.data(), n, dt, op);
    std::vector<uint8_t> out(bytes + kGuard, kGuardByte);
    std::fill(out.begin(), out.begin() + static_cast<long>(bytes), kJunk);
    if (c.in_place && n) std::memcpy(out.data(), in.data(), bytes);
    const std::vector<uint8_t> before = out;
    h.use(k.name, c.algo);
    const void *send = c.in_place ? RDMX_IN_PLACE : static_cast<const void *>(in.data());
    h.require_ok(c, call_scan(k, h.ctx, send, out.data(), n, dt, op));
    check_guard(h, c, out, bytes);
    if (k.exclusive && h.rank == 0) return check_untouched(h, c, out, before);  // MPI leaves it undefined
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        E g;
        std::memcpy(&g, out.data() + i * sizeof(E), sizeof(E));
        if (same(i, g, ref[i]) || bad++ >= 3) continue;
        h.mismatch(c, i, show(ref[i]), show(g));
    }
    if (bad) h.fail();
    else h.pass();
}

template <class T>
void scalar_scan_case(Harness &h, const Case &c, const ScanKind &k, rdmx_datatype_t dt, rdmx_op_t op) {
    const uint64_t seed = h.next_seed();
    std::vector<T> in(c.count);
    for (size_t i = 0; i < c.count; ++i) in[i] = input<T>(op, h.rank, i, seed, h.size);
    const int last = k.exclusive ? h.rank - 1 : h.rank;
    const int depth = reduction_depth("recursive_doubling", h.size);
    auto same = [&](size_t i, T g, T r) {
        if (std::memcmp(&g, &r, sizeof(T)) == 0) return true;
        if (!std::is_floating_point_v<T> || (op != RDMX_SUM && op != RDMX_PROD)) return false;
        const double tol = float_tolerance(op, std::numeric_limits<T>::epsilon(), depth, h.size,
                                           magnitude<T>(op, i, seed, h.size, last));
        return std::fabs(static_cast<double>(g) - static_cast<double>(r)) <= tol;
    };
    scan_case<T>(h, c, k, dt, op, in, same, [](T v) { return show_scalar(v); });
}

template <class P>
void pair_scan_case(Harness &h, const Case &c, const ScanKind &k, rdmx_datatype_t dt, rdmx_op_t op) {
    const uint64_t seed = h.next_seed();
    std::vector<P> in(c.count);
    for (size_t i = 0; i < c.count; ++i) in[i] = pair_input<P>(h.rank, i, seed);
    scan_case<P>(
        h, c, k, dt, op, in, [](size_t, const P &g, const P &r) { return pair_same(g, r); },
        [](const P &v) { return show_pair(v); });
}

// The large count (past the eager size) for one op per datatype only: the
// op does not change the traffic, and the large cases cost the most.
std::vector<size_t> scan_counts(const Harness &h, size_t esz, rdmx_op_t op) {
    std::set<size_t> s = {0, 1, 7, 1001};
    if (!h.opt.quick && (op == RDMX_SUM || op == RDMX_MINLOC))
        s.insert(kThresholds.allreduce_small_max_nonpow2 / esz + 1);
    return {s.begin(), s.end()};
}

void scan_sweep(Harness &h, const ScanKind &k) {
    for (const std::string &algo : h.algos(k.name)) {
        for (rdmx_datatype_t dt : kAllTypes) {
            for (rdmx_op_t op : kAllOps) {
                if (!valid_combo(dt, op)) continue;
                const std::vector<size_t> counts = scan_counts(h, dt_bytes(dt), op);
                for (size_t j = 0; j < counts.size(); ++j) {
                    const bool in_place = (j + static_cast<size_t>(dt) + static_cast<size_t>(op)) % 2 == 1;
                    const Case c{k.name, algo, dt_name(dt), op_name(op), counts[j], -1, in_place};
                    with_type(dt, [&]<class T>() { scalar_scan_case<T>(h, c, k, dt, op); });
                }
            }
        }
        for (rdmx_datatype_t dt : kPairTypes) {
            for (rdmx_op_t op : kLocOps) {
                const std::vector<size_t> counts = scan_counts(h, pair_bytes(dt), op);
                for (size_t j = 0; j < counts.size(); ++j) {
                    const Case c{k.name, algo, dt_name(dt), op_name(op), counts[j], -1, j % 2 == 1};
                    with_pair(dt, [&]<class P>() { pair_scan_case<P>(h, c, k, dt, op); });
                }
            }
        }
    }
    h.use(k.name, "auto");
}

// ---- MINLOC / MAXLOC in the other reductions -----------------------------------
enum class Red { Reduce, Allreduce, ReduceScatter };

template <class P>
void loc_case(Harness &h, const Case &c, Red red, rdmx_datatype_t dt, rdmx_op_t op) {
    const uint64_t seed = h.next_seed();
    const size_t p = static_cast<size_t>(h.size), n = c.count;
    const size_t n_in = red == Red::ReduceScatter ? n * p : n, bytes = n * sizeof(P);
    const bool has_result = red != Red::Reduce || h.rank == c.root;
    std::vector<P> in(n_in);
    for (size_t i = 0; i < n_in; ++i) in[i] = pair_input<P>(h.rank, i, seed);
    std::vector<P> ref(n);
    std::vector<uint8_t> out(has_result ? bytes + kGuard : 0, kGuardByte);
    const bool in_place = c.in_place && has_result && red != Red::ReduceScatter;
    if (in_place && n) std::memcpy(out.data(), in.data(), bytes);
    const void *send = in_place ? RDMX_IN_PLACE : static_cast<const void *>(in.data());
    void *recv = has_result ? out.data() : nullptr;
    const int ni = static_cast<int>(n);
    rdmx_status_t st = RDMX_OK;
    h.use(c.coll, c.algo);
    switch (red) {
    case Red::Reduce:
        MPI_Reduce(in.data(), ref.data(), ni, mpi_type(dt), mpi_op(op), c.root, MPI_COMM_WORLD);
        st = rdmx_reduce(h.ctx, send, recv, n, dt, op, c.root);
        break;
    case Red::Allreduce:
        MPI_Allreduce(in.data(), ref.data(), ni, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
        st = rdmx_allreduce(h.ctx, send, recv, n, dt, op);
        break;
    case Red::ReduceScatter:
        MPI_Reduce_scatter_block(in.data(), ref.data(), ni, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
        st = rdmx_reduce_scatter_block(h.ctx, send, recv, n, dt, op);
        break;
    }
    h.require_ok(c, st);
    if (!has_result) return;
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        P g;
        std::memcpy(&g, out.data() + i * sizeof(P), sizeof(P));
        if (!pair_same(g, ref[i]) && bad++ < 3) h.mismatch(c, i, show_pair(ref[i]), show_pair(g));
    }
    if (bad) h.fail();
    else h.pass();
    check_guard(h, c, out, bytes);
}

void loc_sweep(Harness &h, const char *coll, Red red) {
    const size_t p = static_cast<size_t>(h.size);
    for (const std::string &algo : h.algos(coll)) {
        for (rdmx_datatype_t dt : kPairTypes) {
            const size_t esz = pair_bytes(dt);
            std::set<size_t> counts = {0, 1, 7, 1001};
            const size_t big = red == Red::ReduceScatter ? kThresholds.allreduce_small_max / p / esz + 1
                                                         : kThresholds.allreduce_small_max / esz + 1;
            counts.insert(big);
            if (!h.opt.quick && algo == "auto") counts.insert(kThresholds.allreduce_ring_min / esz + 1);
            for (rdmx_op_t op : kLocOps) {
                size_t j = 0;
                for (size_t n : counts) {
                    Case c{coll, algo, dt_name(dt), op_name(op), n, -1, ++j % 2 == 0};
                    if (red == Red::Reduce) c.root = static_cast<int>((j + static_cast<size_t>(op)) % p);
                    with_pair(dt, [&]<class P>() { loc_case<P>(h, c, red, dt, op); });
                }
            }
        }
    }
    h.use(coll, "auto");
}

}  // namespace

void run_scan(Harness &h) {
    scan_sweep(h, ScanKind{"scan", false});
    scan_sweep(h, ScanKind{"exscan", true});
}

void run_loc(Harness &h) {
    loc_sweep(h, "reduce", Red::Reduce);
    loc_sweep(h, "allreduce", Red::Allreduce);
    loc_sweep(h, "reduce_scatter", Red::ReduceScatter);
}

}  // namespace colltest
