#include "transport/memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace rdmx {

namespace {

constexpr int kWriteAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;

// EFAULT/EACCES: the kernel could not pin the range with the access asked
// (unmapped, or read-only pages where write access was asked).
bool bad_range(int e) { return e == EFAULT || e == EACCES; }

rdmx_status_t reg_failed(const char *dev, void *addr, size_t len, int access, int e) {
    const char *hint = "";
    if (e == ENOMEM || e == EAGAIN)
        hint = " (hint: the locked-memory limit is too low: `ulimit -l unlimited`)";
    else if (bad_range(e) && (access & kWriteAccess))
        hint = " (the buffer is not mapped, or is read-only memory and this transfer writes into it)";
    else if (bad_range(e))
        hint = " (the buffer is not mapped memory)";
    RDMX_ERROR("memory: ibv_reg_mr(%p, %zu bytes, access 0x%x) on %s failed: %s%s", addr, len, access, dev,
               strerror(e), hint);
    return bad_range(e) ? RDMX_ERR_INVALID_ARG : RDMX_ERR_NO_MEMORY;
}

}  // namespace

rdmx_status_t register_memory(ibv_pd *pd, const char *dev, void *addr, size_t len, int access, MrHandle *out) {
    ibv_mr *mr = nullptr;
    if (int e = vx::reg_mr(pd, addr, len, access, &mr)) return reg_failed(dev, addr, len, access, e);
    out->reset(mr);
    return RDMX_OK;
}

void fork_protect() {
    if (ibv_is_fork_initialized() != IBV_FORK_DISABLED) return;  // unneeded, or on already
    if (int e = ibv_fork_init())
        RDMX_WARN("memory: ibv_fork_init failed (%s): registered pages are not protected from fork(), and a child "
                  "process (system(), popen()) could corrupt transfers (hint: set RDMAV_FORK_SAFE=1 in the "
                  "environment, or call ibv_fork_init() before anything registers memory)", strerror(e));
}

// The cache's regions carry local write plus the access they were asked for
// (the cache keys on it). Read-only pages take no write access: a region
// exposed for REMOTE_READ (a get send) needs none, so it is registered
// without; a plain local region (access 0) may later be where our READs
// land, so it is not cached write-less, and the caller registers that one
// transfer itself with the access it needs.
rdmx_status_t MrRegistrar::reg(void *self, uintptr_t start, size_t len, uint32_t access, void **handle) {
    auto *r = static_cast<MrRegistrar *>(self);
    auto *addr = reinterpret_cast<void *>(start);
    const int flags = r->access | static_cast<int>(access);
    ibv_mr *mr = nullptr;
    int e = vx::reg_mr(r->pd, addr, len, flags, &mr);
    if (bad_range(e) && access != 0 && (flags & IBV_ACCESS_LOCAL_WRITE) && !(flags & IBV_ACCESS_REMOTE_WRITE))
        e = vx::reg_mr(r->pd, addr, len, flags & ~IBV_ACCESS_LOCAL_WRITE, &mr);
    if (bad_range(e) && (flags & kWriteAccess)) {
        RDMX_DEBUG("memory: [%p, +%zu) cannot be registered with write access (%s): not cached", addr, len,
                   strerror(e));
        return RDMX_ERR_INVALID_ARG;
    }
    if (e != 0) return reg_failed(r->dev, addr, len, flags, e);
    *handle = mr;
    return RDMX_OK;
}

void MrRegistrar::dereg(void *self, void *handle) {
    auto *r = static_cast<MrRegistrar *>(self);
    if (int e = vx::dereg_mr(static_cast<ibv_mr *>(handle)))
        RDMX_ERROR("memory: ibv_dereg_mr of a cached registration on %s failed: %s", r->dev, strerror(e));
}

Slab::~Slab() {
    mr_.reset();
    if (base_ != nullptr) munmap(base_, bytes_);
}

rdmx_status_t Slab::init(ibv_pd *pd, const char *dev, uint32_t count, size_t size, int access) {
    size_ = size;
    stride_ = (size + 63) & ~static_cast<size_t>(63);
    count_ = count;
    bytes_ = stride_ * count;
    void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        RDMX_ERROR("memory: mmap of %zu bytes for a buffer pool failed: %s", bytes_, strerror(errno));
        return RDMX_ERR_NO_MEMORY;
    }
    base_ = static_cast<char *>(p);
    std::memset(base_, 0, bytes_);  // first touch: pages land on this thread's node
    free_.reset(count);
    return register_memory(pd, dev, base_, bytes_, access, &mr_);
}

CreditSlots::~CreditSlots() {
    mrs_.clear();
    if (base_ != nullptr) munmap(base_, bytes_);
}

rdmx_status_t CreditSlots::init(ibv_pd *pd, const char *dev, int size, int self, bool all) {
    pd_ = pd;
    dev_ = dev;
    bytes_ = static_cast<size_t>(size) * kStride;
    void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        RDMX_ERROR("memory: mmap of %zu bytes for credit slots failed: %s", bytes_, strerror(errno));
        bytes_ = 0;
        return RDMX_ERR_NO_MEMORY;
    }
    base_ = static_cast<char *>(p);  // anonymous: zero-filled
    mrs_.resize(static_cast<size_t>(size));
    for (int r = 0; all && r < size; ++r) {
        if (r == self) continue;
        if (rdmx_status_t st = ensure(r)) return st;
    }
    return RDMX_OK;
}

rdmx_status_t CreditSlots::ensure(int peer) {
    MrHandle &m = mrs_[static_cast<size_t>(peer)];
    if (m) return RDMX_OK;
    return register_memory(pd_, dev_, base_ + static_cast<size_t>(peer) * kStride, sizeof(uint64_t),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &m);
}

}  // namespace rdmx
