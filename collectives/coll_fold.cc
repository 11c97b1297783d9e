// The non-power-of-two fold and the recursive halving / doubling exchanges
// among the folded power-of-two set of ranks.
#include "coll_blocks.h"

#include <algorithm>

namespace rdmx::coll {

rdmx_status_t fold_reduce_in(const Comm &c, const Fold &f, std::byte *work, size_t count, const ReduceSpec &rs,
                             TagBase tag) {
    const int r = c.rank;
    if (r >= 2 * f.rem) return RDMX_OK;
    const size_t bytes = count * rs.esz;
    if (r % 2 == 0) return exchange(c, work, bytes, r + 1, nullptr, 0, -1, tag.at(0));
    Buffer tmp(bytes);
    if (rdmx_status_t st = exchange(c, nullptr, 0, -1, tmp.data(), bytes, r - 1, tag.at(0)); st != RDMX_OK)
        return st;
    reduce_local(rs, work, tmp.data(), count, /*in_left=*/true);  // rank r-1 on the left
    return RDMX_OK;
}

rdmx_status_t fold_copy_out(const Comm &c, const Fold &f, std::byte *buf, size_t bytes, TagBase tag) {
    const int r = c.rank;
    if (r >= 2 * f.rem) return RDMX_OK;
    if (r % 2 == 0) return exchange(c, nullptr, 0, -1, buf, bytes, r + 1, tag.at(0));
    return exchange(c, buf, bytes, r - 1, nullptr, 0, -1, tag.at(0));
}

// Distance pof2/2 first: new rank v keeps the half of the current window
// [lo, hi) (in new ranks) that contains v and sends the other half.
rdmx_status_t halving_reduce_scatter(const Comm &c, const Fold &f, std::byte *work, const Partition &part,
                                     const ReduceSpec &rs, TagBase tag) {
    const int v = f.newrank(c.rank);
    if (f.pof2 == 1) return RDMX_OK;
    const int half = f.pof2 / 2;
    Buffer tmp(std::max(part.span(0, half), part.span(half, f.pof2)));
    Batch b(c);
    int lo = 0, hi = f.pof2, step = 0;
    for (int d = half; d >= 1; d /= 2, ++step) {
        const int partner = v ^ d, mid = lo + d;
        const bool low = v < mid;
        const int klo = low ? lo : mid, khi = low ? mid : hi;
        const int slo = low ? mid : lo, shi = low ? hi : mid;
        b.recv(tmp.data(), part.span(klo, khi), f.real(partner), tag.at(step));
        b.send(work + part.begin(slo), part.span(slo, shi), f.real(partner), tag.at(step));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
        reduce_local(rs, work + part.begin(klo), tmp.data(), part.span(klo, khi) / rs.esz, partner < v);
        lo = klo;
        hi = khi;
    }
    return RDMX_OK;
}

// Distance 1 first: at distance d each rank holds the blocks of its aligned
// group of d new ranks and swaps them with the partner group's.
rdmx_status_t doubling_allgather(const Comm &c, const Fold &f, std::byte *buf, const Partition &part,
                                 TagBase tag) {
    const int v = f.newrank(c.rank);
    Batch b(c);
    int step = 0;
    for (int d = 1; d < f.pof2; d *= 2, ++step) {
        const int partner = v ^ d;
        const int mine = v & ~(d - 1), theirs = partner & ~(d - 1);
        b.recv(buf + part.begin(theirs), part.span(theirs, theirs + d), f.real(partner), tag.at(step));
        b.send(buf + part.begin(mine), part.span(mine, mine + d), f.real(partner), tag.at(step));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

}  // namespace rdmx::coll
