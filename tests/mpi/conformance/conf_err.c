/* Error handling: MPI_ERRORS_ARE_FATAL is the default on MPI_COMM_WORLD;
 * under MPI_ERRORS_RETURN bad arguments return the right error class
 * (rank, tag, count, communicator, datatype, uncommitted type, root, op,
 * group rank, truncation); Error_class/Error_string on every standard
 * class; Comm_set_errhandler/get_errhandler, inheritance through dup, a
 * user handler from Comm_create_errhandler, Errhandler_free. With argument
 * "fatal", an erroneous call under the default handler must end the job
 * with a non-zero status (the ctest wrapper checks that). */
#include "conf.h"

#define TAG_A 71

static void check_default_handler(void)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "default handler of MPI_COMM_WORLD is %#x, want MPI_ERRORS_ARE_FATAL",
          (unsigned)eh);
    MPI_OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not set MPI_ERRHANDLER_NULL");
}

static void check_set_get_inherit(void)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    MPI_Comm d;
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "handler after set is %#x, want MPI_ERRORS_RETURN", (unsigned)eh);
    MPI_OK(MPI_Errhandler_free(&eh));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_OK(MPI_Comm_get_errhandler(d, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "a dup's handler is %#x, want the parent's MPI_ERRORS_RETURN", (unsigned)eh);
    MPI_OK(MPI_Errhandler_free(&eh));
    MPI_OK(MPI_Comm_free(&d));
}

/* Each erroneous call returns its class under MPI_ERRORS_RETURN. */
static void check_argument_errors(void)
{
    int x = 0, bad_rank = conf_size, tag_ub = 0, *ub = NULL, flag = 0;
    MPI_Datatype uncommitted;
    MPI_Group world, g;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    tag_ub = *ub;
    CHECK_CLASS(MPI_Send(&x, 1, MPI_INT, bad_rank, TAG_A, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(&x, 1, MPI_INT, -5, TAG_A, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Send(&x, 1, MPI_INT, 0, -1, MPI_COMM_WORLD), MPI_ERR_TAG);
    if (tag_ub < 0x7fffffff)
        CHECK_CLASS(MPI_Send(&x, 1, MPI_INT, 0, tag_ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG);
    CHECK_CLASS(MPI_Send(&x, -1, MPI_INT, 0, TAG_A, MPI_COMM_WORLD), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_Send(&x, 1, MPI_DATATYPE_NULL, 0, TAG_A, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_Send(&x, 1, MPI_INT, 0, TAG_A, MPI_COMM_NULL), MPI_ERR_COMM);
    CHECK_CLASS(MPI_Recv(&x, 1, MPI_INT, bad_rank, TAG_A, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
    CHECK_CLASS(MPI_Recv(&x, 1, MPI_INT, 0, -3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG);
    MPI_OK(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    CHECK_CLASS(MPI_Send(&x, 1, uncommitted, 0, TAG_A, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_OK(MPI_Type_free(&uncommitted));
    CHECK_CLASS(MPI_Bcast(&x, 1, MPI_INT, conf_size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    CHECK_CLASS(MPI_Allreduce(&x, &flag, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    CHECK_CLASS(MPI_Comm_rank(MPI_COMM_NULL, &x), MPI_ERR_COMM);
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_CLASS(MPI_Group_incl(world, 1, &bad_rank, &g), MPI_ERR_RANK);
    MPI_OK(MPI_Group_free(&world));
    /* Still usable after the errors. */
    int y = -1;
    x = conf_val(conf_rank, 0);
    MPI_OK(MPI_Sendrecv(&x, 1, MPI_INT, conf_right(), TAG_A, &y, 1, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    CHECK_INT(y, conf_val(conf_left(), 0));
}

static void check_truncate_class(void)
{
    int out[4] = {1, 2, 3, 4}, in[2];
    MPI_Request rq;
    MPI_OK(MPI_Isend(out, 4, MPI_INT, conf_right(), TAG_A, MPI_COMM_WORLD, &rq));
    CHECK_CLASS(MPI_Recv(in, 2, MPI_INT, conf_left(), TAG_A, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TRUNCATE);
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
}

static const int classes[] = {
    MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM, MPI_ERR_RANK,
    MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP, MPI_ERR_TOPOLOGY, MPI_ERR_DIMS, MPI_ERR_ARG,
    MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER, MPI_ERR_INTERN, MPI_ERR_IN_STATUS, MPI_ERR_PENDING,
    MPI_ERR_KEYVAL, MPI_ERR_NO_MEM, MPI_ERR_INFO, MPI_ERR_UNSUPPORTED_OPERATION,
    /* MPICH's class for a lost peer (rdmx's PEER_LOST maps to it). */
    MPIX_ERR_PROC_FAILED,
};

static void check_class_and_string(void)
{
    const int n = (int)(sizeof classes / sizeof classes[0]);
    char s[MPI_MAX_ERROR_STRING];
    for (int k = 0; k < n; k++) {
        int cls = -1, len = -1;
        MPI_OK(MPI_Error_class(classes[k], &cls));
        CHECK(cls == classes[k], "MPI_Error_class(%d) = %d: a class is its own class", classes[k], cls);
        memset(s, 'x', sizeof s);
        MPI_OK(MPI_Error_string(classes[k], s, &len));
        CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && memchr(s, '\0', sizeof s) && (int)strlen(s) == len,
              "MPI_Error_string(%d): length %d", classes[k], len);
    }
    /* Distinct classes have distinct strings. */
    char a[MPI_MAX_ERROR_STRING], b[MPI_MAX_ERROR_STRING];
    int la, lb;
    MPI_OK(MPI_Error_string(MPI_ERR_RANK, a, &la));
    MPI_OK(MPI_Error_string(MPI_ERR_TAG, b, &lb));
    CHECK(strcmp(a, b) != 0, "MPI_ERR_RANK and MPI_ERR_TAG share the string \"%s\"", a);
    /* An error code from a failed call maps to its class and has a string. */
    int x = 0, rc = MPI_Send(&x, 1, MPI_INT, conf_size, TAG_A, MPI_COMM_WORLD), cls = -1, len = -1;
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK_INT(cls, MPI_ERR_RANK);
    MPI_OK(MPI_Error_string(rc, s, &len));
    CHECK(len > 0 && (int)strlen(s) == len, "string of a returned code: length %d", len);
}

/* A user handler: called once per error with the communicator and code;
 * the call then returns the code. */
static int handler_calls;
static MPI_Comm handler_comm;
static int handler_class;

static void user_handler(MPI_Comm *comm, int *code, ...)
{
    handler_calls++;
    handler_comm = *comm;
    MPI_Error_class(*code, &handler_class);
}

static void check_user_handler(void)
{
    MPI_Errhandler eh, got;
    MPI_Comm d;
    int x = 0, cls = -1;
    MPI_OK(MPI_Comm_create_errhandler(user_handler, &eh));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_OK(MPI_Comm_set_errhandler(d, eh));
    MPI_OK(MPI_Comm_get_errhandler(d, &got));
    CHECK(got == eh, "MPI_Comm_get_errhandler gave %#x, want the user handler %#x", (unsigned)got, (unsigned)eh);
    MPI_OK(MPI_Errhandler_free(&got));
    /* Freed handle, still attached: it keeps working. */
    MPI_OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free did not set MPI_ERRHANDLER_NULL");
    handler_calls = 0;
    int rc = MPI_Send(&x, 1, MPI_INT, conf_size, TAG_A, d);
    CHECK_INT(handler_calls, 1);
    CHECK(handler_comm == d, "handler got communicator %#x, want %#x", (unsigned)handler_comm, (unsigned)d);
    CHECK_INT(handler_class, MPI_ERR_RANK);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK_INT(cls, MPI_ERR_RANK);
    /* The handler of one communicator is not another's. */
    CHECK_CLASS(MPI_Send(&x, 1, MPI_INT, conf_size, TAG_A, MPI_COMM_WORLD), MPI_ERR_RANK);
    CHECK_INT(handler_calls, 1);
    MPI_OK(MPI_Comm_free(&d));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "return";
    conf_prog = "conf_err";
    conf_watchdog();
    conf_check = "MPI_Init";
    MPI_OK(MPI_Init(&argc, &argv));
    MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &conf_rank));
    MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &conf_size));
    if (strcmp(mode, "fatal") == 0) {
        int x = 0;
        conf_check = "errors_are_fatal";
        printf("conf_err: rank %d sends to an invalid rank under MPI_ERRORS_ARE_FATAL\n", conf_rank);
        fflush(stdout);
        MPI_Send(&x, 1, MPI_INT, conf_size, TAG_A, MPI_COMM_WORLD);
        CHECK(0, "an erroneous MPI_Send returned under MPI_ERRORS_ARE_FATAL");
    }
    RUN(check_default_handler);
    conf_setup("conf_err");
    RUN(check_set_get_inherit);
    RUN(check_argument_errors);
    RUN(check_truncate_class);
    RUN(check_class_and_string);
    RUN(check_user_handler);
    return conf_finish();
}
