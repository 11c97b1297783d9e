/* Requests: Wait/Test and their all/any/some forms on arrays mixing
 * MPI_REQUEST_NULL, completed and pending requests; persistent
 * Send_init/Recv_init/Start/Startall; Cancel of a receive and
 * Test_cancelled; Request_free of an active send. Ring traffic (np 1: to
 * itself) with receives posted first. */
#include "conf.h"

#define TAG_A 21
#define TAG_B 22
#define N_PERSIST_ROUNDS 5
#define N_MIX 6
#define SENTINEL_REQ (-7)

/* The empty status: what a null or inactive request completes with. */
#define expect_empty(st)                                                                                    \
    do {                                                                                                    \
        int c_ = -1;                                                                                        \
        CHECK_INT((st).MPI_SOURCE, MPI_ANY_SOURCE);                                                         \
        CHECK_INT((st).MPI_TAG, MPI_ANY_TAG);                                                               \
        MPI_OK(MPI_Get_count(&(st), MPI_INT, &c_));                                                         \
        CHECK_INT(c_, 0);                                                                                   \
    } while (0)

static void check_null_requests(void)
{
    MPI_Request r[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st, sts[3];
    int flag = 0, idx = -2, out = -2, ids[3];
    MPI_OK(MPI_Wait(&r[0], &st));
    expect_empty(st);
    MPI_OK(MPI_Test(&r[0], &flag, &st));
    CHECK(flag, "MPI_Test(MPI_REQUEST_NULL) flag false");
    expect_empty(st);
    MPI_OK(MPI_Waitall(3, r, sts));
    expect_empty(sts[2]);
    flag = 0;
    MPI_OK(MPI_Testall(3, r, &flag, sts));
    CHECK(flag, "MPI_Testall of null requests: flag false");
    MPI_OK(MPI_Waitany(3, r, &idx, &st));
    CHECK_INT(idx, MPI_UNDEFINED);
    expect_empty(st);
    flag = 0;
    idx = -2;
    MPI_OK(MPI_Testany(3, r, &idx, &flag, &st));
    CHECK(flag, "MPI_Testany of null requests: flag false");
    CHECK_INT(idx, MPI_UNDEFINED);
    MPI_OK(MPI_Waitsome(3, r, &out, ids, sts));
    CHECK_INT(out, MPI_UNDEFINED);
    out = -2;
    MPI_OK(MPI_Testsome(3, r, &out, ids, sts));
    CHECK_INT(out, MPI_UNDEFINED);
    /* Zero-length arrays. */
    MPI_OK(MPI_Waitall(0, r, sts));
    MPI_OK(MPI_Waitany(0, r, &idx, &st));
    CHECK_INT(idx, MPI_UNDEFINED);
}

/* N_MIX slots: even ones null, odd ones receives from the left with tag
 * TAG_A + slot, matched by sends in reverse order. Waitany/Testany/Waitsome
 * report only live slots, each once, with the right status, and set them
 * to MPI_REQUEST_NULL. */
static void post_mix(MPI_Request *r, int *in, MPI_Request *sends, int *out)
{
    for (int i = 0; i < N_MIX; i++) {
        r[i] = MPI_REQUEST_NULL;
        in[i] = -1;
        out[i] = conf_val(conf_rank, i);
    }
    for (int i = 1; i < N_MIX; i += 2)
        MPI_OK(MPI_Irecv(&in[i], 1, MPI_INT, conf_left(), TAG_A + i, MPI_COMM_WORLD, &r[i]));
    for (int i = N_MIX - 1, k = 0; i >= 1; i -= 2, k++)
        MPI_OK(MPI_Isend(&out[i], 1, MPI_INT, conf_right(), TAG_A + i, MPI_COMM_WORLD, &sends[k]));
}

static void check_mix_slot(const MPI_Status *st, int idx, const int *in, int *done)
{
    CHECK(idx >= 1 && idx < N_MIX && idx % 2 == 1, "completed index %d is not a live slot", idx);
    CHECK(!done[idx], "slot %d completed twice", idx);
    done[idx] = 1;
    CHECK_INT(st->MPI_SOURCE, conf_left());
    CHECK_INT(st->MPI_TAG, TAG_A + idx);
    CHECK_INT(in[idx], conf_val(conf_left(), idx));
}

static void check_waitany_mix(void)
{
    MPI_Request r[N_MIX], sends[N_MIX / 2];
    MPI_Status st;
    int in[N_MIX], out[N_MIX], done[N_MIX] = {0}, idx;
    post_mix(r, in, sends, out);
    for (int k = 0; k < N_MIX / 2; k++) {
        MPI_OK(MPI_Waitany(N_MIX, r, &idx, &st));
        check_mix_slot(&st, idx, in, done);
        CHECK(r[idx] == MPI_REQUEST_NULL, "MPI_Waitany left slot %d live", idx);
    }
    MPI_OK(MPI_Waitany(N_MIX, r, &idx, &st));
    CHECK_INT(idx, MPI_UNDEFINED);
    MPI_OK(MPI_Waitall(N_MIX / 2, sends, MPI_STATUSES_IGNORE));
}

static void check_testany_mix(void)
{
    MPI_Request r[N_MIX], sends[N_MIX / 2];
    MPI_Status st;
    int in[N_MIX], out[N_MIX], done[N_MIX] = {0}, idx, flag;
    post_mix(r, in, sends, out);
    for (int k = 0; k < N_MIX / 2;) {
        flag = 0;
        MPI_OK(MPI_Testany(N_MIX, r, &idx, &flag, &st));
        if (!flag) {
            CHECK_INT(idx, MPI_UNDEFINED);
            continue;
        }
        check_mix_slot(&st, idx, in, done);
        k++;
    }
    flag = 0;
    MPI_OK(MPI_Testany(N_MIX, r, &idx, &flag, &st));
    CHECK(flag && idx == MPI_UNDEFINED, "MPI_Testany with no live request: flag %d index %d", flag, idx);
    /* Testall loops until every send is done. */
    for (flag = 0; !flag;)
        MPI_OK(MPI_Testall(N_MIX / 2, sends, &flag, MPI_STATUSES_IGNORE));
    for (int k = 0; k < N_MIX / 2; k++)
        CHECK(sends[k] == MPI_REQUEST_NULL, "MPI_Testall left send %d live", k);
}

static void check_waitsome_testsome_mix(void)
{
    MPI_Request r[N_MIX], sends[N_MIX / 2];
    MPI_Status sts[N_MIX];
    int in[N_MIX], out[N_MIX], done[N_MIX] = {0}, ids[N_MIX], n = 0, outcount;
    post_mix(r, in, sends, out);
    while (n < N_MIX / 2) {
        if (n % 2 == 0) {
            MPI_OK(MPI_Waitsome(N_MIX, r, &outcount, ids, sts));
            CHECK(outcount >= 1, "MPI_Waitsome outcount %d with live requests", outcount);
        } else {
            MPI_OK(MPI_Testsome(N_MIX, r, &outcount, ids, sts));
            CHECK(outcount >= 0, "MPI_Testsome outcount %d with live requests", outcount);
        }
        for (int k = 0; k < outcount; k++)
            check_mix_slot(&sts[k], ids[k], in, done);
        n += outcount;
    }
    MPI_OK(MPI_Waitsome(N_MIX, r, &outcount, ids, sts));
    CHECK_INT(outcount, MPI_UNDEFINED);
    MPI_OK(MPI_Waitall(N_MIX / 2, sends, MPI_STATUSES_IGNORE));
}

/* Waitall over nulls, completed-and-freed slots and live ones: statuses of
 * the null slots are empty, live ones carry their message. */
static void check_waitall_mix(void)
{
    MPI_Request r[N_MIX], sends[N_MIX / 2];
    MPI_Status sts[N_MIX];
    int in[N_MIX], out[N_MIX], done[N_MIX] = {0}, idx;
    post_mix(r, in, sends, out);
    /* Complete one slot first: it is null when Waitall sees it. */
    MPI_OK(MPI_Wait(&r[1], &sts[1]));
    check_mix_slot(&sts[1], 1, in, done);
    MPI_OK(MPI_Waitall(N_MIX, r, sts));
    for (int i = 0; i < N_MIX; i++) {
        CHECK(r[i] == MPI_REQUEST_NULL, "slot %d live after MPI_Waitall", i);
        if (i % 2 == 0 || i == 1) {
            expect_empty(sts[i]);
        } else {
            idx = i;
            check_mix_slot(&sts[i], idx, in, done);
        }
    }
    MPI_OK(MPI_Waitall(N_MIX / 2, sends, MPI_STATUSES_IGNORE));
}

/* Persistent requests: the same pair restarted N_PERSIST_ROUNDS times with
 * new data; inactive between rounds (Wait returns the empty status at once);
 * freed with Request_free. */
static void check_persistent(void)
{
    int out[4], in[4], flag;
    MPI_Request r[2];
    MPI_Status st[2];
    MPI_OK(MPI_Recv_init(in, 4, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Send_init(out, 4, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &r[1]));
    for (int round = 0; round < N_PERSIST_ROUNDS; round++) {
        for (int i = 0; i < 4; i++) {
            out[i] = conf_val(conf_rank, i) + round;
            in[i] = -1;
        }
        if (round % 2 == 0) {
            MPI_OK(MPI_Start(&r[0]));
            MPI_OK(MPI_Start(&r[1]));
        } else {
            MPI_OK(MPI_Startall(2, r));
        }
        MPI_OK(MPI_Waitall(2, r, st));
        CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL, "persistent request freed by MPI_Waitall");
        CHECK_INT(st[0].MPI_SOURCE, conf_left());
        CHECK_INT(st[0].MPI_TAG, TAG_B);
        for (int i = 0; i < 4; i++)
            CHECK(in[i] == conf_val(conf_left(), i) + round, "round %d element %d = %d", round, i, in[i]);
        /* Inactive now. */
        MPI_OK(MPI_Wait(&r[0], &st[0]));
        expect_empty(st[0]);
        flag = 0;
        MPI_OK(MPI_Test(&r[1], &flag, &st[1]));
        CHECK(flag, "MPI_Test on an inactive persistent request: flag false");
    }
    MPI_OK(MPI_Request_free(&r[0]));
    MPI_OK(MPI_Request_free(&r[1]));
    CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "MPI_Request_free did not null the handles");
    /* With MPI_PROC_NULL: complete at once, the receive's buffer untouched. */
    in[0] = SENTINEL_REQ;
    MPI_OK(MPI_Recv_init(in, 4, MPI_INT, MPI_PROC_NULL, TAG_B, MPI_COMM_WORLD, &r[0]));
    MPI_OK(MPI_Send_init(out, 4, MPI_INT, MPI_PROC_NULL, TAG_B, MPI_COMM_WORLD, &r[1]));
    for (int round = 0; round < 2; round++) {
        MPI_OK(MPI_Startall(2, r));
        MPI_OK(MPI_Waitall(2, r, st));
        int c = -1;
        MPI_OK(MPI_Get_count(&st[0], MPI_INT, &c));
        CHECK_INT(c, 0);
        CHECK_INT(in[0], SENTINEL_REQ);
    }
    MPI_OK(MPI_Request_free(&r[0]));
    MPI_OK(MPI_Request_free(&r[1]));
}

/* A receive nobody sends to, cancelled: Wait completes it and
 * Test_cancelled says so. A receive that matched: not cancelled. */
static void check_cancel_recv(void)
{
    int buf = 5, flag = 0, v;
    MPI_Request r;
    MPI_Status st;
    MPI_OK(MPI_Irecv(&buf, 1, MPI_INT, conf_left(), 999, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Cancel(&r));
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "MPI_Test_cancelled false for a cancelled pending receive");
    CHECK_INT(buf, 5);
    /* A receive that completed normally is not cancelled. */
    v = conf_val(conf_rank, 0);
    MPI_OK(MPI_Irecv(&buf, 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Send(&v, 1, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD));
    for (flag = 0; !flag;)
        MPI_OK(MPI_Test(&r, &flag, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag, "MPI_Test_cancelled true for a receive that completed");
    CHECK_INT(buf, conf_val(conf_left(), 0));
    /* A started persistent receive, cancelled. */
    MPI_OK(MPI_Recv_init(&buf, 1, MPI_INT, conf_left(), 998, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Start(&r));
    MPI_OK(MPI_Cancel(&r));
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "MPI_Test_cancelled false for a cancelled persistent receive");
    MPI_OK(MPI_Request_free(&r));
}

/* Request_free of an active send: the message is still delivered. */
static void check_request_free_active(void)
{
    int out[3], in[3] = {0};
    MPI_Request r, s;
    for (int i = 0; i < 3; i++)
        out[i] = conf_val(conf_rank, i);
    MPI_OK(MPI_Irecv(in, 3, MPI_INT, conf_left(), TAG_B, MPI_COMM_WORLD, &r));
    MPI_OK(MPI_Isend(out, 3, MPI_INT, conf_right(), TAG_B, MPI_COMM_WORLD, &s));
    MPI_OK(MPI_Request_free(&s));
    CHECK(s == MPI_REQUEST_NULL, "MPI_Request_free did not null the handle");
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (int i = 0; i < 3; i++)
        CHECK_INT(in[i], conf_val(conf_left(), i));
    /* The freed send's buffer may be in use until the receiver has it: a
     * zero-byte round trip from the right says the right neighbour has
     * received (it waited above), so `out` goes out of scope safely. */
    MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, conf_left(), TAG_A, NULL, 0, MPI_INT, conf_right(), TAG_A,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

int main(int argc, char **argv)
{
    conf_start(&argc, &argv, "conf_req");
    RUN(check_null_requests);
    RUN(check_waitany_mix);
    RUN(check_testany_mix);
    RUN(check_waitsome_testsome_mix);
    RUN(check_waitall_mix);
    RUN(check_persistent);
    RUN(check_cancel_recv);
    RUN(check_request_free_active);
    return conf_finish();
}
