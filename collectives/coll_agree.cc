// The signature check every collective starts with: ranks that disagree on
// the collective, its size, datatype, op or root all fail, before any data
// moves. Without it a rank with a smaller count truncates while its peers
// wait for messages it never sends, a rank with a larger one mixes unset
// scratch into its result, and ranks whose sizes pick different algorithms
// wait on each other's tags forever.
//
// Dissemination: in round k rank r sends its (min, max) of the signature
// hashes seen so far to r + 2^k and merges what r - 2^k sends; after
// ceil(log2 p) rounds every rank has the minimum and maximum over all ranks,
// and they are equal exactly when every rank made the same call.
#include "coll_internal.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rdmx::coll {

namespace {

struct Range {
    uint64_t lo;
    uint64_t hi;
};
static_assert(sizeof(Range) == 16);

// FNV-1a over the fields (not the padding).
uint64_t hash_of(const Signature &s) noexcept {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](const void *p, size_t n) {
        const auto *b = static_cast<const unsigned char *>(p);
        for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
    };
    const int kind = static_cast<int>(s.kind);
    mix(&kind, sizeof kind);
    mix(&s.bytes, sizeof s.bytes);
    mix(&s.dt, sizeof s.dt);
    mix(&s.op, sizeof s.op);
    mix(&s.root, sizeof s.root);
    return h;
}

}  // namespace

// RDMX_COLL_CHECK=0 skips the check: an application known to call its
// collectives consistently saves ceil(log2 p) small-message rounds per call,
// and a mismatch then behaves as in MPI (undefined: truncation or a hang).
namespace {

bool check_enabled() {
    static const bool on = [] {
        const char *e = std::getenv("RDMX_COLL_CHECK");
        return e == nullptr || *e == '\0' || std::strcmp(e, "0") != 0;
    }();
    return on;
}

}  // namespace

rdmx_status_t agree(const Comm &c, const char *fn, const Signature &s, bool even_if_off) {
    const int p = c.size;
    if (p == 1 || (!even_if_off && !check_enabled())) return RDMX_OK;
    const TagBase tag{Kind::Agree, 0};
    const uint64_t mine = hash_of(s);
    Range have{mine, mine};
    for (int k = 0, dist = 1; dist < p; ++k, dist *= 2) {
        Range in{};
        const Range out = have;
        Batch b(c, 2, /*skip_empty=*/false);
        b.recv(&in, sizeof in, mod(c.rank - dist, p), tag.at(k));
        b.send(&out, sizeof out, mod(c.rank + dist, p), tag.at(k));
        if (rdmx_status_t st = b.wait(); st != RDMX_OK) return st;
        if (in.lo < have.lo) have.lo = in.lo;
        if (in.hi > have.hi) have.hi = in.hi;
    }
    if (have.lo == have.hi) return RDMX_OK;
    std::fprintf(stderr,
                 "rdmx: %s: the ranks called collectives with different arguments (which collective, size, "
                 "datatype, op or root); this rank (%d) passed %llu bytes, datatype %d, op %d, root %d: every rank "
                 "returns RDMX_ERR_INVALID_ARG, no data moved\n",
                 fn, c.rank, static_cast<unsigned long long>(s.bytes), s.dt, s.op, s.root);
    return RDMX_ERR_INVALID_ARG;
}

}  // namespace rdmx::coll
