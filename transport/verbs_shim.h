// The verbs shim: every ibv_* and rdma_* call rdmx makes goes through here.
// Verbs and rdma_cm report errors four ways (NULL+errno, a returned errno,
// -1+errno, a negative count); each wrapper returns 0 or a positive errno,
// so callers handle one convention and log once with their own context.
// This file is also the seam where tests substitute failures.
#pragma once
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "core/hot.h"

namespace rdmx::vx {

// Fault injection for tests: when set to an errno, the next `times` wrapped
// calls whose name contains `fail_match` fail with it.
void inject_failure(const char *fail_match, int err, int times = 1);
// For tests: query_device reports at most these max_srq_wr and max_cqe
// (0: the device's own), as a smaller device would. Set before rdmx_init.
void limit_device(int max_srq_wr, int max_cqe);
// Fault injection for tests: queues a synthetic async event that the next
// get_async_event on ctx returns before any real one. Its ack is swallowed
// (acking an event the library never reported would unbalance the counts
// ibv_destroy_qp/cq wait on). Inert unless called.
void inject_async_event(ibv_context *ctx, const ibv_async_event &ev);
// True while an injected async event waits: the async fd is not readable
// for it, so a caller that polls the fd first must ask this too.
bool async_injected();

int query_device(ibv_context *ctx, ibv_device_attr *attr);
int query_port(ibv_context *ctx, uint8_t port, ibv_port_attr *attr);
int query_gid(ibv_context *ctx, uint8_t port, int index, ibv_gid *gid);
int alloc_pd(ibv_context *ctx, ibv_pd **out);
int dealloc_pd(ibv_pd *pd);
int reg_mr(ibv_pd *pd, void *addr, size_t len, int access, ibv_mr **out);
int dereg_mr(ibv_mr *mr);
int alloc_mw(ibv_pd *pd, ibv_mw_type type, ibv_mw **out);
int dealloc_mw(ibv_mw *mw);
int create_comp_channel(ibv_context *ctx, ibv_comp_channel **out);
int destroy_comp_channel(ibv_comp_channel *ch);
int create_cq(ibv_context *ctx, int cqe, ibv_comp_channel *ch, ibv_cq **out);
int destroy_cq(ibv_cq *cq);
int resize_cq(ibv_cq *cq, int cqe);
int req_notify_cq(ibv_cq *cq);
int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq);
void ack_cq_events(ibv_cq *cq, unsigned n);
// Returns the number of completions (>= 0) or a negative errno.
inline int poll_cq(ibv_cq *cq, int n, ibv_wc *wc) {
    int r = ibv_poll_cq(cq, n, wc);
    return r >= 0 ? r : -EIO;
}
int create_srq(ibv_pd *pd, ibv_srq_init_attr *attr, ibv_srq **out);
int destroy_srq(ibv_srq *srq);
int arm_srq_limit(ibv_srq *srq, unsigned limit);
// ibv_modify_srq(IBV_SRQ_MAX_WR): on devices with IBV_DEVICE_SRQ_RESIZE.
int resize_srq(ibv_srq *srq, unsigned max_wr);
// Not inline, so tests can fail it (once per batch of receives: cheap);
// a call even from flattened code (core/hot.h), which its check would bloat.
RDMX_SLOW_PATH int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad);
inline int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad) { return ibv_post_send(qp, wr, bad); }
int get_async_event(ibv_context *ctx, ibv_async_event *ev);
void ack_async_event(ibv_async_event *ev);
int set_nonblock(int fd);

// rdma_cm
int create_event_channel(rdma_event_channel **out);
void destroy_event_channel(rdma_event_channel *ch);
int create_id(rdma_event_channel *ch, rdma_cm_id **out, void *ctx);
int destroy_id(rdma_cm_id *id);
int bind_addr(rdma_cm_id *id, sockaddr *addr);
int listen(rdma_cm_id *id, int backlog);
int resolve_addr(rdma_cm_id *id, sockaddr *src, sockaddr *dst, int timeout_ms);
int resolve_route(rdma_cm_id *id, int timeout_ms);
int create_qp(rdma_cm_id *id, ibv_pd *pd, ibv_qp_init_attr *attr);
void destroy_qp(rdma_cm_id *id);
int connect(rdma_cm_id *id, rdma_conn_param *param);
int accept(rdma_cm_id *id, rdma_conn_param *param);
int reject(rdma_cm_id *id, const void *priv, uint8_t len);
int disconnect(rdma_cm_id *id);
int set_ack_timeout(rdma_cm_id *id, uint8_t exponent);
int notify(rdma_cm_id *id, ibv_event_type ev);
int get_cm_event(rdma_event_channel *ch, rdma_cm_event **ev);
int ack_cm_event(rdma_cm_event *ev);
// After every id on a removed device is destroyed: librdmacm closes its
// verbs context for that device only once it rescans the device list, and
// the kernel finishes the removal only when that context is closed.
void release_removed_devices();

}  // namespace rdmx::vx
