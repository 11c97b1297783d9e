// Building blocks shared by several collectives: partitions of a buffer into
// per-rank blocks, ring reduce-scatter/allgather, binomial scatter/gather, and
// the power-of-two fold with recursive halving/doubling.
#ifndef RDMX_COLLECTIVES_COLL_BLOCKS_H
#define RDMX_COLLECTIVES_COLL_BLOCKS_H

#include "coll_internal.h"
#include "coll_reduce_ops.h"

#include <utility>
#include <vector>

namespace rdmx::coll {

/** A buffer cut into n contiguous blocks: block j is bytes [begin(j), end(j)). */
class Partition {
public:
    /** `count` elements of `esz` bytes in n blocks; the first count % n get one more. */
    static Partition even(size_t count, int n, size_t esz);
    /** n blocks of `len` bytes each. */
    static Partition uniform(size_t len, int n);
    /** Blocks from explicit offsets (n + 1 of them, nondecreasing). */
    explicit Partition(std::vector<size_t> off) : off_(std::move(off)) {}

    int blocks() const noexcept { return static_cast<int>(off_.size()) - 1; }
    size_t begin(int j) const noexcept { return off_[j]; }
    size_t len(int j) const noexcept { return off_[j + 1] - off_[j]; }
    /** Bytes of blocks [a, b). */
    size_t span(int a, int b) const noexcept { return off_[b] - off_[a]; }
    size_t max_len() const noexcept;

private:
    std::vector<size_t> off_;
};

/**
 * Ring allgather over ranks relative to `shift` (relative rank v is real rank
 * (v + shift) % p). On entry relative rank v holds block v of `buf` (a buffer
 * of the whole partition); on return every rank holds every block.
 * p - 1 steps, each moving one block to the right neighbour.
 */
rdmx_status_t ring_allgather(const Comm &c, std::byte *buf, const Partition &part, int shift, TagBase tag);

/**
 * Ring reduce-scatter: `work` holds this rank's whole contribution; on return
 * relative rank v holds block v reduced over all ranks (other blocks hold
 * partial results). p - 1 steps. The partition is in bytes (multiples of esz).
 */
rdmx_status_t ring_reduce_scatter(const Comm &c, std::byte *work, const Partition &part, int shift,
                                  const ReduceSpec &rs, TagBase tag);

/** Binomial tree over ranks relative to root: end of the subtree of relative rank v. */
int tree_subtree_end(int v, int p) noexcept;
/** Parent of relative rank v > 0. */
int tree_parent(int v) noexcept;

/**
 * Binomial scatter of partition blocks: block j goes to relative rank j.
 * `win` is this rank's window, holding blocks [v, tree_subtree_end(v)) from
 * its start: at the root the data to scatter (only read: `root_src`), at the
 * others the place to receive the subtree's blocks (then forwarded).
 */
rdmx_status_t tree_scatter(const Comm &c, const std::byte *root_src, std::byte *win, const Partition &part,
                           int root, TagBase tag);

/**
 * Binomial gather, the mirror of tree_scatter: on entry `win` holds block v
 * at its start; inner nodes receive their children's blocks after it; the
 * root ends with every block. Leaves only send their block from `leaf_src`.
 */
rdmx_status_t tree_gather(const Comm &c, const std::byte *leaf_src, std::byte *win, const Partition &part,
                          int root, TagBase tag);

/**
 * The standard fold of p ranks onto pof2 = 2^floor(log2 p): with rem = p -
 * pof2, among ranks < 2*rem each even rank hands its data to the odd rank
 * above it and sits out; the pof2 remaining ranks get new ranks 0..pof2-1.
 * New rank v stands for the original ranks [first(v), first(v + 1)).
 */
struct Fold {
    int p, pof2, rem;
    explicit Fold(int nranks) : p(nranks), pof2(pow2_floor(nranks)), rem(nranks - pow2_floor(nranks)) {}
    int newrank(int r) const noexcept { return r < 2 * rem ? ((r & 1) ? r / 2 : -1) : r - rem; }
    int real(int v) const noexcept { return v < rem ? 2 * v + 1 : v + rem; }
    int first(int v) const noexcept { return v < rem ? 2 * v : v + rem; }
};

/**
 * Fold step of a reduction: even ranks < 2*rem send `work` (count elements)
 * to rank + 1, which reduces it into its own `work` (lower rank on the left).
 */
rdmx_status_t fold_reduce_in(const Comm &c, const Fold &f, std::byte *work, size_t count, const ReduceSpec &rs,
                             TagBase tag);
/** Unfold: each odd rank < 2*rem sends `bytes` of `buf` to rank - 1. */
rdmx_status_t fold_copy_out(const Comm &c, const Fold &f, std::byte *buf, size_t bytes, TagBase tag);

/**
 * Recursive halving reduce-scatter among the pof2 folded ranks (call with
 * f.newrank(rank) >= 0). `part` has pof2 blocks (bytes); on return new rank v
 * holds block v of `work` reduced over all ranks. log2(pof2) steps.
 */
rdmx_status_t halving_reduce_scatter(const Comm &c, const Fold &f, std::byte *work, const Partition &part,
                                     const ReduceSpec &rs, TagBase tag);
/**
 * Recursive doubling allgather among the pof2 folded ranks: on entry new rank
 * v holds block v of `buf`; on return all of them. log2(pof2) steps.
 */
rdmx_status_t doubling_allgather(const Comm &c, const Fold &f, std::byte *buf, const Partition &part,
                                 TagBase tag);

}  // namespace rdmx::coll

#endif
