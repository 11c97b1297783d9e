// halo2d: Jacobi iteration for the Laplace equation on a global N x N grid,
// split into blocks over a 2D grid of ranks, with a halo exchange each
// iteration. Uses the C++ layer (rdmx/rdmx.hpp) and, for what that layer
// lacks, the C API: rdmx_comm_split makes a communicator for each row and
// each column of the rank grid, and rdmx_sendrecv with RDMX_PROC_NULL at the
// grid's edges moves the halos (a neighbour that does not exist receives
// nothing and writes nothing, so the edge blocks need no special case).
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
// neighbours. The residual is summed in the serial order, whatever the
// decomposition: every squared update and every row sum travels in a vector
// where it is the only nonzero contribution to its entry (and adding zeros is
// exact). An allreduce over the row communicator gives each rank the squared
// updates of its rows across all columns; it adds each row in column order,
// as the serial code does; an allreduce over the column communicator then
// gives every rank all N row sums, which it adds in row order.
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
constexpr int kTagDown = 1;   // a row travelling to the next rank row (larger row numbers)
constexpr int kTagUp = 2;     // a row travelling to the previous rank row
constexpr int kTagRight = 3;  // a column travelling to the next rank column
constexpr int kTagLeft = 4;   // a column travelling to the previous rank column

struct Options {
    int n = 64;
    int iters = 200;
    bool serial = false;
};

// The rows [row0, row0 + nrows) and columns [col0, col0 + ncols) of the
// N x N unknowns (global indices 1..N of the (N+2) x (N+2) grid with its
// boundary), plus a ghost row above and below and a ghost column on either
// side: copies of the neighbours' edges, or the fixed boundary where the
// block touches it.
struct Block {
    int n, row0, nrows, col0, ncols;
    std::vector<double> u, unew;
    Block(int n_, int row0_, int nrows_, int col0_, int ncols_)
        : n(n_), row0(row0_), nrows(nrows_), col0(col0_), ncols(ncols_),
          u(std::size_t(nrows_ + 2) * std::size_t(ncols_ + 2), 0.0) {
        for (int i = 1; i <= nrows; ++i) {
            if (col0 == 1) at(u, i, 0) = kLeft;
            if (col0 + ncols - 1 == n) at(u, i, ncols + 1) = kRight;
        }
        for (int j = 1; j <= ncols; ++j) {
            if (row0 == 1) at(u, 0, j) = kTop;
            if (row0 + nrows - 1 == n) at(u, nrows + 1, j) = kBottom;
        }
        unew = u;  // ghosts on the global boundary are the same in both
    }
    double &at(std::vector<double> &g, int i, int j) {
        return g[std::size_t(i) * std::size_t(ncols + 2) + std::size_t(j)];
    }
    double *row(std::vector<double> &g, int i) { return &at(g, i, 1); }

    // One Jacobi sweep over the block; sq[(i-1) * n + (col0-1) + (j-1)] =
    // the squared update of local cell (i, j), in a row-major nrows x n array.
    void sweep(std::span<double> sq) {
        for (int i = 1; i <= nrows; ++i) {
            for (int j = 1; j <= ncols; ++j) {
                const double v = 0.25 * (at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1));
                const double d = v - at(u, i, j);
                at(unew, i, j) = v;
                sq[std::size_t(i - 1) * std::size_t(n) + std::size_t(col0 - 1 + j - 1)] = d * d;
            }
        }
        u.swap(unew);  // ghosts are refreshed (or fixed) before the next sweep reads them
    }
};

// Row i of a row-major array of n columns.
std::span<const double> row_of(const std::vector<double> &a, int i, int n) {
    return std::span(a).subspan(std::size_t(i) * std::size_t(n), std::size_t(n));
}

// Sum in order: the only summation order, serial or parallel.
double sum_of(std::span<const double> v) {
    double s = 0.0;
    for (double r : v) s += r;
    return s;
}

void report(const Options &o, int ranks, double residual) {
    std::printf("halo2d: %dx%d grid, %d ranks, %d iterations, residual %.17g\n", o.n, o.n, ranks, o.iters,
                residual);
}

int run_serial(const Options &o) {
    Block b(o.n, 1, o.n, 1, o.n);
    std::vector<double> sq(std::size_t(o.n) * std::size_t(o.n)), rowsum(std::size_t(o.n));
    double residual = 0.0;
    for (int it = 0; it < o.iters; ++it) {
        b.sweep(sq);
        for (int i = 0; i < o.n; ++i) rowsum[std::size_t(i)] = sum_of(row_of(sq, i, o.n));
        residual = std::sqrt(sum_of(rowsum));
    }
    report(o, 1, residual);
    return 0;
}

void check(rdmx_status_t st, const char *where) {
    if (st != RDMX_OK) throw rdmx::Error(st, where);
}

// A communicator made by rdmx_comm_split, freed when it goes out of scope
// (before the Context it came from).
class Comm {
public:
    Comm(rdmx_context_h parent, int color, int key) {
        check(rdmx_comm_split(parent, color, key, &h_), "rdmx_comm_split");
    }
    Comm(const Comm &) = delete;
    Comm &operator=(const Comm &) = delete;
    ~Comm() { (void)rdmx_comm_free(&h_); }
    rdmx_context_h get() const { return h_; }
    int rank() const { return rdmx_rank(h_); }
    int size() const { return rdmx_size(h_); }
    int neighbour(int step) const {  // RDMX_PROC_NULL past either end: no wrap-around
        const int r = rank() + step;
        return r >= 0 && r < size() ? r : RDMX_PROC_NULL;
    }

private:
    rdmx_context_h h_ = nullptr;
};

// A near-square grid of prows x pcols ranks, prows >= pcols (one column of
// ranks, i.e. rows only, for a prime number of ranks).
void rank_grid(int size, int *prows, int *pcols) {
    int d = 1;
    for (int k = 1; k * k <= size; ++k)
        if (size % k == 0) d = k;
    *pcols = d;
    *prows = size / d;
}

// `parts` near-equal parts of 1..n: part p's first index and length.
void share(int n, int parts, int p, int *first, int *len) {
    const int base = n / parts, extra = n % parts;
    *len = base + (p < extra ? 1 : 0);
    *first = 1 + p * base + (p < extra ? p : extra);
}

// Ghost rows from the rank rows above and below (column communicator), ghost
// columns from the rank columns left and right (row communicator, packed).
void exchange_halos(Block &b, const Comm &col, const Comm &row, std::vector<double> &out, std::vector<double> &in) {
    const int up = col.neighbour(-1), down = col.neighbour(+1), left = row.neighbour(-1), right = row.neighbour(+1);
    const std::size_t rowbytes = std::size_t(b.ncols) * sizeof(double);
    const std::size_t colbytes = std::size_t(b.nrows) * sizeof(double);
    check(rdmx_sendrecv(col.get(), b.row(b.u, b.nrows), rowbytes, down, kTagDown, b.row(b.u, 0), rowbytes, up,
                        kTagDown, nullptr), "rdmx_sendrecv");
    check(rdmx_sendrecv(col.get(), b.row(b.u, 1), rowbytes, up, kTagUp, b.row(b.u, b.nrows + 1), rowbytes, down,
                        kTagUp, nullptr), "rdmx_sendrecv");
    // Columns are strided: pack, exchange, unpack (nothing arrives from PROC_NULL).
    for (int side = 0; side < 2; ++side) {
        const int to = side == 0 ? right : left, from = side == 0 ? left : right;
        const int send_col = side == 0 ? b.ncols : 1, ghost_col = side == 0 ? 0 : b.ncols + 1;
        for (int i = 1; i <= b.nrows; ++i) out[std::size_t(i - 1)] = b.at(b.u, i, send_col);
        check(rdmx_sendrecv(row.get(), out.data(), colbytes, to, side == 0 ? kTagRight : kTagLeft, in.data(), colbytes,
                            from, side == 0 ? kTagRight : kTagLeft, nullptr), "rdmx_sendrecv");
        if (from != RDMX_PROC_NULL)
            for (int i = 1; i <= b.nrows; ++i) b.at(b.u, i, ghost_col) = in[std::size_t(i - 1)];
    }
}

int run_parallel(const Options &o) {
    rdmx::Context ctx;  // rdmx_init; rdmx_finalize when it goes out of scope
    const int rank = ctx.rank(), size = ctx.size();
    int prows = 1, pcols = 1;
    rank_grid(size, &prows, &pcols);
    if (prows > o.n) {
        if (rank == 0)
            std::fprintf(stderr, "halo2d: a %dx%d grid of ranks for %d rows: too many ranks\n", prows, pcols, o.n);
        return 2;
    }
    // This rank's place in the grid of ranks, and a communicator for its row
    // (ordered by column) and one for its column (ordered by row).
    const int prow = rank / pcols, pcol = rank % pcols;
    const Comm row(ctx.native_handle(), prow, pcol), col(ctx.native_handle(), pcol, prow);
    int row0 = 0, nrows = 0, col0 = 0, ncols = 0;
    share(o.n, prows, col.rank(), &row0, &nrows);
    share(o.n, pcols, row.rank(), &col0, &ncols);
    Block b(o.n, row0, nrows, col0, ncols);

    std::vector<double> sq(std::size_t(nrows) * std::size_t(o.n)), rowsum(std::size_t(o.n));
    std::vector<double> out(static_cast<std::size_t>(nrows)), in(out.size());
    double residual = 0.0;
    for (int it = 0; it < o.iters; ++it) {
        exchange_halos(b, col, row, out, in);
        // Our squared updates in their columns, zeros elsewhere; the row's
        // allreduce fills in the other columns (see the note at the top).
        std::fill(sq.begin(), sq.end(), 0.0);
        b.sweep(sq);
        check(rdmx_allreduce(row.get(), RDMX_IN_PLACE, sq.data(), sq.size(), RDMX_DOUBLE, RDMX_SUM), "rdmx_allreduce");
        std::fill(rowsum.begin(), rowsum.end(), 0.0);
        for (int i = 0; i < nrows; ++i)
            rowsum[std::size_t(row0 - 1 + i)] = sum_of(row_of(sq, i, o.n));
        check(rdmx_allreduce(col.get(), RDMX_IN_PLACE, rowsum.data(), rowsum.size(), RDMX_DOUBLE, RDMX_SUM),
              "rdmx_allreduce");
        residual = std::sqrt(sum_of(rowsum));
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
