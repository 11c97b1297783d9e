// Registration cache: repeated transfers from the same buffer reuse one
// registration instead of registering each time (slow everywhere, and rxe on
// kernels before 6.2 fails after ~65,536 registrations).
//
// Regions are page aligned and never overlap; a request that overlaps
// cached regions replaces them with their union. Idle regions are evicted
// least recently used first, so the cached regions never pin more than
// max_bytes nor number more than max_regions. A request that cannot fit
// (larger than the bound, or the bound is full of busy regions) gets a
// transient registration, dropped when its transfer ends.
//
// Correctness when memory is freed and its address reused: every get()
// first drains the memory-release events (memhooks.h) and drops the regions
// they touch; a busy region that is touched is detached and dropped at its
// last put(). Without hooks (sanitizer runtimes, other architectures) the
// cache must not be used: the caller registers per transfer instead.
//
// Access: every region carries the access it was registered with (opaque
// here: the transport's flags), and a lookup only ever returns a region of
// the access asked for. A region registered for remote read is never handed
// out where remote write is meant, nor merged with one: regions of
// different access may overlap, each access has its own set.
//
// Not thread safe: callers serialise (the engine calls it under its lock).
// The registration itself is the transport's: the cache sees opaque handles
// through Ops, so this layer stays free of verbs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/ilist.h"
#include "core/memhooks.h"
#include "rdmx/rdmx.h"

namespace rdmx {

class RegCache {
public:
    struct Region {
        uintptr_t start = 0;
        uintptr_t end = 0;        // exclusive
        void *handle = nullptr;   // the transport's registration
        uint32_t access = 0;      // what it was registered for (the transport's flags)
        uint32_t refs = 0;
        bool cached = false;      // in the map; false: dropped at the last put
        ListNode lru;             // idle cached regions, oldest first
        ListNode all;             // every live region, cached or not
        size_t bytes() const { return end - start; }
    };
    struct Ops {
        // Registers [start, start+len); on failure logs and returns an error.
        rdmx_status_t (*reg)(void *arg, uintptr_t start, size_t len, uint32_t access, void **handle) = nullptr;
        void (*dereg)(void *arg, void *handle) = nullptr;
        void *arg = nullptr;
    };
    struct Stats {
        uint64_t hits = 0;
        uint64_t misses = 0;          // registrations made (cached or transient)
        uint64_t evictions = 0;       // idle regions dropped for room
        uint64_t invalidations = 0;   // regions dropped because their memory was released
        uint64_t merges = 0;          // regions replaced by a union covering them
        uint64_t flushes = 0;         // release events lost: everything dropped
        size_t bytes = 0;             // pinned by cached regions (<= max_bytes)
        size_t regions = 0;
        size_t peak_bytes = 0;
        size_t transient_bytes = 0;   // pinned outside the cache, for transfers in flight
    };

    RegCache(const Ops &ops, size_t max_bytes, size_t max_regions);
    RegCache(const RegCache &) = delete;
    RegCache &operator=(const RegCache &) = delete;
    ~RegCache();  // deregisters everything, busy or not: no put() may follow

    // A registration covering [addr, addr+len) (len > 0) made for exactly
    // `access`, with a reference the caller returns through put().
    rdmx_status_t get(const void *addr, size_t len, uint32_t access, Region **out);
    void put(Region *r);
    // Drops every region overlapping [start, start+len).
    void invalidate(uintptr_t start, size_t len);
    // Drops every region.
    void flush();
    const Stats &stats() const { return stats_; }
    size_t max_bytes() const { return max_bytes_; }

private:
    void sync_releases();
    using Key = std::pair<uint32_t, uintptr_t>;  // (access, start)
    Region *find(uint32_t access, uintptr_t start, uintptr_t end);
    void remove_range(uint32_t access, uintptr_t start, uintptr_t end, uint64_t *counter);
    void detach(Region *r);
    void drop(Region *r);
    bool make_room(size_t bytes);
    rdmx_status_t add(uint32_t access, uintptr_t start, uintptr_t end, bool cache, Region **out);

    Ops ops_;
    size_t max_bytes_;
    size_t max_regions_;
    uintptr_t page_;
    std::map<Key, Region *> by_start_;
    std::vector<uint32_t> accesses_;  // every access asked for so far (a handful)
    List idle_;
    List all_;
    memhooks::Cursor releases_;
    Stats stats_;
};

}  // namespace rdmx
