// Partitions and the ring algorithms (bandwidth optimal for any rank count).
#include "coll_blocks.h"

#include <algorithm>

namespace rdmx::coll {

Partition Partition::even(size_t count, int n, size_t esz) {
    std::vector<size_t> off(static_cast<size_t>(n) + 1);
    const size_t nn = static_cast<size_t>(n);
    const size_t base = count / nn, extra = count % nn;
    off[0] = 0;
    for (size_t j = 0; j < nn; ++j) off[j + 1] = off[j] + (base + (j < extra ? 1 : 0)) * esz;
    return Partition(std::move(off));
}

Partition Partition::uniform(size_t len, int n) {
    std::vector<size_t> off(static_cast<size_t>(n) + 1);
    for (size_t j = 0; j < off.size(); ++j) off[j] = j * len;
    return Partition(std::move(off));
}

size_t Partition::max_len() const noexcept {
    size_t m = 0;
    for (int j = 0; j < blocks(); ++j) m = std::max(m, len(j));
    return m;
}

rdmx_status_t ring_allgather(const Comm &c, std::byte *buf, const Partition &part, int shift, TagBase tag) {
    const int p = c.size;
    const int v = rel_rank(c.rank, shift, p);
    const int right = real_rank(v + 1, shift, p), left = real_rank(v - 1, shift, p);
    Batch b(c);
    for (int s = 0; s < p - 1; ++s) {
        const int sb = mod(v - s, p), rb = mod(v - s - 1, p);
        b.recv(buf + part.begin(rb), part.len(rb), left, tag.at(s));
        b.send(buf + part.begin(sb), part.len(sb), right, tag.at(s));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

// Step s: send block v-s-1 (partial over ranks v-s-1+1 .. v) to the right,
// receive block v-s-2 from the left and fold our own contribution into it.
// Block b is thus combined in the fixed order b+1, b+2, ..., b (mod p).
rdmx_status_t ring_reduce_scatter(const Comm &c, std::byte *work, const Partition &part, int shift,
                                  const ReduceSpec &rs, TagBase tag) {
    const int p = c.size;
    if (p == 1) return RDMX_OK;
    const int v = rel_rank(c.rank, shift, p);
    const int right = real_rank(v + 1, shift, p), left = real_rank(v - 1, shift, p);
    Buffer tmp(part.max_len());
    Batch b(c);
    for (int s = 0; s < p - 1; ++s) {
        const int sb = mod(v - s - 1, p), rb = mod(v - s - 2, p);
        b.recv(tmp.data(), part.len(rb), left, tag.at(s));
        b.send(work + part.begin(sb), part.len(sb), right, tag.at(s));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
        reduce_local(rs, work + part.begin(rb), tmp.data(), part.len(rb) / rs.esz, /*in_left=*/true);
    }
    return RDMX_OK;
}

}  // namespace rdmx::coll
