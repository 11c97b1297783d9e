// Nonblocking reduce (binomial tree) and allreduce (recursive doubling with
// the non-power-of-two fold) as schedules (coll_nbc.h). Operand orders are
// the blocking algorithms': fixed by ranks, never by timing, so every rank of
// an allreduce ends with bitwise the same result.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_nbc.h"

#include <cstring>

namespace rdmx::coll::nbc {

namespace {

// Relative rank v receives from all its children v + 1, v + 2, v + 4, ... at
// once, then folds them into its accumulator in that order (each child's
// value covers the relative ranks after v's current range) and sends the
// result to its parent. `acc` holds this rank's contribution on entry (at
// inner nodes and the root); leaves send `src` as it is.
void build_reduce(Schedule &s, const std::byte *src, std::byte *acc, size_t count, size_t esz, int root) {
    const Comm &c = s.comm();
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const int end = tree_subtree_end(v, p);
    const size_t bytes = count * esz;
    if (end - v > 1) {
        int children = 0;
        for (int m = 1; v + m < end; m *= 2) ++children;
        std::byte *tmp = s.scratch(static_cast<size_t>(children) * bytes);
        int i = 0;
        for (int m = 1; v + m < end; m *= 2, ++i)
            s.recv(tmp + static_cast<size_t>(i) * bytes, bytes, real_rank(v + m, root, p), 0);
        for (int j = 0; j < children; ++j) s.reduce(acc, tmp + static_cast<size_t>(j) * bytes, count, false);
        s.end_round();
        src = acc;
    }
    if (v == 0) return;
    s.send(src, bytes, real_rank(tree_parent(v), root, p), 0);
    s.end_round();
}

// Fold to pof2 ranks (even ranks < 2*rem hand their data to the odd rank
// above, lower rank on the left), log2(pof2) full exchanges among new ranks
// (lower new rank on the left), unfold. Steps: 0 fold, 1.. doubling, last unfold.
void build_allreduce(Schedule &s, std::byte *work, size_t count, size_t esz) {
    const Comm &c = s.comm();
    const int r = c.rank;
    const Fold f(c.size);
    const int v = f.newrank(r);
    const size_t bytes = count * esz;
    std::byte *tmp = v >= 0 ? s.scratch(bytes) : nullptr;
    const bool folded = r < 2 * f.rem;
    if (folded) {
        if (r % 2 == 0) {
            s.send(work, bytes, r + 1, 0);
        } else {
            s.recv(tmp, bytes, r - 1, 0);
            s.reduce(work, tmp, count, /*in_left=*/true);
        }
        s.end_round();
    }
    int step = 1;
    if (v >= 0) {
        for (int d = 1; d < f.pof2; d *= 2, ++step) {
            const int partner = v ^ d;
            s.recv(tmp, bytes, f.real(partner), step);
            s.send(work, bytes, f.real(partner), step);
            s.reduce(work, tmp, count, partner < v);
            s.end_round();
        }
    }
    const int unfold_step = 1 + ceil_log2(f.pof2);
    if (folded) {
        if (r % 2 == 0) s.recv(work, bytes, r + 1, unfold_step);
        else s.send(work, bytes, r - 1, unfold_step);
        s.end_round();
    }
}

}  // namespace

}  // namespace rdmx::coll::nbc

using namespace rdmx::coll;
using namespace rdmx::coll::nbc;

extern "C" rdmx_status_t rdmx_ireduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                      rdmx_datatype_t dt, rdmx_op_t op, int root, rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_ireduce");
        const Comm c = a.comm(ctx);
        size_t bytes = 0;
        const size_t esz = a.reduce_to_root(c, sendbuf, recvbuf, count, dt, op, root, &bytes);
        const bool is_root = a.ok() && c.rank == root;
        if (req_p == nullptr) a.fail("req_p", "NULL");
        else *req_p = nullptr;
        if (!a.ok()) return a.status();
        auto s = std::make_unique<Schedule>(c, "rdmx_ireduce");
        s->set_reduce(ReduceSpec{dt, op, esz});
        if (count > 0) {
            const auto *src = static_cast<const std::byte *>(is_in_place(sendbuf) ? recvbuf : sendbuf);
            std::byte *acc = is_root ? static_cast<std::byte *>(recvbuf) : nullptr;
            const int v = rel_rank(c.rank, root, c.size);
            if (!is_root && tree_subtree_end(v, c.size) - v > 1) acc = s->scratch(bytes);  // an inner node
            if (acc != nullptr && acc != src) std::memcpy(acc, src, bytes);
            if (c.size > 1) build_reduce(*s, src, acc, count, esz, root);
        }
        return start(std::move(s), req_p);
    });
}

extern "C" rdmx_status_t rdmx_iallreduce(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                         rdmx_datatype_t dt, rdmx_op_t op, rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_iallreduce");
        const Comm c = a.comm(ctx);
        size_t bytes = 0;
        const size_t esz = a.reduce_to_all(sendbuf, recvbuf, count, dt, op, &bytes);
        if (req_p == nullptr) a.fail("req_p", "NULL");
        else *req_p = nullptr;
        if (!a.ok()) return a.status();
        auto s = std::make_unique<Schedule>(c, "rdmx_iallreduce");
        s->set_reduce(ReduceSpec{dt, op, esz});
        if (count > 0) {
            auto *work = static_cast<std::byte *>(recvbuf);
            if (!is_in_place(sendbuf)) std::memcpy(work, sendbuf, bytes);
            if (c.size > 1) build_allreduce(*s, work, count, esz);
        }
        return start(std::move(s), req_p);
    });
}
