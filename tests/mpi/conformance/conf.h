/* The conformance programs' harness: compiled against MPICH's own mpi.h
 * (mpicc.mpich), so a program runs unchanged on MPICH and, through
 * LD_LIBRARY_PATH, on rdmx's libmpich.so.12.
 *
 * A program is a list of checks, each a function run by RUN(fn). Rank 0
 * prints "ok <program> np=<n> <check>" after each one; the first failure on
 * any rank prints "FAIL <program> np=<n> <check> rank <r>: <file:line>: <why>"
 * and exits 1 (the launcher then ends the job). Every MPI call goes through
 * MPI_OK, which fails the check naming the call and the error string, so a
 * missing or broken call in the library under test is named, not just seen
 * as a later wrong value. MPI_COMM_WORLD and MPI_COMM_SELF are switched to
 * MPI_ERRORS_RETURN at start for that reason (conf_err.c checks the default).
 * A watchdog (CONF_TIMEOUT_S) names the check that hangs.
 *
 * CONF_KEEP_GOING=1 in the environment (for a diagnosis, not for ctest):
 * a failed check is abandoned and the next one runs, so one run lists every
 * failing check; the program then exits 1. A later check may then fail or
 * hang only because an earlier one left messages behind. */
#ifndef CONF_H
#define CONF_H

#include <mpi.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Longer than any check takes on MPICH (milliseconds) and shorter than the
 * ctest timeout, so a hang is reported with the check's name. */
#define CONF_TIMEOUT_S 15

static const char *conf_prog = "?";
static const char *conf_check = "(start)";
static int conf_rank = -1;
static int conf_size = -1;
static jmp_buf conf_jmp;
static int conf_in_check;
static int conf_failures;

static inline void conf_fail(const char *file, int line, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    printf("FAIL %s np=%d %s rank %d: %s:%d: %s\n", conf_prog, conf_size, conf_check, conf_rank, file, line,
           why);
    fflush(stdout);
    if (conf_in_check && getenv("CONF_KEEP_GOING")) {
        conf_failures++;
        longjmp(conf_jmp, 1);
    }
    exit(1);
}

/* Async-signal-safe: write(2) only. */
static inline void conf_on_alarm(int sig)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "FAIL %s np=%d %s rank %d: timed out after %d s (hang)\n", conf_prog,
                     conf_size, conf_check, conf_rank, CONF_TIMEOUT_S);
    (void)sig;
    if (n > 0 && write(STDOUT_FILENO, msg, (size_t)n) < 0)
        _exit(3);
    _exit(2);
}

static inline const char *conf_errstr(int rc)
{
    static char s[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
        snprintf(s, sizeof s, "(MPI_Error_string failed for %d)", rc);
    return s;
}

#define CHECK(cond, ...)                                                                                    \
    do {                                                                                                    \
        if (!(cond))                                                                                        \
            conf_fail(__FILE__, __LINE__, __VA_ARGS__);                                                     \
    } while (0)

/* An MPI call that must succeed. */
#define MPI_OK(call)                                                                                        \
    do {                                                                                                    \
        int conf_rc_ = (call);                                                                              \
        if (conf_rc_ != MPI_SUCCESS)                                                                        \
            conf_fail(__FILE__, __LINE__, "%s returned %d (%s)", #call, conf_rc_, conf_errstr(conf_rc_));   \
    } while (0)

#define CHECK_INT(got, want)                                                                                \
    do {                                                                                                    \
        long long conf_g_ = (long long)(got), conf_w_ = (long long)(want);                                  \
        if (conf_g_ != conf_w_)                                                                             \
            conf_fail(__FILE__, __LINE__, "%s = %lld, want %lld", #got, conf_g_, conf_w_);                  \
    } while (0)

/* An MPI call that must fail with error class `cls`. */
#define CHECK_CLASS(call, cls)                                                                              \
    do {                                                                                                    \
        int conf_crc_ = (call), conf_ccl_ = -1;                                                               \
        if (conf_crc_ == MPI_SUCCESS)                                                                        \
            conf_fail(__FILE__, __LINE__, "%s succeeded, want class %s", #call, #cls);                      \
        MPI_OK(MPI_Error_class(conf_crc_, &conf_ccl_));                                                       \
        if (conf_ccl_ != (cls))                                                                              \
            conf_fail(__FILE__, __LINE__, "%s: class %d (%s), want %s", #call, conf_ccl_,                    \
                      conf_errstr(conf_crc_), #cls);                                                         \
    } while (0)

#define RUN(fn)                                                                                             \
    do {                                                                                                    \
        conf_check = #fn;                                                                                   \
        conf_in_check = 1;                                                                                  \
        if (setjmp(conf_jmp) == 0) {                                                                        \
            fn();                                                                                           \
            if (conf_rank == 0) {                                                                           \
                printf("ok %s np=%d %s\n", conf_prog, conf_size, #fn);                                      \
                fflush(stdout);                                                                             \
            }                                                                                               \
        }                                                                                                   \
        conf_in_check = 0;                                                                                  \
    } while (0)

static inline void conf_watchdog(void)
{
    signal(SIGALRM, conf_on_alarm);
    alarm(CONF_TIMEOUT_S);
}

/* After MPI_Init: rank, size, MPI_ERRORS_RETURN on the predefined comms. */
static inline void conf_setup(const char *prog)
{
    conf_prog = prog;
    conf_check = "setup";
    MPI_OK(MPI_Comm_rank(MPI_COMM_WORLD, &conf_rank));
    MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &conf_size));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
}

static inline void conf_start(int *argc, char ***argv, const char *prog)
{
    conf_prog = prog;
    conf_watchdog();
    conf_check = "MPI_Init";
    MPI_OK(MPI_Init(argc, argv));
    conf_setup(prog);
}

static inline int conf_finish(void)
{
    conf_check = "MPI_Finalize";
    MPI_OK(MPI_Finalize());
    if (conf_failures) {
        printf("FAILED %s np=%d: %d checks on rank %d\n", conf_prog, conf_size, conf_failures, conf_rank);
        return 1;
    }
    if (conf_rank == 0) {
        printf("PASS %s np=%d\n", conf_prog, conf_size);
        fflush(stdout);
    }
    return 0;
}

/* Ring neighbours (np 1: both are this rank; every check pre-posts receives
 * so self-messages cannot deadlock). */
static inline int conf_right(void) { return (conf_rank + 1) % conf_size; }
static inline int conf_left(void) { return (conf_rank + conf_size - 1) % conf_size; }

/* A deterministic value for element i of the message from rank `from`. */
static inline int conf_val(int from, int i) { return from * 1000 + i * 7 + 1; }

#endif
