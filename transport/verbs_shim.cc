#include "transport/verbs_shim.h"

#include <fcntl.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

namespace rdmx::vx {

namespace {
std::mutex g_inject_mu;
std::string g_inject_match;
std::atomic<int> g_inject_err{0};
int g_inject_times = 0;  // guarded by g_inject_mu
std::atomic<int> g_limit_srq_wr{0}, g_limit_cqe{0};

// Normalisers for the four conventions.
int from_ptr(const void *p) { return p != nullptr ? 0 : (errno != 0 ? errno : ENOMEM); }
int from_ret(int r) { return r == 0 ? 0 : (r > 0 ? r : (errno != 0 ? errno : EIO)); }
int from_minus1(int r) { return r == 0 ? 0 : (errno != 0 ? errno : EIO); }

struct SyntheticAsync {
    ibv_context *ctx;
    ibv_async_event ev;
};
std::atomic<int> g_async_queued{0};     // fast path: no lock unless a test injected
std::deque<SyntheticAsync> g_async_q;   // guarded by g_inject_mu
bool g_async_out = false;               // a synthetic event was handed out, not yet acked
ibv_async_event g_async_last{};

bool same_event(const ibv_async_event &a, const ibv_async_event &b) {
    return a.event_type == b.event_type && std::memcmp(&a.element, &b.element, sizeof(a.element)) == 0;
}

int injected(const char *name) {
    if (g_inject_err.load(std::memory_order_relaxed) == 0) return 0;
    std::lock_guard<std::mutex> g(g_inject_mu);
    if (g_inject_match.empty() || std::strstr(name, g_inject_match.c_str()) == nullptr) return 0;
    if (--g_inject_times > 0) return g_inject_err.load();
    g_inject_match.clear();
    return g_inject_err.exchange(0);
}
}  // namespace

#define RDMX_INJECT(name)                     \
    do {                                      \
        if (int e_ = injected(name)) return e_; \
    } while (0)

void inject_failure(const char *fail_match, int err, int times) {
    std::lock_guard<std::mutex> g(g_inject_mu);
    g_inject_match = fail_match ? fail_match : "";
    g_inject_times = times;
    g_inject_err.store(err);
}

int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad) {
    if (int e = injected("post_srq_recv")) {
        *bad = wr;  // as a real failure of the first WR: nothing posted
        return e;
    }
    return from_ret(ibv_post_srq_recv(srq, wr, bad));
}

void limit_device(int max_srq_wr, int max_cqe) {
    g_limit_srq_wr.store(max_srq_wr);
    g_limit_cqe.store(max_cqe);
}

int query_device(ibv_context *c, ibv_device_attr *a) {
    if (int e = from_ret(ibv_query_device(c, a))) return e;
    const int srq = g_limit_srq_wr.load(std::memory_order_relaxed), cqe = g_limit_cqe.load(std::memory_order_relaxed);
    if (srq > 0 && srq < a->max_srq_wr) a->max_srq_wr = srq;
    if (cqe > 0 && cqe < a->max_cqe) a->max_cqe = cqe;
    return 0;
}
int query_port(ibv_context *c, uint8_t p, ibv_port_attr *a) { return from_ret(ibv_query_port(c, p, a)); }
int query_gid(ibv_context *c, uint8_t p, int i, ibv_gid *g) { return from_minus1(ibv_query_gid(c, p, i, g)); }
int alloc_pd(ibv_context *c, ibv_pd **out) {
    RDMX_INJECT("ibv_alloc_pd");
    errno = 0;
    *out = ibv_alloc_pd(c);
    return from_ptr(*out);
}
int dealloc_pd(ibv_pd *pd) { return from_ret(ibv_dealloc_pd(pd)); }
int reg_mr(ibv_pd *pd, void *addr, size_t len, int access, ibv_mr **out) {
    RDMX_INJECT("ibv_reg_mr");
    errno = 0;
    *out = ibv_reg_mr(pd, addr, len, access);
    return from_ptr(*out);
}
int dereg_mr(ibv_mr *mr) { return from_ret(ibv_dereg_mr(mr)); }
int alloc_mw(ibv_pd *pd, ibv_mw_type type, ibv_mw **out) {
    RDMX_INJECT("ibv_alloc_mw");
    errno = 0;
    *out = ibv_alloc_mw(pd, type);
    return from_ptr(*out);
}
int dealloc_mw(ibv_mw *mw) { return from_ret(ibv_dealloc_mw(mw)); }
int create_comp_channel(ibv_context *c, ibv_comp_channel **out) {
    errno = 0;
    *out = ibv_create_comp_channel(c);
    return from_ptr(*out);
}
int destroy_comp_channel(ibv_comp_channel *ch) { return from_ret(ibv_destroy_comp_channel(ch)); }
int create_cq(ibv_context *c, int cqe, ibv_comp_channel *ch, ibv_cq **out) {
    RDMX_INJECT("ibv_create_cq");
    errno = 0;
    *out = ibv_create_cq(c, cqe, nullptr, ch, 0);
    return from_ptr(*out);
}
int destroy_cq(ibv_cq *cq) { return from_ret(ibv_destroy_cq(cq)); }
int resize_cq(ibv_cq *cq, int cqe) {
    RDMX_INJECT("ibv_resize_cq");
    return from_ret(ibv_resize_cq(cq, cqe));
}
int req_notify_cq(ibv_cq *cq) { return from_ret(ibv_req_notify_cq(cq, 0)); }
int get_cq_event(ibv_comp_channel *ch, ibv_cq **cq) {
    void *ctx = nullptr;
    errno = 0;
    return from_minus1(ibv_get_cq_event(ch, cq, &ctx));
}
void ack_cq_events(ibv_cq *cq, unsigned n) { ibv_ack_cq_events(cq, n); }
int create_srq(ibv_pd *pd, ibv_srq_init_attr *attr, ibv_srq **out) {
    RDMX_INJECT("ibv_create_srq");
    errno = 0;
    *out = ibv_create_srq(pd, attr);
    return from_ptr(*out);
}
int destroy_srq(ibv_srq *srq) { return from_ret(ibv_destroy_srq(srq)); }
int arm_srq_limit(ibv_srq *srq, unsigned limit) {
    ibv_srq_attr a{};
    a.srq_limit = limit;
    return from_ret(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT));
}
int resize_srq(ibv_srq *srq, unsigned max_wr) {
    RDMX_INJECT("ibv_modify_srq");
    ibv_srq_attr a{};
    a.max_wr = max_wr;
    return from_ret(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR));
}
void inject_async_event(ibv_context *ctx, const ibv_async_event &ev) {
    std::lock_guard<std::mutex> g(g_inject_mu);
    g_async_q.push_back({ctx, ev});
    g_async_queued.fetch_add(1);
}
bool async_injected() { return g_async_queued.load(std::memory_order_relaxed) != 0; }
int get_async_event(ibv_context *c, ibv_async_event *ev) {
    if (async_injected()) {
        std::lock_guard<std::mutex> g(g_inject_mu);
        for (auto it = g_async_q.begin(); it != g_async_q.end() && !g_async_out; ++it) {
            if (it->ctx != c) continue;
            *ev = it->ev;
            g_async_last = it->ev;
            g_async_out = true;
            g_async_q.erase(it);
            g_async_queued.fetch_sub(1);
            return 0;
        }
    }
    errno = 0;
    return from_minus1(ibv_get_async_event(c, ev));
}
void ack_async_event(ibv_async_event *ev) {
    {
        std::lock_guard<std::mutex> g(g_inject_mu);
        if (g_async_out && same_event(*ev, g_async_last)) {
            g_async_out = false;
            return;
        }
    }
    ibv_ack_async_event(ev);
}
int set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return errno;
    return 0;
}

int create_event_channel(rdma_event_channel **out) {
    errno = 0;
    *out = rdma_create_event_channel();
    return from_ptr(*out);
}
void destroy_event_channel(rdma_event_channel *ch) { rdma_destroy_event_channel(ch); }
int create_id(rdma_event_channel *ch, rdma_cm_id **out, void *ctx) {
    errno = 0;
    return from_minus1(rdma_create_id(ch, out, ctx, RDMA_PS_TCP));
}
int destroy_id(rdma_cm_id *id) { return from_minus1(rdma_destroy_id(id)); }
int bind_addr(rdma_cm_id *id, sockaddr *a) {
    errno = 0;
    return from_minus1(rdma_bind_addr(id, a));
}
int listen(rdma_cm_id *id, int backlog) {
    errno = 0;
    return from_minus1(rdma_listen(id, backlog));
}
int resolve_addr(rdma_cm_id *id, sockaddr *s, sockaddr *d, int t) {
    RDMX_INJECT("rdma_resolve_addr");
    errno = 0;
    return from_minus1(rdma_resolve_addr(id, s, d, t));
}
int resolve_route(rdma_cm_id *id, int t) {
    errno = 0;
    return from_minus1(rdma_resolve_route(id, t));
}
int create_qp(rdma_cm_id *id, ibv_pd *pd, ibv_qp_init_attr *attr) {
    RDMX_INJECT("rdma_create_qp");
    errno = 0;
    return from_minus1(rdma_create_qp(id, pd, attr));
}
void destroy_qp(rdma_cm_id *id) { rdma_destroy_qp(id); }
int connect(rdma_cm_id *id, rdma_conn_param *p) {
    errno = 0;
    return from_minus1(rdma_connect(id, p));
}
int accept(rdma_cm_id *id, rdma_conn_param *p) {
    errno = 0;
    return from_minus1(rdma_accept(id, p));
}
int reject(rdma_cm_id *id, const void *priv, uint8_t len) {
    errno = 0;
    return from_minus1(rdma_reject(id, priv, len));
}
int set_ack_timeout(rdma_cm_id *id, uint8_t exponent) {
    return from_minus1(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &exponent, sizeof(exponent)));
}
int disconnect(rdma_cm_id *id) {
    errno = 0;
    return from_minus1(rdma_disconnect(id));
}
int notify(rdma_cm_id *id, ibv_event_type ev) {
    errno = 0;
    return from_minus1(rdma_notify(id, ev));
}
int get_cm_event(rdma_event_channel *ch, rdma_cm_event **ev) {
    errno = 0;
    return from_minus1(rdma_get_cm_event(ch, ev));
}
int ack_cm_event(rdma_cm_event *ev) { return from_minus1(rdma_ack_cm_event(ev)); }
void release_removed_devices() {
    // rdma_get_devices rescans and closes the contexts of devices that are
    // gone and no longer referenced; the list itself is of no use here. As a
    // side effect librdmacm opens the devices still present (and keeps them
    // open until exit), so this runs only after a removal.
    if (ibv_context **list = rdma_get_devices(nullptr)) rdma_free_devices(list);
}

}  // namespace rdmx::vx
