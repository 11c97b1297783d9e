// rdmx_allreduce: recursive doubling (small), ring and Rabenseifner (large).
// Every algorithm combines in an order fixed by ranks alone, and every rank
// ends with bitwise the same result.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_select.h"

#include <cstring>

namespace rdmx::coll {

namespace {

// Fold to pof2 ranks, log2(pof2) full-message exchanges (lower new rank on
// the left, so both partners compute the very same expression), unfold.
rdmx_status_t allreduce_recursive_doubling(const Comm &c, std::byte *work, size_t count, const ReduceSpec &rs) {
    const Fold f(c.size);
    const size_t bytes = count * rs.esz;
    Buffer tmp(f.newrank(c.rank) >= 0 ? bytes : 0);  // before any traffic
    rdmx_status_t st = fold_reduce_in(c, f, work, count, rs, TagBase{Kind::Allreduce, 0});
    if (st != RDMX_OK) return st;
    if (const int v = f.newrank(c.rank); v >= 0) {
        const TagBase tag{Kind::Allreduce, 1};
        int step = 0;
        for (int d = 1; d < f.pof2; d *= 2, ++step) {
            const int partner = v ^ d;
            st = exchange(c, work, bytes, f.real(partner), tmp.data(), bytes, f.real(partner), tag.at(step));
            if (st != RDMX_OK) return st;
            reduce_local(rs, work, tmp.data(), count, partner < v);
        }
    }
    return fold_copy_out(c, f, work, bytes, TagBase{Kind::Allreduce, 2});
}

// Ring reduce-scatter then ring allgather of p near-equal blocks:
// 2(p-1) steps, each rank sends and receives 2n(p-1)/p bytes.
rdmx_status_t allreduce_ring(const Comm &c, std::byte *work, size_t count, const ReduceSpec &rs) {
    const Partition part = Partition::even(count, c.size, rs.esz);
    rdmx_status_t st = ring_reduce_scatter(c, work, part, 0, rs, TagBase{Kind::Allreduce, 3});
    if (st != RDMX_OK) return st;
    return ring_allgather(c, work, part, 0, TagBase{Kind::Allreduce, 4});
}

// Rabenseifner: fold to pof2 ranks, recursive halving reduce-scatter and
// recursive doubling allgather of pof2 near-equal blocks, unfold:
// 2 log2(pof2) steps moving 2n(pof2-1)/pof2 bytes (plus 2n for the fold).
rdmx_status_t allreduce_rabenseifner(const Comm &c, std::byte *work, size_t count, const ReduceSpec &rs) {
    const Fold f(c.size);
    const Partition part = Partition::even(count, f.pof2, rs.esz);
    rdmx_status_t st = fold_reduce_in(c, f, work, count, rs, TagBase{Kind::Allreduce, 5});
    if (st != RDMX_OK) return st;
    if (f.newrank(c.rank) >= 0) {
        st = halving_reduce_scatter(c, f, work, part, rs, TagBase{Kind::Allreduce, 6});
        if (st != RDMX_OK) return st;
        st = doubling_allgather(c, f, work, part, TagBase{Kind::Allreduce, 7});
        if (st != RDMX_OK) return st;
    }
    return fold_copy_out(c, f, work, count * rs.esz, TagBase{Kind::Allreduce, 8});
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_allreduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                        rdmx_datatype_t dt, rdmx_op_t op) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_allreduce");
        const Comm c = a.comm(ctx);
        size_t bytes = 0;
        const size_t esz = a.reduce_to_all(sendbuf, recvbuf, count, dt, op, &bytes);
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_allreduce", Signature{Kind::Allreduce, bytes, static_cast<int>(dt), static_cast<int>(op), -1}); st != RDMX_OK) return st;
        if (count == 0) return RDMX_OK;
        auto *work = static_cast<std::byte *>(recvbuf);
        if (!is_in_place(sendbuf)) std::memcpy(work, sendbuf, bytes);
        if (c.size == 1) return RDMX_OK;
        const ReduceSpec rs{dt, op, esz};
        switch (select_allreduce(bytes, count, c.size)) {
        case Algo::Ring: return allreduce_ring(c, work, count, rs);
        case Algo::Rabenseifner: return allreduce_rabenseifner(c, work, count, rs);
        default: return allreduce_recursive_doubling(c, work, count, rs);
        }
    });
}
