/* Calls made the way a C program makes them: C enums are ints there, so a
 * caller may pass any int for an enum parameter and must get
 * RDMX_ERR_INVALID_ARG back. Compiling this also checks that the public
 * header is plain C. */
#include "rdmx/rdmx.h"

#include "c_callers.h"

rdmx_status_t c_isend_in_space(rdmx_context_h ctx, int space, const void *buf, size_t len, int dest, int tag,
                               rdmx_request_h *req_p) {
    return rdmx_isend_in(ctx, (rdmx_tagspace_t)space, buf, len, dest, tag, req_p);
}

rdmx_status_t c_irecv_in_space(rdmx_context_h ctx, int space, void *buf, size_t len, int source, int tag,
                               rdmx_request_h *req_p) {
    return rdmx_irecv_in(ctx, (rdmx_tagspace_t)space, buf, len, source, tag, req_p);
}

rdmx_status_t c_allreduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count, int dt, int op) {
    return rdmx_allreduce(ctx, sendbuf, recvbuf, count, (rdmx_datatype_t)dt, (rdmx_op_t)op);
}
