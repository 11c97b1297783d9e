// Binomial trees over ranks relative to a root: scatter and gather of
// partition blocks. Relative rank v's subtree is [v, v + lowbit(v)) (the
// root's is everything), so every message is one contiguous byte range.
#include "coll_blocks.h"

#include <algorithm>

namespace rdmx::coll {

int tree_subtree_end(int v, int p) noexcept {
    if (v == 0) return p;
    return static_cast<int>(std::min<long>(static_cast<long>(v) + (v & -v), p));
}

int tree_parent(int v) noexcept { return v - (v & -v); }

rdmx_status_t tree_scatter(const Comm &c, const std::byte *root_src, std::byte *win, const Partition &part,
                           int root, TagBase tag) {
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const int end = tree_subtree_end(v, p);
    const std::byte *src = win;
    if (v == 0) {
        src = root_src;
    } else if (rdmx_status_t st = exchange(c, nullptr, 0, -1, win, part.span(v, end),
                                           real_rank(tree_parent(v), root, p), tag.at(0));
               st != RDMX_OK) {
        return st;
    }
    // Children v + m for m = lowbit(v)/2, ..., 1 (for the root, from the
    // largest power of two below p), each getting its own subtree.
    Batch b(c, static_cast<size_t>(ceil_log2(p)) + 1);
    int m = 1;
    while (m < end - v) m *= 2;
    for (m /= 2; m > 0; m /= 2) {
        const int child = v + m;
        if (child >= end) continue;
        const int cend = std::min(child + m, end);
        b.send(src + (part.begin(child) - part.begin(v)), part.span(child, cend), real_rank(child, root, p),
               tag.at(0));
    }
    return b.wait();
}

rdmx_status_t tree_gather(const Comm &c, const std::byte *leaf_src, std::byte *win, const Partition &part,
                          int root, TagBase tag) {
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const int end = tree_subtree_end(v, p);
    const int parent = v == 0 ? -1 : real_rank(tree_parent(v), root, p);
    if (end - v == 1)  // a leaf: only its own block
        return parent < 0 ? RDMX_OK : exchange(c, leaf_src, part.len(v), parent, nullptr, 0, -1, tag.at(0));
    {
        Batch b(c, static_cast<size_t>(ceil_log2(p)) + 1);
        for (int m = 1; v + m < end; m *= 2) {
            const int child = v + m;
            const int cend = std::min(child + m, end);
            b.recv(win + (part.begin(child) - part.begin(v)), part.span(child, cend), real_rank(child, root, p),
                   tag.at(0));
        }
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    if (parent < 0) return RDMX_OK;
    return exchange(c, win, part.span(v, end), parent, nullptr, 0, -1, tag.at(0));
}

}  // namespace rdmx::coll
