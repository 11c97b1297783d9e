// rdmx_scan and rdmx_exscan: recursive doubling (MPICH's algorithm). Each
// rank keeps two partials: the reduction over the ranks of its current
// aligned group of 2^k ranks (sent to the partner group each round) and its
// prefix. Data of lower ranks is always combined on the left, so the order
// of combination is the ranks' order (safe for non-commutative operations,
// bitwise like MPI for integers).
#include "coll_check.h"
#include "coll_reduce_ops.h"
#include "coll_select.h"

#include <cstring>

namespace rdmx::coll {

namespace {

// ceil(log2 p) rounds; in round k rank r swaps its group partial with
// r ^ 2^k (when that rank exists). A partner below r contributes to r's
// prefix too. `prefix` is recvbuf: for scan it starts as the rank's own
// input; for exscan it is written when the first lower partner's data
// arrives (rank 0 has none, and its recvbuf is never written).
rdmx_status_t scan_recursive_doubling(const Comm &c, const std::byte *input, std::byte *prefix, size_t count,
                                      const ReduceSpec &rs, bool exclusive, Kind kind) {
    const size_t bytes = count * rs.esz;
    Buffer group(bytes), tmp(bytes);  // before any traffic
    std::memcpy(group.data(), input, bytes);
    bool have_prefix = !exclusive;
    const TagBase tag{kind, 0};
    int step = 0;
    for (int mask = 1; mask < c.size; mask *= 2, ++step) {
        const int partner = c.rank ^ mask;
        if (partner >= c.size) continue;
        rdmx_status_t st = exchange(c, group.data(), bytes, partner, tmp.data(), bytes, partner, tag.at(step));
        if (st != RDMX_OK) return st;
        const bool lower = partner < c.rank;
        if (lower) {
            if (have_prefix) {
                reduce_local(rs, prefix, tmp.data(), count, /*in_left=*/true);
            } else {
                std::memcpy(prefix, tmp.data(), bytes);
                have_prefix = true;
            }
        }
        reduce_local(rs, group.data(), tmp.data(), count, /*in_left=*/lower);
    }
    return RDMX_OK;
}

rdmx_status_t scan_entry(const char *fn, Kind kind, rdmx_context_h ctx, const void *sendbuf, void *recvbuf,
                         size_t count, const rdmx_datatype_t &dt, const rdmx_op_t &op) {
    Args a(fn);
    const Comm c = a.comm(ctx);
    const size_t esz = a.dt_op(dt, op);
    const size_t bytes = a.bytes("count", count, esz);
    a.buffer("sendbuf", sendbuf, bytes, /*in_place_ok=*/true);
    a.buffer("recvbuf", recvbuf, bytes);
    a.disjoint("sendbuf", sendbuf, bytes, "recvbuf", recvbuf, bytes);
    if (!a.ok()) return a.status();
    const Signature sig{kind, bytes, static_cast<int>(dt), static_cast<int>(op), -1};
    if (rdmx_status_t st = agree(c, fn, sig); st != RDMX_OK) return st;
    if (count == 0) return RDMX_OK;
    const bool exclusive = kind == Kind::Exscan;
    auto *out = static_cast<std::byte *>(recvbuf);
    const auto *in = static_cast<const std::byte *>(is_in_place(sendbuf) ? recvbuf : sendbuf);
    if (!exclusive && !is_in_place(sendbuf)) std::memcpy(out, sendbuf, bytes);
    if (c.size == 1) return RDMX_OK;
    (void)(exclusive ? select_exscan(c.size) : select_scan(c.size));  // recursive doubling is the only algorithm
    // In place, `in` aliases `out`: the group partial is copied from it
    // before anything is written to `out`.
    return scan_recursive_doubling(c, in, out, count, ReduceSpec{dt, op, esz}, exclusive, kind);
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_scan(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                   rdmx_datatype_t dt, rdmx_op_t op) {
    return guarded([&] { return scan_entry("rdmx_scan", Kind::Scan, ctx, sendbuf, recvbuf, count, dt, op); });
}

extern "C" rdmx_status_t rdmx_exscan(rdmx_context_h ctx, const void *sendbuf, void *recvbuf, size_t count,
                                     rdmx_datatype_t dt, rdmx_op_t op) {
    return guarded([&] { return scan_entry("rdmx_exscan", Kind::Exscan, ctx, sendbuf, recvbuf, count, dt, op); });
}
