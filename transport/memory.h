// Registered memory: one MR over a slab of equal buffers (receive and send
// bounce pools), and single registrations for rendezvous buffers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/pool.h"
#include "transport/handles.h"
#include "rdmx/rdmx.h"

namespace rdmx {

// Registers [addr, addr+len) with `access`; logs the verbs call, errno text,
// device and, for ENOMEM, the `ulimit -l` hint.
// On failure logs once, naming the buffer, with a hint for the cause:
// NO_MEMORY when the kernel refused to pin (the locked-memory limit), and
// INVALID_ARG when the range is not mapped, or is read-only while `access`
// needs to write it.
rdmx_status_t register_memory(ibv_pd *pd, const char *dev, void *addr, size_t len, int access, MrHandle *out);

// Protects registered pages from fork() (and system(), popen()): nothing to
// do where the kernel copies pinned pages for the child (Linux 5.12 and
// later), else ibv_fork_init(), which must come before the process's first
// registration; when it is too late for that, a warning says how to fix it.
void fork_protect();

// Registrations for the registration cache (core/rcache.h): local write plus
// the access the cache was asked for (the cache keys on it): none for
// buffers only this rank's own READs or WRITEs use, MW_BIND for buffers
// exposed through a memory window, REMOTE_READ for a get sender's buffer and
// REMOTE_WRITE for a put receiver's when there are no windows (never both).
// Read-only memory is registered without local write (it can only be sent).
struct MrRegistrar {
    ibv_pd *pd = nullptr;
    const char *dev = "";
    int access = IBV_ACCESS_LOCAL_WRITE;  // always granted; the cache's access is added
    static rdmx_status_t reg(void *self, uintptr_t start, size_t len, uint32_t access, void **handle);
    static void dereg(void *self, void *handle);
};

class Slab {
public:
    Slab() = default;
    Slab(const Slab &) = delete;
    Slab &operator=(const Slab &) = delete;
    ~Slab();
    // `count` buffers of `size` bytes (rounded up to 64), page aligned, on the
    // NUMA node of the calling thread (first touch happens here).
    rdmx_status_t init(ibv_pd *pd, const char *dev, uint32_t count, size_t size, int access);
    char *buf(uint32_t i) const { return base_ + static_cast<size_t>(i) * stride_; }
    uint32_t lkey() const { return mr_ ? mr_->lkey : 0; }
    uint32_t rkey() const { return mr_ ? mr_->rkey : 0; }
    uint32_t count() const { return count_; }
    size_t size() const { return size_; }
    // Free list (send pools); receive pools recycle through the SRQ instead.
    bool get(uint32_t *idx) { return free_.get(idx); }
    void put(uint32_t idx) { free_.put(idx); }
    size_t free_count() const { return free_.free_count(); }

private:
    char *base_ = nullptr;
    size_t bytes_ = 0;
    size_t size_ = 0;
    size_t stride_ = 0;
    uint32_t count_ = 0;
    FreeList free_;
    MrHandle mr_;  // declared after the memory it covers: deregistered first
};

// Credit slots, one per peer, each under a registration of its own that
// allows REMOTE_WRITE on exactly its 8 bytes: the rkey a peer is given
// reaches its own slot and no other peer's (one registration over all slots
// let any peer write the grants any other peer had made). Slots sit a cache
// line apart; the memory is zeroed, so no grant is read before one is made.
// A mesh registers every slot at init; connections on demand register a
// peer's slot when it first connects (ensure), before its rkey is sent.
class CreditSlots {
public:
    static constexpr size_t kStride = 64;
    CreditSlots() = default;
    CreditSlots(const CreditSlots &) = delete;
    CreditSlots &operator=(const CreditSlots &) = delete;
    ~CreditSlots();
    // Slots for ranks [0, size); with `all`, every one but `self` registered.
    rdmx_status_t init(ibv_pd *pd, const char *dev, int size, int self, bool all);
    // Registers `peer`'s slot if it is not yet (logged on failure).
    rdmx_status_t ensure(int peer);
    volatile uint64_t *slot(int peer) const {
        return reinterpret_cast<volatile uint64_t *>(base_ + static_cast<size_t>(peer) * kStride);
    }
    uint64_t addr(int peer) const { return reinterpret_cast<uint64_t>(slot(peer)); }
    uint32_t rkey(int peer) const {
        const MrHandle &m = mrs_[static_cast<size_t>(peer)];
        return m ? m->rkey : 0;
    }

private:
    char *base_ = nullptr;
    size_t bytes_ = 0;
    ibv_pd *pd_ = nullptr;
    const char *dev_ = "";
    std::vector<MrHandle> mrs_;  // deregistered before the memory is unmapped
};

}  // namespace rdmx
