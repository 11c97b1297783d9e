// halo2d: Jacobi iteration for the Laplace equation on a global N x N grid,
// rows split across ranks, with a nonblocking halo exchange each iteration.
// Uses the C++ layer (rdmx/rdmx.hpp) over the C API.
//
//     mpirun -np 4 ./halo2d [--n N] [--iters K]     parallel, with rdmx
//     ./halo2d --serial [--n N] [--iters K]         same grid in one process, no rdmx
//
// The grid has N x N unknowns inside a fixed boundary (top edge 1.0, left
// edge 0.5, the others 0.0), starting from 0. Each iteration replaces every
// unknown with the mean of its four neighbours and computes the residual
// sqrt(sum of squared updates). After K iterations rank 0 prints
//
//     halo2d: 64x64 grid, 4 ranks, 200 iterations, residual 1.2345678901234567e-05
//
// Reproducibility: the result is bit-for-bit the same for any number of ranks,
// so the parallel residual equals the --serial one exactly (%.17g prints every
// digit of a double). The updates are computed by the same code from the same
// neighbours. The residual is not summed per rank: each rank computes the
// sums of the rows it owns, an allreduce (RDMX_SUM) assembles the vector of
// all N row sums (every entry has one nonzero contribution, and adding zeros
// is exact), and every rank then adds the N row sums in row order, exactly as
// the serial code does.
#include <rdmx/rdmx.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace {

constexpr double kTop = 1.0, kLeft = 0.5, kRight = 0.0, kBottom = 0.0;
constexpr int kTagDown = 1;  // a row travelling to the next rank (larger row numbers)
constexpr int kTagUp = 2;    // a row travelling to the previous rank

struct Options {
    int n = 64;
    int iters = 200;
    bool serial = false;
};

// Rows [row0, row0 + nrows) of the N x N unknowns (global rows 1..N of the
// (N+2) x (N+2) grid with its boundary), plus one ghost row above and below
// and the fixed left/right boundary columns.
struct Block {
    int n, row0, nrows;
    std::vector<double> u, unew;
    Block(int n_, int row0_, int nrows_)
        : n(n_), row0(row0_), nrows(nrows_), u(std::size_t(nrows_ + 2) * std::size_t(n_ + 2), 0.0), unew(u) {
        for (int i = 0; i < nrows + 2; ++i) {
            at(u, i, 0) = at(unew, i, 0) = kLeft;
            at(u, i, n + 1) = at(unew, i, n + 1) = kRight;
        }
        // Ghost rows that lie on the global boundary are the boundary itself.
        if (row0 == 1)
            for (int j = 1; j <= n; ++j) at(u, 0, j) = at(unew, 0, j) = kTop;
        if (row0 + nrows - 1 == n)
            for (int j = 1; j <= n; ++j) at(u, nrows + 1, j) = at(unew, nrows + 1, j) = kBottom;
    }
    double &at(std::vector<double> &g, int i, int j) { return g[std::size_t(i) * std::size_t(n + 2) + std::size_t(j)]; }
    std::span<double> row(std::vector<double> &g, int i) {
        return {g.data() + std::size_t(i) * std::size_t(n + 2) + 1, std::size_t(n)};
    }

    // One Jacobi sweep over the owned rows; rowsum[i] = sum of squared updates in row i.
    void sweep(std::span<double> rowsum) {
        for (int i = 1; i <= nrows; ++i) {
            double s = 0.0;
            for (int j = 1; j <= n; ++j) {
                const double v = 0.25 * (at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1));
                const double d = v - at(u, i, j);
                at(unew, i, j) = v;
                s += d * d;
            }
            rowsum[std::size_t(i - 1)] = s;
        }
        u.swap(unew);  // ghost rows and boundary columns are the same in both
    }
};

// Sum in row order: the only summation order, serial or parallel.
double residual_of(std::span<const double> rowsums) {
    double s = 0.0;
    for (double r : rowsums) s += r;
    return std::sqrt(s);
}

void report(const Options &o, int ranks, double residual) {
    std::printf("halo2d: %dx%d grid, %d ranks, %d iterations, residual %.17g\n", o.n, o.n, ranks, o.iters,
                residual);
}

int run_serial(const Options &o) {
    Block b(o.n, 1, o.n);
    std::vector<double> rowsum(std::size_t(o.n));
    double residual = 0.0;
    for (int it = 0; it < o.iters; ++it) {
        b.sweep(rowsum);
        residual = residual_of(rowsum);
    }
    report(o, 1, residual);
    return 0;
}

int run_parallel(const Options &o) {
    rdmx::Context ctx;  // rdmx_init; rdmx_finalize when it goes out of scope
    const int rank = ctx.rank(), size = ctx.size();
    if (size > o.n) {
        if (rank == 0) std::fprintf(stderr, "halo2d: %d ranks for %d rows: use at most one rank per row\n", size, o.n);
        return 2;
    }
    // Rows split as evenly as possible; the first n % size ranks get one more.
    const int base = o.n / size, extra = o.n % size;
    const int nrows = base + (rank < extra ? 1 : 0);
    const int row0 = 1 + rank * base + (rank < extra ? rank : extra);
    Block b(o.n, row0, nrows);
    const int up = rank > 0 ? rank - 1 : -1, down = rank < size - 1 ? rank + 1 : -1;

    std::vector<double> rowsum(std::size_t(o.n));
    double residual = 0.0;
    std::vector<rdmx::Request> reqs;
    reqs.reserve(4);
    for (int it = 0; it < o.iters; ++it) {
        // Halo exchange: receive the neighbours' edge rows into the ghost rows,
        // send ours. Receives are posted first so no message is unexpected.
        if (up >= 0) reqs.push_back(ctx.irecv(b.row(b.u, 0), up, kTagDown));
        if (down >= 0) reqs.push_back(ctx.irecv(b.row(b.u, nrows + 1), down, kTagUp));
        if (up >= 0) reqs.push_back(ctx.isend(b.row(b.u, 1), up, kTagUp));
        if (down >= 0) reqs.push_back(ctx.isend(b.row(b.u, nrows), down, kTagDown));
        rdmx::wait_all(reqs);  // rdmx_waitall; throws rdmx::Error on failure
        reqs.clear();

        // Our rows' sums in their global slots, zeros elsewhere; the allreduce
        // fills in the other ranks' rows (see the note at the top).
        std::fill(rowsum.begin(), rowsum.end(), 0.0);
        b.sweep(std::span(rowsum).subspan(std::size_t(row0 - 1), std::size_t(nrows)));
        ctx.allreduce(std::span(rowsum), RDMX_SUM);
        residual = residual_of(rowsum);
    }
    if (rank == 0) report(o, size, residual);
    return 0;
}

int parse(int argc, char **argv, Options *o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--serial") {
            o->serial = true;
        } else if ((a == "--n" || a == "--iters") && i + 1 < argc) {
            const int v = std::atoi(argv[++i]);
            if (v < 1) return -1;
            (a == "--n" ? o->n : o->iters) = v;
        } else {
            return -1;
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (parse(argc, argv, &o) != 0) {
        std::fprintf(stderr, "usage: %s [--serial] [--n N] [--iters K]\n", argv[0]);
        return 2;
    }
    try {
        return o.serial ? run_serial(o) : run_parallel(o);
    } catch (const rdmx::Error &e) {
        std::fprintf(stderr, "halo2d: %s\n", e.what());  // e.g. "rdmx_init: no usable RDMA device"
        return 1;
    }
}
