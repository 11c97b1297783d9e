/* Point-to-point basics of the MPI layer: blocking and nonblocking sends
 * and receives at every size class (empty, eager, rendezvous), statuses,
 * wildcards, MPI_PROC_NULL, Sendrecv(_replace), truncation, the send modes
 * (Ssend's synchronisation checked), and the Wait/Test families. Runs at
 * 2 or more ranks; ranks above 1 join the wildcard and ring cases. */
#include <string.h>
#include <time.h>

#include "../check.h"

static int g_size;

/* Element i of the pattern for seed: computed unsigned, so large seeds wrap
 * (defined) instead of overflowing int (undefined). */
static int pattern(int seed, int i)
{
    return (int)((unsigned)seed * 1000003u + (unsigned)i);
}

static void fill(int *v, int n, int seed)
{
    for (int i = 0; i < n; ++i) v[i] = pattern(seed, i);
}

static void expect(const int *v, int n, int seed)
{
    for (int i = 0; i < n; ++i)
        if (v[i] != pattern(seed, i)) {
            fprintf(stderr, "rank %d: element %d of %d is %d, expected %d (seed %d)\n", g_rank, i, n, v[i],
                    pattern(seed, i), seed);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Ranks 0 and 1 exchange n ints with blocking calls, every status field checked. */
static void blocking_pair(int n)
{
    int *out = malloc(sizeof(int) * (n + 1)), *in = malloc(sizeof(int) * (n + 1));
    MPI_Status st;
    int count = -1;
    if (g_rank > 1) goto done;
    fill(out, n, g_rank + n);
    st.MPI_ERROR = 12345;   /* single-completion calls leave it alone on success */
    if (g_rank == 0) {
        OK(MPI_Send(out, n, MPI_INT, 1, 7, MPI_COMM_WORLD));
        OK(MPI_Recv(in, n, MPI_INT, 1, 8, MPI_COMM_WORLD, &st));
        CHECK_EQ(st.MPI_SOURCE, 1);
        CHECK_EQ(st.MPI_TAG, 8);
    } else {
        OK(MPI_Recv(in, n, MPI_INT, 0, 7, MPI_COMM_WORLD, &st));
        OK(MPI_Send(out, n, MPI_INT, 0, 8, MPI_COMM_WORLD));
        CHECK_EQ(st.MPI_SOURCE, 0);
        CHECK_EQ(st.MPI_TAG, 7);
    }
    CHECK_EQ(st.MPI_ERROR, 12345);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, n);
    OK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, n * 4);
    expect(in, n, (1 - g_rank) + n);
done:
    free(out);
    free(in);
}

/* Every rank sends n ints around a ring with Isend/Irecv and Sendrecv. */
static void ring(int n)
{
    int *out = malloc(sizeof(int) * (n + 1)), *in = malloc(sizeof(int) * (n + 1));
    int right = (g_rank + 1) % g_size, left = (g_rank + g_size - 1) % g_size;
    MPI_Request rq[2];
    MPI_Status st[2];
    int count;
    fill(out, n, g_rank);
    OK(MPI_Irecv(in, n, MPI_INT, left, 3, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(out, n, MPI_INT, right, 3, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Waitall(2, rq, st));
    CHECK_EQ(rq[0], MPI_REQUEST_NULL);
    CHECK_EQ(rq[1], MPI_REQUEST_NULL);
    CHECK_EQ(st[0].MPI_SOURCE, left);
    CHECK_EQ(st[0].MPI_TAG, 3);
    OK(MPI_Get_count(&st[0], MPI_INT, &count));
    CHECK_EQ(count, n);
    expect(in, n, left);
    memset(in, 0, sizeof(int) * n);
    OK(MPI_Sendrecv(out, n, MPI_INT, right, 4, in, n, MPI_INT, left, 4, MPI_COMM_WORLD, &st[0]));
    CHECK_EQ(st[0].MPI_SOURCE, left);
    OK(MPI_Get_count(&st[0], MPI_INT, &count));
    CHECK_EQ(count, n);
    expect(in, n, left);
    OK(MPI_Sendrecv_replace(out, n, MPI_INT, right, 5, left, 5, MPI_COMM_WORLD, &st[0]));
    CHECK_EQ(st[0].MPI_TAG, 5);
    expect(out, n, left);
    free(out);
    free(in);
}

static void wildcards(void)
{
    /* Senders wait for rank 0's ack, so no later message of theirs meets
     * its wildcard receives. */
    if (g_rank != 0) {
        int v = g_rank * 10;
        OK(MPI_Send(&v, 1, MPI_INT, 0, 100 + g_rank, MPI_COMM_WORLD));
        OK(MPI_Recv(NULL, 0, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        return;
    }
    int seen = 0;
    for (int k = 1; k < g_size; ++k) {
        int v = -1;
        MPI_Status st;
        OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE >= 1 && st.MPI_SOURCE < g_size);
        CHECK_EQ(st.MPI_TAG, 100 + st.MPI_SOURCE);
        CHECK_EQ(v, st.MPI_SOURCE * 10);
        CHECK(!(seen & (1 << st.MPI_SOURCE)));
        seen |= 1 << st.MPI_SOURCE;
    }
    for (int k = 1; k < g_size; ++k) OK(MPI_Send(NULL, 0, MPI_INT, k, 99, MPI_COMM_WORLD));
}

static void check_proc_null_status(const MPI_Status *st)
{
    int count = -1;
    CHECK_EQ(st->MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(st->MPI_TAG, MPI_ANY_TAG);
    OK(MPI_Get_count(st, MPI_INT, &count));
    CHECK_EQ(count, 0);
}

static void proc_null(void)
{
    int v = 5;
    MPI_Status st;
    MPI_Request rq;
    OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Ssend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    OK(MPI_Recv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    check_proc_null_status(&st);
    CHECK_EQ(v, 5);
    OK(MPI_Irecv(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, &st));
    check_proc_null_status(&st);
    OK(MPI_Isend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &rq));
    OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    CHECK_EQ(rq, MPI_REQUEST_NULL);
    OK(MPI_Sendrecv(&v, 1, MPI_INT, MPI_PROC_NULL, 1, &v, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
    check_proc_null_status(&st);
}

static void truncation(void)
{
    int big[10], small[5];
    MPI_Status st;
    MPI_Request rq;
    int count = -1;
    if (g_rank > 1) return;
    if (g_rank == 1) {
        fill(big, 10, 9);
        OK(MPI_Send(big, 10, MPI_INT, 0, 20, MPI_COMM_WORLD));
        OK(MPI_Send(big, 10, MPI_INT, 0, 21, MPI_COMM_WORLD));
        OK(MPI_Send(big, 10, MPI_INT, 0, 22, MPI_COMM_WORLD));
        return;
    }
    st.MPI_ERROR = MPI_SUCCESS;
    int rc = MPI_Recv(small, 5, MPI_INT, 1, 20, MPI_COMM_WORLD, &st);
    CHECK_EQ(err_class(rc), MPI_ERR_TRUNCATE);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_TRUNCATE);
    CHECK_EQ(st.MPI_SOURCE, 1);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 5);
    expect(small, 5, 9);
    OK(MPI_Irecv(small, 5, MPI_INT, 1, 21, MPI_COMM_WORLD, &rq));
    rc = MPI_Wait(&rq, &st);
    CHECK_EQ(err_class(rc), MPI_ERR_TRUNCATE);
    CHECK_EQ(st.MPI_ERROR, MPI_ERR_TRUNCATE);
    CHECK_EQ(rq, MPI_REQUEST_NULL);
    /* Without a status the message's size is not asked for; the error and
     * the data that fit are the same. */
    fill(small, 5, 0);
    rc = MPI_Recv(small, 5, MPI_INT, MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK_EQ(err_class(rc), MPI_ERR_TRUNCATE);
    expect(small, 5, 9);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    OK(MPI_Error_string(rc, text, &len));
    CHECK_EQ(strstr(text, "truncated") != NULL, 1);
}

/* Issend completes only once the receive has started: rank 1 posts its
 * receive only after rank 0 has tested the send for a while. */
static void synchronous(int n)
{
    int *buf = malloc(sizeof(int) * (n + 1));
    int go = 1, flag = 0;
    MPI_Request rq;
    if (g_rank > 1) goto done;
    if (g_rank == 0) {
        fill(buf, n, 77);
        OK(MPI_Issend(buf, n, MPI_INT, 1, 30, MPI_COMM_WORLD, &rq));
        double end = now() + 0.1;
        while (now() < end) {
            OK(MPI_Test(&rq, &flag, MPI_STATUS_IGNORE));
            CHECK_EQ(flag, 0);
        }
        OK(MPI_Send(&go, 1, MPI_INT, 1, 31, MPI_COMM_WORLD));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        OK(MPI_Ssend(buf, n, MPI_INT, 1, 32, MPI_COMM_WORLD));
    } else {
        OK(MPI_Recv(&go, 1, MPI_INT, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Recv(buf, n, MPI_INT, 0, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        expect(buf, n, 77);
        memset(buf, 0, sizeof(int) * n);
        OK(MPI_Recv(buf, n, MPI_INT, 0, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        expect(buf, n, 77);
    }
done:
    free(buf);
}

/* Rsend once rank 1 says its receive is posted. */
static void ready(void)
{
    int v = 0, go = 0;
    MPI_Request rq;
    if (g_rank > 1) return;
    if (g_rank == 1) {
        OK(MPI_Irecv(&v, 1, MPI_INT, 0, 40, MPI_COMM_WORLD, &rq));
        OK(MPI_Send(&go, 1, MPI_INT, 0, 41, MPI_COMM_WORLD));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        CHECK_EQ(v, 4242);
    } else {
        v = 4242;
        OK(MPI_Recv(&go, 1, MPI_INT, 1, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Rsend(&v, 1, MPI_INT, 1, 40, MPI_COMM_WORLD));
        OK(MPI_Irsend(&v, 1, MPI_INT, 1, 42, MPI_COMM_WORLD, &rq));
        OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
    if (g_rank == 1) OK(MPI_Recv(&v, 1, MPI_INT, 0, 42, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

#define NREQ 6

/* Rank 1 sends NREQ messages in reverse tag order; rank 0 completes its
 * receives with each of the any/some/all forms. */
static void completion_forms(void)
{
    int vals[NREQ], idx[NREQ], outcount = -1, index = -1, flag = 0;
    MPI_Request rq[NREQ];
    MPI_Status st[NREQ];
    if (g_rank > 1) return;
    for (int form = 0; form < 5; ++form) {
        if (g_rank == 1) {
            for (int i = NREQ - 1; i >= 0; --i) {
                int v = form * 100 + i;
                OK(MPI_Send(&v, 1, MPI_INT, 0, 50 + i, MPI_COMM_WORLD));
            }
            continue;
        }
        for (int i = 0; i < NREQ; ++i) OK(MPI_Irecv(&vals[i], 1, MPI_INT, 1, 50 + i, MPI_COMM_WORLD, &rq[i]));
        int done = 0, seen = 0;
        while (done < NREQ) {
            switch (form) {
            case 0:
                OK(MPI_Waitany(NREQ, rq, &index, &st[0]));
                CHECK(index >= 0 && index < NREQ);
                idx[0] = index;
                outcount = 1;
                break;
            case 1:
                OK(MPI_Waitsome(NREQ, rq, &outcount, idx, st));
                CHECK(outcount >= 1);
                break;
            case 2:
                OK(MPI_Testany(NREQ, rq, &index, &flag, &st[0]));
                outcount = flag && index != MPI_UNDEFINED ? 1 : 0;
                idx[0] = index;
                break;
            case 3:
                OK(MPI_Testsome(NREQ, rq, &outcount, idx, st));
                CHECK(outcount != MPI_UNDEFINED);
                break;
            default:
                OK(MPI_Testall(NREQ, rq, &flag, st));
                outcount = 0;
                if (flag) {
                    for (int i = 0; i < NREQ; ++i) idx[i] = i;
                    outcount = NREQ;
                }
                break;
            }
            for (int k = 0; k < outcount; ++k) {
                int i = idx[k];
                const MPI_Status *s = form == 4 ? &st[i] : &st[k];
                CHECK(!(seen & (1 << i)));
                seen |= 1 << i;
                CHECK_EQ(rq[i], MPI_REQUEST_NULL);
                CHECK_EQ(s->MPI_TAG, 50 + i);
                CHECK_EQ(vals[i], form * 100 + i);
                ++done;
            }
        }
        /* Every entry is MPI_REQUEST_NULL now: the empty answers. */
        OK(MPI_Waitany(NREQ, rq, &index, &st[0]));
        CHECK_EQ(index, MPI_UNDEFINED);
        CHECK_EQ(st[0].MPI_SOURCE, MPI_ANY_SOURCE);
        OK(MPI_Testany(NREQ, rq, &index, &flag, MPI_STATUS_IGNORE));
        CHECK_EQ(flag, 1);
        CHECK_EQ(index, MPI_UNDEFINED);
        OK(MPI_Waitsome(NREQ, rq, &outcount, idx, st));
        CHECK_EQ(outcount, MPI_UNDEFINED);
        OK(MPI_Testsome(NREQ, rq, &outcount, idx, st));
        CHECK_EQ(outcount, MPI_UNDEFINED);
        OK(MPI_Waitall(NREQ, rq, MPI_STATUSES_IGNORE));
    }
}

/* Waitall with one truncated receive: MPI_ERR_IN_STATUS, every status's
 * MPI_ERROR set. */
static void waitall_error(void)
{
    int a[4], b[2];
    MPI_Request rq[2];
    MPI_Status st[2];
    if (g_rank > 1) return;
    if (g_rank == 1) {
        OK(MPI_Send(a, 1, MPI_INT, 0, 60, MPI_COMM_WORLD));
        OK(MPI_Send(a, 4, MPI_INT, 0, 61, MPI_COMM_WORLD));
        return;
    }
    OK(MPI_Irecv(a, 1, MPI_INT, 1, 60, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Irecv(b, 2, MPI_INT, 1, 61, MPI_COMM_WORLD, &rq[1]));
    st[0].MPI_ERROR = st[1].MPI_ERROR = -7;
    int rc = MPI_Waitall(2, rq, st);
    CHECK_EQ(err_class(rc), MPI_ERR_IN_STATUS);
    CHECK_EQ(st[0].MPI_ERROR, MPI_SUCCESS);
    CHECK_EQ(st[1].MPI_ERROR, MPI_ERR_TRUNCATE);
    CHECK_EQ(rq[0], MPI_REQUEST_NULL);
    CHECK_EQ(rq[1], MPI_REQUEST_NULL);
}

/* Derived types with holes: a vector (every other int) sent into a
 * contiguous buffer and back, blocking and not, Sendrecv_replace in place,
 * a truncated receive into a vector, Get_elements counting basic items. */
static void derived(void)
{
    enum { N = 5, BIG = 40000 };
    MPI_Datatype vec, bigvec;
    int holes[2 * N], flat[N], count = -1;
    MPI_Status st;
    MPI_Request rq[2];
    if (g_rank > 1) return;
    int peer = 1 - g_rank;
    OK(MPI_Type_vector(N, 1, 2, MPI_INT, &vec));
    OK(MPI_Type_commit(&vec));
    OK(MPI_Type_vector(BIG, 1, 2, MPI_INT, &bigvec));   /* rendezvous-sized */
    OK(MPI_Type_commit(&bigvec));
    for (int i = 0; i < 2 * N; ++i) holes[i] = i % 2 ? -1 : 100 * g_rank + i / 2;
    /* vector -> contiguous */
    OK(MPI_Sendrecv(holes, 1, vec, peer, 1, flat, N, MPI_INT, peer, 1, MPI_COMM_WORLD, &st));
    for (int i = 0; i < N; ++i) CHECK_EQ(flat[i], 100 * peer + i);
    OK(MPI_Get_elements(&st, MPI_INT, &count));
    CHECK_EQ(count, N);
    /* contiguous -> vector: the holes keep their value */
    for (int i = 0; i < N; ++i) flat[i] = 7 * g_rank + i;
    for (int i = 0; i < 2 * N; ++i) holes[i] = -1;
    OK(MPI_Irecv(holes, 1, vec, peer, 2, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Isend(flat, N, MPI_INT, peer, 2, MPI_COMM_WORLD, &rq[1]));
    OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 2 * N; ++i) CHECK_EQ(holes[i], i % 2 ? -1 : 7 * peer + i / 2);
    OK(MPI_Get_count(&st, vec, &count));
    /* Sendrecv_replace through the vector */
    OK(MPI_Sendrecv_replace(holes, 1, vec, peer, 3, peer, 3, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 2 * N; ++i) CHECK_EQ(holes[i], i % 2 ? -1 : 7 * g_rank + i / 2);
    /* A partial vector: 3 ints into a vector of 5, Get_count undefined, elements 3 */
    if (g_rank == 0) {
        OK(MPI_Send(flat, 3, MPI_INT, peer, 4, MPI_COMM_WORLD));
    } else {
        OK(MPI_Recv(holes, 1, vec, peer, 4, MPI_COMM_WORLD, &st));
        OK(MPI_Get_count(&st, vec, &count));
        CHECK_EQ(count, MPI_UNDEFINED);
        OK(MPI_Get_elements(&st, vec, &count));
        CHECK_EQ(count, 3);
    }
    /* Rendezvous-sized vector, blocking both ways */
    int *big = malloc(sizeof(int) * 2 * BIG), *bflat = malloc(sizeof(int) * BIG);
    for (int i = 0; i < 2 * BIG; ++i) big[i] = i % 2 ? -5 : i / 2 + g_rank;
    if (g_rank == 0) {
        OK(MPI_Send(big, 1, bigvec, peer, 5, MPI_COMM_WORLD));
        OK(MPI_Recv(big, 1, bigvec, peer, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < 2 * BIG; ++i) CHECK_EQ(big[i], i % 2 ? -5 : i / 2 + 7);
    } else {
        OK(MPI_Recv(bflat, BIG, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < BIG; ++i) CHECK_EQ(bflat[i], i);
        for (int i = 0; i < BIG; ++i) bflat[i] = i + 7;
        OK(MPI_Ssend(bflat, BIG, MPI_INT, peer, 6, MPI_COMM_WORLD));
    }
    free(big);
    free(bflat);
    /* Uncommitted types are refused */
    MPI_Datatype raw;
    OK(MPI_Type_vector(2, 1, 2, MPI_INT, &raw));
    CHECK_EQ(err_class(MPI_Send(holes, 1, raw, peer, 9, MPI_COMM_WORLD)), MPI_ERR_TYPE);
    OK(MPI_Type_free(&raw));
    OK(MPI_Type_free(&vec));
    OK(MPI_Type_free(&bigvec));
}

int main(int argc, char **argv)
{
    /* Empty, eager (8 B .. 4 KiB) and rendezvous (256 KiB, 1 MiB). */
    static const int sizes[] = {0, 1, 2, 1024, 65536, 262144};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    CHECK(g_size >= 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        blocking_pair(sizes[i]);
        ring(sizes[i]);
    }
    wildcards();
    proc_null();
    truncation();
    synchronous(0);
    synchronous(2);
    synchronous(100000);
    ready();
    completion_forms();
    waitall_error();
    derived();
    if (g_rank == 0) printf("p2p_basic: ok at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
