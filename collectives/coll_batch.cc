// Request batches: post a step's sends and receives, complete them together.
#include "coll_internal.h"

namespace rdmx::coll {

namespace {
// Address handed to zero-length operations (barrier tokens): never written.
std::byte g_empty_sink{};
}  // namespace

Batch::Batch(const Comm &c, size_t capacity, bool skip_empty) : c_(c), cap_(capacity), skip_empty_(skip_empty) {
    if (cap_ > kInline) heap_.assign(cap_, nullptr);  // may throw: nothing is posted yet
    else cap_ = kInline;
}

Batch::~Batch() { (void)wait(); }

void Batch::add(rdmx_status_t posted, rdmx_request_h req) noexcept {
    if (req != nullptr) {
        if (n_ < cap_) {
            slots()[n_++] = req;
        } else {  // a sizing bug: still never leak the request
            (void)rdmx_wait(&req, nullptr);
            posted = RDMX_ERR_INTERNAL;
        }
    }
    if (posted != RDMX_OK && err_ == RDMX_OK) err_ = posted;
}

void Batch::send(const void *buf, size_t len, int dest, int tag) noexcept {
    if (err_ != RDMX_OK || (len == 0 && skip_empty_)) return;
    rdmx_request_h req = nullptr;
    rdmx_status_t st = rdmx_isend_in(c_.ctx, RDMX_TAGSPACE_COLL, len ? buf : &g_empty_sink, len, dest, tag, &req);
    add(st, req);
}

void Batch::recv(void *buf, size_t len, int source, int tag) noexcept {
    if (err_ != RDMX_OK || (len == 0 && skip_empty_)) return;
    rdmx_request_h req = nullptr;
    rdmx_status_t st = rdmx_irecv_in(c_.ctx, RDMX_TAGSPACE_COLL, len ? buf : &g_empty_sink, len, source, tag, &req);
    add(st, req);
}

rdmx_status_t Batch::wait() noexcept {
    if (n_ > 0) {
        rdmx_status_t st = rdmx_waitall(n_, slots(), nullptr);  // frees every request
        n_ = 0;
        if (st != RDMX_OK && err_ == RDMX_OK) err_ = st;
    }
    return err_;
}

rdmx_status_t exchange(const Comm &c, const void *sbuf, size_t slen, int dest, void *rbuf, size_t rlen,
                       int source, int tag) {
    Batch b(c);
    if (source >= 0) b.recv(rbuf, rlen, source, tag);
    if (dest >= 0) b.send(sbuf, slen, dest, tag);
    return b.wait();
}

}  // namespace rdmx::coll
