// The v-collectives: rdmx_allgatherv (ring), rdmx_gatherv and rdmx_scatterv
// (linear, every message posted at once) and rdmx_alltoallv (pairwise with a
// window, as rdmx_alltoall). Lengths and displacements are in bytes, per
// rank; any length may be 0.
//
// Zero-length blocks are sent as empty messages rather than skipped: the
// signature check cannot compare whole length arrays (only what every rank
// knows, e.g. allgatherv's total), so a disagreement must surface as a
// length check of a receive (RDMX_ERR_INVALID_ARG or RDMX_ERR_TRUNCATE at the
// receiver) instead of leaving an unmatched message behind for a later call.
#include "coll_check.h"
#include "coll_select.h"

#include <algorithm>
#include <cstring>

namespace rdmx::coll {

namespace {

constexpr bool kSendEmpty = false;  // Batch's skip_empty: see above

// Step s: send block r - s to the right, receive block r - s - 1 from the
// left. p - 1 steps; each rank sends every block but its right neighbour's.
rdmx_status_t allgatherv_ring(const Comm &c, std::byte *recvbuf, const size_t *lens, const size_t *displs) {
    const int p = c.size, r = c.rank;
    const int right = mod(r + 1, p), left = mod(r - 1, p);
    const TagBase tag{Kind::Allgatherv, 0};
    Batch b(c, Batch::kInline, kSendEmpty);
    for (int s = 0; s < p - 1; ++s) {
        const int sb = mod(r - s, p), rb = mod(r - s - 1, p);
        b.recv(recvbuf + displs[rb], lens[rb], left, tag.at(s));
        b.send(recvbuf + displs[sb], lens[sb], right, tag.at(s));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

// The root posts p - 1 receives at once (straight into their blocks); every
// other rank sends one message. One round; the root receives the sum of the
// other blocks.
rdmx_status_t gatherv_linear(const Comm &c, const std::byte *sendbuf, size_t len, std::byte *recvbuf,
                             const size_t *lens, const size_t *displs, int root) {
    const TagBase tag{Kind::Gatherv, 0};
    if (c.rank != root) {
        Batch b(c, 1, kSendEmpty);
        b.send(sendbuf, len, root, tag.at(0));
        return b.wait();
    }
    if (len != 0) std::memcpy(recvbuf + displs[root], sendbuf, len);
    Batch b(c, static_cast<size_t>(c.size - 1), kSendEmpty);
    for (int i = 0; i < c.size; ++i)
        if (i != root) b.recv(recvbuf + displs[i], lens[i], i, tag.at(0));
    return b.wait();
}

// The mirror of gatherv_linear.
rdmx_status_t scatterv_linear(const Comm &c, const std::byte *sendbuf, const size_t *lens, const size_t *displs,
                              std::byte *recvbuf, size_t len, int root) {
    const TagBase tag{Kind::Scatterv, 0};
    if (c.rank != root) {
        Batch b(c, 1, kSendEmpty);
        b.recv(recvbuf, len, root, tag.at(0));
        return b.wait();
    }
    if (len != 0) std::memcpy(recvbuf, sendbuf + displs[root], len);
    Batch b(c, static_cast<size_t>(c.size - 1), kSendEmpty);
    for (int i = 0; i < c.size; ++i)
        if (i != root) b.send(sendbuf + displs[i], lens[i], i, tag.at(0));
    return b.wait();
}

struct Vec {
    const size_t *lens;
    const size_t *displs;
};

// Step s: send to rank + s, receive from rank - s; a window of steps in
// flight at once, sized from the mean block (as alltoall's from its block).
rdmx_status_t alltoallv_pairwise(const Comm &c, const std::byte *sendbuf, Vec sv, std::byte *recvbuf, Vec rv) {
    const int p = c.size, r = c.rank;
    if (sv.lens[r] != 0) std::memcpy(recvbuf + rv.displs[r], sendbuf + sv.displs[r], sv.lens[r]);
    size_t sent = 0;
    for (int j = 0; j < p; ++j) sent += sv.lens[j] / static_cast<size_t>(p);  // no overflow: a mean
    const int window = alltoall_window(sent, p);
    const TagBase tag{Kind::Alltoallv, 0};
    Batch b(c, 2 * static_cast<size_t>(window), kSendEmpty);
    for (int s0 = 1; s0 < p; s0 += window) {
        const int s1 = std::min(s0 + window, p);
        for (int s = s0; s < s1; ++s) {
            const int src = mod(r - s, p);
            b.recv(recvbuf + rv.displs[src], rv.lens[src], src, tag.at(s));
        }
        for (int s = s0; s < s1; ++s) {
            const int dst = mod(r + s, p);
            b.send(sendbuf + sv.displs[dst], sv.lens[dst], dst, tag.at(s));
        }
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

// Wrapping sum: only compared between ranks, which all compute the same.
uint64_t sum_of(const size_t *lens, int n) {
    uint64_t t = 0;
    for (int j = 0; j < n; ++j) t += lens[j];
    return t;
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_allgatherv(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf,
                                         const size_t lens[], const size_t displs[]) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_allgatherv");
        const Comm c = a.comm(ctx);
        a.buffer("sendbuf", sendbuf, len, /*in_place_ok=*/true);
        a.blocks("recvbuf", recvbuf, "lens", lens, "displs", displs, c.size);
        if (!is_in_place(sendbuf)) a.own_block("lens", lens, c.rank, len);
        a.disjoint_blocks("sendbuf", sendbuf, &len, nullptr, 1, "recvbuf", recvbuf, lens, displs, c.size);
        if (!a.ok()) return a.status();
        // Every rank knows the whole lens[]: the total at least is compared.
        const Signature sig{Kind::Allgatherv, sum_of(lens, c.size), -1, -1, -1};
        if (rdmx_status_t st = agree(c, "rdmx_allgatherv", sig); st != RDMX_OK) return st;
        auto *out = static_cast<std::byte *>(recvbuf);
        // In place: our block is already at recvbuf + displs[rank].
        if (!is_in_place(sendbuf) && len != 0) std::memcpy(out + displs[c.rank], sendbuf, len);
        if (c.size == 1) return RDMX_OK;
        (void)select_allgatherv(c.size);  // ring is the only algorithm
        return allgatherv_ring(c, out, lens, displs);
    });
}

extern "C" rdmx_status_t rdmx_gatherv(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf,
                                      const size_t lens[], const size_t displs[], int root) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_gatherv");
        const Comm c = a.comm(ctx);
        a.root(root, c.size);
        const bool is_root = a.ok() && c.rank == root;
        a.buffer("sendbuf", sendbuf, len);
        if (is_root) {  // recvbuf, lens and displs matter at the root only
            a.blocks("recvbuf", recvbuf, "lens", lens, "displs", displs, c.size);
            a.own_block("lens", lens, c.rank, len);
            a.disjoint_blocks("sendbuf", sendbuf, &len, nullptr, 1, "recvbuf", recvbuf, lens, displs, c.size);
        }
        if (!a.ok()) return a.status();
        // Only the root knows lens[]: the senders' lengths are checked by
        // the root's receives.
        if (rdmx_status_t st = agree(c, "rdmx_gatherv", Signature{Kind::Gatherv, 0, -1, -1, root}); st != RDMX_OK)
            return st;
        (void)select_gatherv(c.size);  // linear is the only algorithm
        return gatherv_linear(c, static_cast<const std::byte *>(sendbuf), len, static_cast<std::byte *>(recvbuf),
                              lens, displs, root);
    });
}

extern "C" rdmx_status_t rdmx_scatterv(rdmx_context_h ctx, const void *sendbuf, const size_t lens[],
                                       const size_t displs[], void *recvbuf, size_t len, int root) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_scatterv");
        const Comm c = a.comm(ctx);
        a.root(root, c.size);
        const bool is_root = a.ok() && c.rank == root;
        a.buffer("recvbuf", recvbuf, len);
        if (is_root) {  // sendbuf, lens and displs matter at the root only
            a.blocks("sendbuf", sendbuf, "lens", lens, "displs", displs, c.size);
            a.own_block("lens", lens, c.rank, len);
            a.disjoint_blocks("sendbuf", sendbuf, lens, displs, c.size, "recvbuf", recvbuf, &len, nullptr, 1);
        }
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_scatterv", Signature{Kind::Scatterv, 0, -1, -1, root}); st != RDMX_OK)
            return st;
        (void)select_scatterv(c.size);  // linear is the only algorithm
        return scatterv_linear(c, static_cast<const std::byte *>(sendbuf), lens, displs,
                               static_cast<std::byte *>(recvbuf), len, root);
    });
}

extern "C" rdmx_status_t rdmx_alltoallv(rdmx_context_h ctx, const void *sendbuf, const size_t sendlens[],
                                        const size_t sdispls[], void *recvbuf, const size_t recvlens[],
                                        const size_t rdispls[]) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_alltoallv");
        const Comm c = a.comm(ctx);
        a.blocks("sendbuf", sendbuf, "sendlens", sendlens, "sdispls", sdispls, c.size);
        a.blocks("recvbuf", recvbuf, "recvlens", recvlens, "rdispls", rdispls, c.size);
        if (a.ok()) a.own_block("recvlens", recvlens, c.rank, sendlens[c.rank]);
        a.disjoint_blocks("sendbuf", sendbuf, sendlens, sdispls, c.size, "recvbuf", recvbuf, recvlens, rdispls,
                          c.size);
        if (!a.ok()) return a.status();
        // No rank knows another's lengths: each receive checks its own.
        if (rdmx_status_t st = agree(c, "rdmx_alltoallv", Signature{Kind::Alltoallv, 0, -1, -1, -1}); st != RDMX_OK)
            return st;
        (void)select_alltoallv(c.size);  // pairwise is the only algorithm
        return alltoallv_pairwise(c, static_cast<const std::byte *>(sendbuf), Vec{sendlens, sdispls},
                                  static_cast<std::byte *>(recvbuf), Vec{recvlens, rdispls});
    });
}
