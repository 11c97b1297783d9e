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
