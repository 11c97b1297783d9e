// rdmx_bcast: binomial tree (small) and scatter + ring allgather (large,
// van de Geijn).
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_select.h"

namespace rdmx::coll {

namespace {

// ceil(log2 p) rounds of the whole message: receive from the parent, then
// forward to the children, largest subtree first.
rdmx_status_t bcast_binomial(const Comm &c, std::byte *buf, size_t len, int root) {
    const TagBase tag{Kind::Bcast, 0};
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    if (v != 0) {
        const int parent = real_rank(tree_parent(v), root, p);
        if (rdmx_status_t st = exchange(c, nullptr, 0, -1, buf, len, parent, tag.at(0)); st != RDMX_OK)
            return st;
    }
    const int end = tree_subtree_end(v, p);
    Batch b(c, static_cast<size_t>(ceil_log2(p)) + 1);
    int m = 1;
    while (m < end - v) m *= 2;
    for (m /= 2; m > 0; m /= 2)
        if (v + m < end) b.send(buf, len, real_rank(v + m, root, p), tag.at(0));
    return b.wait();
}

// The message is cut in p blocks; a binomial scatter gives relative rank v
// block v, then a ring allgather (over relative ranks) completes everyone.
// Each rank moves about 2n bytes, whatever p.
rdmx_status_t bcast_scatter_allgather(const Comm &c, std::byte *buf, size_t len, int root) {
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const Partition part = Partition::even(len, p, 1);
    rdmx_status_t st = tree_scatter(c, buf, buf + part.begin(v), part, root, TagBase{Kind::Bcast, 1});
    if (st != RDMX_OK) return st;
    return ring_allgather(c, buf, part, root, TagBase{Kind::Bcast, 2});
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_bcast(rdmx_context_h ctx, void *buf, size_t len, int root) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_bcast");
        const Comm c = a.comm(ctx);
        a.buffer("buf", buf, len);
        a.root(root, c.size);
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_bcast", Signature{Kind::Bcast, len, -1, -1, root}); st != RDMX_OK) return st;
        if (c.size == 1 || len == 0) return RDMX_OK;
        auto *b = static_cast<std::byte *>(buf);
        if (select_bcast(len, c.size) == Algo::ScatterAllgather) return bcast_scatter_allgather(c, b, len, root);
        return bcast_binomial(c, b, len, root);
    });
}
