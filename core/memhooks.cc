// See memhooks.h for why libc's functions are patched rather than wrapped.
#include "core/memhooks.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <mutex>

extern "C" void *__curbrk;  // glibc's cached program break (exported)

namespace rdmx::memhooks {

namespace {

constexpr uint64_t kRing = 4096;

// A slot's seq is its event index + 1 once the event is fully written.
struct Slot {
    std::atomic<uint64_t> seq{0};
    std::atomic<uintptr_t> start{0};
    std::atomic<size_t> len{0};
};

Slot g_ring[kRing];
std::atomic<uint64_t> g_head{0};
std::atomic<bool> g_installed{false};

// ---- the hooks: record first, then release, so the event is visible
// before the address can be handed out again ----------------------------

int hook_munmap(void *addr, size_t len) {
    record(reinterpret_cast<uintptr_t>(addr), len);
    return static_cast<int>(syscall(SYS_munmap, addr, len));
}

void *hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    if (flags & MAP_FIXED) record(reinterpret_cast<uintptr_t>(addr), len);
    return reinterpret_cast<void *>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}

void *hook_mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
    void *fixed = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        fixed = va_arg(ap, void *);
        va_end(ap);
        record(reinterpret_cast<uintptr_t>(fixed), new_len);
    }
    record(reinterpret_cast<uintptr_t>(old), old_len);
    return reinterpret_cast<void *>(syscall(SYS_mremap, old, old_len, new_len, flags, fixed));
}

int hook_madvise(void *addr, size_t len, int advice) {
    // These drop the pages: the next touch maps new ones.
    if (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE)
        record(reinterpret_cast<uintptr_t>(addr), len);
    return static_cast<int>(syscall(SYS_madvise, addr, len, advice));
}

int hook_shmdt(const void *addr) {
    // The segment's size is not known here: treat everything above as gone.
    auto a = reinterpret_cast<uintptr_t>(addr);
    record(a, UINTPTR_MAX - a);
    return static_cast<int>(syscall(SYS_shmdt, addr));
}

int hook_brk(void *addr) {
    auto old = reinterpret_cast<uintptr_t>(__curbrk), want = reinterpret_cast<uintptr_t>(addr);
    if (old != 0 && want < old) record(want, old - want);
    // The kernel returns the new break, or the old one on failure.
    __curbrk = reinterpret_cast<void *>(syscall(SYS_brk, addr));
    if (reinterpret_cast<uintptr_t>(__curbrk) < want) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

// ---- patching ----------------------------------------------------------

bool sanitizer_runtime() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#else
    return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr || dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr ||
           dlsym(RTLD_DEFAULT, "__msan_init") != nullptr;
#endif
}

#if defined(__x86_64__)
// movabs $hook, %r11 ; jmp *%r11. r11 is scratch at a call boundary and
// carries no argument, so the hook receives the caller's registers intact.
bool patch(void *libc, const char *name, void *hook, const char **why) {
    auto *fn = static_cast<uint8_t *>(dlsym(libc, name));
    if (fn == nullptr) {
        *why = "a libc function to hook was not found";
        return false;
    }
    uint8_t code[13] = {0x49, 0xbb};
    auto target = reinterpret_cast<uint64_t>(hook);
    std::memcpy(code + 2, &target, sizeof(target));
    code[10] = 0x41;
    code[11] = 0xff;
    code[12] = 0xe3;
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    uintptr_t lo = reinterpret_cast<uintptr_t>(fn) & ~(page - 1);
    uintptr_t hi = (reinterpret_cast<uintptr_t>(fn) + sizeof(code) + page - 1) & ~(page - 1);
    auto *p = reinterpret_cast<void *>(lo);
    if (mprotect(p, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        *why = "libc's text cannot be made writable (W^X policy?)";
        return false;
    }
    std::memcpy(fn, code, sizeof(code));
    (void)mprotect(p, hi - lo, PROT_READ | PROT_EXEC);
    __builtin___clear_cache(reinterpret_cast<char *>(fn), reinterpret_cast<char *>(fn) + sizeof(code));
    return true;
}

// An entry that starts with a jump was patched by someone else.
bool already_patched(const uint8_t *fn) {
    return fn[0] == 0xe9 || fn[0] == 0xeb || (fn[0] == 0xff && fn[1] == 0x25) ||
           ((fn[0] == 0x48 || fn[0] == 0x49) && (fn[1] == 0xb8 || fn[1] == 0xbb));
}

bool install_all(const char **why) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    if (libc == nullptr) {
        *why = "libc.so.6 is not loaded";
        return false;
    }
    // Each function must be found before any is patched: all or nothing.
    const char *names[] = {"munmap", "mmap", "mremap", "madvise", "shmdt", "brk"};
    void *hooks[] = {reinterpret_cast<void *>(&hook_munmap), reinterpret_cast<void *>(&hook_mmap),
                     reinterpret_cast<void *>(&hook_mremap), reinterpret_cast<void *>(&hook_madvise),
                     reinterpret_cast<void *>(&hook_shmdt),  reinterpret_cast<void *>(&hook_brk)};
    for (const char *n : names) {
        if (dlsym(libc, n) == nullptr) {
            *why = "a libc function to hook was not found";
            return false;
        }
        if (already_patched(static_cast<const uint8_t *>(dlsym(libc, n)))) {
            // Another runtime (UCX's or Open MPI's memory hooks) got there
            // first; overwriting its jump would blind it.
            *why = "libc's memory functions are already hooked by another library";
            return false;
        }
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
        if (!patch(libc, names[i], hooks[i], why)) return false;
    return true;
}
#else
bool install_all(const char **why) {
    *why = "memory hooks are implemented for x86_64 only";
    return false;
}
#endif

}  // namespace

void record(uintptr_t start, size_t len) {
    uint64_t i = g_head.fetch_add(1, std::memory_order_acq_rel);
    Slot &s = g_ring[i % kRing];
    s.seq.store(0, std::memory_order_relaxed);
    s.start.store(start, std::memory_order_relaxed);
    s.len.store(len, std::memory_order_relaxed);
    s.seq.store(i + 1, std::memory_order_release);
}

bool install(const char **why) {
    static std::once_flag once;
    static const char *reason = nullptr;
    std::call_once(once, [] {
        if (sanitizer_runtime()) {
            reason = "a sanitizer's allocator releases memory behind libc's back";
            return;
        }
        if (install_all(&reason)) g_installed.store(true, std::memory_order_release);
    });
    if (why != nullptr) *why = reason;
    return g_installed.load(std::memory_order_acquire);
}

bool installed() { return g_installed.load(std::memory_order_acquire); }

Cursor::Cursor() : pos_(g_head.load(std::memory_order_acquire)) {}

bool Cursor::pending() const { return g_head.load(std::memory_order_acquire) != pos_; }

Cursor::Next Cursor::next(Range *r) {
    uint64_t head = g_head.load(std::memory_order_acquire);
    if (head == pos_) return kEmpty;
    if (head - pos_ > kRing) {
        pos_ = head;
        return kLost;
    }
    Slot &s = g_ring[pos_ % kRing];
    uint64_t seq = s.seq.load(std::memory_order_acquire);
    // Still being written (the writer was preempted between claiming the
    // slot and publishing it). Later slots may already be published and
    // their memory released, so we may not stop here: wait briefly, then
    // give up and report loss, which is always safe.
    for (int spins = 0; seq < pos_ + 1 && spins < 1000; ++spins) {
        if (spins > 100) sched_yield();
        seq = s.seq.load(std::memory_order_acquire);
    }
    if (seq < pos_ + 1) {
        pos_ = head;
        return kLost;
    }
    // Acquire loads keep the re-check of seq below after the data reads.
    r->start = s.start.load(std::memory_order_acquire);
    r->len = s.len.load(std::memory_order_acquire);
    if (seq != pos_ + 1 || s.seq.load(std::memory_order_relaxed) != seq) {  // overwritten under us
        pos_ = g_head.load(std::memory_order_acquire);
        return kLost;
    }
    ++pos_;
    return kEvent;
}

}  // namespace rdmx::memhooks
