/* Reductions: Reduce (every root), Allreduce, Reduce_scatter,
 * Reduce_scatter_block, Scan, Exscan with every predefined operation on the
 * types it applies to, MAXLOC/MINLOC on pair types with ties, MPI_IN_PLACE
 * for each, zero counts, and user operations from Op_create: commutative,
 * and not commutative (2x2 matrix products, so rank order matters) on a
 * derived type. Every expected value is folded here in rank order. */
#include "conf.h"

#include <stdint.h>

#define SENTINEL (-7)
#define N_RED 7
#define MOD 1000003 /* keeps matrix products exact in int */

typedef int (*val_fn)(int rank, int i);
typedef int (*fold_fn)(int a, int b);

static int v_sum(int r, int i) { return (r * 7 + i * 3) % 11 - 5; }
static int v_prod(int r, int i) { return (r + i) % 3 + 1; }
static int v_minmax(int r, int i) { return (r * 37 + i * 11) % 23 - 10; }
static int v_logic(int r, int i) { return (r + i) % 3 == 0 ? 0 : r + 1; }
static int v_bits(int r, int i) { return ((r * 0x35 + i * 0x1f) & 0xff) | (1 << (r % 4 + 8)); }

static int f_sum(int a, int b) { return a + b; }
static int f_prod(int a, int b) { return a * b; }
static int f_max(int a, int b) { return a > b ? a : b; }
static int f_min(int a, int b) { return a < b ? a : b; }
static int f_land(int a, int b) { return a && b; }
static int f_lor(int a, int b) { return a || b; }
static int f_lxor(int a, int b) { return !a != !b; }
static int f_band(int a, int b) { return a & b; }
static int f_bor(int a, int b) { return a | b; }
static int f_bxor(int a, int b) { return a ^ b; }

struct int_op {
    MPI_Op op;
    const char *name;
    val_fn val;
    fold_fn fold;
};

static const struct int_op int_ops[] = {
    {MPI_SUM, "MPI_SUM", v_sum, f_sum},       {MPI_PROD, "MPI_PROD", v_prod, f_prod},
    {MPI_MAX, "MPI_MAX", v_minmax, f_max},    {MPI_MIN, "MPI_MIN", v_minmax, f_min},
    {MPI_LAND, "MPI_LAND", v_logic, f_land},  {MPI_LOR, "MPI_LOR", v_logic, f_lor},
    {MPI_LXOR, "MPI_LXOR", v_logic, f_lxor},  {MPI_BAND, "MPI_BAND", v_bits, f_band},
    {MPI_BOR, "MPI_BOR", v_bits, f_bor},      {MPI_BXOR, "MPI_BXOR", v_bits, f_bxor},
};
#define N_INT_OPS ((int)(sizeof int_ops / sizeof int_ops[0]))

/* Fold of ranks [from, to) for element i; logical ops give 0 or 1. */
static int folded(const struct int_op *o, int from, int to, int i)
{
    int acc = o->val(from, i);
    if (o->fold == f_land || o->fold == f_lor || o->fold == f_lxor)
        acc = !!acc;
    for (int r = from + 1; r < to; r++)
        acc = o->fold(acc, o->val(r, i));
    return acc;
}

static void fill(int *buf, int n, const struct int_op *o)
{
    for (int i = 0; i < n; i++)
        buf[i] = o->val(conf_rank, i);
}

static void check_reduce(void)
{
    for (int k = 0; k < N_INT_OPS; k++) {
        const struct int_op *o = &int_ops[k];
        for (int root = 0; root < conf_size; root++) {
            int send[N_RED], recv[N_RED];
            fill(send, N_RED, o);
            for (int i = 0; i < N_RED; i++)
                recv[i] = SENTINEL;
            MPI_OK(MPI_Reduce(send, recv, N_RED, MPI_INT, o->op, root, MPI_COMM_WORLD));
            if (conf_rank == root)
                for (int i = 0; i < N_RED; i++)
                    CHECK(recv[i] == folded(o, 0, conf_size, i), "%s root %d element %d = %d, want %d", o->name,
                          root, i, recv[i], folded(o, 0, conf_size, i));
            /* In place at the root. */
            if (conf_rank == root) {
                MPI_OK(MPI_Reduce(MPI_IN_PLACE, send, N_RED, MPI_INT, o->op, root, MPI_COMM_WORLD));
                for (int i = 0; i < N_RED; i++)
                    CHECK(send[i] == folded(o, 0, conf_size, i), "%s in place root %d element %d = %d", o->name,
                          root, i, send[i]);
            } else {
                MPI_OK(MPI_Reduce(send, NULL, N_RED, MPI_INT, o->op, root, MPI_COMM_WORLD));
            }
        }
    }
}

static void check_allreduce(void)
{
    for (int k = 0; k < N_INT_OPS; k++) {
        const struct int_op *o = &int_ops[k];
        int send[N_RED], recv[N_RED];
        fill(send, N_RED, o);
        MPI_OK(MPI_Allreduce(send, recv, N_RED, MPI_INT, o->op, MPI_COMM_WORLD));
        for (int i = 0; i < N_RED; i++)
            CHECK(recv[i] == folded(o, 0, conf_size, i), "%s element %d = %d, want %d", o->name, i, recv[i],
                  folded(o, 0, conf_size, i));
        MPI_OK(MPI_Allreduce(MPI_IN_PLACE, send, N_RED, MPI_INT, o->op, MPI_COMM_WORLD));
        for (int i = 0; i < N_RED; i++)
            CHECK(send[i] == folded(o, 0, conf_size, i), "%s in place element %d = %d", o->name, i, send[i]);
    }
    /* Zero count: nothing written. */
    int x = SENTINEL, y = SENTINEL;
    MPI_OK(MPI_Allreduce(&x, &y, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_INT(y, SENTINEL);
}

/* Other types: doubles and floats (exact small sums), unsigned char, long
 * long, int64_t, and a large allreduce. */
static void check_types(void)
{
    double d[3] = {conf_rank + 0.5, -conf_rank * 2.0, 0.25}, dr[3];
    float f = (float)conf_rank, fr;
    unsigned char u = (unsigned char)(1u << (conf_rank % 8)), ur;
    long long ll = 1000000000000LL * (conf_rank + 1), llr;
    int64_t i64 = -(int64_t)conf_rank, i64r;
    int n = conf_size;
    MPI_OK(MPI_Allreduce(d, dr, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(dr[0] == n * (n - 1) / 2.0 + 0.5 * n && dr[1] == -(double)n * (n - 1) && dr[2] == 0.25 * n,
          "MPI_DOUBLE sums %g %g %g", dr[0], dr[1], dr[2]);
    MPI_OK(MPI_Allreduce(&f, &fr, 1, MPI_FLOAT, MPI_MAX, MPI_COMM_WORLD));
    CHECK(fr == (float)(n - 1), "MPI_FLOAT max %g", (double)fr);
    MPI_OK(MPI_Allreduce(&u, &ur, 1, MPI_UNSIGNED_CHAR, MPI_BOR, MPI_COMM_WORLD));
    unsigned char uw = 0;
    for (int r = 0; r < n; r++)
        uw |= (unsigned char)(1u << (r % 8));
    CHECK_INT(ur, uw);
    MPI_OK(MPI_Allreduce(&ll, &llr, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK(llr == 1000000000000LL * n * (n + 1) / 2, "MPI_LONG_LONG sum %lld", llr);
    MPI_OK(MPI_Allreduce(&i64, &i64r, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD));
    CHECK(i64r == -(int64_t)(n - 1), "MPI_INT64_T min %lld", (long long)i64r);
    /* Large: 256 Ki ints. */
    enum { BIG = 1 << 18 };
    int *b = malloc(sizeof(int) * BIG), *br = malloc(sizeof(int) * BIG);
    for (int i = 0; i < BIG; i++)
        b[i] = (i % 1000) * (conf_rank + 1);
    MPI_OK(MPI_Allreduce(b, br, BIG, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < BIG; i++)
        CHECK(br[i] == (i % 1000) * n * (n + 1) / 2, "large sum element %d = %d", i, br[i]);
    free(b);
    free(br);
}

/* MAXLOC/MINLOC: ties go to the lowest index. */
static void check_loc(void)
{
    struct { int v, i; } a[2], ar[2];
    struct { double v; int i; } b[2], br[2];
    int n = conf_size;
    /* Element 0: value by parity, so the max ties among odd ranks. */
    a[0].v = conf_rank % 2;
    a[0].i = conf_rank;
    a[1].v = -conf_rank;
    a[1].i = conf_rank;
    b[0].v = (conf_rank % 2) + 0.5;
    b[0].i = conf_rank;
    b[1].v = 2.0;
    b[1].i = conf_rank;
    MPI_OK(MPI_Allreduce(a, ar, 2, MPI_2INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(ar[0].v == (n > 1) && ar[0].i == (n > 1 ? 1 : 0), "MPI_2INT maxloc (%d, %d)", ar[0].v, ar[0].i);
    CHECK(ar[1].v == 0 && ar[1].i == 0, "MPI_2INT maxloc (%d, %d)", ar[1].v, ar[1].i);
    MPI_OK(MPI_Allreduce(a, ar, 2, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(ar[0].v == 0 && ar[0].i == 0, "MPI_2INT minloc (%d, %d)", ar[0].v, ar[0].i);
    CHECK(ar[1].v == -(n - 1) && ar[1].i == n - 1, "MPI_2INT minloc (%d, %d)", ar[1].v, ar[1].i);
    for (int root = 0; root < n; root++) {
        MPI_OK(MPI_Reduce(b, br, 2, MPI_DOUBLE_INT, MPI_MAXLOC, root, MPI_COMM_WORLD));
        if (conf_rank == root) {
            CHECK(br[0].v == (n > 1 ? 1.5 : 0.5) && br[0].i == (n > 1 ? 1 : 0), "MPI_DOUBLE_INT maxloc (%g, %d)",
                  br[0].v, br[0].i);
            CHECK(br[1].v == 2.0 && br[1].i == 0, "MPI_DOUBLE_INT maxloc tie (%g, %d)", br[1].v, br[1].i);
        }
    }
    MPI_OK(MPI_Allreduce(MPI_IN_PLACE, b, 2, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(b[0].v == 0.5 && b[0].i == 0 && b[1].v == 2.0 && b[1].i == 0, "MPI_DOUBLE_INT minloc in place");
}

/* recvcounts[i] = i % 3 (rank 0 gets nothing). */
static void check_reduce_scatter(void)
{
    int n = conf_size, total = 0, *counts = malloc(sizeof(int) * (size_t)n), off = 0;
    for (int i = 0; i < n; i++) {
        counts[i] = i % 3;
        total += counts[i];
        if (i < conf_rank)
            off += counts[i];
    }
    const struct int_op *o = &int_ops[0];
    int *send = malloc(sizeof(int) * (size_t)(total + 1)), recv[3];
    for (int in_place = 0; in_place < 2; in_place++) {
        fill(send, total, o);
        for (int i = 0; i < 3; i++)
            recv[i] = SENTINEL;
        if (in_place)
            MPI_OK(MPI_Reduce_scatter(MPI_IN_PLACE, send, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        else
            MPI_OK(MPI_Reduce_scatter(send, recv, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        const int *got = in_place ? send : recv;
        for (int i = 0; i < counts[conf_rank]; i++)
            CHECK(got[i] == folded(o, 0, n, off + i), "%selement %d = %d, want %d", in_place ? "in place: " : "", i,
                  got[i], folded(o, 0, n, off + i));
        if (!in_place)
            for (int i = counts[conf_rank]; i < 3; i++)
                CHECK(recv[i] == SENTINEL, "element %d past the count written", i);
    }
    free(counts);
    free(send);
}

static void check_reduce_scatter_block(void)
{
    enum { PER = 3 };
    int n = conf_size, *send = malloc(sizeof(int) * (size_t)n * PER), recv[PER];
    const struct int_op *o = &int_ops[2]; /* MPI_MAX */
    for (int in_place = 0; in_place < 2; in_place++) {
        fill(send, n * PER, o);
        if (in_place)
            MPI_OK(MPI_Reduce_scatter_block(MPI_IN_PLACE, send, PER, MPI_INT, o->op, MPI_COMM_WORLD));
        else
            MPI_OK(MPI_Reduce_scatter_block(send, recv, PER, MPI_INT, o->op, MPI_COMM_WORLD));
        const int *got = in_place ? send : recv;
        for (int i = 0; i < PER; i++)
            CHECK(got[i] == folded(o, 0, n, conf_rank * PER + i), "%selement %d = %d", in_place ? "in place: " : "",
                  i, got[i]);
    }
    free(send);
}

static void check_scan_exscan(void)
{
    for (int k = 0; k < N_INT_OPS; k++) {
        const struct int_op *o = &int_ops[k];
        int send[N_RED], recv[N_RED];
        fill(send, N_RED, o);
        MPI_OK(MPI_Scan(send, recv, N_RED, MPI_INT, o->op, MPI_COMM_WORLD));
        for (int i = 0; i < N_RED; i++)
            CHECK(recv[i] == folded(o, 0, conf_rank + 1, i), "scan %s element %d = %d", o->name, i, recv[i]);
        MPI_OK(MPI_Scan(MPI_IN_PLACE, send, N_RED, MPI_INT, o->op, MPI_COMM_WORLD));
        for (int i = 0; i < N_RED; i++)
            CHECK(send[i] == folded(o, 0, conf_rank + 1, i), "scan in place %s element %d = %d", o->name, i, send[i]);
        fill(send, N_RED, o);
        for (int i = 0; i < N_RED; i++)
            recv[i] = SENTINEL;
        MPI_OK(MPI_Exscan(send, recv, N_RED, MPI_INT, o->op, MPI_COMM_WORLD));
        /* Rank 0's result is undefined. */
        for (int i = 0; conf_rank > 0 && i < N_RED; i++)
            CHECK(recv[i] == folded(o, 0, conf_rank, i), "exscan %s element %d = %d", o->name, i, recv[i]);
        MPI_OK(MPI_Exscan(MPI_IN_PLACE, send, N_RED, MPI_INT, o->op, MPI_COMM_WORLD));
        for (int i = 0; conf_rank > 0 && i < N_RED; i++)
            CHECK(send[i] == folded(o, 0, conf_rank, i), "exscan in place %s element %d = %d", o->name, i, send[i]);
    }
}

/* User ops. Commutative: sum modulo 1000. Not
 * commutative: 2x2 matrices mod MOD on a contiguous type of 4 ints,
 * inout = in * inout. */
static void user_summod(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] = (((int *)in)[i] + ((int *)inout)[i]) % 1000;
}

static void mat_mul(const int *a, const int *b, int *out)
{
    long long r[4] = {
        (long long)a[0] * b[0] + (long long)a[1] * b[2], (long long)a[0] * b[1] + (long long)a[1] * b[3],
        (long long)a[2] * b[0] + (long long)a[3] * b[2], (long long)a[2] * b[1] + (long long)a[3] * b[3]};
    for (int i = 0; i < 4; i++)
        out[i] = (int)(r[i] % MOD);
}

static void user_matmul(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int k = 0; k < *len; k++)
        mat_mul((int *)in + 4 * k, (int *)inout + 4 * k, (int *)inout + 4 * k);
}

static void mat_of(int rank, int k, int *m)
{
    m[0] = rank + 1;
    m[1] = k + 2;
    m[2] = rank * 3 + k;
    m[3] = 1;
}

/* M(from) * M(from + 1) * ... * M(to - 1) for element k. */
static void mat_fold(int from, int to, int k, int *m)
{
    mat_of(from, k, m);
    for (int r = from + 1; r < to; r++) {
        int b[4];
        mat_of(r, k, b);
        mat_mul(m, b, m);
    }
}

#define CHECK_MAT(got, from, to, k, what)                                                                   \
    do {                                                                                                    \
        int w_[4];                                                                                          \
        mat_fold((from), (to), (k), w_);                                                                    \
        CHECK(memcmp((got), w_, sizeof w_) == 0, "%s: matrix %d = [%d %d %d %d], want [%d %d %d %d]", what, \
              (k), (got)[0], (got)[1], (got)[2], (got)[3], w_[0], w_[1], w_[2], w_[3]);                     \
    } while (0)

static void check_user_ops(void)
{
    enum { K = 3 };
    MPI_Op summod, matmul;
    MPI_Datatype mat;
    int n = conf_size, x[2] = {999, conf_rank}, xr[2], commute = -1;
    MPI_OK(MPI_Op_create(user_summod, 1, &summod));
    MPI_OK(MPI_Op_create(user_matmul, 0, &matmul));
    MPI_OK(MPI_Op_commutative(summod, &commute));
    CHECK_INT(commute, 1);
    MPI_OK(MPI_Op_commutative(matmul, &commute));
    CHECK_INT(commute, 0);
    MPI_OK(MPI_Type_contiguous(4, MPI_INT, &mat));
    MPI_OK(MPI_Type_commit(&mat));
    MPI_OK(MPI_Allreduce(x, xr, 2, MPI_INT, summod, MPI_COMM_WORLD));
    CHECK(xr[0] == (999 * n) % 1000 && xr[1] == (n * (n - 1) / 2) % 1000, "commutative user op: %d %d", xr[0],
          xr[1]);

    int m[4 * K], mr[4 * K];
    for (int k = 0; k < K; k++)
        mat_of(conf_rank, k, m + 4 * k);
    for (int root = 0; root < n; root++) {
        MPI_OK(MPI_Reduce(m, mr, K, mat, matmul, root, MPI_COMM_WORLD));
        for (int k = 0; conf_rank == root && k < K; k++)
            CHECK_MAT(mr + 4 * k, 0, n, k, "reduce");
    }
    MPI_OK(MPI_Allreduce(m, mr, K, mat, matmul, MPI_COMM_WORLD));
    for (int k = 0; k < K; k++)
        CHECK_MAT(mr + 4 * k, 0, n, k, "allreduce");
    MPI_OK(MPI_Scan(m, mr, K, mat, matmul, MPI_COMM_WORLD));
    for (int k = 0; k < K; k++)
        CHECK_MAT(mr + 4 * k, 0, conf_rank + 1, k, "scan");
    MPI_OK(MPI_Exscan(m, mr, K, mat, matmul, MPI_COMM_WORLD));
    for (int k = 0; conf_rank > 0 && k < K; k++)
        CHECK_MAT(mr + 4 * k, 0, conf_rank, k, "exscan");
    /* Reduce_scatter_block of one matrix per rank. */
    int *mm = malloc(sizeof(int) * 4 * (size_t)n), one[4];
    for (int j = 0; j < n; j++)
        mat_of(conf_rank, j, mm + 4 * j);
    MPI_OK(MPI_Reduce_scatter_block(mm, one, 1, mat, matmul, MPI_COMM_WORLD));
    CHECK_MAT(one, 0, n, conf_rank, "reduce_scatter_block");
    MPI_OK(MPI_Allreduce(MPI_IN_PLACE, m, K, mat, matmul, MPI_COMM_WORLD));
    for (int k = 0; k < K; k++)
        CHECK_MAT(m + 4 * k, 0, n, k, "allreduce in place");
    free(mm);
    MPI_OK(MPI_Type_free(&mat));
    MPI_OK(MPI_Op_free(&summod));
    MPI_OK(MPI_Op_free(&matmul));
    CHECK(summod == MPI_OP_NULL && matmul == MPI_OP_NULL, "MPI_Op_free did not set MPI_OP_NULL");
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_reduce");
    RUN(check_reduce);
    RUN(check_allreduce);
    RUN(check_types);
    RUN(check_loc);
    RUN(check_reduce_scatter);
    RUN(check_reduce_scatter_block);
    RUN(check_scan_exscan);
    RUN(check_user_ops);
    return conf_finish();
}
