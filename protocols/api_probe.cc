// Probes: rdmx_probe/iprobe look at the oldest matching unexpected message;
// the matched probes (mprobe/improbe) take it off the queue, so the
// receive that follows (mrecv/imrecv) cannot lose it to another thread.
#include <new>

#include "core/log.h"
#include "protocols/api_internal.h"
#include "protocols/context.h"

using rdmx::Ctx;
using namespace rdmx::api;

// A message a matched probe took: its engine, its communicator and the
// unexpected entry (kept on the engine's matched_msgs list until received).
struct rdmx_message {
    Ctx *c = nullptr;
    rdmx::CommView *v = nullptr;
    rdmx::Unexp *u = nullptr;
};

namespace {

const rdmx_msg_info_t kProcNullInfo = {RDMX_PROC_NULL, RDMX_ANY_TAG, 0, RDMX_OK};

rdmx_msg_info_t info_of(const rdmx::CommView *v, const rdmx::Unexp *u) {
    return {v->from_engine(u->bits.source), u->bits.tag, u->len, RDMX_OK};
}

rdmx_status_t check_probe(const char *fn, rdmx_context_h ctx, Handle *h, int source, int tag) {
    if (rdmx_status_t st = check_handle(fn, ctx, h)) return st;
    if (rdmx_status_t st = check_peer(fn, *h, source, true)) return st;
    if (tag < RDMX_ANY_TAG) RDMX_BAD_ARG("%s: tag %d is negative (and not RDMX_ANY_TAG)", fn, tag);
    return RDMX_OK;
}

// One look (after a progress pass): the oldest match, taken off the queue
// when `take` (then parked on matched_msgs, and *msg_p made).
rdmx_status_t probe_once(const Handle &h, int source, int tag, bool take, int *found_p, rdmx_message_h *msg_p,
                         rdmx_msg_info_t *info_p) {
    Ctx *c = h.c;
    rdmx::note_app_call(c);
    rdmx::progress(c, false);
    rdmx_message *m = take ? new rdmx_message : nullptr;
    std::lock_guard<rdmx::SpinLock> g(c->lock);
    const int want = source >= 0 ? h.v->to_engine(source) : source;
    rdmx::UnexpEntry *ue = c->matcher.find_unexpected({static_cast<uint8_t>(RDMX_TAGSPACE_USER), want, tag, h.v->id}, take);
    if (ue == nullptr) {
        delete m;
        return RDMX_OK;
    }
    auto *u = static_cast<rdmx::Unexp *>(ue);
    *found_p = 1;
    if (info_p != nullptr) *info_p = info_of(h.v, u);
    if (take) {
        c->matched_msgs.push_back(&u->order_node);
        *m = {c, h.v, u};
        *msg_p = m;
    }
    return RDMX_OK;
}

// The blocking probes: look, and sleep until the unexpected queue changes.
rdmx_status_t probe_wait(const char *fn, rdmx_context_h ctx, int source, int tag, bool take, rdmx_message_h *msg_p,
                         rdmx_msg_info_t *info_p) {
    for (;;) {
        Handle h;
        if (rdmx_status_t st = check_probe(fn, ctx, &h, source, tag)) return st;
        Ctx *c = h.c;
        Pin pin(c);
        if (!pin) RDMX_BAD_ARG("%s: ctx %p is being finalized", fn, (void *)ctx);
        if (source == RDMX_PROC_NULL) {
            if (info_p != nullptr) *info_p = kProcNullInfo;
            return RDMX_OK;
        }
        // Read before looking, so a message arriving in between wakes the wait below.
        const uint64_t seen = c->change_epoch.load(std::memory_order_seq_cst);
        int found = 0;
        rdmx_status_t st =
            guarded(fn, [&] { return probe_once(h, source, tag, take, &found, msg_p, info_p); });
        if (st != RDMX_OK || found) return st;
        if (c->finalized.load(std::memory_order_acquire)) return RDMX_ERR_CANCELED;
        {
            std::lock_guard<rdmx::SpinLock> g(c->lock);
            const int peer = source >= 0 ? h.v->to_engine(source) : -1;
            if (peer >= 0 && c->peers[static_cast<size_t>(peer)].failed)
                return rdmx::peer_failure(c->peers[static_cast<size_t>(peer)]);
        }
        st = guarded(fn, [&] {
            rdmx::wait_change(c, seen);
            return RDMX_OK;
        });
        if (st != RDMX_OK) return st;
        if (c->finalized.load(std::memory_order_acquire)) return RDMX_ERR_CANCELED;
    }
}

rdmx_status_t iprobe_common(const char *fn, rdmx_context_h ctx, int source, int tag, bool take, int *found_p,
                            rdmx_message_h *msg_p, rdmx_msg_info_t *info_p) {
    if (found_p == nullptr) RDMX_BAD_ARG("%s: found_p is NULL", fn);
    *found_p = 0;
    Handle h;
    if (rdmx_status_t st = check_probe(fn, ctx, &h, source, tag)) return st;
    Pin pin(h.c);
    if (!pin) RDMX_BAD_ARG("%s: ctx %p is being finalized", fn, (void *)ctx);
    if (source == RDMX_PROC_NULL) {
        *found_p = 1;
        if (info_p != nullptr) *info_p = kProcNullInfo;
        return RDMX_OK;
    }
    rdmx::wake_if_deep(h.c);  // a polling loop of probes may compute between them
    return guarded(fn, [&] { return probe_once(h, source, tag, take, found_p, msg_p, info_p); });
}

}  // namespace

extern "C" {

rdmx_status_t rdmx_iprobe(rdmx_context_h ctx, int source, int tag, int *found_p, rdmx_msg_info_t *info_p) {
    return iprobe_common("rdmx_iprobe", ctx, source, tag, false, found_p, nullptr, info_p);
}

rdmx_status_t rdmx_probe(rdmx_context_h ctx, int source, int tag, rdmx_msg_info_t *info_p) {
    return probe_wait("rdmx_probe", ctx, source, tag, false, nullptr, info_p);
}

rdmx_status_t rdmx_improbe(rdmx_context_h ctx, int source, int tag, int *found_p, rdmx_message_h *msg_p,
                           rdmx_msg_info_t *info_p) {
    if (msg_p == nullptr) RDMX_BAD_ARG("rdmx_improbe: msg_p is NULL");
    *msg_p = nullptr;
    return iprobe_common("rdmx_improbe", ctx, source, tag, true, found_p, msg_p, info_p);
}

rdmx_status_t rdmx_mprobe(rdmx_context_h ctx, int source, int tag, rdmx_message_h *msg_p, rdmx_msg_info_t *info_p) {
    if (msg_p == nullptr) RDMX_BAD_ARG("rdmx_mprobe: msg_p is NULL");
    *msg_p = nullptr;
    return probe_wait("rdmx_mprobe", ctx, source, tag, true, msg_p, info_p);
}

// A NULL message (a probe of RDMX_PROC_NULL) gives a NULL, finished request.
rdmx_status_t rdmx_imrecv(void *buf, size_t len, rdmx_message_h *msg_p, rdmx_request_h *req_p) {
    if (req_p == nullptr) RDMX_BAD_ARG("rdmx_imrecv: req_p is NULL");
    *req_p = nullptr;
    if (msg_p == nullptr) RDMX_BAD_ARG("rdmx_imrecv: msg_p is NULL");
    rdmx_message *m = *msg_p;
    if (m == nullptr) return RDMX_OK;
    if (buf == nullptr && len != 0) RDMX_BAD_ARG("rdmx_imrecv: buf is NULL with len %zu", len);
    Ctx *c = m->c;
    Pin pin(c);
    if (!pin) RDMX_BAD_ARG("rdmx_imrecv: message %p belongs to no live context", (void *)m);
    return guarded("rdmx_imrecv", [&] {
        std::lock_guard<rdmx::SpinLock> g(c->lock);
        rdmx_request *r = rdmx::req_alloc(c, ReqKind::kRecv, m->v);
        rdmx::Unexp *u = m->u;
        rdmx::List::unlink(&u->order_node);
        r->buf = buf;
        r->len = len;
        r->tag = u->bits.tag;
        r->space = u->bits.space;
        r->bits = u->bits;
        rdmx::recv_unexpected(c, r, u);
        delete m;
        *msg_p = nullptr;
        *req_p = r;
        return RDMX_OK;
    });
}

rdmx_status_t rdmx_mrecv(void *buf, size_t len, rdmx_message_h *msg_p, rdmx_msg_info_t *info_p) {
    if (msg_p != nullptr && *msg_p == nullptr) {
        if (info_p != nullptr) *info_p = kProcNullInfo;
        return RDMX_OK;
    }
    rdmx_request_h r = nullptr;
    rdmx_status_t st = rdmx_imrecv(buf, len, msg_p, &r);
    return st != RDMX_OK ? st : rdmx_wait(&r, info_p);
}

}  // extern "C"
