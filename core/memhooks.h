// Memory release events for the registration cache.
//
// A registration pins the physical pages behind a virtual range. If the
// application frees that range and the address is reused, the old pages stay
// pinned and a cached registration would move stale data. So the cache must
// learn about every release: munmap, mremap, madvise(DONTNEED/FREE/REMOVE),
// mmap(MAP_FIXED) over a mapping, shmdt and a shrinking brk. glibc's free()
// calls these internally (not through the PLT), so symbol interposition does
// not see them; like UCX's and Open MPI's memory hooks, we patch the entry of
// libc's own functions with a jump to ours, which record the range and then
// make the system call directly.
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

}  // namespace rdmx::memhooks
