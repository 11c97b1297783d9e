// Nonblocking barrier, broadcast, allgather, alltoall and alltoallv as
// schedules (coll_nbc.h). Argument checks are the blocking calls'; the
// initial local copies are made by the call itself, the rest by the rounds.
#include "coll_blocks.h"
#include "coll_check.h"
#include "coll_nbc.h"

#include <cstring>
#include <limits>

namespace rdmx::coll::nbc {

namespace {

// Dissemination: round k signals rank + 2^k and waits for rank - 2^k.
void build_barrier(Schedule &s) {
    const Comm &c = s.comm();
    for (int k = 0, dist = 1; dist < c.size; ++k, dist *= 2) {
        s.recv(nullptr, 0, mod(c.rank - dist, c.size), k);
        s.send(nullptr, 0, mod(c.rank + dist, c.size), k);
        s.end_round();
    }
}

// Binomial tree: receive from the parent, then send to every child at once
// (largest subtree first).
void build_bcast(Schedule &s, std::byte *buf, size_t len, int root) {
    const Comm &c = s.comm();
    const int p = c.size;
    const int v = rel_rank(c.rank, root, p);
    if (v != 0) {
        s.recv(buf, len, real_rank(tree_parent(v), root, p), 0);
        s.end_round();
    }
    const int end = tree_subtree_end(v, p);
    int m = 1;
    while (m < end - v) m *= 2;
    for (m /= 2; m > 0; m /= 2)
        if (v + m < end) s.send(buf, len, real_rank(v + m, root, p), 0);
    s.end_round();
}

// Ring: in round k each rank passes block (rank - k) to its right neighbour
// and receives block (rank - k - 1) from its left one; p - 1 rounds.
void build_allgather(Schedule &s, std::byte *out, size_t len) {
    const Comm &c = s.comm();
    const int p = c.size, r = c.rank;
    for (int k = 0; k < p - 1; ++k) {
        const size_t sblk = static_cast<size_t>(mod(r - k, p)), rblk = static_cast<size_t>(mod(r - k - 1, p));
        s.recv(out + rblk * len, len, mod(r - 1, p), k);
        s.send(out + sblk * len, len, mod(r + 1, p), k);
        s.end_round();
    }
}

// Every pair at once, in one round (the peers in pairwise order: rank + k).
void build_alltoall(Schedule &s, const std::byte *in, size_t len, std::byte *out) {
    const Comm &c = s.comm();
    const int p = c.size, r = c.rank;
    for (int k = 1; k < p; ++k) {
        const size_t src = static_cast<size_t>(mod(r - k, p));
        s.recv(out + src * len, len, static_cast<int>(src), 0);
    }
    for (int k = 1; k < p; ++k) {
        const size_t dst = static_cast<size_t>(mod(r + k, p));
        s.send(in + dst * len, len, static_cast<int>(dst), 0);
    }
    s.end_round();
}

// The byte extent max(displs[i] + lens[i]) of a v-layout, checked for
// overflow; 0 if every length is 0.
size_t v_extent(Args &a, const char *name, const size_t *lens, const size_t *displs, int p) {
    if (!a.ok()) return 0;
    if (lens == nullptr || displs == nullptr) {
        a.fail(name, "NULL length or displacement array");
        return 0;
    }
    size_t ext = 0;
    for (int i = 0; i < p; ++i) {
        if (lens[i] == 0) continue;
        if (displs[i] > std::numeric_limits<size_t>::max() - lens[i]) {
            a.fail(name, "displacement + length overflows size_t");
            return 0;
        }
        if (displs[i] + lens[i] > ext) ext = displs[i] + lens[i];
    }
    return ext;
}

bool check_req(Args &a, rdmx_request_h *req_p) noexcept {
    if (req_p == nullptr) a.fail("req_p", "NULL");
    else *req_p = nullptr;
    return a.ok();
}

}  // namespace

}  // namespace rdmx::coll::nbc

using namespace rdmx::coll;
using namespace rdmx::coll::nbc;

extern "C" rdmx_status_t rdmx_ibarrier(rdmx_context_h ctx, rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_ibarrier");
        const Comm c = a.comm(ctx);
        if (!check_req(a, req_p)) return a.status();
        auto s = std::make_unique<Schedule>(c, "rdmx_ibarrier", /*skip_empty=*/false);
        build_barrier(*s);
        return start(std::move(s), req_p);
    });
}

extern "C" rdmx_status_t rdmx_ibcast(rdmx_context_h ctx, void *buf, size_t len, int root, rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_ibcast");
        const Comm c = a.comm(ctx);
        a.buffer("buf", buf, len);
        a.root(root, c.size);
        if (!check_req(a, req_p)) return a.status();
        auto s = std::make_unique<Schedule>(c, "rdmx_ibcast");
        if (c.size > 1 && len > 0) build_bcast(*s, static_cast<std::byte *>(buf), len, root);
        return start(std::move(s), req_p);
    });
}

extern "C" rdmx_status_t rdmx_iallgather(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf,
                                         rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_iallgather");
        const Comm c = a.comm(ctx);
        const size_t total = a.bytes("len", len, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("sendbuf", sendbuf, len, /*in_place_ok=*/true);
        a.buffer("recvbuf", recvbuf, total);
        a.disjoint("sendbuf", sendbuf, len, "recvbuf", recvbuf, total);
        if (!check_req(a, req_p)) return a.status();
        auto s = std::make_unique<Schedule>(c, "rdmx_iallgather");
        if (len > 0) {
            auto *out = static_cast<std::byte *>(recvbuf);
            // In place: our block is already at recvbuf + rank * len.
            if (!is_in_place(sendbuf)) std::memcpy(out + static_cast<size_t>(c.rank) * len, sendbuf, len);
            build_allgather(*s, out, len);
        }
        return start(std::move(s), req_p);
    });
}

extern "C" rdmx_status_t rdmx_ialltoall(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf,
                                        rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_ialltoall");
        const Comm c = a.comm(ctx);
        const size_t total = a.bytes("len", len, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("sendbuf", sendbuf, total);
        a.buffer("recvbuf", recvbuf, total);
        a.disjoint("sendbuf", sendbuf, total, "recvbuf", recvbuf, total);
        if (!check_req(a, req_p)) return a.status();
        auto s = std::make_unique<Schedule>(c, "rdmx_ialltoall");
        if (len > 0) {
            const auto *in = static_cast<const std::byte *>(sendbuf);
            auto *out = static_cast<std::byte *>(recvbuf);
            const size_t own = static_cast<size_t>(c.rank) * len;
            std::memcpy(out + own, in + own, len);
            build_alltoall(*s, in, len, out);
        }
        return start(std::move(s), req_p);
    });
}

extern "C" rdmx_status_t rdmx_ialltoallv(rdmx_context_h ctx, const void *sendbuf, const size_t sendlens[],
                                         const size_t sdispls[], void *recvbuf, const size_t recvlens[],
                                         const size_t rdispls[], rdmx_request_h *req_p) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_ialltoallv");
        const Comm c = a.comm(ctx);
        const size_t sext = v_extent(a, "sendlens", sendlens, sdispls, c.size);
        const size_t rext = v_extent(a, "recvlens", recvlens, rdispls, c.size);
        a.buffer("sendbuf", sendbuf, sext);
        a.buffer("recvbuf", recvbuf, rext);
        a.disjoint("sendbuf", sendbuf, sext, "recvbuf", recvbuf, rext);
        const size_t me = a.ok() ? static_cast<size_t>(c.rank) : 0;
        if (a.ok() && sendlens[me] != recvlens[me]) a.fail("recvlens", "this rank's own block differs from sendlens");
        if (!check_req(a, req_p)) return a.status();
        const auto *in = static_cast<const std::byte *>(sendbuf);
        auto *out = static_cast<std::byte *>(recvbuf);
        if (sendlens[me] > 0) std::memcpy(out + rdispls[me], in + sdispls[me], sendlens[me]);
        auto s = std::make_unique<Schedule>(c, "rdmx_ialltoallv");
        const int p = c.size, r = c.rank;
        for (int k = 1; k < p; ++k) {
            const size_t src = static_cast<size_t>(mod(r - k, p));
            if (recvlens[src] > 0) s->recv(out + rdispls[src], recvlens[src], static_cast<int>(src), 0);
        }
        for (int k = 1; k < p; ++k) {
            const size_t dst = static_cast<size_t>(mod(r + k, p));
            if (sendlens[dst] > 0) s->send(in + sdispls[dst], sendlens[dst], static_cast<int>(dst), 0);
        }
        s->end_round();
        return start(std::move(s), req_p);
    });
}
