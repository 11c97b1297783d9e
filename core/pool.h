// Free list of buffer indices for fixed-size pools (the engine's send bounce
// buffers). Storage is allocated once by reset(); get() and put() only move
// an index on a preallocated stack, so the small-message path never reaches
// malloc. LIFO on purpose: the buffer put back last is the one most likely
// still in cache. Not thread safe: the engine serialises calls.
#pragma once
#include <cassert>
#include <cstdint>
#include <memory>

namespace rdmx {

class FreeList {
public:
    FreeList() = default;
    explicit FreeList(uint32_t count) { reset(count); }
    // Owners (Slab) stay put; moving would leave top_ pointing into the
    // moved storage.
    FreeList(const FreeList &) = delete;
    FreeList &operator=(const FreeList &) = delete;

    // `count` indices 0..count-1, all free; get() hands out 0 first, then 1...
    // The one call that allocates.
    void reset(uint32_t count) {
        slots_ = std::make_unique<uint32_t[]>(count);
        end_ = slots_.get() + count;
        top_ = end_;
        for (uint32_t i = 0; i < count; ++i) slots_[i] = count - 1 - i;
    }

    bool get(uint32_t *idx) {
        if (top_ == slots_.get()) return false;
        *idx = *--top_;
        return true;
    }

    // With every index already back, this one is necessarily a double put:
    // dropping it keeps each buffer on the list once (and the write in bounds).
    void put(uint32_t idx) {
        assert(idx < capacity() && "FreeList::put: index out of range");
        assert(top_ != end_ && "FreeList::put: double put (every index is already free)");
        if (top_ != end_) [[likely]]
            *top_++ = idx;
    }

    uint32_t free_count() const { return static_cast<uint32_t>(top_ - slots_.get()); }
    uint32_t capacity() const { return static_cast<uint32_t>(end_ - slots_.get()); }

private:
    std::unique_ptr<uint32_t[]> slots_;
    uint32_t *top_ = nullptr;  // one past the last free index
    uint32_t *end_ = nullptr;
};

}  // namespace rdmx
