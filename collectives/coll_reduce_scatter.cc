// rdmx_reduce_scatter_block: recursive halving (with the non-power-of-two
// fold) and ring.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_select.h"

#include <cstring>
#include <vector>

namespace rdmx::coll {

namespace {

// Fold to pof2 ranks (extra ranks pre-reduce the whole vector into their odd
// partner), recursive halving over the pof2 new ranks where new rank v owns
// the blocks of the original ranks it stands for, then each odd rank < 2*rem
// hands its even partner's block back. log2(pof2) (+2) steps.
rdmx_status_t rsb_recursive_halving(const Comm &c, const std::byte *sendbuf, std::byte *recvbuf, size_t block,
                                    const ReduceSpec &rs) {
    const Fold f(c.size);
    const size_t bytes = block * rs.esz;
    const int r = c.rank;
    Buffer work(bytes * static_cast<size_t>(c.size));
    std::memcpy(work.data(), sendbuf, work.size());
    std::vector<size_t> off(static_cast<size_t>(f.pof2) + 1);
    for (int v = 0; v <= f.pof2; ++v) off[static_cast<size_t>(v)] = static_cast<size_t>(f.first(v)) * bytes;
    const Partition part(std::move(off));
    rdmx_status_t st = fold_reduce_in(c, f, work.data(), block * static_cast<size_t>(c.size), rs,
                                      TagBase{Kind::ReduceScatter, 0});
    if (st != RDMX_OK) return st;
    const TagBase out_tag{Kind::ReduceScatter, 2};
    if (f.newrank(r) < 0)  // an even rank of the fold: its block comes back from r + 1
        return exchange(c, nullptr, 0, -1, recvbuf, bytes, r + 1, out_tag.at(0));
    st = halving_reduce_scatter(c, f, work.data(), part, rs, TagBase{Kind::ReduceScatter, 1});
    if (st != RDMX_OK) return st;
    std::memcpy(recvbuf, work.data() + static_cast<size_t>(r) * bytes, bytes);
    if (r < 2 * f.rem)
        return exchange(c, work.data() + static_cast<size_t>(r - 1) * bytes, bytes, r - 1, nullptr, 0, -1,
                        out_tag.at(0));
    return RDMX_OK;
}

// Ring over p blocks: p - 1 steps, each moving one block.
rdmx_status_t rsb_ring(const Comm &c, const std::byte *sendbuf, std::byte *recvbuf, size_t block,
                       const ReduceSpec &rs) {
    const size_t bytes = block * rs.esz;
    Buffer work(bytes * static_cast<size_t>(c.size));
    std::memcpy(work.data(), sendbuf, work.size());
    const Partition part = Partition::uniform(bytes, c.size);
    rdmx_status_t st = ring_reduce_scatter(c, work.data(), part, 0, rs, TagBase{Kind::ReduceScatter, 3});
    if (st != RDMX_OK) return st;
    std::memcpy(recvbuf, work.data() + part.begin(c.rank), bytes);
    return RDMX_OK;
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_reduce_scatter_block(rdmx_context_h ctx, const void *sendbuf, void *recvbuf,
                                                   size_t count_per_rank, rdmx_datatype_t dt, rdmx_op_t op) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_reduce_scatter_block");
        const Comm c = a.comm(ctx);
        const size_t esz = a.dt_op(dt, op);
        const size_t bytes = a.bytes("count_per_rank", count_per_rank, esz);
        const size_t total = a.bytes("count_per_rank", bytes, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("sendbuf", sendbuf, total);
        a.buffer("recvbuf", recvbuf, bytes);
        a.disjoint("sendbuf", sendbuf, total, "recvbuf", recvbuf, bytes);
        if (!a.ok()) return a.status();
        const Signature sig{Kind::ReduceScatter, bytes, static_cast<int>(dt), static_cast<int>(op), -1};
        if (rdmx_status_t st = agree(c, "rdmx_reduce_scatter_block", sig); st != RDMX_OK) return st;
        if (count_per_rank == 0) return RDMX_OK;
        const auto *src = static_cast<const std::byte *>(sendbuf);
        auto *dst = static_cast<std::byte *>(recvbuf);
        if (c.size == 1) {
            std::memcpy(dst, src, bytes);
            return RDMX_OK;
        }
        const ReduceSpec rs{dt, op, esz};
        if (select_reduce_scatter(total, c.size) == Algo::Ring) return rsb_ring(c, src, dst, count_per_rank, rs);
        return rsb_recursive_halving(c, src, dst, count_per_rank, rs);
    });
}
