/* Checks for the MPI layer's test programs (point-to-point, communicators,
 * collectives): a failed check names the rank, the line and the values,
 * then ends the job. */
#ifndef RDMX_MPI_CHECK_H
#define RDMX_MPI_CHECK_H
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int g_rank = -1;

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", g_rank, __FILE__, __LINE__, #cond); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
        }                                                                                            \
    } while (0)

#define CHECK_EQ(a, b)                                                                                   \
    do {                                                                                                 \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                            \
        if (va_ != vb_) {                                                                                \
            fprintf(stderr, "rank %d: %s:%d: %s == %s failed: %lld != %lld\n", g_rank, __FILE__, __LINE__, \
                    #a, #b, va_, vb_);                                                                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
        }                                                                                                \
    } while (0)

#define OK(call) CHECK_EQ((call), MPI_SUCCESS)

/* The error class a call returned (MPI_ERRORS_RETURN must be set). */
static inline int err_class(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

#endif
