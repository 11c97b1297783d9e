// Request batches: post a step's sends and receives, complete them together.
#include "coll_internal.h"

#include <cstdio>

namespace rdmx::coll {

namespace {
// Address handed to zero-length operations (barrier tokens): never written.
std::byte g_empty_sink{};
}  // namespace

Batch::Batch(const Comm &c, size_t capacity, bool skip_empty) : c_(c), cap_(capacity), skip_empty_(skip_empty) {
    if (cap_ > kInline) {  // may throw: nothing is posted yet
        heap_.assign(cap_, nullptr);
        heap_want_.assign(cap_, kSend);
        heap_info_.assign(cap_, rdmx_msg_info_t{});
    } else {
        cap_ = kInline;
    }
}

Batch::~Batch() { (void)wait(); }

void Batch::add(rdmx_status_t posted, rdmx_request_h req, size_t want) noexcept {
    if (req != nullptr) {
        if (n_ < cap_) {
            wants()[n_] = want;
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
    add(st, req, kSend);
}

void Batch::recv(void *buf, size_t len, int source, int tag) noexcept {
    if (err_ != RDMX_OK || (len == 0 && skip_empty_)) return;
    rdmx_request_h req = nullptr;
    rdmx_status_t st = rdmx_irecv_in(c_.ctx, RDMX_TAGSPACE_COLL, len ? buf : &g_empty_sink, len, source, tag, &req);
    add(st, req, len);
}

rdmx_status_t Batch::wait() noexcept {
    if (n_ > 0) {
        rdmx_status_t st = rdmx_waitall(n_, slots(), infos());  // frees every request
        if (st == RDMX_OK) st = check_lengths();
        n_ = 0;
        if (st != RDMX_OK && err_ == RDMX_OK) err_ = st;
    }
    return err_;
}

// Every algorithm posts a receive for exactly what its peer sends, so a
// shorter message means the peer was called with other arguments (the
// signature check makes this unreachable; it stays as the last line of
// defence against a wrong result built from unset scratch). A longer one
// already failed as RDMX_ERR_TRUNCATE.
rdmx_status_t Batch::check_lengths() noexcept {
    for (size_t i = 0; i < n_; ++i) {
        const size_t want = wants()[i];
        const rdmx_msg_info_t &in = infos()[i];
        if (want == kSend || in.length == want) continue;
        std::fprintf(stderr,
                     "rdmx: collective: rank %d received %zu bytes from rank %d (tag 0x%x) where %zu were expected: "
                     "the ranks called the collective with different arguments\n",
                     c_.rank, in.length, in.source, static_cast<unsigned>(in.tag), want);
        return RDMX_ERR_INVALID_ARG;
    }
    return RDMX_OK;
}

rdmx_status_t exchange(const Comm &c, const void *sbuf, size_t slen, int dest, void *rbuf, size_t rlen,
                       int source, int tag) {
    Batch b(c);
    if (source >= 0) b.recv(rbuf, rlen, source, tag);
    if (dest >= 0) b.send(sbuf, slen, dest, tag);
    return b.wait();
}

}  // namespace rdmx::coll
