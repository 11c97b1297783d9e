#include "transport/memory.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace rdmx {

rdmx_status_t register_memory(ibv_pd *pd, const char *dev, void *addr, size_t len, int access, MrHandle *out) {
    ibv_mr *mr = nullptr;
    int e = vx::reg_mr(pd, addr, len, access, &mr);
    if (e != 0) {
        RDMX_ERROR("memory: ibv_reg_mr(%p, %zu bytes, access 0x%x) on %s failed: %s%s", addr, len, access, dev,
                   strerror(e),
                   e == ENOMEM || e == EAGAIN ? " (hint: the locked-memory limit is too low: `ulimit -l unlimited`)"
                                              : "");
        return RDMX_ERR_NO_MEMORY;
    }
    out->reset(mr);
    return RDMX_OK;
}

rdmx_status_t MrRegistrar::reg(void *self, uintptr_t start, size_t len, uint32_t access, void **handle) {
    auto *r = static_cast<MrRegistrar *>(self);
    auto *addr = reinterpret_cast<void *>(start);
    const int flags = r->access | static_cast<int>(access);
    ibv_mr *mr = nullptr;
    int e = vx::reg_mr(r->pd, addr, len, flags, &mr);
    // Read-only pages: possible only without any write access.
    if ((e == EFAULT || e == EACCES) && (flags & IBV_ACCESS_LOCAL_WRITE) && !(flags & IBV_ACCESS_REMOTE_WRITE))
        e = vx::reg_mr(r->pd, addr, len, flags & ~IBV_ACCESS_LOCAL_WRITE, &mr);
    if (e != 0) {
        MrHandle h;
        return register_memory(r->pd, r->dev, addr, len, flags, &h);  // logs the reason once
    }
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

rdmx_status_t CreditSlots::init(ibv_pd *pd, const char *dev, int size, int self) {
    bytes_ = static_cast<size_t>(size) * kStride;
    void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        RDMX_ERROR("memory: mmap of %zu bytes for credit slots failed: %s", bytes_, strerror(errno));
        bytes_ = 0;
        return RDMX_ERR_NO_MEMORY;
    }
    base_ = static_cast<char *>(p);  // anonymous: zero-filled
    mrs_.resize(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        if (r == self) continue;
        rdmx_status_t st = register_memory(pd, dev, base_ + static_cast<size_t>(r) * kStride, sizeof(uint64_t),
                                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                           &mrs_[static_cast<size_t>(r)]);
        if (st != RDMX_OK) return st;
    }
    return RDMX_OK;
}

}  // namespace rdmx
