/* Collectives of the MPI layer with exact checks: every blocking collective
 * (contiguous types, a vector type with holes, MPI_IN_PLACE, every root),
 * reductions on rdmx's path and on the layer's own (logical ops, long
 * double, complex, pair types, a user op that does not commute, on a
 * derived type), Reduce_local, and the nonblocking collectives. Run at
 * 1..4 ranks (3: not a power of two). */
#include <complex.h>
#include <string.h>
#include <time.h>

#include "../check.h"

static int g_size;
static MPI_Datatype g_vec;   /* 2 ints with a hole: [x . y], extent 3 ints */

#define MAXP 64
#define GUARD (-7777)

/* ---- data movement ------------------------------------------------------- */
static void test_bcast(void)
{
    for (int root = 0; root < g_size; ++root) {
        int a[5];
        for (int i = 0; i < 5; ++i) a[i] = g_rank == root ? 100 * root + i : -1;
        OK(MPI_Bcast(a, 5, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < 5; ++i) CHECK_EQ(a[i], 100 * root + i);
        /* Two vector elements: 6 ints, holes at 1 and 4 untouched. */
        int v[6];
        for (int i = 0; i < 6; ++i) v[i] = g_rank == root ? 10 + i : GUARD;
        OK(MPI_Bcast(v, 2, g_vec, root, MPI_COMM_WORLD));
        for (int i = 0; i < 6; ++i) CHECK_EQ(v[i], (i % 3 == 1 && g_rank != root) ? GUARD : 10 + i);
    }
    OK(MPI_Bcast(NULL, 0, MPI_INT, 0, MPI_COMM_WORLD));
    CHECK_EQ(err_class(MPI_Bcast(NULL, 0, MPI_INT, g_size, MPI_COMM_WORLD)), MPI_ERR_ROOT);
    CHECK_EQ(err_class(MPI_Bcast(NULL, -1, MPI_INT, 0, MPI_COMM_WORLD)), MPI_ERR_COUNT);
    CHECK_EQ(err_class(MPI_Bcast(NULL, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD)), MPI_ERR_TYPE);
    CHECK_EQ(err_class(MPI_Bcast(NULL, 0, MPI_INT, 0, MPI_COMM_NULL)), MPI_ERR_COMM);
}

static void test_gather_scatter(void)
{
    const int p = g_size;
    for (int root = 0; root < p; ++root) {
        int mine[2] = {g_rank * 10, g_rank * 10 + 1}, all[2 * MAXP];
        for (int i = 0; i < 2 * p; ++i) all[i] = GUARD;
        OK(MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, root, MPI_COMM_WORLD));
        if (g_rank == root)
            for (int i = 0; i < 2 * p; ++i) CHECK_EQ(all[i], (i / 2) * 10 + i % 2);
        /* In place at the root, received as vectors (holes untouched). */
        int v[3 * MAXP];
        for (int i = 0; i < 3 * p; ++i) v[i] = GUARD;
        if (g_rank == root) v[3 * root] = 7 * root, v[3 * root + 2] = 7 * root + 1;
        int send[2] = {7 * g_rank, 7 * g_rank + 1};
        OK(MPI_Gather(g_rank == root ? MPI_IN_PLACE : send, 2, MPI_INT, v, 1, g_vec, root, MPI_COMM_WORLD));
        if (g_rank == root)
            for (int i = 0; i < 3 * p; ++i)
                CHECK_EQ(v[i], i % 3 == 1 ? GUARD : 7 * (i / 3) + (i % 3 == 2));

        /* Scatter from vectors to ints, then in place at the root. */
        for (int i = 0; i < 3 * p; ++i) v[i] = i % 3 == 1 ? GUARD : 5 * (i / 3) + (i % 3 == 2);
        int got[2] = {GUARD, GUARD};
        OK(MPI_Scatter(v, 1, g_vec, got, 2, MPI_INT, root, MPI_COMM_WORLD));
        CHECK_EQ(got[0], 5 * g_rank);
        CHECK_EQ(got[1], 5 * g_rank + 1);
        for (int i = 0; i < 2 * p; ++i) all[i] = 3 * i;
        got[0] = got[1] = GUARD;
        OK(MPI_Scatter(all, 2, MPI_INT, g_rank == root ? MPI_IN_PLACE : got, 2, MPI_INT, root, MPI_COMM_WORLD));
        if (g_rank != root) CHECK(got[0] == 6 * g_rank && got[1] == 6 * g_rank + 3);
        else CHECK(all[2 * root] == 6 * root && got[0] == GUARD);
    }
}

/* Rank j sends j+1 ints (value 100*j + i); blocks land in reverse order with gaps. */
static void test_v(void)
{
    const int p = g_size;
    int counts[MAXP], displs[MAXP], total = 0;
    for (int j = p - 1; j >= 0; --j) {
        counts[j] = j + 1;
        displs[j] = total + 1;   /* one-int gap before each block */
        total += j + 2;
    }
    int mine[MAXP + 1];
    for (int i = 0; i <= g_rank; ++i) mine[i] = 100 * g_rank + i;
    for (int root = 0; root < p; ++root) {
        int buf[MAXP * (MAXP + 2)];
        for (int i = 0; i < total; ++i) buf[i] = GUARD;
        if (g_rank == root)
            for (int i = 0; i <= root; ++i) buf[displs[root] + i] = 100 * root + i;
        OK(MPI_Gatherv(g_rank == root ? MPI_IN_PLACE : mine, g_rank + 1, MPI_INT, buf, counts, displs, MPI_INT, root,
                       MPI_COMM_WORLD));
        if (g_rank == root) {
            for (int j = 0; j < p; ++j) {
                CHECK_EQ(buf[displs[j] - 1], GUARD);
                for (int i = 0; i < counts[j]; ++i) CHECK_EQ(buf[displs[j] + i], 100 * j + i);
            }
        }
        /* Scatterv back: the same layout, not in place. */
        int got[MAXP + 1];
        for (int i = 0; i <= g_rank + 1; ++i) got[i] = GUARD;
        OK(MPI_Scatterv(buf, counts, displs, MPI_INT, got, g_rank + 1, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i <= g_rank; ++i) CHECK_EQ(got[i], 100 * g_rank + i);
        CHECK_EQ(got[g_rank + 1], GUARD);
    }
    /* Allgatherv in place and not. */
    int buf[MAXP * (MAXP + 2)];
    for (int i = 0; i < total; ++i) buf[i] = GUARD;
    OK(MPI_Allgatherv(mine, g_rank + 1, MPI_INT, buf, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j)
        for (int i = 0; i < counts[j]; ++i) CHECK_EQ(buf[displs[j] + i], 100 * j + i);
    for (int i = 0; i < total; ++i) buf[i] = GUARD;
    for (int i = 0; i <= g_rank; ++i) buf[displs[g_rank] + i] = 100 * g_rank + i;
    OK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) {
        CHECK_EQ(buf[displs[j] - 1], GUARD);
        for (int i = 0; i < counts[j]; ++i) CHECK_EQ(buf[displs[j] + i], 100 * j + i);
    }
}

static void test_allgather_alltoall(void)
{
    const int p = g_size;
    int all[3 * MAXP];
    /* Allgather into vectors, in place. */
    for (int i = 0; i < 3 * p; ++i) all[i] = GUARD;
    all[3 * g_rank] = g_rank, all[3 * g_rank + 2] = -g_rank;
    OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_INT, all, 1, g_vec, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) CHECK(all[3 * j] == j && all[3 * j + 1] == GUARD && all[3 * j + 2] == -j);
    int two[2] = {g_rank, g_rank * g_rank};
    OK(MPI_Allgather(two, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) CHECK(all[2 * j] == j && all[2 * j + 1] == j * j);

    /* Alltoall: block j of rank r is 1000*r + j; in place too. */
    int s[MAXP], r[MAXP];
    for (int j = 0; j < p; ++j) s[j] = 1000 * g_rank + j, r[j] = GUARD;
    OK(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) CHECK_EQ(r[j], 1000 * j + g_rank);
    OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_INT, s, 1, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) CHECK_EQ(s[j], 1000 * j + g_rank);

    /* Alltoallv: rank r sends j+1 ints to j; in place with the same layout. */
    int sc[MAXP], sd[MAXP], rc[MAXP], rd[MAXP], sbuf[MAXP * MAXP], rbuf[MAXP * MAXP], off = 0;
    for (int j = 0; j < p; ++j) {
        sc[j] = j + 1, sd[j] = off, off += j + 1;
        for (int i = 0; i < sc[j]; ++i) sbuf[sd[j] + i] = 10000 * g_rank + 100 * j + i;
    }
    for (int j = 0; j < p; ++j) rc[j] = g_rank + 1, rd[j] = (p - 1 - j) * (g_rank + 2);   /* reversed, gaps */
    for (int i = 0; i < p * (g_rank + 2); ++i) rbuf[i] = GUARD;
    OK(MPI_Alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) {
        for (int i = 0; i < rc[j]; ++i) CHECK_EQ(rbuf[rd[j] + i], 10000 * j + 100 * g_rank + i);
        CHECK_EQ(rbuf[rd[j] + rc[j]], GUARD);
    }
    int ic[MAXP], id[MAXP];
    for (int j = 0; j < p; ++j) ic[j] = 2, id[j] = 2 * j, sbuf[2 * j] = g_rank, sbuf[2 * j + 1] = j;
    OK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_INT, sbuf, ic, id, MPI_INT, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) CHECK(sbuf[2 * j] == j && sbuf[2 * j + 1] == g_rank);

    /* Alltoallw: a vector element to every rank, received as 2 ints. */
    MPI_Datatype st[MAXP], rt[MAXP];
    int wsc[MAXP], wsd[MAXP], wrc[MAXP], wrd[MAXP], vbuf[3 * MAXP];
    for (int j = 0; j < p; ++j) {
        st[j] = g_vec, rt[j] = MPI_INT, wsc[j] = 1, wrc[j] = 2;
        wsd[j] = 3 * j * (int)sizeof(int), wrd[j] = 2 * j * (int)sizeof(int);
        vbuf[3 * j] = 50 * g_rank + j, vbuf[3 * j + 1] = GUARD, vbuf[3 * j + 2] = -(50 * g_rank + j);
        rbuf[2 * j] = rbuf[2 * j + 1] = GUARD;
    }
    OK(MPI_Alltoallw(vbuf, wsc, wsd, st, rbuf, wrc, wrd, rt, MPI_COMM_WORLD));
    for (int j = 0; j < p; ++j) CHECK(rbuf[2 * j] == 50 * j + g_rank && rbuf[2 * j + 1] == -(50 * j + g_rank));
}

/* ---- reductions ------------------------------------------------------------- */
/* 2x2 matrices mod 10007, one per element of a contiguous(4, MPI_INT) type:
 * inout = in * inout, which does not commute. */
#define MOD 10007
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    int *a = in, *b = inout;
    for (int e = 0; e < *len; ++e, a += 4, b += 4) {
        int c[4] = {(a[0] * b[0] + a[1] * b[2]) % MOD, (a[0] * b[1] + a[1] * b[3]) % MOD,
                    (a[2] * b[0] + a[3] * b[2]) % MOD, (a[2] * b[1] + a[3] * b[3]) % MOD};
        memcpy(b, c, sizeof c);
    }
}
static void matrix_of(int r, int e, int *m)
{
    m[0] = r + 1 + e, m[1] = 2 * r + 1, m[2] = e + 3, m[3] = r * r % 5;
}
/* The product M(first) * ... * M(last) of element e. */
static void product(int first, int last, int e, int *out)
{
    int acc[4] = {1, 0, 0, 1}, m[4];
    for (int r = first; r <= last; ++r) {
        matrix_of(r, e, m);
        int c[4] = {(acc[0] * m[0] + acc[1] * m[2]) % MOD, (acc[0] * m[1] + acc[1] * m[3]) % MOD,
                    (acc[2] * m[0] + acc[3] * m[2]) % MOD, (acc[2] * m[1] + acc[3] * m[3]) % MOD};
        memcpy(acc, c, sizeof c);
    }
    memcpy(out, acc, sizeof acc);
}

static void test_user_op(MPI_Datatype mat)
{
    MPI_Op op;
    OK(MPI_Op_create(matmul_op, 0, &op));
    int commute = 1;
    OK(MPI_Op_commutative(op, &commute));
    CHECK_EQ(commute, 0);
    enum { N = 2 };
    int in[4 * N], out[4 * N], want[4];
    for (int e = 0; e < N; ++e) matrix_of(g_rank, e, in + 4 * e);
    for (int root = 0; root < g_size; ++root) {
        OK(MPI_Reduce(in, out, N, mat, op, root, MPI_COMM_WORLD));
        if (g_rank == root)
            for (int e = 0; e < N; ++e) {
                product(0, g_size - 1, e, want);
                CHECK(memcmp(out + 4 * e, want, sizeof want) == 0);
            }
    }
    memcpy(out, in, sizeof in);
    OK(MPI_Allreduce(MPI_IN_PLACE, out, N, mat, op, MPI_COMM_WORLD));
    for (int e = 0; e < N; ++e) {
        product(0, g_size - 1, e, want);
        CHECK(memcmp(out + 4 * e, want, sizeof want) == 0);
    }
    OK(MPI_Scan(in, out, N, mat, op, MPI_COMM_WORLD));
    for (int e = 0; e < N; ++e) {
        product(0, g_rank, e, want);
        CHECK(memcmp(out + 4 * e, want, sizeof want) == 0);
    }
    for (int i = 0; i < 4 * N; ++i) out[i] = GUARD;
    OK(MPI_Exscan(in, out, N, mat, op, MPI_COMM_WORLD));
    for (int e = 0; e < N && g_rank > 0; ++e) {
        product(0, g_rank - 1, e, want);
        CHECK(memcmp(out + 4 * e, want, sizeof want) == 0);
    }
    if (g_rank == 0) CHECK_EQ(out[0], GUARD);
    /* Reduce_scatter_block: element j of rank r is matrix_of(r, j). */
    int big[4 * MAXP];
    for (int j = 0; j < g_size; ++j) matrix_of(g_rank, j, big + 4 * j);
    OK(MPI_Reduce_scatter_block(big, out, 1, mat, op, MPI_COMM_WORLD));
    product(0, g_size - 1, g_rank, want);
    CHECK(memcmp(out, want, sizeof want) == 0);
    /* Reduce_local: in * inout. */
    int a[4], b[4];
    matrix_of(1, 0, a);
    matrix_of(2, 0, b);
    OK(MPI_Reduce_local(a, b, 1, mat, op));
    product(1, 2, 0, want);
    CHECK(memcmp(b, want, sizeof want) == 0);
    OK(MPI_Op_free(&op));
    CHECK_EQ(op, MPI_OP_NULL);
    CHECK_EQ(err_class(MPI_Op_free(&op)), MPI_ERR_OP);
}

static void test_builtin_reductions(void)
{
    const int p = g_size;
    /* rdmx's path: SUM of ints, in place and not, each root. */
    int x[3] = {g_rank, 2 * g_rank, -g_rank}, y[3];
    const int tri = p * (p - 1) / 2;
    OK(MPI_Allreduce(x, y, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(y[0] == tri && y[1] == 2 * tri && y[2] == -tri);
    for (int root = 0; root < p; ++root) {
        y[0] = x[0], y[1] = x[1], y[2] = x[2];
        OK(MPI_Reduce(g_rank == root ? MPI_IN_PLACE : x, y, 3, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD));
        if (g_rank == root) CHECK(y[0] == p - 1 && y[1] == 2 * (p - 1) && y[2] == 0);
    }
    /* The layer's own path: logical ops on C_BOOL and int, long double, complex. */
    _Bool bl = g_rank != 1, ball;
    OK(MPI_Allreduce(&bl, &ball, 1, MPI_C_BOOL, MPI_LAND, MPI_COMM_WORLD));
    CHECK_EQ(ball, p < 2);
    int li = g_rank == 0 ? 5 : 0, lo;
    OK(MPI_Allreduce(&li, &lo, 1, MPI_INT, MPI_LXOR, MPI_COMM_WORLD));
    CHECK_EQ(lo, g_size == 1 ? 5 : 1);   /* one rank: its value as is */
    long double ld = 0.5L + g_rank, lds;
    OK(MPI_Allreduce(&ld, &lds, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(lds == 0.5L * p + tri);
    double _Complex z = g_rank + 1.0 * I, zp;
    OK(MPI_Allreduce(&z, &zp, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD));
    CHECK(creal(zp) == tri && cimag(zp) == p);
    unsigned char by = (unsigned char)(1u << g_rank), bor;
    OK(MPI_Allreduce(&by, &bor, 1, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD));
    CHECK_EQ(bor, (1 << p) - 1);

    /* Pair types: MAXLOC on DOUBLE_INT (rdmx's layout), MINLOC on SHORT_INT
     * (the layer's), ties to the lower index. */
    struct { double v; int i; } dv = {(double)(g_rank % 2), g_rank}, dres;
    OK(MPI_Allreduce(&dv, &dres, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(dres.v == (p > 1 ? 1.0 : 0.0) && dres.i == (p > 1 ? 1 : 0));
    struct { short v; int i; } sv[2] = {{(short)(10 - g_rank), g_rank}, {7, g_rank}}, sres[2];
    OK(MPI_Allreduce(sv, sres, 2, MPI_SHORT_INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(sres[0].v == 10 - (p - 1) && sres[0].i == p - 1);
    CHECK(sres[1].v == 7 && sres[1].i == 0);

    /* Scan and Exscan on rdmx's path; Reduce_scatter with uneven blocks. */
    int s = g_rank + 1, sc = 0, ex = GUARD;
    OK(MPI_Scan(&s, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(sc, (g_rank + 1) * (g_rank + 2) / 2);
    OK(MPI_Exscan(&s, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (g_rank > 0) CHECK_EQ(ex, g_rank * (g_rank + 1) / 2);
    else CHECK_EQ(ex, GUARD);
    int counts[MAXP], total = 0, in[MAXP * MAXP], out[MAXP + 1];
    for (int j = 0; j < p; ++j) counts[j] = j + 1, total += j + 1;
    for (int i = 0; i < total; ++i) in[i] = i * (g_rank + 1);
    out[g_rank + 1] = GUARD;
    OK(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int first = g_rank * (g_rank + 1) / 2;
    for (int i = 0; i <= g_rank; ++i) CHECK_EQ(out[i], (first + i) * (p * (p + 1) / 2));
    CHECK_EQ(out[g_rank + 1], GUARD);
    /* In place: the input is all of recvbuf, the result its start. */
    for (int i = 0; i < total; ++i) in[i] = i;
    OK(MPI_Reduce_scatter(MPI_IN_PLACE, in, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i <= g_rank; ++i) CHECK_EQ(in[i], (first + i) * p);
    int rsb[MAXP], rsb_out = GUARD;
    for (int j = 0; j < p; ++j) rsb[j] = j + g_rank;
    OK(MPI_Reduce_scatter_block(rsb, &rsb_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(rsb_out, p * g_rank + tri);

    /* Errors: an op undefined on the type, an invalid op, aliased buffers. */
    double d = 1.0, dd;
    CHECK_EQ(err_class(MPI_Allreduce(&d, &dd, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD)), MPI_ERR_OP);
    CHECK_EQ(err_class(MPI_Allreduce(&d, &dd, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD)), MPI_ERR_OP);
    CHECK_EQ(err_class(MPI_Allreduce(&d, &d, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD)), MPI_ERR_BUFFER);
    int commute = 0;
    OK(MPI_Op_commutative(MPI_SUM, &commute));
    CHECK_EQ(commute, 1);
    int a = 3, b = 4;
    OK(MPI_Reduce_local(&a, &b, 1, MPI_INT, MPI_PROD));
    CHECK_EQ(b, 12);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- nonblocking ------------------------------------------------------------ */
static void test_nbc(void)
{
    const int p = g_size;
    MPI_Request rq[8];
    /* Ibarrier waits for the last rank: rank 0 comes 50 ms late, and no
     * rank leaves before it entered (every rank of a test shares the host's
     * monotonic clock). */
    OK(MPI_Barrier(MPI_COMM_WORLD));
    double entered = 0;
    if (g_rank == 0) {
        const double t0 = mono_now();
        while (mono_now() - t0 < 0.05) {
        }
        entered = mono_now();
    }
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    const double left = mono_now();
    OK(MPI_Bcast(&entered, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    CHECK(left >= entered);

    int bc[4] = {0}, ar = g_rank, ar_out = -1, ag[MAXP], at_s[MAXP], at_r[MAXP];
    if (g_rank == 0) bc[0] = 11, bc[1] = 12, bc[2] = 13, bc[3] = 14;
    for (int j = 0; j < p; ++j) at_s[j] = 100 * g_rank + j;
    OK(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Ibcast(bc, 4, MPI_INT, 0, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Iallreduce(&ar, &ar_out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[2]));
    OK(MPI_Iallgather(&ar, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &rq[3]));
    OK(MPI_Ialltoall(at_s, 1, MPI_INT, at_r, 1, MPI_INT, MPI_COMM_WORLD, &rq[4]));
    MPI_Status sts[5];
    OK(MPI_Waitall(5, rq, sts));
    for (int i = 0; i < 4; ++i) CHECK_EQ(bc[i], 11 + i);
    CHECK_EQ(ar_out, p * (p - 1) / 2);
    for (int j = 0; j < p; ++j) CHECK(ag[j] == j && at_r[j] == 100 * j + g_rank);

    /* Typed: a vector bcast (packed, unpacked at completion), a reduction
     * that rdmx does not have (runs at the call), Ireduce, Ialltoallv. */
    int v[6];
    for (int i = 0; i < 6; ++i) v[i] = g_rank == 0 ? i : GUARD;
    OK(MPI_Ibcast(v, 2, g_vec, 0, MPI_COMM_WORLD, &rq[0]));
    long double ld = 1.0L, lds = 0;
    OK(MPI_Iallreduce(&ld, &lds, 1, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq[1]));
    int rmax = -1;
    OK(MPI_Ireduce(&ar, &rmax, 1, MPI_INT, MPI_MAX, p - 1, MPI_COMM_WORLD, &rq[2]));
    int c1[MAXP], d1[MAXP], out[MAXP];
    for (int j = 0; j < p; ++j) c1[j] = 1, d1[j] = p - 1 - j, out[j] = GUARD;
    OK(MPI_Ialltoallv(at_s, c1, d1, MPI_INT, out, c1, d1, MPI_INT, MPI_COMM_WORLD, &rq[3]));
    int sc = -1;
    OK(MPI_Iscan(&ar, &sc, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rq[4]));
    for (int i = 4; i >= 0; --i) OK(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
    for (int i = 0; i < 6; ++i) CHECK_EQ(v[i], (i % 3 == 1 && g_rank != 0) ? GUARD : i);
    CHECK(lds == (long double)p);
    if (g_rank == p - 1) CHECK_EQ(rmax, p - 1);
    /* Rank j sends at_s[p-1-k] to rank k, which puts it at out[p-1-j]. */
    for (int j = 0; j < p; ++j) CHECK_EQ(out[p - 1 - j], 100 * j + (p - 1 - g_rank));
    CHECK_EQ(sc, g_rank * (g_rank + 1) / 2);
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &g_size));
    CHECK(g_size <= MAXP);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &g_vec));
    MPI_Datatype vec3;   /* extent 3 ints: [x . y] */
    OK(MPI_Type_create_resized(g_vec, 0, 3 * (MPI_Aint)sizeof(int), &vec3));
    OK(MPI_Type_free(&g_vec));
    g_vec = vec3;
    OK(MPI_Type_commit(&g_vec));
    MPI_Datatype mat;
    OK(MPI_Type_contiguous(4, MPI_INT, &mat));
    OK(MPI_Type_commit(&mat));

    OK(MPI_Barrier(MPI_COMM_WORLD));
    test_bcast();
    test_gather_scatter();
    test_v();
    test_allgather_alltoall();
    test_builtin_reductions();
    test_user_op(mat);
    test_nbc();
    /* The same on a split communicator (reversed order). */
    MPI_Comm rev;
    OK(MPI_Comm_split(MPI_COMM_WORLD, 0, g_size - g_rank, &rev));
    OK(MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN));
    int r;
    OK(MPI_Comm_rank(rev, &r));
    CHECK_EQ(r, g_size - 1 - g_rank);
    int sum = 0, one = r;
    OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, rev));
    CHECK_EQ(sum, g_size * (g_size - 1) / 2);
    int first = -1;
    OK(MPI_Bcast(&first, 1, MPI_INT, 0, rev));
    OK(MPI_Comm_free(&rev));

    OK(MPI_Type_free(&g_vec));
    OK(MPI_Type_free(&mat));
    OK(MPI_Barrier(MPI_COMM_WORLD));
    if (g_rank == 0) printf("coll_test: %d ranks ok\n", g_size);
    OK(MPI_Finalize());
    return 0;
}
