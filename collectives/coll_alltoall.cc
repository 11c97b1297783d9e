// rdmx_alltoall: pairwise exchange (step s: send to rank + s, receive from
// rank - s) with a window of steps in flight at once.
#include "coll_check.h"
#include "coll_select.h"

#include <algorithm>
#include <cstring>

namespace rdmx::coll {

namespace {

rdmx_status_t alltoall_pairwise(const Comm &c, const std::byte *sendbuf, size_t len, std::byte *recvbuf) {
    const int p = c.size, r = c.rank;
    const size_t ur = static_cast<size_t>(r);
    std::memcpy(recvbuf + ur * len, sendbuf + ur * len, len);
    const int window = alltoall_window(len, p);
    const TagBase tag{Kind::Alltoall, 0};
    Batch b(c, 2 * static_cast<size_t>(window));
    for (int s0 = 1; s0 < p; s0 += window) {
        const int s1 = std::min(s0 + window, p);
        for (int s = s0; s < s1; ++s) {
            const int src = mod(r - s, p);
            b.recv(recvbuf + static_cast<size_t>(src) * len, len, src, tag.at(s));
        }
        for (int s = s0; s < s1; ++s) {
            const int dst = mod(r + s, p);
            b.send(sendbuf + static_cast<size_t>(dst) * len, len, dst, tag.at(s));
        }
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

}  // namespace

}  // namespace rdmx::coll

using namespace rdmx::coll;

extern "C" rdmx_status_t rdmx_alltoall(rdmx_context_h ctx, const void *sendbuf, size_t len, void *recvbuf) {
    return guarded([&]() -> rdmx_status_t {
        Args a("rdmx_alltoall");
        const Comm c = a.comm(ctx);
        const size_t total = a.bytes("len", len, a.ok() ? static_cast<size_t>(c.size) : 0);
        a.buffer("sendbuf", sendbuf, total);
        a.buffer("recvbuf", recvbuf, total);
        a.disjoint("sendbuf", sendbuf, total, "recvbuf", recvbuf, total);
        if (!a.ok()) return a.status();
        if (rdmx_status_t st = agree(c, "rdmx_alltoall", Signature{Kind::Alltoall, len, -1, -1, -1}); st != RDMX_OK) return st;
        if (len == 0) return RDMX_OK;
        (void)select_alltoall(c.size);  // pairwise is the only algorithm
        return alltoall_pairwise(c, static_cast<const std::byte *>(sendbuf), len, static_cast<std::byte *>(recvbuf));
    });
}
