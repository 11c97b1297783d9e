// See memhooks.h for why libc's system call sites are patched rather than its functions wrapped.
#include "core/memhooks.h"

#include <dlfcn.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iterator>
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

// ---- the hook: record first, then let the system call run, so the event
// is visible before the address can be handed out again ------------------

// Called by the trampolines (below) with the system call's number and its
// first five arguments, just before the kernel sees them. It only records:
// libc's own code around the call (errno, __curbrk, ...) runs unchanged.
void on_syscall(long nr, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,
                uintptr_t a4) {
    switch (nr) {
    case SYS_munmap: record(a0, a1); break;
    case SYS_mmap:
        if (a3 & MAP_FIXED) record(a0, a1);  // replaces whatever was mapped there
        break;
    case SYS_mremap:
        if (a3 & MREMAP_FIXED) record(a4, a2);
        record(a0, a1);
        break;
    case SYS_madvise:  // these drop the pages: the next touch maps new ones
        if (a2 == MADV_DONTNEED || a2 == MADV_FREE || a2 == MADV_REMOVE) record(a0, a1);
        break;
    case SYS_shmdt:  // the segment's size is not known here: everything above is gone
        record(a0, UINTPTR_MAX - a0);
        break;
    case SYS_brk: {  // glibc updates __curbrk after the call: it still holds the old break
        auto old = reinterpret_cast<uintptr_t>(__curbrk);
        if (old != 0 && a0 < old) record(a0, old - a0);
        break;
    }
    default: break;
    }
}

bool sanitizer_runtime() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return true;
#else
    return dlsym(RTLD_DEFAULT, "__asan_init") != nullptr || dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr ||
           dlsym(RTLD_DEFAULT, "__msan_init") != nullptr;
#endif
}

#if defined(__x86_64__)
constexpr size_t kScan = 256;        // bytes of each function searched for its system call
constexpr size_t kMaxSites = 2;      // system call sites hooked per function
constexpr size_t kTrampStride = 128; // bytes per trampoline
constexpr int kTextProt = PROT_READ | PROT_EXEC;

// A trampoline: saves what the system call would have kept (every argument
// register, flags, the x87/SSE state) and skips the red zone, calls
// on_syscall(nr, rdi, rsi, rdx, r10, r8), restores, then does
// what the replaced instruction did (mov $nr,%eax) and jumps back to the
// `syscall` instruction. rcx and r11 are free: the system call clobbers them.
size_t emit_trampoline(uint8_t *t, uint32_t nr, const uint8_t *resume) {
    static const uint8_t kSave[] = {
        0x48, 0x8d, 0x64, 0x24, 0x80,              // lea -128(%rsp),%rsp   (red zone)
        0x57, 0x56, 0x52, 0x41, 0x52, 0x41, 0x50,  // push rdi, rsi, rdx, r10, r8
        0x41, 0x51, 0x9c, 0x53,                    // push r9; pushfq; push rbx
        0x48, 0x89, 0xe3,                          // mov %rsp,%rbx
        0x48, 0x81, 0xec, 0x00, 0x02, 0x00, 0x00,  // sub $512,%rsp
        0x48, 0x83, 0xe4, 0xc0,                    // and $-64,%rsp
        0x48, 0x0f, 0xae, 0x04, 0x24,              // fxsave64 (%rsp)
        0x4d, 0x89, 0xc1, 0x4d, 0x89, 0xd0,        // mov %r8,%r9; mov %r10,%r8
        0x48, 0x89, 0xd1, 0x48, 0x89, 0xf2,        // mov %rdx,%rcx; mov %rsi,%rdx
        0x48, 0x89, 0xfe,                          // mov %rdi,%rsi
    };
    static const uint8_t kRestore[] = {
        0x48, 0x0f, 0xae, 0x0c, 0x24,              // fxrstor64 (%rsp)
        0x48, 0x89, 0xdc,                          // mov %rbx,%rsp
        0x5b, 0x9d, 0x41, 0x59, 0x41, 0x58,        // pop rbx; popfq; pop r9, r8
        0x41, 0x5a, 0x5a, 0x5e, 0x5f,              // pop r10, rdx, rsi, rdi
        0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00,  // lea 128(%rsp),%rsp
    };
    size_t n = 0;
    auto put = [&](const void *b, size_t len) {
        std::memcpy(t + n, b, len);
        n += len;
    };
    auto put8 = [&](uint8_t b) { t[n++] = b; };
    put(kSave, sizeof(kSave));
    put8(0xbf);  // mov $nr,%edi
    put(&nr, 4);
    const auto fn = reinterpret_cast<uint64_t>(&on_syscall);
    put8(0x48), put8(0xb8), put(&fn, 8);  // movabs $fn,%rax
    put8(0xff), put8(0xd0);               // call *%rax
    put(kRestore, sizeof(kRestore));
    put8(0xb8);  // mov $nr,%eax: the replaced instruction
    put(&nr, 4);
    const auto back = reinterpret_cast<uint64_t>(resume);
    put8(0x49), put8(0xbb), put(&back, 8);  // movabs $resume,%r11
    put8(0x41), put8(0xff), put8(0xe3);     // jmp *%r11
    return n;
}

// Waits until no core can still be executing instructions decoded before
// the last store to libc's text.
void sync_cores() {
    static const bool membarrier_ok =
        syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0;
    if (membarrier_ok && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0) return;
    struct timespec ts{0, 1000000};  // no membarrier: a millisecond is long past any pipeline
    nanosleep(&ts, nullptr);
}

// A 2-byte store at any address within one cache line is atomic (x86 since P6).
void store2(uint8_t *p, uint8_t b0, uint8_t b1) {
    const uint16_t v = static_cast<uint16_t>(b0 | (b1 << 8));
    asm volatile("movw %1, (%0)" : : "r"(p), "r"(v) : "memory");
}

// Page-aligned ranges holding the 5 bytes at each site.
size_t site_pages(uint8_t *const *sites, size_t n, uintptr_t *pages, size_t max) {
    const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
        for (uintptr_t a : {reinterpret_cast<uintptr_t>(sites[i]), reinterpret_cast<uintptr_t>(sites[i]) + 4}) {
            const uintptr_t pg = a & ~(page - 1);
            bool seen = false;
            for (size_t j = 0; j < k; ++j) seen = seen || pages[j] == pg;
            if (!seen && k < max) pages[k++] = pg;
        }
    }
    return k;
}

// Trampoline memory within a rel32 jump of every site.
uint8_t *alloc_near(uint8_t *const *sites, size_t n, size_t len) {
    constexpr intptr_t kStep = intptr_t{64} << 20;
    constexpr intptr_t kReach = intptr_t{1} << 31;
    const auto base = reinterpret_cast<intptr_t>(sites[0]) & ~(kStep - 1);
    for (intptr_t d = kStep; d < kReach - kStep; d += kStep) {
        for (intptr_t hint : {base - d, base + d}) {
            if (hint <= 0) continue;
            void *p = mmap(reinterpret_cast<void *>(hint), len, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
            if (p == MAP_FAILED) continue;
            bool near = true;
            for (size_t i = 0; i < n; ++i) {
                const intptr_t dist = reinterpret_cast<intptr_t>(p) - reinterpret_cast<intptr_t>(sites[i]);
                near = near && dist > -kReach + intptr_t(len) && dist < kReach - intptr_t(len);
            }
            if (near) return static_cast<uint8_t *>(p);
            munmap(p, len);  // an old kernel took the hint as a hint only
        }
    }
    return nullptr;
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
    struct Target {
        const char *name;
        uint32_t nr;
    };
    static const Target targets[] = {{"munmap", SYS_munmap},   {"mmap", SYS_mmap},   {"mremap", SYS_mremap},
                                     {"madvise", SYS_madvise}, {"shmdt", SYS_shmdt}, {"brk", SYS_brk}};
    constexpr size_t kMax = std::size(targets) * kMaxSites;
    uint8_t *sites[kMax];
    uint32_t nrs[kMax];
    size_t n = 0;
    // Everything is found and checked before a byte of libc changes.
    for (const Target &t : targets) {
        auto *fn = static_cast<uint8_t *>(dlsym(libc, t.name));
        if (fn == nullptr) {
            *why = "a libc function to hook was not found";
            return false;
        }
        if (already_patched(fn)) {  // UCX's or Open MPI's memory hooks; overwriting them would blind them
            *why = "libc's memory functions are already hooked by another library";
            return false;
        }
        const size_t k = detail::find_sites(fn, kScan, t.nr, sites + n, kMaxSites);
        if (k == 0) {
            *why = "a libc memory function has no recognisable system call (mov $nr,%eax; syscall)";
            return false;
        }
        for (size_t i = 0; i < k; ++i) nrs[n + i] = t.nr;
        n += k;
    }
    const size_t tramp_len = (kMax * kTrampStride + 4095) & ~size_t{4095};
    uint8_t *tramp = alloc_near(sites, n, tramp_len);
    if (tramp == nullptr) {
        *why = "no memory for trampolines within 2 GiB of libc";
        return false;
    }
    uint8_t *targets_at[kMax];
    for (size_t i = 0; i < n; ++i) {
        targets_at[i] = tramp + i * kTrampStride;
        emit_trampoline(targets_at[i], nrs[i], sites[i] + detail::kSiteLen);
    }
    if (mprotect(tramp, tramp_len, kTextProt) != 0) {
        munmap(tramp, tramp_len);
        *why = "trampoline memory cannot be made executable";
        return false;
    }
    if (!detail::patch_sites(sites, targets_at, n, &mprotect, why)) {
        munmap(tramp, tramp_len);  // nothing jumps there: patch_sites changed no byte
        return false;
    }
    return true;  // the trampolines stay for the life of the process
}
#else
bool install_all(const char **why) {
    *why = "memory hooks are implemented for x86_64 only";
    return false;
}
#endif

}  // namespace

#if defined(__x86_64__)
namespace detail {

size_t find_sites(const uint8_t *fn, size_t scan, uint32_t nr, uint8_t **out, size_t max) {
    size_t k = 0;
    for (size_t o = 0; o + kSiteLen + 2 <= scan && k < max; ++o) {
        const uint8_t *p = fn + o;
        uint32_t imm;
        std::memcpy(&imm, p + 1, sizeof(imm));
        if (p[0] == 0xb8 && imm == nr && p[5] == 0x0f && p[6] == 0x05) out[k++] = const_cast<uint8_t *>(p);
    }
    return k;
}

// Three steps per site, each an atomic store to an instruction's start
// followed by sync_cores(), so that a thread anywhere in libc at any moment
// executes either the old instruction or the new one, never a mix:
//   1. `jmp .` (2 bytes) over the mov: a thread arriving there waits;
//   2. the jump's last 3 displacement bytes (no thread executes from them);
//   3. the jump's opcode and first displacement byte, releasing the waiters
//      into the trampoline.
// A thread already past the mov (inside the system call) returns to the
// unchanged `syscall` instruction's successor. Pages are made writable all
// or none before the first store.
bool patch_sites(uint8_t *const *sites, uint8_t *const *targets, size_t n, ProtectFn prot, const char **why) {
    constexpr size_t kMaxPages = 32;
    uintptr_t pages[kMaxPages];
    const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    if (n > kMaxPages / 2) {
        *why = "too many system call sites";
        return false;
    }
    const size_t np = site_pages(sites, n, pages, kMaxPages);
    for (size_t i = 0; i < n; ++i) {
        const auto a = reinterpret_cast<uintptr_t>(sites[i]);
        const intptr_t rel = reinterpret_cast<intptr_t>(targets[i]) - static_cast<intptr_t>(a + kSiteLen);
        if ((a & 63) == 63 || rel != static_cast<int32_t>(rel)) {
            *why = "a system call site cannot be patched atomically (split across a cache line, or out of reach)";
            return false;
        }
    }
    for (size_t i = 0; i < np; ++i) {
        if (prot(reinterpret_cast<void *>(pages[i]), page, kTextProt | PROT_WRITE) != 0) {
            while (i-- > 0) (void)prot(reinterpret_cast<void *>(pages[i]), page, kTextProt);
            *why = "libc's text cannot be made writable (W^X policy?)";
            return false;
        }
    }
    int32_t rel[kMaxPages / 2];
    for (size_t i = 0; i < n; ++i)
        rel[i] = static_cast<int32_t>(reinterpret_cast<intptr_t>(targets[i]) -
                                      reinterpret_cast<intptr_t>(sites[i] + kSiteLen));
    for (size_t i = 0; i < n; ++i) store2(sites[i], 0xeb, 0xfe);
    sync_cores();
    for (size_t i = 0; i < n; ++i) {
        uint8_t b[4];
        std::memcpy(b, &rel[i], sizeof(b));
        for (int j = 1; j < 4; ++j) reinterpret_cast<volatile uint8_t *>(sites[i])[j + 1] = b[j];
    }
    sync_cores();
    for (size_t i = 0; i < n; ++i) store2(sites[i], 0xe9, static_cast<uint8_t>(rel[i] & 0xff));
    sync_cores();
    for (size_t i = 0; i < np; ++i) (void)prot(reinterpret_cast<void *>(pages[i]), page, kTextProt);
    return true;
}

}  // namespace detail
#endif

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
