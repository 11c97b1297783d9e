// Communicators: the view pool, agreement on ids, split/dup/free, and the
// per-context attributes. Creation talks to the parent's members through
// the engine's own tag space (kSpaceEngine), on the parent's id, so it never
// meets the application's messages or a collective's.
#include "protocols/comm.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/log.h"
#include "protocols/api_internal.h"
#include "protocols/context.h"

namespace rdmx {

// ---- the view pool -----------------------------------------------------------
// Chunks are never freed, so a derived handle always points at readable
// memory; comm_pool_owns() tells a derived handle from a root one by
// address without reading either.
namespace {
constexpr size_t kViewsPerChunk = 64;
constexpr size_t kMaxViewChunks = 1024;
std::atomic<CommView *> g_chunks[kMaxViewChunks];
std::atomic<size_t> g_nchunks{0};
std::mutex g_pool_mu;
CommView *g_free_views = nullptr;
}  // namespace

bool comm_pool_owns(const void *p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    const size_t n = g_nchunks.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
        const auto base = reinterpret_cast<uintptr_t>(g_chunks[i].load(std::memory_order_acquire));
        if (a >= base && a < base + kViewsPerChunk * sizeof(CommView) && (a - base) % sizeof(CommView) == 0)
            return true;
    }
    return false;
}

CommView *comm_view_alloc() {
    std::lock_guard<std::mutex> g(g_pool_mu);
    if (g_free_views == nullptr) {
        const size_t n = g_nchunks.load(std::memory_order_relaxed);
        if (n == kMaxViewChunks) return nullptr;
        auto *chunk = new CommView[kViewsPerChunk];
        for (size_t i = 0; i < kViewsPerChunk; ++i) {
            chunk[i].pool_next = g_free_views;
            g_free_views = &chunk[i];
        }
        g_chunks[n].store(chunk, std::memory_order_release);
        g_nchunks.store(n + 1, std::memory_order_release);
    }
    CommView *v = g_free_views;
    g_free_views = v->pool_next;
    v->pool_next = nullptr;
    return v;
}

void comm_view_release(CommView *v) {
    v->alive.store(false, std::memory_order_release);
    v->eng = nullptr;
    v->world_of.clear();
    v->world_of.shrink_to_fit();
    v->comm_of.clear();
    v->comm_of.shrink_to_fit();
    v->live_reqs = 0;
    v->freeing = false;
    std::lock_guard<std::mutex> g(g_pool_mu);
    v->pool_next = g_free_views;
    g_free_views = v;
}

namespace {

bool id_used(const CommRegistry &r, uint32_t id) { return (r.used[id / 64] >> (id % 64)) & 1u; }
void set_id(CommRegistry &r, uint32_t id, bool on) {
    if (on) r.used[id / 64] |= uint64_t{1} << (id % 64);
    else r.used[id / 64] &= ~(uint64_t{1} << (id % 64));
}

// Which members of `members` (engine ranks) share this rank's node.
void set_locality(Ctx *c, CommView *v) {
    const uint64_t mine = c->comms.node_of[static_cast<size_t>(c->rank)];
    v->local_rank = v->local_size = 0;
    for (int m = 0; m < v->size; ++m) {
        if (c->comms.node_of[static_cast<size_t>(v->to_engine(m))] != mine) continue;
        if (m < v->rank) ++v->local_rank;
        ++v->local_size;
    }
}

}  // namespace

void comm_init_root(Ctx *c) {
    CommView &w = c->world;
    w.eng = c;
    w.id = kRootCommId;
    w.rank = c->rank;
    w.size = c->size;
    if (c->comms.node_of.size() != static_cast<size_t>(c->size)) c->comms.node_of.assign(static_cast<size_t>(c->size), 0);
    set_locality(c, &w);
    set_id(c->comms, kRootCommId, true);
    w.alive.store(true, std::memory_order_release);
}

// ---- creation traffic --------------------------------------------------------
// Point-to-point in the engine's own space, on the parent's id. Tags:
// phase << 24 | round << 8 | step.
namespace {

enum Phase : int { kGather = 1, kReduce = 2, kBcast = 3 };
constexpr int kRoundMask = 0xFFFF;

int tag_of(Phase p, int round, int step) { return (p << 24) | ((round & kRoundMask) << 8) | (step & 0xFF); }

rdmx_status_t xfer(const api::Handle &h, const void *sbuf, size_t slen, int dest, void *rbuf, size_t rlen, int source,
                   int tag) {
    rdmx_request_h rr = nullptr, sr = nullptr;
    rdmx_status_t st = RDMX_OK;
    if (source >= 0) st = api::do_irecv(h, kSpaceEngine, rbuf, rlen, source, tag, &rr);
    if (st == RDMX_OK && dest >= 0) st = api::do_isend(h, kSpaceEngine, sbuf, slen, dest, tag, &sr);
    rdmx_msg_info_t info{};
    const rdmx_status_t s1 = rr != nullptr ? rdmx_wait(&rr, &info) : RDMX_OK;
    const rdmx_status_t s2 = sr != nullptr ? rdmx_wait(&sr, nullptr) : RDMX_OK;
    if (st == RDMX_OK) st = s1 != RDMX_OK ? s1 : s2;
    if (st == RDMX_OK && source >= 0 && info.length != rlen) {
        RDMX_ERROR("comm: member %d sent %zu bytes where %zu were due (ranks disagree on a communicator call)",
                   source, info.length, rlen);
        st = RDMX_ERR_INVALID_ARG;
    }
    return st;
}

// Ring allgather of `len`-byte records over the parent's members.
rdmx_status_t allgather(const api::Handle &h, const void *mine, void *all, size_t len) {
    const int p = h.v->size, me = h.v->rank;
    auto *out = static_cast<char *>(all);
    std::memcpy(out + static_cast<size_t>(me) * len, mine, len);
    for (int step = 0; step < p - 1; ++step) {
        const int sblock = (me - step + p) % p, rblock = (me - step - 1 + p) % p;
        rdmx_status_t st = xfer(h, out + static_cast<size_t>(sblock) * len, len, (me + 1) % p,
                                out + static_cast<size_t>(rblock) * len, len, (me - 1 + p) % p,
                                tag_of(kGather, 0, step));
        if (st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

// Bitwise AND of `n` words over the parent's members: a binomial reduce to
// member 0, then a binomial broadcast of the result.
rdmx_status_t allreduce_and(const api::Handle &h, uint64_t *words, size_t n, int round) {
    const int p = h.v->size, me = h.v->rank;
    std::vector<uint64_t> in(n);
    const size_t bytes = n * sizeof(uint64_t);
    int mask = 1;
    for (; mask < p; mask <<= 1) {
        if (me & mask) {
            if (rdmx_status_t st = xfer(h, words, bytes, me - mask, nullptr, 0, -1, tag_of(kReduce, round, 0)))
                return st;
            break;
        }
        if (me + mask < p) {
            if (rdmx_status_t st = xfer(h, nullptr, 0, -1, in.data(), bytes, me + mask, tag_of(kReduce, round, 0)))
                return st;
            for (size_t i = 0; i < n; ++i) words[i] &= in[i];
        }
    }
    // Broadcast back down the same tree: from the parent that reduced us.
    if (me != 0)
        if (rdmx_status_t st = xfer(h, nullptr, 0, -1, words, bytes, me - (me & -me), tag_of(kBcast, round, 0)))
            return st;
    for (int m = (me == 0 ? std::bit_ceil(static_cast<unsigned>(p)) : (me & -me)) >> 1; m > 0; m >>= 1)
        if (me + m < p)
            if (rdmx_status_t st = xfer(h, words, bytes, me + m, nullptr, 0, -1, tag_of(kBcast, round, 0)))
                return st;
    return RDMX_OK;
}

// The id a round picks from the ids free everywhere: the lowest on the first
// round (ids are reused), then one spread by the parent's id and the round,
// so that two creations racing on one rank (different parents, different
// threads) stop picking the same id.
int pick_id(const uint64_t *free_mask, uint32_t parent, int round) {
    size_t total = 0;
    for (size_t w = 0; w < kCommIdWords; ++w) total += static_cast<size_t>(std::popcount(free_mask[w]));
    if (total == 0) return -1;
    size_t want = round == 0 ? 0 : (parent * 2654435761u + static_cast<size_t>(round) * 40503u) % total;
    for (size_t w = 0; w < kCommIdWords; ++w) {
        uint64_t bits = free_mask[w];
        while (bits != 0) {
            const int b = std::countr_zero(bits);
            if (want-- == 0) return static_cast<int>(w * 64 + static_cast<size_t>(b));
            bits &= bits - 1;
        }
    }
    return -1;
}

constexpr int kMaxIdRounds = 1000;

// Agrees on an id free on every member of the parent (collective). Each
// round: AND the free masks, pick, reserve it here if it is still free (a
// creation on another parent may have taken it meanwhile), AND the
// reservations; all reserved: done, else everyone lets go and tries again.
// No lock is held across a round's messages, so creations on different
// parents in different threads cannot deadlock each other. `join`: this rank
// becomes a member (keeps the id); others only vote.
rdmx_status_t agree_id(const api::Handle &h, bool join, uint32_t *id_out) {
    Ctx *c = h.c;
    for (int round = 0; round < kMaxIdRounds; ++round) {
        uint64_t mask[kCommIdWords];
        {
            std::lock_guard<std::mutex> g(c->comms.mu);
            for (size_t w = 0; w < kCommIdWords; ++w) mask[w] = ~c->comms.used[w];
        }
        if (rdmx_status_t st = allreduce_and(h, mask, kCommIdWords, 2 * round)) return st;
        const int id = pick_id(mask, h.v->id, round);
        if (id < 0) {
            RDMX_ERROR("comm: no communicator id is free on every member (%u in use at most per rank): free some "
                       "with rdmx_comm_free", wire::kMaxComms);
            return RDMX_ERR_NO_MEMORY;
        }
        uint64_t ok = 1;
        {
            std::lock_guard<std::mutex> g(c->comms.mu);
            if (id_used(c->comms, static_cast<uint32_t>(id))) ok = 0;
            else set_id(c->comms, static_cast<uint32_t>(id), true);
        }
        const bool reserved = ok != 0;
        if (rdmx_status_t st = allreduce_and(h, &ok, 1, 2 * round + 1)) {
            if (reserved) {
                std::lock_guard<std::mutex> g(c->comms.mu);
                set_id(c->comms, static_cast<uint32_t>(id), false);
            }
            return st;
        }
        if (ok != 0 && join) {
            *id_out = static_cast<uint32_t>(id);
            return RDMX_OK;
        }
        if (reserved) {
            std::lock_guard<std::mutex> g(c->comms.mu);
            set_id(c->comms, static_cast<uint32_t>(id), false);
        }
        if (ok != 0) return RDMX_OK;  // agreed, and this rank joins none
        std::this_thread::yield();
    }
    RDMX_ERROR("comm: no agreement on a communicator id after %d rounds", kMaxIdRounds);
    return RDMX_ERR_INTERNAL;
}

// A new view over `members` (engine ranks, in member order) with `id`.
rdmx_status_t make_view(Ctx *c, const std::vector<int> &members, uint32_t id, CommView **out) {
    CommView *v = comm_view_alloc();
    if (v == nullptr) {
        std::lock_guard<std::mutex> g(c->comms.mu);
        set_id(c->comms, id, false);
        RDMX_ERROR("comm: too many communicators alive in this process");
        return RDMX_ERR_NO_MEMORY;
    }
    v->eng = c;
    v->id = id;
    v->size = static_cast<int>(members.size());
    v->world_of = members;
    v->comm_of.assign(static_cast<size_t>(c->size), -1);
    for (int m = 0; m < v->size; ++m) {
        v->comm_of[static_cast<size_t>(members[static_cast<size_t>(m)])] = m;
        if (members[static_cast<size_t>(m)] == c->rank) v->rank = m;
    }
    set_locality(c, v);
    {
        std::lock_guard<std::mutex> g(c->comms.mu);
        c->comms.views.push_back(v);
    }
    v->alive.store(true, std::memory_order_release);
    RDMX_DEBUG("comm: id %u created: rank %d of %d", id, v->rank, v->size);
    *out = v;
    return RDMX_OK;
}

struct SplitRec {
    int32_t color;
    int32_t key;
};
static_assert(sizeof(SplitRec) == 8);

// The members of this rank's colour, ordered by (key, parent rank), as
// engine ranks.
std::vector<int> members_of(const api::Handle &h, const std::vector<SplitRec> &all, int color) {
    std::vector<int> order;
    for (int r = 0; r < h.v->size; ++r)
        if (all[static_cast<size_t>(r)].color == color) order.push_back(r);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return all[static_cast<size_t>(a)].key < all[static_cast<size_t>(b)].key;
    });
    for (int &r : order) r = h.v->to_engine(r);
    return order;
}

}  // namespace

rdmx_status_t comm_create(const api::Handle &h, bool dup, int color, int key, CommView **out) {
    *out = nullptr;
    std::vector<int> members;
    if (dup) {
        for (int r = 0; r < h.v->size; ++r) members.push_back(h.v->to_engine(r));
    } else {
        std::vector<SplitRec> all(static_cast<size_t>(h.v->size));
        const SplitRec mine{color, key};
        if (rdmx_status_t st = allgather(h, &mine, all.data(), sizeof(SplitRec))) return st;
        for (int r = 0; r < h.v->size; ++r) {
            const int col = all[static_cast<size_t>(r)].color;
            if (col < 0 && col != RDMX_UNDEFINED) {
                RDMX_ERROR("rdmx_comm_split: member %d passed colour %d (neither >= 0 nor RDMX_UNDEFINED)", r, col);
                return RDMX_ERR_INVALID_ARG;
            }
        }
        if (color != RDMX_UNDEFINED) members = members_of(h, all, color);
    }
    uint32_t id = 0;
    if (rdmx_status_t st = agree_id(h, !members.empty(), &id)) return st;
    if (members.empty()) return RDMX_OK;
    return make_view(h.c, members, id, out);
}

// ---- free ------------------------------------------------------------------

namespace {

void run_attr_frees(CommView *v) {
    Attr attrs[kMaxAttrKeys];
    {
        std::lock_guard<std::mutex> g(v->attr_mu);
        for (int k = 0; k < kMaxAttrKeys; ++k) {
            attrs[k] = v->attrs[k];
            v->attrs[k] = Attr{};
        }
    }
    for (Attr &a : attrs)
        if (a.free_fn != nullptr) a.free_fn(a.value);
}

// Back to the pool, its id free again (engine lock not held).
void release_view(Ctx *c, CommView *v) {
    {
        std::lock_guard<std::mutex> g(c->comms.mu);
        set_id(c->comms, v->id, false);
        auto &vs = c->comms.views;
        vs.erase(std::remove(vs.begin(), vs.end(), v), vs.end());
    }
    comm_view_release(v);
}

}  // namespace

void comm_req_freed(Ctx *c, CommView *v) {
    // The last request of a freed view (req_free counted it down): its id and memory go now. The
    // registry's mutex nests inside the engine lock (never the reverse).
    release_view(c, v);
}

rdmx_status_t comm_free(const api::Handle &h) {
    Ctx *c = h.c;
    CommView *v = h.v;
    v->alive.store(false, std::memory_order_release);  // the handle is invalid from here on
    run_attr_frees(v);
    size_t dropped = 0;
    bool now = false;
    {
        std::lock_guard<SpinLock> g(c->lock);
        const uint32_t id = v->id;
        c->matcher.remove_unexpected_if([id](const UnexpEntry *u) { return u->bits.comm == id; },
                                        [c, &dropped](UnexpEntry *u) {
                                            release_unexp(c, static_cast<Unexp *>(u));
                                            ++dropped;
                                        });
        now = v->live_reqs == 0;
        v->freeing = !now;
        if (now) release_view(c, v);
    }
    if (dropped != 0)
        RDMX_WARN("rdmx_comm_free: %zu message(s) that arrived on the communicator were never received; dropped",
                  dropped);
    return RDMX_OK;
}

std::vector<CommView *> comm_teardown(Ctx *c) {
    std::vector<CommView *> views;
    {
        std::lock_guard<std::mutex> g(c->comms.mu);
        views = c->comms.views;
        c->comms.views.clear();
    }
    for (CommView *v : views) {
        v->alive.store(false, std::memory_order_release);
        run_attr_frees(v);
    }
    run_attr_frees(&c->world);
    // No callback runs once the layers let go (none may be running: take
    // the slot every runner takes).
    bool expected = false;
    while (!c->hooks_busy.compare_exchange_weak(expected, true, std::memory_order_acquire)) {
        expected = false;
        std::this_thread::yield();
    }
    c->n_hooks.store(0, std::memory_order_relaxed);
    c->hooks_busy.store(false, std::memory_order_release);
    return views;
}

// ---- attributes ---------------------------------------------------------------

namespace {
std::atomic<int> g_attr_keys{0};
}

rdmx_status_t attr_key_create(int *key_p) {
    int k = g_attr_keys.load();
    do {
        if (k >= kMaxAttrKeys) {
            RDMX_ERROR("rdmx_attr_key_create: all %d keys are taken", kMaxAttrKeys);
            return RDMX_ERR_NO_MEMORY;
        }
    } while (!g_attr_keys.compare_exchange_weak(k, k + 1));
    *key_p = k;
    return RDMX_OK;
}

bool attr_key_valid(int key) { return key >= 0 && key < g_attr_keys.load(); }

void attr_set(CommView *v, int key, void *value, rdmx_attr_free_fn_t free_fn) {
    Attr old;
    {
        std::lock_guard<std::mutex> g(v->attr_mu);
        old = v->attrs[key];
        v->attrs[key] = {value, free_fn};
    }
    if (old.free_fn != nullptr && old.value != value) old.free_fn(old.value);
}

void *attr_get(CommView *v, int key) {
    std::lock_guard<std::mutex> g(v->attr_mu);
    return v->attrs[key].value;
}

}  // namespace rdmx
