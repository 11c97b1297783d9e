// rdmx_reduce: binomial tree, and reduce-scatter + gather for large messages.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_select.h"

#include <cstring>

namespace rdmx::coll {

namespace {

// Relative rank v accumulates its children v + 1, v + 2, v + 4, ... (each
// child's value covers the relative ranks after v's current range, so the
// result is combined in relative rank order) and sends to its parent.
// `acc` is the accumulator: at the root recvbuf, at inner nodes scratch;
// leaves send `src` as it is.
rdmx_status_t reduce_binomial(const Comm &c, const std::byte *src, std::byte *acc, size_t count,
                              const ReduceSpec &rs, int root) {
    const TagBase tag{Kind::Reduce, 0};
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const int end = tree_subtree_end(v, p);
    const size_t bytes = count * rs.esz;
    if (end - v > 1) {
        Buffer tmp(bytes);
        for (int m = 1; v + m < end; m *= 2) {
            rdmx_status_t st = exchange(c, nullptr, 0, -1, tmp.data(), bytes, real_rank(v + m, root, p), tag.at(0));
            if (st != RDMX_OK) return st;
            reduce_local(rs, acc, tmp.data(), count, /*in_left=*/false);
        }
        src = acc;
    }
    if (v == 0) return RDMX_OK;
    return exchange(c, src, bytes, real_rank(tree_parent(v), root, p), nullptr, 0, -1, tag.at(0));
}

// Ring reduce-scatter over relative ranks (relative rank v ends with block v
// of the p-way partition reduced), then a binomial gather of the blocks to
// the root. `work` is a full-size copy of the contribution on every rank.
rdmx_status_t reduce_scatter_gather(const Comm &c, std::byte *work, size_t count, const ReduceSpec &rs, int root) {
    const int v = rel_rank(c.rank, root, c.size);
    const Partition part = Partition::even(count, c.size, rs.esz);
    rdmx_status_t st = ring_reduce_scatter(c, work, part, root, rs, TagBase{Kind::Reduce, 1});
    if (st != RDMX_OK) return st;
    std::byte *win = work + part.begin(v);
    return tree_gather(c, win, win, part, root, TagBase{Kind::Reduce, 2});
}

rdmx_status_t reduce_dispatch(const Comm &c, const void *sendbuf, void *recvbuf, size_t count, const ReduceSpec &rs,
                              int root) {
    const size_t bytes = count * rs.esz;
    const bool is_root = c.rank == root;
    const auto *src = static_cast<const std::byte *>(is_in_place(sendbuf) ? recvbuf : sendbuf);
    std::byte *out = is_root ? static_cast<std::byte *>(recvbuf) : nullptr;
    if (is_root && !is_in_place(sendbuf)) std::memcpy(out, sendbuf, bytes);
    if (c.size == 1) return RDMX_OK;
    if (select_reduce(bytes, count, c.size) == Algo::ReduceScatterGather) {
        Buffer scratch(is_root ? 0 : bytes);
        std::byte *work = is_root ? out : scratch.data();
        if (!is_root) std::memcpy(work, src, bytes);
        return reduce_scatter_gather(c, work, count, rs, root);
    }
    const int v = rel_rank(c.rank, root, c.size);
    const bool inner = tree_subtree_end(v, c.size) - v > 1;
    Buffer scratch(!is_root && inner ? bytes : 0);
    std::byte *acc = is_root ? out : scratch.data();
    if (!is_root && inner) std::memcpy(acc, src, bytes);
    return reduce_binomial(c, src, acc, count, rs, root);
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_reduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                     rdmx_datatype_t dt, rdmx_op_t op, int root) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_reduce");
        const Comm c = a.comm(ctx);
        size_t bytes = 0;
        const size_t esz = a.reduce_to_root(c, sendbuf, recvbuf, count, dt, op, root, &bytes);
        if (!a.ok()) return a.status();
        const Signature sig{Kind::Reduce, bytes, static_cast<int>(dt), static_cast<int>(op), root};
        if (rdmx_status_t st = agree(c, "rdmx_reduce", sig); st != RDMX_OK) return st;
        if (count == 0) return RDMX_OK;
        return reduce_dispatch(c, sendbuf, recvbuf, count, ReduceSpec{dt, op, esz}, root);
    });
}
