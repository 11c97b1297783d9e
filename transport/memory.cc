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

// The cache registers with write access (a region serves sends and
// receives). Read-only pages cannot take it: say so quietly and let the
// caller register this one transfer with the access it needs (a send only
// reads its buffer); a write-less region in the cache would fail a later
// receive into the same pages.
rdmx_status_t MrRegistrar::reg(void *self, uintptr_t start, size_t len, void **handle) {
    auto *r = static_cast<MrRegistrar *>(self);
    auto *addr = reinterpret_cast<void *>(start);
    ibv_mr *mr = nullptr;
    int e = vx::reg_mr(r->pd, addr, len, r->access, &mr);
    if (bad_range(e) && (r->access & kWriteAccess)) {
        RDMX_DEBUG("memory: [%p, +%zu) cannot be registered with write access (%s): not cached", addr, len,
                   strerror(e));
        return RDMX_ERR_INVALID_ARG;
    }
    if (e != 0) return reg_failed(r->dev, addr, len, r->access, e);
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

}  // namespace rdmx
