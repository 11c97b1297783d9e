// coll_vs_mpi: the (value, index) pair datatypes of MINLOC/MAXLOC, with
// inputs full of ties, and the suites of the scan and v-collectives.
#ifndef RDMX_TESTS_COLL_COLL_TEST_LOC_H
#define RDMX_TESTS_COLL_COLL_TEST_LOC_H

#include <rdmx/rdmx.hpp>

#include "coll_test.h"

namespace colltest {

// The C layouts of rdmx's pair types (and of MPI_FLOAT_INT, MPI_DOUBLE_INT,
// MPI_2INT): the public C++ header's structs.
using rdmx::DoubleInt;
using rdmx::FloatInt;
using rdmx::IntInt;

inline constexpr rdmx_datatype_t kPairTypes[] = {RDMX_FLOAT_INT, RDMX_DOUBLE_INT, RDMX_INT_INT};
inline constexpr rdmx_op_t kLocOps[] = {RDMX_MINLOC, RDMX_MAXLOC};

/** sizeof the pair type, 0 for the scalar types. */
inline size_t pair_bytes(rdmx_datatype_t dt) {
    switch (dt) {
    case RDMX_FLOAT_INT: return sizeof(FloatInt);
    case RDMX_DOUBLE_INT: return sizeof(DoubleInt);
    case RDMX_INT_INT: return sizeof(IntInt);
    default: return 0;
    }
}

/** Call f.template operator()<P>() with the struct of a pair type. */
template <class F>
void with_pair(rdmx_datatype_t dt, F &&f) {
    switch (dt) {
    case RDMX_FLOAT_INT: return f.template operator()<FloatInt>();
    case RDMX_DOUBLE_INT: return f.template operator()<DoubleInt>();
    case RDMX_INT_INT: return f.template operator()<IntInt>();
    default: return;
    }
}

/** Rank `rank`'s element i: values in -2..2 and indices in 0..6, so that
 *  most results are decided by a tie on the value (and some pairs are equal
 *  in both fields). Padding bytes are zero. */
template <class P>
P pair_input(int rank, size_t i, uint64_t seed) {
    const uint64_t h = hash3(seed, rank, i);
    P x;
    std::memset(&x, 0, sizeof x);
    x.v = static_cast<decltype(x.v)>(static_cast<int>(h % 5) - 2);
    x.i = static_cast<int>((h >> 8) % 7);
    return x;
}

/** Value and index equal bitwise (padding ignored: MPI does not define it). */
template <class P>
bool pair_same(const P &a, const P &b) {
    return std::memcmp(&a.v, &b.v, sizeof a.v) == 0 && a.i == b.i;
}

template <class P>
std::string show_pair(const P &x) {
    return "(" + std::to_string(x.v) + ", " + std::to_string(x.i) + ")";
}

// Suites (coll_test_scan.cc, coll_test_v.cc).
void run_loc(Harness &h);            // MINLOC/MAXLOC in reduce, allreduce, reduce_scatter_block
void run_scan(Harness &h);           // scan and exscan, every datatype and op
void run_v(Harness &h);              // allgatherv, gatherv, scatterv, alltoallv
void run_scan_v_args(Harness &h);    // invalid arguments and mismatches of all of the above

}  // namespace colltest

#endif
