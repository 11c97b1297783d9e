/* See c_callers.c. */
#ifndef RDMX_TESTS_UNIT_C_CALLERS_H
#define RDMX_TESTS_UNIT_C_CALLERS_H
#include "rdmx/rdmx.h"

#ifdef __cplusplus
extern "C" {
#endif
rdmx_status_t c_isend_in_space(rdmx_context_h ctx, int space, const void *buf, size_t len, int dest, int tag,
                               rdmx_request_h *req_p);
rdmx_status_t c_irecv_in_space(rdmx_context_h ctx, int space, void *buf, size_t len, int source, int tag,
                               rdmx_request_h *req_p);
rdmx_status_t c_allreduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count, int dt, int op);
#ifdef __cplusplus
}
#endif
#endif
