// Shared plumbing of the collectives layer: the communicator view, message
// tags, request batches and small helpers. Built on the public API only.
#ifndef RDMX_COLLECTIVES_COLL_INTERNAL_H
#define RDMX_COLLECTIVES_COLL_INTERNAL_H

#include <rdmx/rdmx.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace rdmx::coll {

/** The calling rank's view of the job. */
struct Comm {
    rdmx_context_h ctx = nullptr;
    int rank = -1;
    int size = 0;
};

/** Rank arithmetic modulo the job size. */
inline int mod(int a, int p) noexcept { return ((a % p) + p) % p; }
/** Rank relative to `root` (the root is 0) and back. */
inline int rel_rank(int r, int root, int p) noexcept { return mod(r - root, p); }
inline int real_rank(int v, int root, int p) noexcept { return mod(v + root, p); }
/** Largest power of two <= p (p >= 1). */
inline int pow2_floor(int p) noexcept {
    int x = 1;
    while (x <= p / 2) x *= 2;
    return x;
}
inline bool is_pow2(int p) noexcept { return p > 0 && (p & (p - 1)) == 0; }
/** Number of rounds of a doubling loop over p ranks: ceil(log2(p)). */
inline int ceil_log2(int p) noexcept {
    int r = 0;
    for (int x = 1; x < p; x *= 2) ++r;
    return r;
}

/**
 * Tags. Every collective kind owns a range of the COLL tag space, split in
 * phases (e.g. the fold, the main exchange, the allgather of a composite
 * algorithm) and steps (rounds) within a phase, so that no message of one
 * round can be taken for another's even before the non-overtaking order is
 * considered. Steps wrap at 2^20 (harmless: matching is per source and in
 * order of sending).
 */
enum class Kind : int {
    Barrier = 1, Bcast, Reduce, Allreduce, ReduceScatter, Allgather, Gather, Scatter, Alltoall,
    Agree,  // the signature check every collective starts with (coll_agree.cc)
    Scan, Exscan, Allgatherv, Gatherv, Scatterv, Alltoallv,
};
struct TagBase {
    Kind kind;
    int phase;  // 0..15
    int at(int step) const noexcept {
        return (static_cast<int>(kind) << 24) | ((phase & 0xF) << 20) | (step & 0xFFFFF);
    }
};

/** Uninitialised scratch bytes (not the small-message hot path). */
class Buffer {
public:
    explicit Buffer(size_t n)
        : p_(n ? std::make_unique_for_overwrite<std::byte[]>(n) : nullptr), n_(n) {}
    std::byte *data() noexcept { return p_.get(); }
    size_t size() const noexcept { return n_; }

private:
    std::unique_ptr<std::byte[]> p_;
    size_t n_;
};

/**
 * A set of nonblocking sends/receives completed together. Receives should be
 * posted before sends. The first error (posting or completing) wins and is
 * sticky: after it nothing more is posted, but every request already posted
 * is still waited for and freed (by wait(), or by the destructor if an
 * exception unwinds through the caller). Zero-length operations are skipped
 * unless the batch was made with skip_empty = false: in every algorithm
 * both ends compute the same length, so both skip.
 */
class Batch {
public:
    static constexpr size_t kInline = 8;
    explicit Batch(const Comm &c, size_t capacity = kInline, bool skip_empty = true);
    ~Batch();
    Batch(const Batch &) = delete;
    Batch &operator=(const Batch &) = delete;

    void send(const void *buf, size_t len, int dest, int tag) noexcept;
    void recv(void *buf, size_t len, int source, int tag) noexcept;
    /** Complete every posted request; returns the sticky first error. A
     *  receive that got another length than it was posted for is an error
     *  (RDMX_ERR_INVALID_ARG, logged): the ranks disagree on the call. */
    rdmx_status_t wait() noexcept;

private:
    static constexpr size_t kSend = SIZE_MAX;  // want_ of a send: no length to check
    void add(rdmx_status_t posted, rdmx_request_h req, size_t want) noexcept;
    rdmx_status_t check_lengths() noexcept;
    rdmx_request_h *slots() noexcept { return heap_.empty() ? inline_.data() : heap_.data(); }
    size_t *wants() noexcept { return heap_.empty() ? inline_want_.data() : heap_want_.data(); }
    rdmx_msg_info_t *infos() noexcept { return heap_.empty() ? inline_info_.data() : heap_info_.data(); }

    const Comm &c_;
    size_t cap_;
    size_t n_ = 0;
    bool skip_empty_;
    rdmx_status_t err_ = RDMX_OK;
    std::array<rdmx_request_h, kInline> inline_{};
    std::array<size_t, kInline> inline_want_{};
    std::array<rdmx_msg_info_t, kInline> inline_info_{};
    std::vector<rdmx_request_h> heap_;
    std::vector<size_t> heap_want_;
    std::vector<rdmx_msg_info_t> heap_info_;
};

/**
 * What every rank must agree on before a collective moves data: which
 * collective, its size in bytes (per rank block where blocks are per rank),
 * datatype, op and root (-1 where not applicable).
 */
struct Signature {
    Kind kind;
    uint64_t bytes;
    int dt;
    int op;
    int root;
};
/**
 * Compares every rank's signature (ceil(log2 p) rounds of a 16-byte
 * exchange). On disagreement every rank logs its own arguments and returns
 * RDMX_ERR_INVALID_ARG before any data moves: no rank mixes unset scratch
 * into its result, truncates, or waits for a message that never comes.
 * RDMX_COLL_CHECK=0 skips it, unless even_if_off (the barrier, which it is).
 */
rdmx_status_t agree(const Comm &c, const char *fn, const Signature &s, bool even_if_off = false);

/** One step with at most one send and one receive; a peer < 0 means "none". */
rdmx_status_t exchange(const Comm &c, const void *sbuf, size_t slen, int dest, void *rbuf, size_t rlen,
                       int source, int tag);

/** Run the body of a public entry point: no C++ exception leaves. */
template <class F>
rdmx_status_t guarded(F &&body) noexcept {
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return RDMX_ERR_NO_MEMORY;
    } catch (...) {
        return RDMX_ERR_INTERNAL;
    }
}

}  // namespace rdmx::coll

#endif
