#include "core/rcache.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

namespace rdmx {

RegCache::RegCache(const Ops &ops, size_t max_bytes, size_t max_regions)
    : ops_(ops),
      max_bytes_(max_bytes),
      max_regions_(max_regions),
      page_(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE))) {}

RegCache::~RegCache() {
    while (ListNode *n = all_.first()) {
        Region *r = container_of<Region, &Region::all>(n);
        detach(r);
        drop(r);
    }
}

// Removes r from the map (and the idle list); it stays registered.
void RegCache::detach(Region *r) {
    if (!r->cached) return;
    by_start_.erase(Key{r->access, r->start});
    if (r->lru.linked()) List::unlink(&r->lru);
    r->cached = false;
    stats_.bytes -= r->bytes();
    --stats_.regions;
    stats_.transient_bytes += r->bytes();  // pinned until its last put
}

void RegCache::drop(Region *r) {
    stats_.transient_bytes -= r->bytes();
    List::unlink(&r->all);
    ops_.dereg(ops_.arg, r->handle);
    delete r;
}

void RegCache::put(Region *r) {
    if (--r->refs > 0) return;
    if (r->cached)
        idle_.push_back(&r->lru);
    else
        drop(r);
}

void RegCache::invalidate(uintptr_t start, size_t len) {
    const uintptr_t end = len > UINTPTR_MAX - start ? UINTPTR_MAX : start + len;
    for (uint32_t a : accesses_) remove_range(a, start, end, &stats_.invalidations);
}

// Drops the regions of `access` overlapping [start, end).
void RegCache::remove_range(uint32_t access, uintptr_t start, uintptr_t end, uint64_t *counter) {
    auto it = by_start_.upper_bound(Key{access, start});
    if (it != by_start_.begin() && std::prev(it)->first.first == access && std::prev(it)->second->end > start) --it;
    while (it != by_start_.end() && it->first.first == access && it->second->start < end) {
        Region *r = (it++)->second;
        detach(r);
        ++*counter;
        if (r->refs == 0) drop(r);
    }
}

void RegCache::flush() {
    ++stats_.flushes;
    invalidate(0, UINTPTR_MAX);
}

void RegCache::sync_releases() {
    if (!releases_.pending()) return;
    if (!releases_.drain([this](const memhooks::Range &r) { invalidate(r.start, r.len); })) flush();
}

// The cached region of `access` covering [start, end), if any.
RegCache::Region *RegCache::find(uint32_t access, uintptr_t start, uintptr_t end) {
    auto it = by_start_.upper_bound(Key{access, start});
    if (it == by_start_.begin()) return nullptr;
    Region *r = std::prev(it)->second;
    return r->access == access && r->end >= end ? r : nullptr;
}

// Evicts idle regions, oldest first, until `bytes` more fit the bounds.
bool RegCache::make_room(size_t bytes) {
    while (stats_.bytes + bytes > max_bytes_ || stats_.regions + 1 > max_regions_) {
        ListNode *n = idle_.first();
        if (n == nullptr) return false;
        Region *r = container_of<Region, &Region::lru>(n);
        detach(r);
        ++stats_.evictions;
        drop(r);
    }
    return true;
}

rdmx_status_t RegCache::add(uint32_t access, uintptr_t start, uintptr_t end, bool cache, Region **out) {
    void *handle = nullptr;
    rdmx_status_t st = ops_.reg(ops_.arg, start, end - start, access, &handle);
    if (st != RDMX_OK) return st;
    ++stats_.misses;
    auto *r = new Region;
    r->start = start;
    r->end = end;
    r->handle = handle;
    r->access = access;
    r->refs = 1;
    all_.push_back(&r->all);
    if (cache) {
        by_start_.emplace(Key{access, start}, r);
        r->cached = true;
        stats_.bytes += r->bytes();
        ++stats_.regions;
        if (stats_.bytes > stats_.peak_bytes) stats_.peak_bytes = stats_.bytes;
    } else {
        stats_.transient_bytes += r->bytes();
    }
    *out = r;
    return RDMX_OK;
}

rdmx_status_t RegCache::get(const void *addr, size_t len, uint32_t access, Region **out) {
    sync_releases();
    if (std::find(accesses_.begin(), accesses_.end(), access) == accesses_.end()) accesses_.push_back(access);
    auto a = reinterpret_cast<uintptr_t>(addr);
    uintptr_t start = a & ~(page_ - 1);
    uintptr_t end = (a + len + page_ - 1) & ~(page_ - 1);
    if (Region *r = find(access, start, end)) {
        ++stats_.hits;
        if (r->refs++ == 0) List::unlink(&r->lru);
        *out = r;
        return RDMX_OK;
    }
    // Overlapping regions of the same access give way to their union, when
    // the union fits.
    uintptr_t ustart = start, uend = end;
    auto it = by_start_.upper_bound(Key{access, start});
    if (it != by_start_.begin() && std::prev(it)->first.first == access && std::prev(it)->second->end > start) --it;
    for (auto j = it; j != by_start_.end() && j->first.first == access && j->second->start < end; ++j) {
        if (j->second->start < ustart) ustart = j->second->start;
        if (j->second->end > uend) uend = j->second->end;
    }
    if (uend - ustart <= max_bytes_) {
        start = ustart;
        end = uend;
    }
    remove_range(access, start, end, &stats_.merges);
    bool cache = end - start <= max_bytes_ && make_room(end - start);
    return add(access, start, end, cache, out);
}

}  // namespace rdmx
