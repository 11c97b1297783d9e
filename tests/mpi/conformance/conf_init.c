/* The init/finalize family: Initialized/Finalized around Init_thread (or
 * Init with argument "init"), Query_thread, Is_thread_main, Get_version,
 * Get_library_version, Get_processor_name, Wtime, Wtick, threads exchanging
 * at once under MPI_THREAD_MULTIPLE (when provided); with argument
 * "abort", MPI_Abort(3) must end the job with a non-zero status (the ctest
 * wrapper checks the status). */
#include "conf.h"

#include <pthread.h>
#include <time.h>

#define N_THREADS 2
#define N_THREAD_ROUNDS 200

static int provided_level = -1;

static void check_query_thread(void)
{
    int q = -1, main_thread = 0;
    MPI_OK(MPI_Query_thread(&q));
    CHECK_INT(q, provided_level);
    CHECK(q == MPI_THREAD_SINGLE || q == MPI_THREAD_FUNNELED || q == MPI_THREAD_SERIALIZED ||
              q == MPI_THREAD_MULTIPLE,
          "MPI_Query_thread gave %d, not a thread level", q);
    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
          "thread levels out of order");
    if (conf_rank == 0)
        printf("conf_init: thread level provided %d (MPI_THREAD_MULTIPLE is %d)\n", q, MPI_THREAD_MULTIPLE);
    MPI_OK(MPI_Is_thread_main(&main_thread));
    CHECK(main_thread, "MPI_Is_thread_main is false on the thread that initialized MPI");
}

static void check_initialized(void)
{
    int flag = 0;
    MPI_OK(MPI_Initialized(&flag));
    CHECK(flag, "MPI_Initialized false after init");
    flag = 1;
    MPI_OK(MPI_Finalized(&flag));
    CHECK(!flag, "MPI_Finalized true before MPI_Finalize");
}

static void check_version(void)
{
    int v = -1, sv = -1;
    MPI_OK(MPI_Get_version(&v, &sv));
    CHECK_INT(v, MPI_VERSION);
    CHECK_INT(sv, MPI_SUBVERSION);
}

static void check_library_version(void)
{
    char s[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = -1;
    memset(s, 'x', sizeof s);
    MPI_OK(MPI_Get_library_version(s, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "resultlen %d", len);
    CHECK(memchr(s, '\0', sizeof s) != NULL, "library version string not terminated");
    CHECK_INT(strlen(s), len);
}

static void check_processor_name(void)
{
    char s[MPI_MAX_PROCESSOR_NAME];
    int len = -1;
    memset(s, 'x', sizeof s);
    MPI_OK(MPI_Get_processor_name(s, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "resultlen %d", len);
    CHECK_INT(strlen(s), len);
}

static void check_wtime(void)
{
    const struct timespec nap = {0, 20 * 1000 * 1000}; /* 20 ms */
    double tick = MPI_Wtick(), t0 = MPI_Wtime(), t1;
    CHECK(tick > 0.0 && tick <= 0.01, "MPI_Wtick = %g, want in (0, 0.01]", tick);
    CHECK(t0 == t0 && t0 >= 0.0, "MPI_Wtime = %g", t0);
    nanosleep(&nap, NULL);
    t1 = MPI_Wtime();
    /* The sleep lasts at least 20 ms; 5 s of slack for a loaded host. */
    CHECK(t1 - t0 >= 0.019 && t1 - t0 < 5.0, "20 ms nap measured as %g s", t1 - t0);
}

static void check_world(void)
{
    int r = -1, s = -1;
    MPI_OK(MPI_Comm_rank(MPI_COMM_SELF, &r));
    MPI_OK(MPI_Comm_size(MPI_COMM_SELF, &s));
    CHECK_INT(r, 0);
    CHECK_INT(s, 1);
    CHECK(conf_size >= 1 && conf_rank >= 0 && conf_rank < conf_size, "rank %d size %d", conf_rank, conf_size);
}

/* Under MPI_THREAD_MULTIPLE: threads exchange around the ring at once, one
 * on a communicator of its own, one on MPI_COMM_WORLD with its own tag;
 * every other round with nonblocking calls, so that both threads take and
 * return request handles at once. */
struct thread_arg {
    MPI_Comm comm;
    int tag;
    int failed_round; /* -1: none */
};

static void *thread_ring(void *p)
{
    struct thread_arg *a = p;
    int right = (conf_rank + 1) % conf_size, left = (conf_rank + conf_size - 1) % conf_size;
    for (int k = 0; k < N_THREAD_ROUNDS; k++) {
        int out = conf_rank * 100000 + a->tag * 1000 + k, in = -1, rc;
        if (k % 2 == 0) {
            rc = MPI_Sendrecv(&out, 1, MPI_INT, right, a->tag, &in, 1, MPI_INT, left, a->tag, a->comm,
                              MPI_STATUS_IGNORE);
        } else { /* the request table, from both threads at once */
            MPI_Request rq[2];
            rc = MPI_Irecv(&in, 1, MPI_INT, left, a->tag, a->comm, &rq[0]);
            if (rc == MPI_SUCCESS) rc = MPI_Isend(&out, 1, MPI_INT, right, a->tag, a->comm, &rq[1]);
            if (rc == MPI_SUCCESS) rc = MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        }
        if (rc != MPI_SUCCESS || in != left * 100000 + a->tag * 1000 + k) {
            a->failed_round = k;
            break;
        }
    }
    return NULL;
}

static void check_thread_multiple(void)
{
    pthread_t th[N_THREADS];
    struct thread_arg args[N_THREADS];
    if (provided_level != MPI_THREAD_MULTIPLE)
        return; /* MPI_Init, or a library that does not offer it */
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &args[0].comm));
    args[1].comm = MPI_COMM_WORLD;
    for (int t = 0; t < N_THREADS; t++) {
        args[t].tag = t + 1;
        args[t].failed_round = -1;
        CHECK(pthread_create(&th[t], NULL, thread_ring, &args[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < N_THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < N_THREADS; t++)
        CHECK(args[t].failed_round < 0, "thread %d: exchange %d failed or got the wrong value", t,
              args[t].failed_round);
    MPI_OK(MPI_Comm_free(&args[0].comm));
}

int main(int argc, char **argv)
{
    int flag = 1;
    const char *mode = argc > 1 ? argv[1] : "init_thread";
    conf_prog = "conf_init";
    conf_watchdog();
    conf_check = "check_before_init";
    MPI_OK(MPI_Initialized(&flag));
    CHECK(!flag, "MPI_Initialized true before init");
    MPI_OK(MPI_Finalized(&flag));
    CHECK(!flag, "MPI_Finalized true before init");
    if (strcmp(mode, "init") == 0) {
        conf_check = "MPI_Init";
        MPI_OK(MPI_Init(&argc, &argv));
        MPI_OK(MPI_Query_thread(&provided_level));
    } else {
        conf_check = "MPI_Init_thread";
        MPI_OK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided_level));
        CHECK(provided_level >= MPI_THREAD_SINGLE && provided_level <= MPI_THREAD_MULTIPLE, "provided %d",
              provided_level);
    }
    conf_setup("conf_init");
    if (strcmp(mode, "abort") == 0) {
        conf_check = "MPI_Abort";
        if (conf_rank == conf_size - 1) {
            printf("conf_init: rank %d calls MPI_Abort(3)\n", conf_rank);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 3);
            CHECK(0, "MPI_Abort returned");
        }
        /* The other ranks wait to be ended by the abort. */
        for (;;)
            pause();
    }
    RUN(check_initialized);
    RUN(check_query_thread);
    RUN(check_version);
    RUN(check_library_version);
    RUN(check_processor_name);
    RUN(check_wtime);
    RUN(check_world);
    RUN(check_thread_multiple);
    conf_check = "MPI_Finalize";
    MPI_OK(MPI_Finalize());
    conf_check = "check_after_finalize";
    flag = 0;
    MPI_OK(MPI_Finalized(&flag));
    CHECK(flag, "MPI_Finalized false after MPI_Finalize");
    flag = 0;
    MPI_OK(MPI_Initialized(&flag));
    CHECK(flag, "MPI_Initialized false after MPI_Finalize (it stays true)");
    if (conf_failures) {
        printf("FAILED conf_init np=%d: %d checks on rank %d\n", conf_size, conf_failures, conf_rank);
        return 1;
    }
    if (conf_rank == 0)
        printf("ok conf_init np=%d check_after_finalize\nPASS conf_init np=%d\n", conf_size, conf_size);
    return 0;
}
