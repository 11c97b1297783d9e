// rdmx_gather and rdmx_scatter: binomial trees over ranks relative to the
// root. Subtrees are contiguous in relative order; the root (un)rotates its
// buffer when it is not rank 0, inner nodes stage their subtree in scratch,
// leaves use the user's buffer directly.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_select.h"

#include <cstring>

namespace rdmx::coll {

namespace {

// Relative block j of a root buffer in rank order is rank (j + root) % p's.
void rotate_to_relative(std::byte *dst, const std::byte *src, size_t len, int root, int p) {
    const size_t up = static_cast<size_t>(p), ur = static_cast<size_t>(root);
    std::memcpy(dst, src + ur * len, (up - ur) * len);
    std::memcpy(dst + (up - ur) * len, src, ur * len);
}

void rotate_to_ranks(std::byte *dst, const std::byte *src, size_t len, int root, int p) {
    const size_t up = static_cast<size_t>(p), ur = static_cast<size_t>(root);
    std::memcpy(dst + ur * len, src, (up - ur) * len);
    std::memcpy(dst, src + (up - ur) * len, ur * len);
}

rdmx_status_t gather_binomial(const Comm &c, const std::byte *sendbuf, size_t len, std::byte *recvbuf, int root) {
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const int n = tree_subtree_end(v, p) - v;
    const Partition part = Partition::uniform(len, p);
    const TagBase tag{Kind::Gather, 0};
    if (v == 0 && root == 0) {  // gather straight into recvbuf
        std::memcpy(recvbuf, sendbuf, len);
        return tree_gather(c, sendbuf, recvbuf, part, root, tag);
    }
    if (n == 1) return tree_gather(c, sendbuf, nullptr, part, root, tag);
    Buffer win(static_cast<size_t>(n) * len);
    std::memcpy(win.data(), sendbuf, len);
    rdmx_status_t st = tree_gather(c, sendbuf, win.data(), part, root, tag);
    if (st == RDMX_OK && v == 0) rotate_to_ranks(recvbuf, win.data(), len, root, p);
    return st;
}

rdmx_status_t scatter_binomial(const Comm &c, const std::byte *sendbuf, size_t len, std::byte *recvbuf, int root) {
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    const int n = tree_subtree_end(v, p) - v;
    const Partition part = Partition::uniform(len, p);
    const TagBase tag{Kind::Scatter, 0};
    if (v == 0) {
        std::memcpy(recvbuf, sendbuf + static_cast<size_t>(root) * len, len);
        if (root == 0) return tree_scatter(c, sendbuf, nullptr, part, root, tag);
        Buffer rotated(static_cast<size_t>(p) * len);
        rotate_to_relative(rotated.data(), sendbuf, len, root, p);
        return tree_scatter(c, rotated.data(), nullptr, part, root, tag);
    }
    if (n == 1) return tree_scatter(c, nullptr, recvbuf, part, root, tag);
    Buffer win(static_cast<size_t>(n) * len);
    rdmx_status_t st = tree_scatter(c, nullptr, win.data(), part, root, tag);
    if (st == RDMX_OK) std::memcpy(recvbuf, win.data(), len);
    return st;
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_gather(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, int root) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_gather");
        const Comm c = a.comm(ctx);
        a.root(root, c.size);
        const bool is_root = a.ok() && c.rank == root;
        const size_t total = a.bytes("len", len, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("sendbuf", sendbuf, len);
        if (is_root) {  // recvbuf matters at the root only
            a.buffer("recvbuf", recvbuf, total);
            a.disjoint("sendbuf", sendbuf, len, "recvbuf", recvbuf, total);
        }
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_gather", Signature{Kind::Gather, len, -1, -1, root}); st != RDMX_OK)
            return st;
        if (len == 0) return RDMX_OK;
        (void)select_gather(c.size);  // binomial is the only algorithm
        return gather_binomial(c, static_cast<const std::byte *>(sendbuf), len, static_cast<std::byte *>(recvbuf),
                               root);
    });
}

extern "C" rdmx_status_t rdmx_scatter(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf, int root) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_scatter");
        const Comm c = a.comm(ctx);
        a.root(root, c.size);
        const bool is_root = a.ok() && c.rank == root;
        const size_t total = a.bytes("len", len, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("recvbuf", recvbuf, len);
        if (is_root) {  // sendbuf matters at the root only
            a.buffer("sendbuf", sendbuf, total);
            a.disjoint("sendbuf", sendbuf, total, "recvbuf", recvbuf, len);
        }
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_scatter", Signature{Kind::Scatter, len, -1, -1, root}); st != RDMX_OK)
            return st;
        if (len == 0) return RDMX_OK;
        (void)select_scatter(c.size);  // binomial is the only algorithm
        return scatter_binomial(c, static_cast<const std::byte *>(sendbuf), len, static_cast<std::byte *>(recvbuf),
                                root);
    });
}
