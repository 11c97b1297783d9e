// rdmx_allgather: recursive doubling (with the non-power-of-two fold), Bruck
// and ring. Rank i's contribution lands at recvbuf + i * len.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_select.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace rdmx::coll {

namespace {

// Fold: even ranks < 2*rem send their block to rank + 1; recursive doubling
// among the pof2 new ranks (new rank v holds the blocks of the original ranks
// it stands for, a contiguous range); unfold: the odd ranks send everything
// to their even partner. log2(pof2) (+2) steps.
rdmx_status_t allgather_recursive_doubling(const Comm &c, std::byte *recvbuf, size_t len) {
    const Fold f(c.size);
    const int r = c.rank;
    const size_t ur = static_cast<size_t>(r);
    std::vector<size_t> off(static_cast<size_t>(f.pof2) + 1);
    for (int v = 0; v <= f.pof2; ++v) off[static_cast<size_t>(v)] = static_cast<size_t>(f.first(v)) * len;
    const Partition part(std::move(off));
    if (r < 2 * f.rem) {
        const TagBase tag{Kind::Allgather, 0};
        rdmx_status_t st = r % 2 == 0
                               ? exchange(c, recvbuf + ur * len, len, r + 1, nullptr, 0, -1, tag.at(0))
                               : exchange(c, nullptr, 0, -1, recvbuf + (ur - 1) * len, len, r - 1, tag.at(0));
        if (st != RDMX_OK) return st;
    }
    if (f.newrank(r) >= 0) {
        rdmx_status_t st = doubling_allgather(c, f, recvbuf, part, TagBase{Kind::Allgather, 1});
        if (st != RDMX_OK) return st;
    }
    return fold_copy_out(c, f, recvbuf, len * static_cast<size_t>(c.size), TagBase{Kind::Allgather, 2});
}

// Bruck: in a scratch buffer rotated so that our block is first, round k
// sends the first min(2^k, p - 2^k) blocks to rank - 2^k and appends as many
// from rank + 2^k; ceil(log2 p) rounds for any p, then one un-rotation.
rdmx_status_t allgather_bruck(const Comm &c, std::byte *recvbuf, size_t len) {
    const int p = c.size, r = c.rank;
    const size_t up = static_cast<size_t>(p), ur = static_cast<size_t>(r);
    Buffer tmp(up * len);
    std::memcpy(tmp.data(), recvbuf + ur * len, len);
    const TagBase tag{Kind::Allgather, 3};
    int step = 0;
    for (int k = 1; k < p; k *= 2, ++step) {
        const size_t n = static_cast<size_t>(std::min(k, p - k)) * len;
        rdmx_status_t st = exchange(c, tmp.data(), n, mod(r - k, p), tmp.data() + static_cast<size_t>(k) * len,
                                    n, mod(r + k, p), tag.at(step));
        if (st != RDMX_OK) return st;
    }
    // tmp block j is rank (r + j) % p's.
    std::memcpy(recvbuf + ur * len, tmp.data(), (up - ur) * len);
    std::memcpy(recvbuf, tmp.data() + (up - ur) * len, ur * len);
    return RDMX_OK;
}

rdmx_status_t allgather_ring(const Comm &c, std::byte *recvbuf, size_t len) {
    return ring_allgather(c, recvbuf, Partition::uniform(len, c.size), 0, TagBase{Kind::Allgather, 4});
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_allgather(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_allgather");
        const Comm c = a.comm(ctx);
        const size_t total = a.bytes("len", len, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("sendbuf", sendbuf, len, /*in_place_ok=*/true);
        a.buffer("recvbuf", recvbuf, total);
        a.disjoint("sendbuf", sendbuf, len, "recvbuf", recvbuf, total);
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_allgather", Signature{Kind::Allgather, len, -1, -1, -1}); st != RDMX_OK) return st;
        if (len == 0) return RDMX_OK;
        auto *out = static_cast<std::byte *>(recvbuf);
        // In place: our block is already at recvbuf + rank * len.
        if (!is_in_place(sendbuf)) std::memcpy(out + static_cast<size_t>(c.rank) * len, sendbuf, len);
        if (c.size == 1) return RDMX_OK;
        switch (select_allgather(total, c.size)) {
        case Algo::Ring: return allgather_ring(c, out, len);
        case Algo::Bruck: return allgather_bruck(c, out, len);
        default: return allgather_recursive_doubling(c, out, len);
        }
    });
}
