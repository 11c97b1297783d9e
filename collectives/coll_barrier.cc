// rdmx_barrier: dissemination (ceil(log2 p) rounds of 16-byte messages: the
// signature check of coll_agree.cc, which is itself a dissemination barrier,
// so a rank calling another collective meanwhile fails instead of hanging).
#include "coll_check.h"
#include "coll_select.h"

namespace rdmx::coll {

namespace {

// Round k: signal rank + 2^k, wait for rank - 2^k. After the last round every
// rank has (transitively) heard from every other one.
rdmx_status_t barrier_dissemination(const Comm &c) {
    return agree(c, "rdmx_barrier", Signature{Kind::Barrier, 0, -1, -1, -1}, /*even_if_off=*/true);
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_barrier(rdmx_context_h ctx) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_barrier");
        const Comm c = a.comm(ctx);
        if (!a.ok()) return a.status();
        if (c.size == 1) return RDMX_OK;
        (void)select_barrier(c.size);  // dissemination is the only algorithm
        return barrier_dissemination(c);
    });
}
