// coll_vs_mpi: harness, reporting, type maps and tolerances.
#include "coll_test.h"
#include "coll_test_loc.h"

#if RDMX_COLL_TEST_HOOKS
#include "coll_select.h"
#endif

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace colltest {

namespace {

const std::map<std::string, std::vector<std::string>> &algorithm_table() {
    static const std::map<std::string, std::vector<std::string>> t = {
        {"barrier", {"dissemination"}},
        {"bcast", {"binomial", "scatter_allgather"}},
        {"reduce", {"binomial", "reduce_scatter_gather"}},
        {"allreduce", {"recursive_doubling", "ring", "rabenseifner"}},
        {"reduce_scatter", {"recursive_halving", "ring"}},
        {"allgather", {"recursive_doubling", "bruck", "ring"}},
        {"gather", {"binomial"}},
        {"scatter", {"binomial"}},
        {"alltoall", {"pairwise"}},
        {"scan", {"recursive_doubling"}}, {"exscan", {"recursive_doubling"}}, {"allgatherv", {"ring"}},
        {"gatherv", {"linear"}}, {"scatterv", {"linear"}}, {"alltoallv", {"pairwise"}},
    };
    return t;
}

std::string env_algo(const char *coll) {
    std::string var = "RDMX_COLL_";
    for (const char *s = coll; *s; ++s) var += static_cast<char>(std::toupper(static_cast<unsigned char>(*s)));
    var += "_ALGO";
    const char *v = std::getenv(var.c_str());
    if (v == nullptr) return "auto";
    for (const auto &a : algorithm_table().at(coll))
        if (a == v) return a;
    return "auto";  // unknown values fall back to automatic selection
}

constexpr int kPrintBudget = 40;

}  // namespace

Harness::Harness(rdmx_context_h c, Options o) : ctx(c), rank(rdmx_rank(c)), size(rdmx_size(c)), opt(std::move(o)) {}

std::vector<std::string> Harness::algos(const char *coll) const {
    if (opt.env_only) return {env_algo(coll)};
    std::vector<std::string> v{"auto"};
    for (const auto &a : algorithm_table().at(coll)) v.push_back(a);
    return v;
}

void Harness::use(const char *coll, const std::string &algo) const {
#if RDMX_COLL_TEST_HOOKS
    if (!opt.env_only && !rdmx::coll::force_algorithm(coll, algo)) {
        std::fprintf(stderr, "coll_vs_mpi: cannot force %s=%s\n", coll, algo.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
#else
    (void)coll;
    (void)algo;
#endif
}

void Harness::print_case(const Case &c, const char *tag, const std::string &detail) {
    if (printed_ >= kPrintBudget) return;
    if (++printed_ == kPrintBudget) {
        std::fprintf(stderr, "rank %d: further failures are counted, not printed\n", rank);
        return;
    }
    std::fprintf(stderr, "%s coll=%s algo=%s dt=%s op=%s count=%zu root=%d in_place=%d np=%d rank=%d %s\n", tag,
                 c.coll, c.algo.c_str(), c.dt, c.op, c.count, c.root, c.in_place ? 1 : 0, size, rank, detail.c_str());
}

void Harness::mismatch(const Case &c, size_t index, const std::string &expected, const std::string &got) {
    print_case(c, "MISMATCH", "index=" + std::to_string(index) + " expected=" + expected + " got=" + got);
}

void Harness::failure(const Case &c, const std::string &what) {
    ++failed_;
    print_case(c, "FAILED", what);
}

void Harness::require_ok(const Case &c, rdmx_status_t st) {
    if (st == RDMX_OK) return;
    printed_ = 0;
    failure(c, std::string("status=") + rdmx_strerror(st));
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
}

const char *dt_name(rdmx_datatype_t dt) {
    static const char *const names[] = {"int8",   "int16",  "int32",  "int64", "uint8",
                                        "uint16", "uint32", "uint64", "float", "double",
                                        "float_int", "double_int", "int_int"};
    return names[dt];
}

const char *op_name(rdmx_op_t op) {
    static const char *const names[] = {"sum", "prod", "min", "max", "band", "bor", "bxor", "minloc", "maxloc"};
    return names[op];
}

size_t dt_bytes(rdmx_datatype_t dt) {
    size_t n = pair_bytes(dt);
    with_type(dt, [&]<class T>() { n = sizeof(T); });
    return n;
}

MPI_Datatype mpi_type(rdmx_datatype_t dt) {
    switch (dt) {
    case RDMX_INT8: return MPI_INT8_T;
    case RDMX_INT16: return MPI_INT16_T;
    case RDMX_INT32: return MPI_INT32_T;
    case RDMX_INT64: return MPI_INT64_T;
    case RDMX_UINT8: return MPI_UINT8_T;
    case RDMX_UINT16: return MPI_UINT16_T;
    case RDMX_UINT32: return MPI_UINT32_T;
    case RDMX_UINT64: return MPI_UINT64_T;
    case RDMX_FLOAT: return MPI_FLOAT;
    case RDMX_DOUBLE: return MPI_DOUBLE;
    case RDMX_FLOAT_INT: return MPI_FLOAT_INT;
    case RDMX_DOUBLE_INT: return MPI_DOUBLE_INT;
    case RDMX_INT_INT: return MPI_2INT;
    }
    return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(rdmx_op_t op) {
    switch (op) {
    case RDMX_SUM: return MPI_SUM;
    case RDMX_PROD: return MPI_PROD;
    case RDMX_MIN: return MPI_MIN;
    case RDMX_MAX: return MPI_MAX;
    case RDMX_BAND: return MPI_BAND;
    case RDMX_BOR: return MPI_BOR;
    case RDMX_BXOR: return MPI_BXOR;
    case RDMX_MINLOC: return MPI_MINLOC;
    case RDMX_MAXLOC: return MPI_MAXLOC;
    }
    return MPI_OP_NULL;
}

bool valid_combo(rdmx_datatype_t dt, rdmx_op_t op) {
    const bool fp = dt == RDMX_FLOAT || dt == RDMX_DOUBLE;
    return !(fp && (op == RDMX_BAND || op == RDMX_BOR || op == RDMX_BXOR));
}

int reduction_depth(const std::string &algo, int p) {
    int log2p = 0;
    for (int x = 1; x < p; x *= 2) ++log2p;
    if (algo == "recursive_doubling" || algo == "rabenseifner" || algo == "recursive_halving" ||
        algo == "binomial")
        return log2p;
    return p - 1;  // ring, reduce_scatter_gather, and "auto" (worst case)
}

double float_tolerance(rdmx_op_t op, double eps, int depth_rdmx, int p, double magnitude) {
    if (op != RDMX_SUM && op != RDMX_PROD) return 0.0;
    return static_cast<double>(depth_rdmx + (p - 1) + 1) * eps * magnitude;
}

bool guard_intact(const std::vector<uint8_t> &buf, size_t used) {
    for (size_t i = used; i < buf.size(); ++i)
        if (buf[i] != kGuardByte) return false;
    return true;
}

uint64_t fnv1a(const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

bool same_everywhere(uint64_t h) {
    uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    return lo == hi;
}

std::string show_byte(uint8_t b) { return std::to_string(static_cast<unsigned>(b)); }

}  // namespace colltest
