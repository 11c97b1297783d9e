// rdmx_barrier: dissemination (ceil(log2 p) rounds of zero-byte messages).
#include "coll_check.h"
#include "coll_select.h"

namespace rdmx::coll {

namespace {

// Round k: signal rank + 2^k, wait for rank - 2^k. After the last round every
// rank has (transitively) heard from every other one.
rdmx_status_t barrier_dissemination(const Comm &c) {
    const TagBase tag{Kind::Barrier, 0};
    Batch b(c, Batch::kInline, /*skip_empty=*/false);
    int round = 0;
    for (int k = 1; k < c.size; k *= 2, ++round) {
        b.recv(nullptr, 0, mod(c.rank - k, c.size), tag.at(round));
        b.send(nullptr, 0, mod(c.rank + k, c.size), tag.at(round));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    return RDMX_OK;
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
