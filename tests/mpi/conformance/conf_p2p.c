/* Point-to-point: Send/Ssend/Rsend/Recv, Isend/Issend/Irecv, Sendrecv,
 * Sendrecv_replace, Probe/Iprobe, Mprobe/Mrecv, Get_count/Get_elements,
 * MPI_PROC_NULL, MPI_ANY_SOURCE/ANY_TAG, zero counts, truncation under
 * MPI_ERRORS_RETURN, non-overtaking order, tag selection, a large message.
 * Every exchange is around a ring (np 1: to itself) with the receive posted
 * first, so no check depends on eager buffering. */
#include "conf.h"

#include <time.h>

#define N_SMALL 16
#define N_LARGE (1 << 18) /* 1 MiB of int: beyond any eager limit */
#define N_ORDER 64
#define TAG_A 11
#define TAG_B 12
#define TAG_NEVER 999

static void fill(int *buf, int n, int from)
{
    for (int i = 0; i < n; i++)
        buf[i] = conf_val(from, i);
}

static void expect(const int *buf, int n, int from, const char *what)
{
    for (int i = 0; i < n; i++)
        CHECK(buf[i] == conf_val(from, i), "%s: element %d = %d, want %d", what, i, buf[i], conf_val(from, i));
}

/* A macro, so a failure names the caller's line. */
#define expect_status(st, src, tag, count, t)                                                               \
    do {                                                                                                    \
        int c_ = -1;                                                                                        \
        CHECK_INT((st)->MPI_SOURCE, (src));                                                                 \
        CHECK_INT((st)->MPI_TAG, (tag));                                                                    \
        MPI_OK(MPI_Get_count((st), (t), &c_));                                                              \
        CHECK_INT(c_, (count));                                                                             \
    } while (0)

/* Irecv from the left, `mode` send to the right, wait. */
typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);

static void ring_blocking(send_fn send, int n)
{
    int *out = malloc(sizeof(int) * (size_t)n), *in = calloc((size_t)n, sizeof(int));
    MPI_Request rq;
    MPI_Status st;
    fill(out, n, conf_rank);
    MPI_OK(MPI_Irecv(in, n, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(send(out, n, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
    expect_status(&st, conf_left(), TAG_A, n, MPI_INT);
    expect(in, n, conf_left(), "ring");
    free(out);
    free(in);
}

static void check_send_recv(void) { ring_blocking(MPI_Send, N_SMALL); }
static void check_ssend(void) { ring_blocking(MPI_Ssend, N_SMALL); }
static void check_send_large(void) { ring_blocking(MPI_Send, N_LARGE); }
static void check_ssend_large(void) { ring_blocking(MPI_Ssend, N_LARGE); }

/* Blocking MPI_Recv with a pre-posted nonblocking send. */
static void check_recv_blocking(void)
{
    int out[N_SMALL], in[N_SMALL] = {0};
    MPI_Request rq;
    MPI_Status st;
    fill(out, N_SMALL, conf_rank);
    MPI_OK(MPI_Isend(out, N_SMALL, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Recv(in, N_SMALL, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &st));
    expect_status(&st, conf_left(), TAG_A, N_SMALL, MPI_INT);
    expect(in, N_SMALL, conf_left(), "recv");
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
}

static void check_issend_irecv(void)
{
    int out[N_SMALL], in[N_SMALL] = {0};
    MPI_Request rq[2];
    MPI_Status st[2];
    fill(out, N_SMALL, conf_rank);
    MPI_OK(MPI_Issend(out, N_SMALL, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Irecv(in, N_SMALL, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Waitall(2, rq, st));
    expect_status(&st[1], conf_left(), TAG_B, N_SMALL, MPI_INT);
    expect(in, N_SMALL, conf_left(), "issend");
}

/* Rsend needs the matching receive posted: a zero-byte handshake from the
 * right neighbour says it is. */
static void check_rsend(void)
{
    int out[N_SMALL], in[N_SMALL] = {0};
    MPI_Request rq;
    MPI_Status st;
    fill(out, N_SMALL, conf_rank);
    MPI_OK(MPI_Irecv(in, N_SMALL, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, conf_left(), TAG_B, NULL, 0, MPI_INT, conf_right(), TAG_B,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Rsend(out, N_SMALL, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, &st));
    expect_status(&st, conf_left(), TAG_A, N_SMALL, MPI_INT);
    expect(in, N_SMALL, conf_left(), "rsend");
}

static void check_sendrecv(void)
{
    int out[N_SMALL], in[N_SMALL] = {0};
    MPI_Status st;
    fill(out, N_SMALL, conf_rank);
    MPI_OK(MPI_Sendrecv(out, N_SMALL, MPI_INT, conf_right(), TAG_A, in, N_SMALL, MPI_INT, conf_left(), TAG_A,
                        MPI_COMM_WORLD, &st));
    expect_status(&st, conf_left(), TAG_A, N_SMALL, MPI_INT);
    expect(in, N_SMALL, conf_left(), "sendrecv");
}

static void check_sendrecv_replace(void)
{
    int buf[N_SMALL];
    MPI_Status st;
    fill(buf, N_SMALL, conf_rank);
    MPI_OK(MPI_Sendrecv_replace(buf, N_SMALL, MPI_INT, conf_right(), TAG_A, conf_left(), TAG_A, MPI_COMM_WORLD,
                                &st));
    expect_status(&st, conf_left(), TAG_A, N_SMALL, MPI_INT);
    expect(buf, N_SMALL, conf_left(), "sendrecv_replace");
    /* Large, with MPI_ANY_SOURCE. */
    int *big = malloc(sizeof(int) * N_LARGE);
    fill(big, N_LARGE, conf_rank);
    MPI_OK(MPI_Sendrecv_replace(big, N_LARGE, MPI_INT, conf_right(), TAG_B, MPI_ANY_SOURCE, TAG_B,
                                MPI_COMM_WORLD, &st));
    expect_status(&st, conf_left(), TAG_B, N_LARGE, MPI_INT);
    expect(big, N_LARGE, conf_left(), "sendrecv_replace large");
    free(big);
}

/* Every call on MPI_PROC_NULL completes at once; a receive gets the empty
 * status (source PROC_NULL, tag ANY_TAG, count 0) and its buffer stays. */
static void check_proc_null(void)
{
    int buf[4] = {7, 7, 7, 7}, flag = 0;
    MPI_Status st;
    MPI_Request rq[2];
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_OK(MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Ssend(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Rsend(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &st));
    expect_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, MPI_INT);
    CHECK(buf[0] == 7 && buf[3] == 7, "receive from MPI_PROC_NULL wrote the buffer");
    MPI_OK(MPI_Isend(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Wait(&rq[1], &st));
    /* The standard's empty status, but MPICH 4.0.2 leaves source and tag 0
     * for a nonblocking receive from MPI_PROC_NULL: either passes. */
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL || st.MPI_SOURCE == 0, "Irecv(MPI_PROC_NULL) status source %d",
          st.MPI_SOURCE);
    CHECK(st.MPI_TAG == MPI_ANY_TAG || st.MPI_TAG == 0, "Irecv(MPI_PROC_NULL) status tag %d", st.MPI_TAG);
    {
        int c = -1;
        MPI_OK(MPI_Get_count(&st, MPI_INT, &c));
        CHECK_INT(c, 0);
    }
    MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    MPI_OK(MPI_Sendrecv(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A,
                        MPI_COMM_WORLD, &st));
    expect_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, MPI_INT);
    MPI_OK(MPI_Sendrecv_replace(buf, 4, MPI_INT, MPI_PROC_NULL, TAG_A, MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &st));
    expect_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, MPI_INT);
    MPI_OK(MPI_Probe(MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &st));
    expect_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, MPI_INT);
    MPI_OK(MPI_Iprobe(MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag, "MPI_Iprobe(MPI_PROC_NULL) flag false");
    expect_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, MPI_INT);
    MPI_OK(MPI_Mprobe(MPI_PROC_NULL, TAG_A, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "MPI_Mprobe(MPI_PROC_NULL) message %#x, want MPI_MESSAGE_NO_PROC",
          (unsigned)msg);
    MPI_OK(MPI_Mrecv(buf, 4, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv(MPI_MESSAGE_NO_PROC) left message %#x", (unsigned)msg);
    expect_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, 0, MPI_INT);
    CHECK(buf[0] == 7, "receive from MPI_PROC_NULL wrote the buffer");
}

/* Wildcards: every rank sends one message to every rank (itself too) with
 * tag `tag0 + sender` (or `tag0` alone with same_tag) and length
 * 1 + sender % 3; the wildcard receives see each sender once, with its tag
 * and count in the status. */
static void all_to_all_wild(MPI_Comm comm, int recv_tag, int tag0, int same_tag)
{
    int n = conf_size, *seen = calloc((size_t)n, sizeof(int)), *in = calloc((size_t)n * 3, sizeof(int));
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n * 2);
    MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)n * 2);
    int out[3];
    fill(out, 3, conf_rank);
    for (int i = 0; i < n; i++)
        MPI_OK(MPI_Irecv(in + 3 * i, 3, MPI_INT, MPI_ANY_SOURCE, recv_tag, comm, &rq[i]));
    for (int i = 0; i < n; i++)
        MPI_OK(MPI_Isend(out, 1 + conf_rank % 3, MPI_INT, i, same_tag ? tag0 : tag0 + conf_rank, comm,
                         &rq[n + i]));
    MPI_OK(MPI_Waitall(2 * n, rq, st));
    for (int i = 0; i < n; i++) {
        int src = st[i].MPI_SOURCE, c = -1;
        CHECK(src >= 0 && src < n, "status source %d", src);
        CHECK_INT(st[i].MPI_TAG, same_tag ? tag0 : tag0 + src);
        MPI_OK(MPI_Get_count(&st[i], MPI_INT, &c));
        CHECK_INT(c, 1 + src % 3);
        expect(in + 3 * i, c, src, "wildcard receive");
        seen[src]++;
    }
    for (int i = 0; i < n; i++)
        CHECK(seen[i] == 1, "sender %d seen %d times", i, seen[i]);
    free(seen);
    free(in);
    free(rq);
    free(st);
}

/* MPI_ANY_SOURCE with a tag no other check uses, on MPI_COMM_WORLD. */
static void check_any_source(void) { all_to_all_wild(MPI_COMM_WORLD, 200, 200, 1); }

/* MPI_ANY_SOURCE with MPI_ANY_TAG would also match a faster rank's next
 * check: on a communicator of its own. */
static void check_any_source_any_tag(void)
{
    MPI_Comm comm;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    all_to_all_wild(comm, MPI_ANY_TAG, 100, 0);
    MPI_OK(MPI_Comm_free(&comm));
}

/* Zero-count messages match and carry their tag; a NULL buffer is fine. */
static void check_zero_count(void)
{
    MPI_Request rq;
    MPI_Status st;
    int buf = 42, c = -1;
    MPI_OK(MPI_Irecv(NULL, 0, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Send(NULL, 0, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, &st));
    expect_status(&st, conf_left(), TAG_A, 0, MPI_INT);
    /* A zero-count send into a non-zero receive. */
    MPI_OK(MPI_Irecv(&buf, 1, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Ssend(&buf, 0, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, &st));
    MPI_OK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_INT(c, 0);
    CHECK_INT(buf, 42);
    MPI_OK(MPI_Get_elements(&st, MPI_INT, &c));
    CHECK_INT(c, 0);
}

/* A message longer than the receive: MPI_ERR_TRUNCATE, from Recv directly,
 * in status.MPI_ERROR through Waitall (MPI_ERR_IN_STATUS), and from Wait. */
static void check_truncate(void)
{
    int out[8], in[8] = {0}, cls = -1, rc;
    MPI_Request rq[2];
    MPI_Status st[2];
    fill(out, 8, conf_rank);
    MPI_OK(MPI_Isend(out, 8, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq[0]));
    rc = MPI_Recv(in, 4, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &st[0]);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Recv of 8 ints into 4: class %d (%s), want MPI_ERR_TRUNCATE", cls,
          conf_errstr(rc));
    MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));

    MPI_OK(MPI_Irecv(in, 2, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Isend(out, 8, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &rq[0]));
    st[0].MPI_ERROR = st[1].MPI_ERROR = -1;
    rc = MPI_Waitall(2, rq, st);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_IN_STATUS, "MPI_Waitall with a truncated receive: class %d, want MPI_ERR_IN_STATUS", cls);
    MPI_OK(MPI_Error_class(st[1].MPI_ERROR, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "status.MPI_ERROR of the truncated receive: class %d", cls);
    CHECK(st[0].MPI_ERROR == MPI_SUCCESS, "status.MPI_ERROR of the send: %d, want MPI_SUCCESS", st[0].MPI_ERROR);
    CHECK_INT(st[1].MPI_SOURCE, conf_left());
    CHECK_INT(st[1].MPI_TAG, TAG_B);

    MPI_OK(MPI_Irecv(in, 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Send(out, 3, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    rc = MPI_Wait(&rq[1], &st[1]);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Wait on a truncated receive: class %d (%s)", cls, conf_errstr(rc));
    CHECK(rq[1] == MPI_REQUEST_NULL, "failed receive request not freed");
}

/* Messages from one sender with one tag arrive in order; a receive by tag
 * picks the later one first. */
static void check_order_and_tags(void)
{
    int in[N_ORDER], v;
    MPI_Request rq[N_ORDER];
    for (int i = 0; i < N_ORDER; i++)
        MPI_OK(MPI_Irecv(&in[i], 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &rq[i]));
    for (int i = 0; i < N_ORDER; i++)
        MPI_OK(MPI_Send(&i, 1, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Waitall(N_ORDER, rq, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N_ORDER; i++)
        CHECK(in[i] == i, "message %d arrived as %d: overtaken", i, in[i]);
    /* Tag B is sent after tag A; receiving B first must not take A. */
    v = 1;
    MPI_OK(MPI_Isend(&v, 1, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq[0]));
    int v2 = 2;
    MPI_OK(MPI_Isend(&v2, 1, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Recv(&in[0], 1, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Recv(&in[1], 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    CHECK(in[0] == 2 && in[1] == 1, "tag selection: got %d then %d, want 2 then 1", in[0], in[1]);
}

static void check_probe(void)
{
    int out[5], in[5] = {0}, flag = 0, c = -1;
    MPI_Request rq;
    MPI_Status st;
    fill(out, 5, conf_rank);
    MPI_OK(MPI_Isend(out, 5, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Probe(MPI_ANY_SOURCE, TAG_A, MPI_COMM_WORLD, &st));
    expect_status(&st, conf_left(), TAG_A, 5, MPI_INT);
    /* Probe does not receive: Iprobe sees the same message. */
    while (!flag)
        MPI_OK(MPI_Iprobe(conf_left(), MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
    expect_status(&st, conf_left(), TAG_A, 5, MPI_INT);
    MPI_OK(MPI_Get_count(&st, MPI_INT, &c));
    MPI_OK(MPI_Recv(in, c, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    expect(in, 5, conf_left(), "probe");
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    /* Nothing is ever sent with this tag. */
    MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, TAG_NEVER, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "MPI_Iprobe found a message that was never sent");
}

/* Mprobe takes the message out of matching: a wildcard receive posted after
 * it gets the next message, and Mrecv gets the probed one. */
static void check_mprobe_mrecv(void)
{
    int a[3], b[3], in[3] = {0}, in2[3] = {0};
    MPI_Request rq[3];
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    fill(a, 3, conf_rank);
    fill(b, 3, conf_rank + 50);
    MPI_OK(MPI_Isend(a, 3, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Mprobe(conf_left(), TAG_A, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "MPI_Mprobe gave no message handle");
    expect_status(&st, conf_left(), TAG_A, 3, MPI_INT);
    MPI_OK(MPI_Irecv(in2, 3, MPI_INT, conf_left(), MPI_ANY_TAG, MPI_COMM_WORLD, &rq[2]));
    MPI_OK(MPI_Isend(b, 3, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &rq[1]));
    MPI_OK(MPI_Mrecv(in, 3, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL, "MPI_Mrecv did not reset the message handle");
    expect_status(&st, conf_left(), TAG_A, 3, MPI_INT);
    expect(in, 3, conf_left(), "mrecv");
    MPI_OK(MPI_Wait(&rq[2], &st));
    expect_status(&st, conf_left(), TAG_B, 3, MPI_INT);
    expect(in2, 3, conf_left() + 50, "receive after mprobe");
    MPI_OK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
}

/* Issend completes only once the receive has matched: the right
 * neighbour posts its receive only after a "go" message this rank sends
 * after testing its Issend a few times. */
static void check_issend_waits_for_match(void)
{
    enum { TESTS = 20, TAG_GO = 13 };
    const struct timespec nap = {0, 1000 * 1000}; /* 1 ms */
    int out = conf_val(conf_rank, 0), in = -1, flag = 0;
    MPI_Request s, go, r;
    MPI_OK(MPI_Issend(&out, 1, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &s));
    for (int i = 0; i < TESTS; i++) {
        MPI_OK(MPI_Test(&s, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "MPI_Issend completed before the receiver posted its receive (test %d)", i);
        nanosleep(&nap, NULL);
    }
    MPI_OK(MPI_Isend(NULL, 0, MPI_INT, conf_right(), TAG_GO, MPI_COMM_WORLD, &go));
    MPI_OK(MPI_Recv(NULL, 0, MPI_INT, conf_left(), TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Irecv(&in, 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Wait(&go, MPI_STATUS_IGNORE));
    CHECK_INT(in, conf_val(conf_left(), 0));
}

/* The large-message path: probe, matched probe, wildcard source and
 * truncation of a 1 MiB message. */
static void check_large_probe_truncate(void)
{
    int *out = malloc(sizeof(int) * N_LARGE), *in = malloc(sizeof(int) * N_LARGE), c = -1, cls = -1;
    MPI_Request rq;
    MPI_Status st;
    MPI_Message msg;
    fill(out, N_LARGE, conf_rank);
    MPI_OK(MPI_Isend(out, N_LARGE, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Probe(MPI_ANY_SOURCE, TAG_A, MPI_COMM_WORLD, &st));
    expect_status(&st, conf_left(), TAG_A, N_LARGE, MPI_INT);
    MPI_OK(MPI_Get_count(&st, MPI_BYTE, &c));
    CHECK_INT(c, N_LARGE * (int)sizeof(int));
    MPI_OK(MPI_Mprobe(conf_left(), TAG_A, MPI_COMM_WORLD, &msg, &st));
    expect_status(&st, conf_left(), TAG_A, N_LARGE, MPI_INT);
    MPI_OK(MPI_Mrecv(in, N_LARGE, MPI_INT, &msg, &st));
    expect(in, N_LARGE, conf_left(), "large mrecv");
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    /* Half the buffer: MPI_ERR_TRUNCATE, and the send still completes. */
    MPI_OK(MPI_Isend(out, N_LARGE, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &rq));
    int rc = MPI_Recv(in, N_LARGE / 2, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, &st);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_TRUNCATE, "1 MiB into 512 KiB: class %d (%s), want MPI_ERR_TRUNCATE", cls,
          conf_errstr(rc));
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    /* The channel still works after the truncation. */
    MPI_OK(MPI_Isend(out, N_LARGE, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Recv(in, N_LARGE, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &st));
    expect(in, N_LARGE, conf_left(), "large receive after a truncation");
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    free(out);
    free(in);
}

/* Get_count is MPI_UNDEFINED for a partial element of a derived type;
 * Get_elements counts the basic elements. */
static void check_get_count_elements(void)
{
    MPI_Datatype pair;
    int out[5], in[6] = {0}, c = -1;
    MPI_Request rq;
    MPI_Status st;
    fill(out, 5, conf_rank);
    MPI_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
    MPI_OK(MPI_Type_commit(&pair));
    MPI_OK(MPI_Irecv(in, 3, pair, conf_left(), TAG_A, MPI_COMM_WORLD, &rq));
    MPI_OK(MPI_Send(out, 5, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rq, &st));
    MPI_OK(MPI_Get_count(&st, pair, &c));
    CHECK_INT(c, MPI_UNDEFINED);
    MPI_OK(MPI_Get_elements(&st, pair, &c));
    CHECK_INT(c, 5);
    MPI_OK(MPI_Get_count(&st, MPI_INT, &c));
    CHECK_INT(c, 5);
    MPI_OK(MPI_Get_count(&st, MPI_BYTE, &c));
    CHECK_INT(c, 5 * (int)sizeof(int));
    expect(in, 5, conf_left(), "pair receive");
    CHECK_INT(in[5], 0);
    MPI_OK(MPI_Type_free(&pair));
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_p2p");
    RUN(check_send_recv);
    RUN(check_recv_blocking);
    RUN(check_ssend);
    RUN(check_issend_irecv);
    RUN(check_rsend);
    RUN(check_sendrecv);
    RUN(check_sendrecv_replace);
    RUN(check_send_large);
    RUN(check_ssend_large);
    RUN(check_proc_null);
    RUN(check_any_source);
    RUN(check_any_source_any_tag);
    RUN(check_zero_count);
    RUN(check_truncate);
    RUN(check_order_and_tags);
    RUN(check_probe);
    RUN(check_mprobe_mrecv);
    RUN(check_issend_waits_for_match);
    RUN(check_large_probe_truncate);
    RUN(check_get_count_elements);
    return conf_finish();
}
