// Test-only fault injection into a running context. Compiled into every
// build and inert unless called; tests reach it through rdmx_internal.
#pragma once
#include "rdmx/rdmx.h"

namespace rdmx {

// Queues a synthetic asynchronous event on ctx's device, read and acted on
// by the next progress pass exactly like a real one. `event` is one of
// qp_fatal, qp_req_err, qp_access_err (on the QP to `peer`), cq_err,
// srq_err, srq_limit, device_fatal, port_err, port_active, lid_change.
// RDMX_ERR_INVALID_ARG for an unknown name, a bad peer, or a job of one.
rdmx_status_t inject_async_event(rdmx_context_h ctx, const char *event, int peer);

}  // namespace rdmx
