/* Requests and statuses of the MPI layer: probes and matched probes,
 * cancel, Request_free, Request_get_status, persistent requests,
 * generalized requests, buffered sends, the status queries and the error
 * classes of bad arguments. Runs at 2 or more ranks (ranks above 1 only
 * check the local calls). */
#include <string.h>

#include "../check.h"

static int g_size;

static void probes(void)
{
    MPI_Status st;
    MPI_Message msg;
    int flag = 0, count = -1, v[8];
    if (g_rank > 1) return;
    if (g_rank == 1) {
        for (int k = 0; k < 4; ++k) {
            for (int i = 0; i < 8; ++i) v[i] = k * 10 + i;
            OK(MPI_Send(v, 3 + k, MPI_INT, 0, 10 + k, MPI_COMM_WORLD));
        }
        return;
    }
    OK(MPI_Probe(1, 10, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, 1);
    CHECK_EQ(st.MPI_TAG, 10);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 3);
    OK(MPI_Recv(v, count, MPI_INT, 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_EQ(v[2], 2);
    do OK(MPI_Iprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &flag, &st)); while (!flag);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 4);
    OK(MPI_Recv(v, 8, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_EQ(v[3], 13);
    OK(MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC);
    CHECK_EQ(st.MPI_TAG, 12);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 5);
    OK(MPI_Mrecv(v, count, MPI_INT, &msg, &st));
    CHECK_EQ(msg, MPI_MESSAGE_NULL);
    CHECK_EQ(v[4], 24);
    flag = 0;
    do OK(MPI_Improbe(1, 13, MPI_COMM_WORLD, &flag, &msg, &st)); while (!flag);
    MPI_Request rq;
    memset(v, 0, sizeof(v));
    OK(MPI_Imrecv(v, 8, MPI_INT, &msg, &rq));
    CHECK_EQ(msg, MPI_MESSAGE_NULL);
    OK(MPI_Wait(&rq, &st));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 6);
    CHECK_EQ(v[5], 35);
    /* MPI_PROC_NULL: a message that needs no receive of data. */
    OK(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st));
    CHECK_EQ(msg, MPI_MESSAGE_NO_PROC);
    OK(MPI_Mrecv(v, 1, MPI_INT, &msg, &st));
    CHECK_EQ(st.MPI_SOURCE, MPI_PROC_NULL);
    CHECK_EQ(msg, MPI_MESSAGE_NULL);
}

static void cancel_and_free(void)
{
    int v = 0, flag = -1;
    MPI_Request rq;
    MPI_Status st;
    /* A receive nobody matches is cancelled. */
    OK(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &rq));
    OK(MPI_Cancel(&rq));
    OK(MPI_Wait(&rq, &st));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 1);
    /* A send is not cancelled (MPI allows that): it is still delivered. */
    if (g_rank < 2) {
        int peer = 1 - g_rank, out = 70 + g_rank;
        OK(MPI_Isend(&out, 1, MPI_INT, peer, 71, MPI_COMM_WORLD, &rq));
        OK(MPI_Cancel(&rq));
        OK(MPI_Wait(&rq, &st));
        OK(MPI_Test_cancelled(&st, &flag));
        CHECK_EQ(flag, 0);
        OK(MPI_Recv(&v, 1, MPI_INT, peer, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(v, 70 + peer);
        /* Request_free on an active send: the message still arrives. */
        static int big[50000];
        for (int i = 0; i < 50000; ++i) big[i] = i + g_rank;
        OK(MPI_Isend(big, 50000, MPI_INT, peer, 72, MPI_COMM_WORLD, &rq));
        OK(MPI_Request_free(&rq));
        CHECK_EQ(rq, MPI_REQUEST_NULL);
        static int in[50000];
        OK(MPI_Recv(in, 50000, MPI_INT, peer, 72, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(in[49999], 49999 + peer);
        /* Request_get_status sees completion without freeing the request. */
        OK(MPI_Irecv(&v, 1, MPI_INT, peer, 73, MPI_COMM_WORLD, &rq));
        OK(MPI_Send(&out, 1, MPI_INT, peer, 73, MPI_COMM_WORLD));
        flag = 0;
        while (!flag) OK(MPI_Request_get_status(rq, &flag, &st));
        CHECK(rq != MPI_REQUEST_NULL);
        CHECK_EQ(st.MPI_SOURCE, peer);
        CHECK_EQ(v, 70 + peer);
        OK(MPI_Request_get_status(rq, &flag, &st));
        CHECK_EQ(flag, 1);
        OK(MPI_Wait(&rq, &st));
        CHECK_EQ(st.MPI_TAG, 73);
        CHECK_EQ(rq, MPI_REQUEST_NULL);
    }
}

static void persistent(void)
{
    int out[4], in[4];
    MPI_Request rq[2];
    MPI_Status st[2];
    if (g_rank > 1) return;
    int peer = 1 - g_rank;
    OK(MPI_Recv_init(in, 4, MPI_INT, peer, 80, MPI_COMM_WORLD, &rq[0]));
    OK(MPI_Send_init(out, 4, MPI_INT, peer, 80, MPI_COMM_WORLD, &rq[1]));
    /* Inactive: waits at once with an empty status. */
    OK(MPI_Wait(&rq[0], &st[0]));
    CHECK(rq[0] != MPI_REQUEST_NULL);
    CHECK_EQ(st[0].MPI_SOURCE, MPI_ANY_SOURCE);
    for (int it = 0; it < 5; ++it) {
        for (int i = 0; i < 4; ++i) out[i] = it * 100 + g_rank * 10 + i;
        if (it % 2 == 0) {
            OK(MPI_Startall(2, rq));
        } else {
            OK(MPI_Start(&rq[0]));
            OK(MPI_Start(&rq[1]));
        }
        OK(MPI_Waitall(2, rq, st));
        CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL);
        CHECK_EQ(st[0].MPI_SOURCE, peer);
        CHECK_EQ(in[3], it * 100 + peer * 10 + 3);
    }
    /* Ssend_init: synchronous each time. */
    MPI_Request sync;
    OK(MPI_Ssend_init(out, 1, MPI_INT, peer, 81, MPI_COMM_WORLD, &sync));
    for (int it = 0; it < 3; ++it) {
        OK(MPI_Start(&sync));
        OK(MPI_Recv(in, 1, MPI_INT, peer, 81, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&sync, MPI_STATUS_IGNORE));
    }
    OK(MPI_Request_free(&sync));
    OK(MPI_Request_free(&rq[0]));
    OK(MPI_Request_free(&rq[1]));
    CHECK_EQ(rq[0], MPI_REQUEST_NULL);
}

static int g_query_calls, g_free_calls;

static int query_fn(void *state, MPI_Status *st)
{
    ++g_query_calls;
    MPI_Status_set_elements(st, MPI_INT, *(int *)state);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_UNDEFINED;
    st->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int free_fn(void *state)
{
    (void)state;
    ++g_free_calls;
    return MPI_SUCCESS;
}

static int cancel_fn(void *state, int complete)
{
    (void)state;
    (void)complete;
    return MPI_SUCCESS;
}

static void generalized(void)
{
    int three = 3, flag = -1, count = -1;
    MPI_Request rq;
    MPI_Status st;
    OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, &three, &rq));
    OK(MPI_Test(&rq, &flag, &st));
    CHECK_EQ(flag, 0);
    OK(MPI_Grequest_complete(rq));
    OK(MPI_Wait(&rq, &st));
    CHECK_EQ(rq, MPI_REQUEST_NULL);
    CHECK_EQ(g_query_calls, 1);
    CHECK_EQ(g_free_calls, 1);
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 3);
    CHECK_EQ(st.MPI_TAG, MPI_UNDEFINED);
}

static void buffered(void)
{
    enum { N = 8, LEN = 100 };
    int size = N * (LEN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    void *buf = malloc(size), *back = NULL;
    int back_size = -1, v[LEN];
    if (g_rank > 1) goto done;
    OK(MPI_Buffer_attach(buf, size));
    int peer = 1 - g_rank;
    for (int k = 0; k < N; ++k) {
        for (int i = 0; i < LEN; ++i) v[i] = k * 1000 + i + g_rank;
        OK(MPI_Bsend(v, LEN, MPI_INT, peer, 90 + k, MPI_COMM_WORLD));
    }
    /* A message larger than the whole buffer does not fit. */
    int *huge = calloc(size, 1);
    CHECK_EQ(err_class(MPI_Bsend(huge, size / (int)sizeof(int), MPI_INT, peer, 99, MPI_COMM_WORLD)), MPI_ERR_BUFFER);
    free(huge);
    for (int k = N - 1; k >= 0; --k) {
        OK(MPI_Recv(v, LEN, MPI_INT, peer, 90 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(v[LEN - 1], k * 1000 + LEN - 1 + peer);
    }
    OK(MPI_Buffer_detach(&back, &back_size));
    CHECK(back == buf);
    CHECK_EQ(back_size, size);
done:
    free(buf);
}

static void status_queries(void)
{
    MPI_Status st;
    int count = -1, flag = -1;
    MPI_Count big = -1;
    memset(&st, 0, sizeof(st));
    OK(MPI_Status_set_elements(&st, MPI_INT, 4));
    OK(MPI_Get_count(&st, MPI_INT, &count));
    CHECK_EQ(count, 4);
    OK(MPI_Get_count(&st, MPI_SHORT, &count));
    CHECK_EQ(count, 8);
    OK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK_EQ(count, 2);
    OK(MPI_Get_elements(&st, MPI_INT, &count));
    CHECK_EQ(count, 4);
    OK(MPI_Status_set_elements(&st, MPI_INT, 3));
    OK(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK_EQ(count, MPI_UNDEFINED);
    OK(MPI_Status_set_cancelled(&st, 1));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 1);
    OK(MPI_Get_count(&st, MPI_INT, &count));   /* the flag leaves the count alone */
    CHECK_EQ(count, 3);
    OK(MPI_Status_set_cancelled(&st, 0));
    OK(MPI_Test_cancelled(&st, &flag));
    CHECK_EQ(flag, 0);
    /* Above 2^32 bytes: MPICH's split count. */
    OK(MPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)5000000000LL));
    OK(MPI_Get_elements_x(&st, MPI_BYTE, &big));
    CHECK_EQ(big, 5000000000LL);
    OK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK_EQ(count, MPI_UNDEFINED);
    CHECK_EQ(st.count_lo, (int)(5000000000LL & 0xffffffff));
    CHECK_EQ(st.count_hi_and_cancelled, (int)((5000000000LL >> 32) << 1));
}

static void bad_arguments(void)
{
    int v = 0;
    MPI_Request rq = (MPI_Request)0xac3ffff0;
    CHECK_EQ(err_class(MPI_Send(&v, 1, MPI_INT, g_size, 0, MPI_COMM_WORLD)), MPI_ERR_RANK);
    CHECK_EQ(err_class(MPI_Send(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD)), MPI_ERR_RANK);
    CHECK_EQ(err_class(MPI_Recv(&v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE)), MPI_ERR_RANK);
    CHECK_EQ(err_class(MPI_Send(&v, 1, MPI_INT, 0, -1, MPI_COMM_WORLD)), MPI_ERR_TAG);
    CHECK_EQ(err_class(MPI_Isend(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &rq)), MPI_ERR_TAG);
    CHECK_EQ(err_class(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD)), MPI_ERR_COUNT);
    CHECK_EQ(err_class(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD)), MPI_ERR_TYPE);
    CHECK_EQ(err_class(MPI_Send(NULL, 1, MPI_INT, 0, 0, MPI_COMM_WORLD)), MPI_ERR_BUFFER);
    CHECK_EQ(err_class(MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL)), MPI_ERR_COMM);
    CHECK_EQ(err_class(MPI_Irecv(&v, 1, MPI_INT, 0, 0, (MPI_Comm)0x84000123, &rq)), MPI_ERR_COMM);
    rq = (MPI_Request)0xac3ffff0;
    CHECK_EQ(err_class(MPI_Wait(&rq, MPI_STATUS_IGNORE)), MPI_ERR_REQUEST);
    CHECK_EQ(err_class(MPI_Start(&rq)), MPI_ERR_REQUEST);
    MPI_Request arr[2] = {MPI_REQUEST_NULL, (MPI_Request)0x12345};
    CHECK_EQ(err_class(MPI_Waitall(2, arr, MPI_STATUSES_IGNORE)), MPI_ERR_REQUEST);
    /* The largest tag MPI_TAG_UB allows is accepted. */
    int *ub = NULL, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    if (found) {
        MPI_Request r2;
        OK(MPI_Isend(&v, 1, MPI_INT, g_rank, *ub, MPI_COMM_WORLD, &r2));
        OK(MPI_Recv(&v, 1, MPI_INT, g_rank, *ub, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        OK(MPI_Wait(&r2, MPI_STATUS_IGNORE));
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    CHECK(g_size >= 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    probes();
    cancel_and_free();
    persistent();
    generalized();
    buffered();
    status_queries();
    bad_arguments();
    if (g_rank == 0) printf("p2p_req: ok at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
