// Argument checks of the collective entry points. Checks are sticky: after
// the first failure (logged as one line naming the argument) the others are
// skipped and status() returns RDMX_ERR_INVALID_ARG. Nothing is sent before
// every check has passed, so a bad call changes no state.
#ifndef RDMX_COLLECTIVES_COLL_CHECK_H
#define RDMX_COLLECTIVES_COLL_CHECK_H

#include "coll_internal.h"

namespace rdmx::coll {

class Args {
public:
    explicit Args(const char *fn) noexcept : fn_(fn) {}

    /** The context's rank and size; invalid if rdmx_rank(ctx) < 0. */
    Comm comm(rdmx_context_h ctx) noexcept;
    /** Element size of dt, checking dt, op and the op/dt combination. Taken
     *  by reference: a C caller may pass any int, and loading an enum outside
     *  its range is undefined in C++, so the checks read the bytes. */
    size_t dt_op(const rdmx_datatype_t &dt, const rdmx_op_t &op) noexcept;
    /** n * esz, invalid if it overflows. */
    size_t bytes(const char *name, size_t n, size_t esz) noexcept;
    /** NULL is only allowed for 0 bytes; RDMX_IN_PLACE only where in_place_ok. */
    void buffer(const char *name, const void *p, size_t bytes, bool in_place_ok = false) noexcept;
    void root(int root, int p) noexcept;
    /** The two byte ranges must not overlap (RDMX_IN_PLACE / empty ranges never do). */
    void disjoint(const char *a_name, const void *a, size_t a_len, const char *b_name, const void *b,
                  size_t b_len) noexcept;

    /** The per-rank blocks of a v-collective (n of them, lengths and
     *  displacements in bytes): the arrays must not be NULL, no block end may
     *  overflow, and `buf` may be NULL only if every length is 0. */
    void blocks(const char *buf_name, const void *buf, const char *lens_name, const size_t *lens,
                const char *displs_name, const size_t *displs, int n) noexcept;
    /** `len` must equal lens[rank] (the block a rank sends to itself). */
    void own_block(const char *lens_name, const size_t *lens, int rank, size_t len) noexcept;
    /**
     * No nonempty receive block overlaps another receive block or a send
     * block (send blocks may overlap each other: they are only read). A
     * single range is passed as one block with displacement 0; a NULL
     * `lens` means "no blocks" (RDMX_IN_PLACE, or a rank where the buffer
     * is not used). Sorts the blocks: O(n log n), may throw std::bad_alloc.
     */
    void disjoint_blocks(const char *send_name, const void *send, const size_t *slens, const size_t *sdispls,
                         int sn, const char *recv_name, const void *recv, const size_t *rlens,
                         const size_t *rdispls, int rn);

    /** The reduction's element size, byte count and buffers, as every
     *  reduce-to-root entry point checks them (blocking or not): dt/op, count,
     *  root, sendbuf (RDMX_IN_PLACE only at the root), recvbuf at the root
     *  only, and no overlap. Returns the element size; *bytes_p gets count*esz. */
    size_t reduce_to_root(const Comm &c, const void *sendbuf, const void *recvbuf, size_t count,
                          const rdmx_datatype_t &dt, const rdmx_op_t &op, int root, size_t *bytes_p) noexcept;
    /** The same for the all-reduce entry points (RDMX_IN_PLACE anywhere). */
    size_t reduce_to_all(const void *sendbuf, const void *recvbuf, size_t count, const rdmx_datatype_t &dt,
                         const rdmx_op_t &op, size_t *bytes_p) noexcept;

    bool ok() const noexcept { return st_ == RDMX_OK; }
    rdmx_status_t status() const noexcept { return st_; }
    void fail(const char *arg, const char *why) noexcept;

private:
    const char *fn_;
    rdmx_status_t st_ = RDMX_OK;
};

inline bool is_in_place(const void *p) noexcept { return p == RDMX_IN_PLACE; }

}  // namespace rdmx::coll

#endif
