/* Blocking data-movement collectives: Barrier, Bcast, Gather(v),
 * Scatter(v), Allgather(v), Alltoall(v,w), at every root, with zero counts
 * for some ranks, MPI_IN_PLACE wherever the standard allows it, and
 * derived types with holes (vector, resized, struct with padding). The
 * reductions are in conf_reduce.c. Gaps of receive buffers are pre-filled
 * with a sentinel and must stay untouched. */
#include "conf.h"

#include <stddef.h>

#define SENTINEL (-7)
#define N_BCAST 5
#define N_BIG (1 << 16)
#define N_PER 3 /* elements per rank in the fixed-size collectives */

static int *ints(size_t n, int v)
{
    int *p = malloc(sizeof(int) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return p;
}

/* v-variant counts: rank r has r % 3 elements (rank 0 none); placed in
 * reverse rank order with one free slot between blocks. */
static int vcount(int r) { return r % 3; }

static void vlayout(int *counts, int *displs, int *total)
{
    int off = 0;
    for (int r = conf_size - 1; r >= 0; r--) {
        counts[r] = vcount(r);
        displs[r] = off;
        off += counts[r] + 1;
    }
    *total = off;
}

static void check_barrier(void)
{
    for (int i = 0; i < 3; i++)
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Barrier(MPI_COMM_SELF));
}

static void check_bcast(void)
{
    int *big = ints(N_BIG, 0);
    for (int root = 0; root < conf_size; root++) {
        int buf[N_BCAST];
        for (int i = 0; i < N_BCAST; i++)
            buf[i] = conf_rank == root ? conf_val(root, i) : SENTINEL;
        MPI_OK(MPI_Bcast(buf, N_BCAST, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < N_BCAST; i++)
            CHECK(buf[i] == conf_val(root, i), "root %d element %d = %d", root, i, buf[i]);
        /* Zero count: nothing written. */
        buf[0] = SENTINEL;
        MPI_OK(MPI_Bcast(buf, 0, MPI_INT, root, MPI_COMM_WORLD));
        CHECK(buf[0] == SENTINEL, "zero-count bcast wrote the buffer");
        for (int i = 0; i < N_BIG; i++)
            big[i] = conf_rank == root ? conf_val(root, i) : SENTINEL;
        MPI_OK(MPI_Bcast(big, N_BIG, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < N_BIG; i++)
            CHECK(big[i] == conf_val(root, i), "root %d large element %d = %d", root, i, big[i]);
    }
    free(big);
}

/* Bcast of a vector (holes stay) and of a padded struct. */
static void check_bcast_derived(void)
{
    MPI_Datatype v;
    int buf[11];
    MPI_OK(MPI_Type_vector(4, 2, 3, MPI_INT, &v)); /* spans 11 ints, holes at 2, 5, 8 */
    MPI_OK(MPI_Type_commit(&v));
    for (int root = 0; root < conf_size; root++) {
        for (int i = 0; i < 11; i++)
            buf[i] = conf_rank == root ? conf_val(root, i) : SENTINEL;
        if (conf_rank == root)
            buf[2] = buf[5] = buf[8] = -100 - root; /* holes: never sent */
        MPI_OK(MPI_Bcast(buf, 1, v, root, MPI_COMM_WORLD));
        for (int i = 0; i < 11; i++) {
            int hole = i % 3 == 2;
            int want = hole ? (conf_rank == root ? -100 - root : SENTINEL) : conf_val(root, i);
            CHECK(buf[i] == want, "root %d vector element %d = %d, want %d", root, i, buf[i], want);
        }
    }
    MPI_OK(MPI_Type_free(&v));
}

static void check_gather(void)
{
    for (int root = 0; root < conf_size; root++) {
        int send[N_PER], *recv = ints((size_t)N_PER * conf_size, SENTINEL);
        for (int i = 0; i < N_PER; i++)
            send[i] = conf_val(conf_rank, i);
        MPI_OK(MPI_Gather(send, N_PER, MPI_INT, recv, N_PER, MPI_INT, root, MPI_COMM_WORLD));
        if (conf_rank == root)
            for (int r = 0; r < conf_size; r++)
                for (int i = 0; i < N_PER; i++)
                    CHECK(recv[r * N_PER + i] == conf_val(r, i), "root %d from %d element %d = %d", root, r, i,
                          recv[r * N_PER + i]);
        /* MPI_IN_PLACE at the root: its block is already in place. */
        for (int i = 0; i < N_PER * conf_size; i++)
            recv[i] = SENTINEL;
        if (conf_rank == root) {
            for (int i = 0; i < N_PER; i++)
                recv[root * N_PER + i] = conf_val(root, i);
            MPI_OK(MPI_Gather(MPI_IN_PLACE, N_PER, MPI_INT, recv, N_PER, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < N_PER * conf_size; i++)
                CHECK(recv[i] == conf_val(i / N_PER, i % N_PER), "in place: root %d element %d = %d", root, i,
                      recv[i]);
        } else {
            MPI_OK(MPI_Gather(send, N_PER, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD));
        }
        free(recv);
    }
}

static void check_gatherv(void)
{
    int *counts = ints((size_t)conf_size, 0), *displs = ints((size_t)conf_size, 0), total;
    vlayout(counts, displs, &total);
    for (int root = 0; root < conf_size; root++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            int send[3], *recv = ints((size_t)total, SENTINEL);
            for (int i = 0; i < 3; i++)
                send[i] = conf_val(conf_rank, i);
            if (in_place && conf_rank == root) {
                for (int i = 0; i < counts[root]; i++)
                    recv[displs[root] + i] = conf_val(root, i);
                MPI_OK(MPI_Gatherv(MPI_IN_PLACE, 0, MPI_INT, recv, counts, displs, MPI_INT, root, MPI_COMM_WORLD));
            } else {
                MPI_OK(MPI_Gatherv(send, vcount(conf_rank), MPI_INT, recv, counts, displs, MPI_INT, root,
                                   MPI_COMM_WORLD));
            }
            if (conf_rank != root) {
                free(recv);
                continue;
            }
            int *want = ints((size_t)total, SENTINEL);
            for (int r = 0; r < conf_size; r++)
                for (int i = 0; i < counts[r]; i++)
                    want[displs[r] + i] = conf_val(r, i);
            for (int i = 0; i < total; i++)
                CHECK(recv[i] == want[i], "root %d%s slot %d = %d, want %d", root, in_place ? " in place" : "", i,
                      recv[i], want[i]);
            free(want);
            free(recv);
        }
    }
    free(counts);
    free(displs);
}

static void check_scatter(void)
{
    for (int root = 0; root < conf_size; root++) {
        int *send = ints((size_t)N_PER * conf_size, 0), recv[N_PER];
        for (int i = 0; i < N_PER * conf_size; i++)
            send[i] = conf_val(root, i);
        for (int i = 0; i < N_PER; i++)
            recv[i] = SENTINEL;
        MPI_OK(MPI_Scatter(send, N_PER, MPI_INT, recv, N_PER, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < N_PER; i++)
            CHECK(recv[i] == conf_val(root, conf_rank * N_PER + i), "root %d element %d = %d", root, i, recv[i]);
        /* MPI_IN_PLACE at the root: its block stays where it is. */
        if (conf_rank == root) {
            MPI_OK(MPI_Scatter(send, N_PER, MPI_INT, MPI_IN_PLACE, N_PER, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < N_PER * conf_size; i++)
                CHECK(send[i] == conf_val(root, i), "in place: root's send buffer element %d changed", i);
        } else {
            for (int i = 0; i < N_PER; i++)
                recv[i] = SENTINEL;
            MPI_OK(MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, recv, N_PER, MPI_INT, root, MPI_COMM_WORLD));
            for (int i = 0; i < N_PER; i++)
                CHECK(recv[i] == conf_val(root, conf_rank * N_PER + i), "in place: root %d element %d", root, i);
        }
        free(send);
    }
}

static void check_scatterv(void)
{
    int *counts = ints((size_t)conf_size, 0), *displs = ints((size_t)conf_size, 0), total;
    vlayout(counts, displs, &total);
    for (int root = 0; root < conf_size; root++) {
        int *send = ints((size_t)total, 0), recv[3];
        for (int i = 0; i < total; i++)
            send[i] = conf_val(root, i);
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < 3; i++)
                recv[i] = SENTINEL;
            void *rbuf = in_place && conf_rank == root ? MPI_IN_PLACE : (void *)recv;
            MPI_OK(MPI_Scatterv(send, counts, displs, MPI_INT, rbuf, vcount(conf_rank), MPI_INT, root,
                                MPI_COMM_WORLD));
            if (rbuf == MPI_IN_PLACE)
                continue;
            for (int i = 0; i < 3; i++) {
                int want = i < vcount(conf_rank) ? conf_val(root, displs[conf_rank] + i) : SENTINEL;
                CHECK(recv[i] == want, "root %d%s element %d = %d, want %d", root, in_place ? " in place" : "", i,
                      recv[i], want);
            }
        }
        free(send);
    }
    free(counts);
    free(displs);
}

static void check_allgather(void)
{
    int send[N_PER], *recv = ints((size_t)N_PER * conf_size, SENTINEL);
    for (int i = 0; i < N_PER; i++)
        send[i] = conf_val(conf_rank, i);
    MPI_OK(MPI_Allgather(send, N_PER, MPI_INT, recv, N_PER, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < N_PER * conf_size; i++)
        CHECK(recv[i] == conf_val(i / N_PER, i % N_PER), "element %d = %d", i, recv[i]);
    for (int i = 0; i < N_PER * conf_size; i++)
        recv[i] = i / N_PER == conf_rank ? conf_val(conf_rank, i % N_PER) : SENTINEL;
    MPI_OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, N_PER, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < N_PER * conf_size; i++)
        CHECK(recv[i] == conf_val(i / N_PER, i % N_PER), "in place: element %d = %d", i, recv[i]);
    /* Zero count. */
    recv[0] = SENTINEL;
    MPI_OK(MPI_Allgather(send, 0, MPI_INT, recv, 0, MPI_INT, MPI_COMM_WORLD));
    CHECK(recv[0] == SENTINEL, "zero-count allgather wrote the buffer");
    free(recv);
}

static void check_allgatherv(void)
{
    int *counts = ints((size_t)conf_size, 0), *displs = ints((size_t)conf_size, 0), total;
    vlayout(counts, displs, &total);
    for (int in_place = 0; in_place < 2; in_place++) {
        int send[3], *recv = ints((size_t)total, SENTINEL), *want = ints((size_t)total, SENTINEL);
        for (int i = 0; i < 3; i++)
            send[i] = conf_val(conf_rank, i);
        for (int r = 0; r < conf_size; r++)
            for (int i = 0; i < counts[r]; i++)
                want[displs[r] + i] = conf_val(r, i);
        if (in_place) {
            for (int i = 0; i < counts[conf_rank]; i++)
                recv[displs[conf_rank] + i] = conf_val(conf_rank, i);
            MPI_OK(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, counts, displs, MPI_INT, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Allgatherv(send, vcount(conf_rank), MPI_INT, recv, counts, displs, MPI_INT, MPI_COMM_WORLD));
        }
        for (int i = 0; i < total; i++)
            CHECK(recv[i] == want[i], "%sslot %d = %d, want %d", in_place ? "in place: " : "", i, recv[i], want[i]);
        free(recv);
        free(want);
    }
    free(counts);
    free(displs);
}

/* Alltoall: block j of rank i's send buffer is conf_val(i, j * N_PER + k). */
static void check_alltoall(void)
{
    size_t n = (size_t)N_PER * conf_size;
    int *send = ints(n, 0), *recv = ints(n, SENTINEL);
    for (size_t i = 0; i < n; i++)
        send[i] = conf_val(conf_rank, (int)i);
    MPI_OK(MPI_Alltoall(send, N_PER, MPI_INT, recv, N_PER, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < conf_size; r++)
        for (int k = 0; k < N_PER; k++)
            CHECK(recv[r * N_PER + k] == conf_val(r, conf_rank * N_PER + k), "from %d element %d = %d", r, k,
                  recv[r * N_PER + k]);
    MPI_OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, send, N_PER, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < conf_size; r++)
        for (int k = 0; k < N_PER; k++)
            CHECK(send[r * N_PER + k] == conf_val(r, conf_rank * N_PER + k), "in place: from %d element %d = %d", r,
                  k, send[r * N_PER + k]);
    free(send);
    free(recv);
}

/* Alltoallv: rank i sends (i + j) % 3 elements to rank j (some zero),
 * blocks placed in reverse order with a free slot between them. */
static int a2a_count(int from, int to) { return (from + to) % 3; }

static void a2a_layout(int me, int as_sender, int *counts, int *displs, int *total)
{
    int off = 0;
    for (int j = conf_size - 1; j >= 0; j--) {
        counts[j] = as_sender ? a2a_count(me, j) : a2a_count(j, me);
        displs[j] = off;
        off += counts[j] + 1;
    }
    *total = off;
}

static void check_alltoallv(void)
{
    int n = conf_size, *sc = ints((size_t)n, 0), *sd = ints((size_t)n, 0), *rc = ints((size_t)n, 0),
        *rd = ints((size_t)n, 0), stotal, rtotal;
    a2a_layout(conf_rank, 1, sc, sd, &stotal);
    a2a_layout(conf_rank, 0, rc, rd, &rtotal);
    int *send = ints((size_t)stotal, SENTINEL), *recv = ints((size_t)rtotal, SENTINEL),
        *want = ints((size_t)rtotal, SENTINEL);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < sc[j]; k++)
            send[sd[j] + k] = conf_val(conf_rank, j * 10 + k);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < rc[j]; k++)
            want[rd[j] + k] = conf_val(j, conf_rank * 10 + k);
    MPI_OK(MPI_Alltoallv(send, sc, sd, MPI_INT, recv, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < rtotal; i++)
        CHECK(recv[i] == want[i], "slot %d = %d, want %d", i, recv[i], want[i]);
    /* In place: counts must be symmetric, a2a_count is. */
    int *inplace = ints((size_t)rtotal, SENTINEL);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < rc[j]; k++)
            inplace[rd[j] + k] = conf_val(conf_rank, j * 10 + k);
    MPI_OK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, inplace, rc, rd, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < rtotal; i++)
        CHECK(inplace[i] == want[i], "in place: slot %d = %d, want %d", i, inplace[i], want[i]);
    free(sc), free(sd), free(rc), free(rd), free(send), free(recv), free(want), free(inplace);
}

/* Alltoallw: byte displacements, MPI_INT to even peers and a derived
 * contiguous-of-one-int to odd ones (same type signature). */
static void check_alltoallw(void)
{
    int n = conf_size, *sc = ints((size_t)n, 0), *sd = ints((size_t)n, 0), *rc = ints((size_t)n, 0),
        *rd = ints((size_t)n, 0), stotal, rtotal;
    MPI_Datatype one, *st = malloc(sizeof(MPI_Datatype) * (size_t)n), *rt = malloc(sizeof(MPI_Datatype) * (size_t)n);
    MPI_OK(MPI_Type_contiguous(1, MPI_INT, &one));
    MPI_OK(MPI_Type_commit(&one));
    a2a_layout(conf_rank, 1, sc, sd, &stotal);
    a2a_layout(conf_rank, 0, rc, rd, &rtotal);
    for (int j = 0; j < n; j++) {
        st[j] = j % 2 ? one : MPI_INT;
        rt[j] = conf_rank % 2 ? MPI_INT : one;
    }
    int *send = ints((size_t)stotal, SENTINEL), *recv = ints((size_t)rtotal, SENTINEL),
        *want = ints((size_t)rtotal, SENTINEL);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < sc[j]; k++)
            send[sd[j] + k] = conf_val(conf_rank, j * 10 + k);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < rc[j]; k++)
            want[rd[j] + k] = conf_val(j, conf_rank * 10 + k);
    for (int j = 0; j < n; j++) {
        sd[j] *= (int)sizeof(int);
        rd[j] *= (int)sizeof(int);
    }
    MPI_OK(MPI_Alltoallw(send, sc, sd, st, recv, rc, rd, rt, MPI_COMM_WORLD));
    for (int i = 0; i < rtotal; i++)
        CHECK(recv[i] == want[i], "slot %d = %d, want %d", i, recv[i], want[i]);
    int *inplace = ints((size_t)rtotal, SENTINEL);
    for (int j = 0; j < n; j++)
        for (int k = 0; k < rc[j]; k++)
            inplace[rd[j] / (int)sizeof(int) + k] = conf_val(conf_rank, j * 10 + k);
    for (int j = 0; j < n; j++)
        rt[j] = MPI_INT;
    MPI_OK(MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, inplace, rc, rd, rt, MPI_COMM_WORLD));
    for (int i = 0; i < rtotal; i++)
        CHECK(inplace[i] == want[i], "in place: slot %d = %d, want %d", i, inplace[i], want[i]);
    MPI_OK(MPI_Type_free(&one));
    free(sc), free(sd), free(rc), free(rd), free(st), free(rt), free(send), free(recv), free(want), free(inplace);
}

/* Derived types in gather/allgather/alltoall/scatter: a resized int
 * (extent two ints) lays received blocks out with holes; a padded struct
 * goes through alltoall. */
struct rec {
    char c;
    double d;
    int i;
};

static void check_coll_derived(void)
{
    int n = conf_size, mine[2] = {conf_val(conf_rank, 0), conf_val(conf_rank, 1)};
    MPI_Datatype spread, tmp, rec;
    MPI_OK(MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spread));
    MPI_OK(MPI_Type_commit(&spread));
    int *recv = ints((size_t)4 * n, SENTINEL);
    /* Allgather of 2 ints each into every other slot: slots 4r, 4r+2. */
    MPI_OK(MPI_Allgather(mine, 2, MPI_INT, recv, 2, spread, MPI_COMM_WORLD));
    for (int i = 0; i < 4 * n; i++) {
        int want = i % 2 ? SENTINEL : conf_val(i / 4, (i % 4) / 2);
        CHECK(recv[i] == want, "allgather into resized: slot %d = %d, want %d", i, recv[i], want);
    }
    /* Scatter from the spread layout at the last rank. */
    int got[2] = {SENTINEL, SENTINEL};
    MPI_OK(MPI_Scatter(recv, 2, spread, got, 2, MPI_INT, n - 1, MPI_COMM_WORLD));
    CHECK(got[0] == conf_val(conf_rank, 0) && got[1] == conf_val(conf_rank, 1), "scatter from resized: %d %d",
          got[0], got[1]);
    /* Alltoall of one padded struct per peer. */
    int blens[3] = {1, 1, 1};
    MPI_Aint displs[3] = {offsetof(struct rec, c), offsetof(struct rec, d), offsetof(struct rec, i)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_OK(MPI_Type_create_struct(3, blens, displs, types, &tmp));
    MPI_OK(MPI_Type_create_resized(tmp, 0, sizeof(struct rec), &rec));
    MPI_OK(MPI_Type_commit(&rec));
    struct rec *so = calloc((size_t)n, sizeof(struct rec)), *ri = malloc(sizeof(struct rec) * (size_t)n);
    for (int j = 0; j < n; j++) {
        so[j].c = (char)('A' + conf_rank);
        so[j].d = conf_rank + j / 8.0;
        so[j].i = conf_val(conf_rank, j);
    }
    memset(ri, 0x5a, sizeof(struct rec) * (size_t)n);
    MPI_OK(MPI_Alltoall(so, 1, rec, ri, 1, rec, MPI_COMM_WORLD));
    for (int j = 0; j < n; j++) {
        const unsigned char *raw = (const unsigned char *)&ri[j];
        CHECK(ri[j].c == (char)('A' + j) && ri[j].d == j + conf_rank / 8.0 && ri[j].i == conf_val(j, conf_rank),
              "struct from %d: %c %g %d", j, ri[j].c, ri[j].d, ri[j].i);
        CHECK(raw[1] == 0x5a && raw[sizeof(struct rec) - 1] == 0x5a, "struct from %d: padding written", j);
    }
    MPI_OK(MPI_Type_free(&tmp));
    MPI_OK(MPI_Type_free(&rec));
    MPI_OK(MPI_Type_free(&spread));
    free(so);
    free(ri);
    free(recv);
}

/* The collectives on a split communicator (not a power of two when the
 * job is 4: a split of 3 and 1), to exercise non-world groups. */
static void check_on_subcomm(void)
{
    MPI_Comm c;
    int color = conf_rank < 3 ? 0 : 1, r, s;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, color, conf_rank, &c));
    MPI_OK(MPI_Comm_rank(c, &r));
    MPI_OK(MPI_Comm_size(c, &s));
    int *all = ints((size_t)s, SENTINEL), x = conf_val(conf_rank, 0);
    MPI_OK(MPI_Allgather(&x, 1, MPI_INT, all, 1, MPI_INT, c));
    for (int i = 0; i < s; i++)
        CHECK(all[i] == conf_val(color * 3 + i, 0), "sub-communicator allgather element %d = %d", i, all[i]);
    int b = r == s - 1 ? 4242 + color : SENTINEL;
    MPI_OK(MPI_Bcast(&b, 1, MPI_INT, s - 1, c));
    CHECK_INT(b, 4242 + color);
    MPI_OK(MPI_Barrier(c));
    MPI_OK(MPI_Comm_free(&c));
    free(all);
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_coll");
    RUN(check_barrier);
    RUN(check_bcast);
    RUN(check_bcast_derived);
    RUN(check_gather);
    RUN(check_gatherv);
    RUN(check_scatter);
    RUN(check_scatterv);
    RUN(check_allgather);
    RUN(check_allgatherv);
    RUN(check_alltoall);
    RUN(check_alltoallv);
    RUN(check_alltoallw);
    RUN(check_coll_derived);
    RUN(check_on_subcomm);
    return conf_finish();
}
