// coll_vs_mpi: shared pieces of the test that compares rdmx's collectives
// with MPI's on the same inputs.
#ifndef RDMX_TESTS_COLL_COLL_TEST_H
#define RDMX_TESTS_COLL_COLL_TEST_H

#include <rdmx/rdmx.h>

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace colltest {

struct Options {
    bool quick = false;     // smaller size sweeps (for the slow RDMA guest)
    bool env_only = false;  // no forcing hook: run what RDMX_COLL_*_ALGO selects
    std::string only;       // run only this collective ("" = all)
};

/** One call being checked, for reports. */
struct Case {
    const char *coll = "";
    std::string algo = "auto";
    const char *dt = "-";
    const char *op = "-";
    size_t count = 0;  // elements (reductions) or bytes
    int root = -1;
    bool in_place = false;
};

class Harness {
public:
    Harness(rdmx_context_h ctx, Options opt);

    rdmx_context_h ctx;
    int rank, size;
    Options opt;

    /** Algorithms to run for `coll`: "auto" plus every forced one, or, in
     *  env-only mode, the one named by RDMX_COLL_<NAME>_ALGO (else "auto"). */
    std::vector<std::string> algos(const char *coll) const;
    /** Select `algo` for `coll` before the calls of a case (no-op in env-only mode). */
    void use(const char *coll, const std::string &algo) const;
    bool wanted(const char *coll) const { return opt.only.empty() || opt.only == coll; }

    /** A distinct input seed per case (identical on every rank). */
    uint64_t next_seed() { return ++seed_ * 0x9E3779B97F4A7C15ull; }

    void pass(uint64_t n = 1) { passed_ += n; }
    void fail(uint64_t n = 1) { failed_ += n; }
    /** Print a wrong value at `index` (up to a budget); the caller counts the case with fail(). */
    void mismatch(const Case &c, size_t index, const std::string &expected, const std::string &got);
    /** Any other failed check of a case: printed and counted. */
    void failure(const Case &c, const std::string &what);
    /** A collective that did not return RDMX_OK: reported, then the job is
     *  aborted (ranks may be out of step). */
    void require_ok(const Case &c, rdmx_status_t st);

    uint64_t passed() const { return passed_; }
    uint64_t failed() const { return failed_; }

private:
    void print_case(const Case &c, const char *tag, const std::string &detail);
    uint64_t seed_ = 0;
    uint64_t passed_ = 0, failed_ = 0;
    int printed_ = 0;
};

// ---- inputs ----------------------------------------------------------------
inline uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}
inline uint64_t hash3(uint64_t seed, int rank, size_t i) {
    return mix(seed ^ mix(static_cast<uint64_t>(rank) * 0x100000001B3ull + i));
}
inline double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }  // [0, 1)

/** Rank `rank`'s element i for a reduction with `op` over p ranks. Chosen so
 *  that integer results are exact and well defined (unsigned wraps; signed
 *  SUM/PROD never overflow) and floating PROD stays in range. */
template <class T>
T input(rdmx_op_t op, int rank, size_t i, uint64_t seed, int p) {
    const uint64_t h = hash3(seed, rank, i);
    if constexpr (std::is_floating_point_v<T>) {
        if (op == RDMX_SUM) return static_cast<T>(2.0 * unit(h) - 1.0);
        if (op == RDMX_PROD) return static_cast<T>((h & 1 ? -1.0 : 1.0) * (0.5 + 1.5 * unit(h >> 1)));
        return static_cast<T>(2000.0 * unit(h) - 1000.0);
    } else if constexpr (std::is_signed_v<T>) {
        constexpr int64_t tmax = static_cast<int64_t>(std::numeric_limits<T>::max());
        if (op == RDMX_SUM) {
            // In uint64_t: 2 * lim + 1 overflows int64_t when p == 1; the
            // conversion back to signed is modular (C++20).
            const uint64_t lim = static_cast<uint64_t>(tmax / p);
            return static_cast<T>(static_cast<int64_t>(h % (2 * lim + 1) - lim));
        }
        if (op == RDMX_PROD) {  // {1, -1, 2}, at most (bits - 2) twos in a product
            const int max_twos = static_cast<int>(sizeof(T)) * 8 - 2;
            if (rank < max_twos && h % 3 == 0) return T{2};
            return static_cast<T>(h & 8 ? 1 : -1);
        }
        T v;
        std::memcpy(&v, &h, sizeof v);
        return v;
    } else {
        return static_cast<T>(h);
    }
}

/** Call f.template operator()<T>() with the C type of dt. */
template <class F>
void with_type(rdmx_datatype_t dt, F &&f) {
    switch (dt) {
    case RDMX_INT8: return f.template operator()<int8_t>();
    case RDMX_INT16: return f.template operator()<int16_t>();
    case RDMX_INT32: return f.template operator()<int32_t>();
    case RDMX_INT64: return f.template operator()<int64_t>();
    case RDMX_UINT8: return f.template operator()<uint8_t>();
    case RDMX_UINT16: return f.template operator()<uint16_t>();
    case RDMX_UINT32: return f.template operator()<uint32_t>();
    case RDMX_UINT64: return f.template operator()<uint64_t>();
    case RDMX_FLOAT: return f.template operator()<float>();
    case RDMX_DOUBLE: return f.template operator()<double>();
    case RDMX_FLOAT_INT: case RDMX_DOUBLE_INT: case RDMX_INT_INT: return;  // pairs: coll_test_loc.h
    }
}

inline constexpr rdmx_datatype_t kAllTypes[] = {RDMX_INT8,   RDMX_INT16,  RDMX_INT32,  RDMX_INT64, RDMX_UINT8,
                                                 RDMX_UINT16, RDMX_UINT32, RDMX_UINT64, RDMX_FLOAT, RDMX_DOUBLE};
inline constexpr rdmx_op_t kAllOps[] = {RDMX_SUM, RDMX_PROD, RDMX_MIN, RDMX_MAX, RDMX_BAND, RDMX_BOR, RDMX_BXOR};

const char *dt_name(rdmx_datatype_t dt);
const char *op_name(rdmx_op_t op);
size_t dt_bytes(rdmx_datatype_t dt);
MPI_Datatype mpi_type(rdmx_datatype_t dt);
MPI_Op mpi_op(rdmx_op_t op);
bool valid_combo(rdmx_datatype_t dt, rdmx_op_t op);

/** Rounds of combination on the longest path of `algo`: ceil(log2 p) for
 *  the tree/doubling/halving ones, p - 1 for the ring ones and for "auto"
 *  (the worst of any algorithm). */
int reduction_depth(const std::string &algo, int p);

/** Floating tolerance of one element (see docs/collectives.md):
 *  (depth_rdmx + depth_mpi + 1) * eps * M, M = sum |x_r| (SUM) or
 *  prod |x_r| (PROD); MIN/MAX and integers are exact. */
double float_tolerance(rdmx_op_t op, double eps, int depth_rdmx, int p, double magnitude);

/** Payload bytes for byte collectives. */
inline uint8_t byte_at(uint64_t seed, int rank, size_t i) { return static_cast<uint8_t>(hash3(seed, rank, i)); }

/** Recv buffers get this many guard bytes that must stay untouched. */
inline constexpr size_t kGuard = 64;
inline constexpr uint8_t kGuardByte = 0xA5;
bool guard_intact(const std::vector<uint8_t> &buf, size_t used);

/** FNV-1a of bytes, for the "same result on every rank" checks. */
uint64_t fnv1a(const void *p, size_t n);
/** True if `h` is the same on every rank. */
bool same_everywhere(uint64_t h);

std::string show_byte(uint8_t b);

// One suite per collective (all its algorithms, sizes, roots; counts go to
// the harness).
void run_barrier(Harness &h);
void run_bcast(Harness &h);
void run_reduce(Harness &h);
void run_allreduce(Harness &h);
void run_reduce_scatter(Harness &h);
void run_allgather(Harness &h);
void run_gather(Harness &h);
void run_scatter(Harness &h);
void run_alltoall(Harness &h);

}  // namespace colltest

#endif
