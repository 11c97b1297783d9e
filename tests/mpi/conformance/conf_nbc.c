/* Nonblocking collectives: Ibarrier, Ibcast, Iallreduce, Iallgather,
 * Ialltoall, Ialltoallv, Ireduce; several outstanding at once on one
 * communicator (started in the same order everywhere), completed by Wait,
 * Waitall, Test loops and Waitany, overlapped with point-to-point traffic,
 * with MPI_IN_PLACE where allowed. */
#include "conf.h"

#define SENTINEL (-7)
#define N_PER 4
#define TAG_P 61

static int *ints(size_t n, int v)
{
    int *p = malloc(sizeof(int) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return p;
}

static void check_ibarrier(void)
{
    MPI_Request r;
    int flag = 0;
    MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
    while (!flag)
        MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(r == MPI_REQUEST_NULL, "completed MPI_Ibarrier request not freed");
    /* A barrier overlapped with a ring message. */
    int out = conf_val(conf_rank, 0), in = SENTINEL;
    MPI_Request rq[3];
    MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Irecv(&in, 1, MPI_INT, conf_left(), TAG_P, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Isend(&out, 1, MPI_INT, conf_right(), TAG_P, MPI_COMM_WORLD, &rq[2]));
    MPI_OK(MPI_Waitall(3, rq, MPI_STATUSES_IGNORE));
    CHECK_INT(in, conf_val(conf_left(), 0));
}

static void check_ibcast(void)
{
    int n = conf_size, *bufs = ints((size_t)n * N_PER, SENTINEL);
    MPI_Request *r = malloc(sizeof(MPI_Request) * (size_t)n);
    /* One Ibcast per root, all outstanding. */
    for (int root = 0; root < n; root++) {
        for (int i = 0; conf_rank == root && i < N_PER; i++)
            bufs[root * N_PER + i] = conf_val(root, i);
        MPI_OK(MPI_Ibcast(bufs + root * N_PER, N_PER, MPI_INT, root, MPI_COMM_WORLD, &r[root]));
    }
    MPI_OK(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < n * N_PER; i++)
        CHECK(bufs[i] == conf_val(i / N_PER, i % N_PER), "root %d element %d = %d", i / N_PER, i % N_PER, bufs[i]);
    free(bufs);
    free(r);
}

static void check_iallreduce(void)
{
    int n = conf_size, a[N_PER], ar[N_PER], b[N_PER], mx[N_PER], flag = 0;
    MPI_Request r[3];
    for (int i = 0; i < N_PER; i++) {
        a[i] = conf_val(conf_rank, i);
        b[i] = conf_rank * i;
        mx[i] = (conf_rank * 5 + i) % 7;
    }
    MPI_OK(MPI_Iallreduce(a, ar, N_PER, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Iallreduce(MPI_IN_PLACE, b, N_PER, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Iallreduce(MPI_IN_PLACE, mx, N_PER, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r[2]));
    while (!flag)
        MPI_OK(MPI_Testall(3, r, &flag, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N_PER; i++) {
        int sum = 0, sb = 0, m = 0;
        for (int q = 0; q < n; q++) {
            sum += conf_val(q, i);
            sb += q * i;
            m = (q * 5 + i) % 7 > m ? (q * 5 + i) % 7 : m;
        }
        CHECK(ar[i] == sum, "sum element %d = %d, want %d", i, ar[i], sum);
        CHECK(b[i] == sb, "in-place sum element %d = %d, want %d", i, b[i], sb);
        CHECK(mx[i] == m, "in-place max element %d = %d, want %d", i, mx[i], m);
    }
}

static void check_iallgather(void)
{
    int n = conf_size, mine[N_PER], *a = ints((size_t)n * N_PER, SENTINEL), *b = ints((size_t)n * N_PER, SENTINEL);
    MPI_Request r[2];
    for (int i = 0; i < N_PER; i++) {
        mine[i] = conf_val(conf_rank, i);
        b[conf_rank * N_PER + i] = mine[i];
    }
    MPI_OK(MPI_Iallgather(mine, N_PER, MPI_INT, a, N_PER, MPI_INT, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, N_PER, MPI_INT, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Wait(&r[1], MPI_STATUS_IGNORE));
    MPI_OK(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    for (int i = 0; i < n * N_PER; i++) {
        CHECK(a[i] == conf_val(i / N_PER, i % N_PER), "element %d = %d", i, a[i]);
        CHECK(b[i] == conf_val(i / N_PER, i % N_PER), "in place: element %d = %d", i, b[i]);
    }
    free(a);
    free(b);
}

static void check_ialltoall(void)
{
    size_t len = (size_t)N_PER * conf_size;
    int *s = ints(len, 0), *rv = ints(len, SENTINEL), *ip = ints(len, 0);
    MPI_Request r[2];
    int idx = -1;
    for (size_t i = 0; i < len; i++)
        s[i] = ip[i] = conf_val(conf_rank, (int)i);
    MPI_OK(MPI_Ialltoall(s, N_PER, MPI_INT, rv, N_PER, MPI_INT, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ip, N_PER, MPI_INT, MPI_COMM_WORLD, &r[1]));
    for (int k = 0; k < 2; k++) {
        MPI_OK(MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE));
        CHECK(idx == 0 || idx == 1, "MPI_Waitany index %d", idx);
    }
    for (int q = 0; q < conf_size; q++)
        for (int k = 0; k < N_PER; k++) {
            int want = conf_val(q, conf_rank * N_PER + k);
            CHECK(rv[q * N_PER + k] == want, "from %d element %d = %d", q, k, rv[q * N_PER + k]);
            CHECK(ip[q * N_PER + k] == want, "in place: from %d element %d = %d", q, k, ip[q * N_PER + k]);
        }
    free(s);
    free(rv);
    free(ip);
}

/* Ialltoallv: rank i sends (i + j) % 3 elements to j (zeros included). */
static void check_ialltoallv(void)
{
    int n = conf_size, *sc = ints((size_t)n, 0), *sd = ints((size_t)n, 0), *rc = ints((size_t)n, 0),
        *rd = ints((size_t)n, 0), st = 0, rt = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = (conf_rank + j) % 3;
        rc[j] = (j + conf_rank) % 3;
        sd[j] = st;
        rd[j] = rt;
        st += sc[j] + 1;
        rt += rc[j] + 1;
    }
    int *s = ints((size_t)st, SENTINEL), *rv = ints((size_t)rt, SENTINEL);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < sc[j]; k++)
            s[sd[j] + k] = conf_val(conf_rank, j * 10 + k);
    /* In place (the counts are symmetric): the send layout is the receive
     * layout, each block replaced by the peer's. */
    int *ip = ints((size_t)rt, SENTINEL);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < rc[j]; k++)
            ip[rd[j] + k] = conf_val(conf_rank, j * 10 + k);
    MPI_Request r[2];
    MPI_OK(MPI_Ialltoallv(s, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ip, rc, rd, MPI_INT, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    for (int j = 0; j < n; j++) {
        for (int k = 0; k < rc[j]; k++) {
            CHECK(rv[rd[j] + k] == conf_val(j, conf_rank * 10 + k), "from %d element %d = %d", j, k, rv[rd[j] + k]);
            CHECK(ip[rd[j] + k] == conf_val(j, conf_rank * 10 + k), "in place: from %d element %d = %d", j, k,
                  ip[rd[j] + k]);
        }
        CHECK(rv[rd[j] + rc[j]] == SENTINEL, "gap after the block from %d written", j);
        CHECK(ip[rd[j] + rc[j]] == SENTINEL, "in place: gap after the block from %d written", j);
    }
    free(sc), free(sd), free(rc), free(rd), free(s), free(rv), free(ip);
}

static void check_ireduce(void)
{
    int n = conf_size;
    MPI_Request *r = malloc(sizeof(MPI_Request) * (size_t)n);
    int *out = ints((size_t)n * N_PER, SENTINEL), mine[N_PER];
    for (int i = 0; i < N_PER; i++)
        mine[i] = conf_val(conf_rank, i);
    /* One Ireduce per root, the root's in place. */
    for (int root = 0; root < n; root++) {
        if (conf_rank == root) {
            memcpy(out + root * N_PER, mine, sizeof mine);
            MPI_OK(MPI_Ireduce(MPI_IN_PLACE, out + root * N_PER, N_PER, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD,
                               &r[root]));
        } else {
            MPI_OK(MPI_Ireduce(mine, NULL, N_PER, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r[root]));
        }
    }
    MPI_OK(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N_PER; i++) {
        int sum = 0;
        for (int q = 0; q < n; q++)
            sum += conf_val(q, i);
        CHECK(out[conf_rank * N_PER + i] == sum, "element %d = %d, want %d", i, out[conf_rank * N_PER + i], sum);
    }
    /* And to a separate buffer at root 0. */
    int res[N_PER];
    MPI_Request one;
    MPI_OK(MPI_Ireduce(mine, res, N_PER, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, &one));
    MPI_OK(MPI_Wait(&one, MPI_STATUS_IGNORE));
    for (int i = 0; conf_rank == 0 && i < N_PER; i++)
        CHECK_INT(res[i], conf_val(n - 1, i));
    free(r);
    free(out);
}

/* Derived types with holes in nonblocking collectives, freed before the
 * wait: Ibcast of a vector, Iallgather into a resized int (every other
 * slot). */
static void check_derived_freed(void)
{
    int n = conf_size, buf[7], *ag = ints((size_t)2 * n, SENTINEL), mine = conf_val(conf_rank, 0);
    MPI_Datatype v, spread;
    MPI_Request r[2];
    MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &v));
    MPI_OK(MPI_Type_commit(&v));
    MPI_OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spread));
    MPI_OK(MPI_Type_commit(&spread));
    for (int i = 0; i < 7; i++)
        buf[i] = conf_rank == 0 ? conf_val(0, i) : SENTINEL;
    MPI_OK(MPI_Ibcast(buf, 1, v, 0, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Iallgather(&mine, 1, MPI_INT, ag, 1, spread, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Type_free(&v));
    MPI_OK(MPI_Type_free(&spread));
    MPI_OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 7; i++) {
        int want = i % 2 == 0 ? conf_val(0, i) : (conf_rank == 0 ? conf_val(0, i) : SENTINEL);
        CHECK(buf[i] == want, "ibcast vector element %d = %d, want %d", i, buf[i], want);
    }
    for (int i = 0; i < 2 * n; i++) {
        int want = i % 2 ? SENTINEL : conf_val(i / 2, 0);
        CHECK(ag[i] == want, "iallgather resized slot %d = %d, want %d", i, ag[i], want);
    }
    free(ag);
}

/* A user op freed while an Iallreduce still uses it: it completes. */
static void user_max(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++)
        if (((int *)in)[i] > ((int *)inout)[i])
            ((int *)inout)[i] = ((int *)in)[i];
}

static void check_op_free_while_pending(void)
{
    MPI_Op op;
    MPI_Request r;
    int x[2] = {conf_rank, -conf_rank}, y[2] = {SENTINEL, SENTINEL};
    MPI_OK(MPI_Op_create(user_max, 1, &op));
    MPI_OK(MPI_Iallreduce(x, y, 2, MPI_INT, op, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Op_free(&op));
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(y[0] == conf_size - 1 && y[1] == 0, "max %d %d", y[0], y[1]);
}

/* Every kind outstanding at once, then one Waitall. */
static void check_mixed_outstanding(void)
{
    int n = conf_size, bc[2], sum, mine = conf_rank + 1, *ag = ints((size_t)n, SENTINEL), red = SENTINEL;
    MPI_Request r[4];
    bc[0] = bc[1] = conf_rank == 0 ? 77 : SENTINEL;
    MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Ibcast(bc, 2, MPI_INT, 0, MPI_COMM_WORLD, &r[1]));
    MPI_OK(MPI_Iallreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[2]));
    MPI_OK(MPI_Iallgather(&mine, 1, MPI_INT, ag, 1, MPI_INT, MPI_COMM_WORLD, &r[3]));
    MPI_OK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE));
    MPI_OK(MPI_Reduce(&mine, &red, 1, MPI_INT, MPI_PROD, n - 1, MPI_COMM_WORLD));
    CHECK(bc[0] == 77 && bc[1] == 77, "ibcast %d %d", bc[0], bc[1]);
    CHECK_INT(sum, n * (n + 1) / 2);
    for (int i = 0; i < n; i++)
        CHECK_INT(ag[i], i + 1);
    if (conf_rank == n - 1) {
        int f = 1;
        for (int i = 1; i <= n; i++)
            f *= i;
        CHECK_INT(red, f);
    }
    free(ag);
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_nbc");
    RUN(check_ibarrier);
    RUN(check_ibcast);
    RUN(check_iallreduce);
    RUN(check_iallgather);
    RUN(check_ialltoall);
    RUN(check_ialltoallv);
    RUN(check_ireduce);
    RUN(check_derived_freed);
    RUN(check_op_free_while_pending);
    RUN(check_mixed_outstanding);
    return conf_finish();
}
