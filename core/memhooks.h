// Memory release events for the registration cache.
//
// A registration pins the physical pages behind a virtual range. If the
// application frees that range and the address is reused, the old pages stay
// pinned and a cached registration would move stale data. So the cache must
// learn about every release: munmap, mremap, madvise(DONTNEED/FREE/REMOVE),
// mmap(MAP_FIXED) over a mapping, shmdt and a shrinking brk. glibc's free()
// calls these internally (not through the PLT), so symbol interposition does
// not see them. Like UCX's and Open MPI's memory hooks we patch libc's code,
// but only the one instruction that loads the system call number right
// before each `syscall` in those functions (`mov $nr,%eax`, 5 bytes), with a
// jump (also 5 bytes) to a trampoline that records the range and then does
// the mov and returns to the `syscall`. One instruction replaced by one, in
// steps each atomic to the instruction fetch (see patch_sites): threads that
// run libc's code while the hooks are installed see the old instruction or
// the new one, never a torn mix, and libc's own code (errno, __curbrk) still
// runs. Hooks are never removed; the library is linked with -z nodelete so
// that dlclose cannot unmap the code the trampolines call.
//
// Kernel alternatives were weighed: on-demand paging (no pinning, so no
// cache) is absent on most devices, Soft-RoCE among them; userfaultfd only
// reports unmaps of ranges registered for fault handling, and is often
// restricted to privileged users.
//
// Events go into one process-wide ring; each cache keeps its own cursor and
// drains the ring before every lookup. A cursor that falls a full ring
// behind, or meets a slot still being written, cannot know what it missed and
// must drop every idle registration.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rdmx::memhooks {

// Installs the hooks once per process (thread safe). False, with the reason
// in *why, where they cannot work: an architecture other than x86_64, a
// sanitizer runtime (its allocator releases memory with raw system calls
// the hooks never see), or text pages that cannot be made writable.
bool install(const char **why);
bool installed();

struct Range {
    uintptr_t start = 0;
    size_t len = 0;
};

// One consumer's position in the event ring.
class Cursor {
public:
    Cursor();  // starts at the current end: only later events are reported
    // Calls fn(range) for each event since the last call. Returns false if
    // events were lost (the caller must treat all memory as released).
    template <class Fn>
    bool drain(Fn &&fn) {
        Range r;
        for (;;) {
            switch (next(&r)) {
            case kEvent: fn(r); break;
            case kEmpty: return true;
            case kLost: return false;
            }
        }
    }
    // Cheap check for the hot path: anything new since the last drain?
    bool pending() const;

private:
    enum Next { kEvent, kEmpty, kLost };
    Next next(Range *r);
    uint64_t pos_;
};

// Test seam: records a release as the hooks would.
void record(uintptr_t start, size_t len);

#if defined(__x86_64__)
// The patching machinery, exposed for tests on code pages of their own.
namespace detail {
constexpr size_t kSiteLen = 5;  // mov $nr,%eax, replaced by jmp rel32
// Up to max sites `mov $nr,%eax; syscall` in the first `scan` bytes of fn.
size_t find_sites(const uint8_t *fn, size_t scan, uint32_t nr, uint8_t **out, size_t max);
using ProtectFn = int (*)(void *, size_t, int);
// Points each site at its target (within a rel32 jump). All or nothing:
// false, with the reason in *why and no byte changed, if any page holding a
// site cannot be made writable through prot.
bool patch_sites(uint8_t *const *sites, uint8_t *const *targets, size_t n, ProtectFn prot, const char **why);
}  // namespace detail
#endif

}  // namespace rdmx::memhooks
