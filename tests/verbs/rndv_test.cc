// Rendezvous registrations over real verbs, under mpirun (2 ranks):
//   rndv_test freed          a buffer is freed and a new one lands at the same
//                            address with other data: the receiver must get
//                            the new data (and a receive buffer likewise);
//   rndv_test rotate N       N rendezvous sends from rotating buffers, both
//                            ways at once: every payload checked, pinned
//                            memory (the kernel's VmPin and rdmx's counters)
//                            never above the cache's bound plus what is in
//                            flight, and registrations reused (N divided by
//                            RDMX_TEST_SHRINK, at least 2,000);
//   rndv_test big            one message over 2 GiB each way at once.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <random>
#include <string>

#include "harness.h"

namespace {

rdmx_context_h ctx;
int me, np, peer;

rdmx_stats_t stats() {
    rdmx_stats_t s;
    rdmx_stats_init(&s);
    RT_OK(rdmx_get_stats(ctx, &s));
    return s;
}

// A "Key: N kB" line of a /proc file, in bytes (0 if absent).
size_t proc_kb(const char *path, const char *key) {
    FILE *f = std::fopen(path, "r");
    RT_CHECK(f != nullptr, "cannot open %s", path);
    char line[256];
    size_t kb = 0, klen = std::strlen(key);
    while (std::fgets(line, sizeof(line), f))
        if (std::strncmp(line, key, klen) == 0 && std::sscanf(line + klen, " %zu kB", &kb) == 1) break;
    std::fclose(f);
    return kb << 10;
}

// Pinned memory of this process as the kernel counts it (ib_umem pins).
size_t vm_pin_bytes() { return proc_kb("/proc/self/status", "VmPin:"); }

void fill_words(void *p, size_t len, uint64_t seed) {
    auto *b = static_cast<uint8_t *>(p);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = (seed + i) * 0x9E3779B97F4A7C15ull;
        std::memcpy(b + i, &v, 8);
    }
    for (; i < len; ++i) b[i] = static_cast<uint8_t>(seed + i);
}

size_t check_words(const void *p, size_t len, uint64_t seed) {
    auto *b = static_cast<const uint8_t *>(p);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = (seed + i) * 0x9E3779B97F4A7C15ull, got;
        std::memcpy(&got, b + i, 8);
        if (got != v) return i;
    }
    for (; i < len; ++i)
        if (b[i] != static_cast<uint8_t>(seed + i)) return i;
    return SIZE_MAX;
}

void *map(size_t len, void *hint = nullptr) {
    void *p = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    RT_CHECK(p != MAP_FAILED, "mmap of %zu bytes failed", len);
    return p;
}

// One exchange with the peer: send `out` and receive into `in`, both `len`.
void exchange(void *out, void *in, size_t len, int tag) {
    rdmx_request_h r[2];
    RT_OK(rdmx_irecv(ctx, in, len, peer, tag, &r[0]));
    RT_OK(rdmx_isend(ctx, out, len, peer, tag, &r[1]));
    RT_OK(rdmx_waitall(2, r, nullptr));
}

void t_freed() {
    const size_t len = 1u << 20;
    // Round 1 registers both buffers (and round 2 would hit them if the
    // cache were blind to the release in between).
    void *out = map(len), *in = map(len);
    for (int round = 0; round < 3; ++round) {
        uint64_t seed = static_cast<uint64_t>(me) * 1000 + static_cast<uint64_t>(round);
        fill_words(out, len, seed);
        std::memset(in, 0, len);
        exchange(out, in, len, 10 + round);
        size_t bad = check_words(in, len, static_cast<uint64_t>(peer) * 1000 + static_cast<uint64_t>(round));
        RT_CHECK(bad == SIZE_MAX, "round %d: byte %zu of the message is stale or wrong", round, bad);
        if (round == 2) break;
        // Replace both with new memory at the same addresses. MAP_FIXED over
        // our own mapping, not munmap and then mmap: between those two, any
        // thread (the progress thread's allocations, Open MPI's) may take
        // the hole. munmap itself is exercised by the free() loop below.
        void *old_out = out, *old_in = in;
        out = mmap(old_out, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        in = mmap(old_in, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        RT_CHECK(out == old_out && in == old_in, "could not map new memory at the same addresses");
    }
    // The same through malloc/free (glibc hands a large block back to the
    // kernel on free and maps a new one, usually at the same address).
    for (int round = 0; round < 3; ++round) {
        auto *b = static_cast<uint8_t *>(malloc(len));
        auto *rb = static_cast<uint8_t *>(malloc(len));
        uint64_t seed = static_cast<uint64_t>(me) * 7000 + static_cast<uint64_t>(round);
        fill_words(b, len, seed);
        std::memset(rb, 0, len);
        exchange(b, rb, len, 20 + round);
        size_t bad = check_words(rb, len, static_cast<uint64_t>(peer) * 7000 + static_cast<uint64_t>(round));
        RT_CHECK(bad == SIZE_MAX, "malloc round %d: byte %zu wrong", round, bad);
        free(b);
        free(rb);
    }
    munmap(out, len);
    munmap(in, len);
    rdmx_stats_t s = stats();
    if (s.rcache_enabled)
        RT_CHECK(s.rcache_invalidations >= 2, "the cache saw %" PRIu64 " releases, expected >= 2",
                 s.rcache_invalidations);
    std::printf("rank %d: freed-buffer rounds intact (cache %s, %" PRIu64 " invalidations)\n", me,
                s.rcache_enabled ? "on" : "off", s.rcache_invalidations);
}

struct Rotation {
    std::vector<uint8_t *> bufs;
    size_t slot = 0;
};

void check_pinned(size_t base_pin, size_t in_flight_bytes, long i) {
    rdmx_stats_t s = stats();
    RT_CHECK(s.rcache_bytes <= s.rcache_max_bytes, "at %ld: cache pins %zu > bound %zu", i, s.rcache_bytes,
             s.rcache_max_bytes);
    size_t pin = vm_pin_bytes();
    size_t allowed = base_pin + s.rcache_max_bytes + in_flight_bytes;
    RT_CHECK(pin <= allowed, "at %ld: VmPin %zu bytes > %zu (base %zu + bound %zu + in flight %zu)", i, pin, allowed,
             base_pin, s.rcache_max_bytes, in_flight_bytes);
}

// Sends `count` messages each way from `nbufs` rotating buffers (picked at
// random when `shuffle`), `window` in flight, checking every payload.
void rotate_phase(long count, size_t nbufs, bool shuffle, size_t base_pin, int tag0) {
    const size_t len = 4096 + 123, buf_bytes = 8192, window = 16;
    std::vector<uint8_t *> out(nbufs), in(nbufs);
    for (size_t b = 0; b < nbufs; ++b) {
        out[b] = static_cast<uint8_t *>(map(buf_bytes));
        in[b] = static_cast<uint8_t *>(map(buf_bytes));
    }
    std::mt19937 rng(1234u + static_cast<unsigned>(me));
    std::vector<rdmx_request_h> rr(window), sr(window);
    std::vector<size_t> rbuf(window);
    std::vector<long> msg(window);
    for (long i = 0; i < count; i += static_cast<long>(window)) {
        size_t w = static_cast<size_t>(std::min<long>(static_cast<long>(window), count - i));
        for (size_t k = 0; k < w; ++k) {
            // Buffers in one window are distinct: a buffer in flight is never reused.
            size_t b = shuffle ? (rng() % (nbufs / window)) * window + k : (static_cast<size_t>(i) + k) % nbufs;
            rbuf[k] = b;
            msg[k] = i + static_cast<long>(k);
            RT_OK(rdmx_irecv(ctx, in[b], len, peer, tag0, &rr[k]));
            fill_words(out[b], len, static_cast<uint64_t>(me) << 40 | static_cast<uint64_t>(msg[k]));
            RT_OK(rdmx_isend(ctx, out[b], len, peer, tag0, &sr[k]));
        }
        RT_OK(rdmx_waitall(w, sr.data(), nullptr));
        RT_OK(rdmx_waitall(w, rr.data(), nullptr));
        for (size_t k = 0; k < w; ++k) {
            size_t bad = check_words(in[rbuf[k]], len, static_cast<uint64_t>(peer) << 40 | static_cast<uint64_t>(msg[k]));
            RT_CHECK(bad == SIZE_MAX, "message %ld: byte %zu wrong", msg[k], bad);
        }
        if ((i / static_cast<long>(window)) % 500 == 0) check_pinned(base_pin, 2 * window * buf_bytes, i);
        if (std::getenv("RNDV_TEST_VERBOSE") != nullptr) std::fprintf(stderr, "rank %d: %ld done\n", me, i + static_cast<long>(w));
    }
    check_pinned(base_pin, 0, count);
    for (size_t b = 0; b < nbufs; ++b) {
        munmap(out[b], buf_bytes);
        munmap(in[b], buf_bytes);
    }
}

void t_rotate(long count) {
    rdmx_stats_t s0 = stats();
    if (!s0.rcache_enabled && count > 2000) {
        // Per-transfer registration: keep rxe's registration count sane.
        std::printf("rank %d: registration cache off: %ld sends instead of %ld\n", me, 2000L, count);
        count = 2000;
    }
    size_t base_pin = vm_pin_bytes();
    // Phase 1: the rotation fits the cache, so it registers each buffer once.
    rotate_phase(count, 16, false, base_pin, 30);
    rdmx_stats_t s1 = stats();
    if (s1.rcache_enabled) {
        RT_CHECK(s1.rcache_misses - s0.rcache_misses <= 32 + 4,
                 "%" PRIu64 " registrations for 32 rotating buffers over %ld sends", s1.rcache_misses - s0.rcache_misses,
                 count);
        RT_CHECK(s1.rcache_hits - s0.rcache_hits >= static_cast<uint64_t>(2 * count - 40), "only %" PRIu64 " hits",
                 s1.rcache_hits - s0.rcache_hits);
    }
    // Phase 2: more buffers than the bound holds, at random: evictions, and
    // the bound still holds.
    rotate_phase(2000, 64, true, base_pin, 31);
    rdmx_stats_t s2 = stats();
    if (s2.rcache_enabled)
        RT_CHECK(s2.rcache_evictions > s1.rcache_evictions, "no evictions with 128 buffers over a %zu-byte bound",
                 s2.rcache_max_bytes);
    RT_CHECK(s2.rcache_peak_bytes <= s2.rcache_max_bytes, "peak %zu > bound %zu", s2.rcache_peak_bytes,
             s2.rcache_max_bytes);
    std::printf("rank %d: %ld + 2000 rotating sends intact; cache %s: %" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
                " evictions, peak %zu of %zu bytes; VmPin %zu -> %zu\n",
                me, count, s2.rcache_enabled ? "on" : "off", s2.rcache_hits, s2.rcache_misses, s2.rcache_evictions,
                s2.rcache_peak_bytes, s2.rcache_max_bytes, base_pin, vm_pin_bytes());
}

// Over 2 GiB each way at once. Both ranks send from one shared mapping (same
// pages, same data) so the guest needs 2 GiB less: 2 GiB out + 2 x 2 GiB in.
void t_big() {
    const size_t len = (2ull << 30) + 4097;
    // 2 GiB shared out + 2 x 2 GiB in, plus headroom; rank 0 decides for both.
    int enough = me != 0 || proc_kb("/proc/meminfo", "MemAvailable:") >= 7ull * len / 2;
    RT_OK(rdmx_bcast(ctx, &enough, sizeof(enough), 0));
    if (!enough) {
        std::printf("SKIP: the > 2 GiB test needs ~7 GiB of available memory (guest: scripts/vm/run.sh --mem 10240)\n");
        RT_OK(rdmx_finalize(ctx));
        std::exit(77);
    }
    const std::string name = "/rdmx-big-test-" + std::to_string(getppid());
    int fd = shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
    RT_CHECK(fd >= 0, "shm_open %s: %s", name.c_str(), strerror(errno));
    RT_CHECK(ftruncate(fd, static_cast<off_t>(len)) == 0, "ftruncate: %s", strerror(errno));
    void *o = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    RT_CHECK(o != MAP_FAILED, "mmap of the shared send buffer: %s", strerror(errno));
    close(fd);
    auto *out = static_cast<uint8_t *>(o), *in = static_cast<uint8_t *>(map(len + 4096));
    if (me % 2 == 0) fill_words(out, len, 0xB16000ull);
    std::memset(in + len, 0xEE, 4096);
    RT_OK(rdmx_barrier(ctx));  // the even rank has filled the shared buffer
    double t0 = rdmx_wtime();
    rdmx_request_h r[2];
    RT_OK(rdmx_irecv(ctx, in, len, RDMX_ANY_SOURCE, 77, &r[0]));
    RT_OK(rdmx_isend(ctx, out, len, peer, 77, &r[1]));
    rdmx_msg_info_t info[2];
    RT_OK(rdmx_waitall(2, r, info));
    double dt = rdmx_wtime() - t0;
    RT_CHECK(info[0].length == len && info[0].source == peer, "length %zu source %d", info[0].length, info[0].source);
    size_t bad = check_words(in, len, 0xB16000ull);
    RT_CHECK(bad == SIZE_MAX, "byte %zu of %zu wrong", bad, len);
    RT_CHECK(in[len] == 0xEE && in[len + 4095] == 0xEE, "wrote past the buffer");
    std::printf("rank %d: %zu bytes each way intact in %.1f s\n", me, len, dt);
    RT_OK(rdmx_barrier(ctx));
    if (me % 2 == 0) shm_unlink(name.c_str());
    munmap(out, len);
    munmap(in, len + 4096);
}

}  // namespace

int main(int argc, char **argv) {
    std::string which = argc > 1 ? argv[1] : "";
    rt::g_test = argc > 1 ? argv[1] : "?";
    ctx = rt::init_or_skip();
    me = rdmx_rank(ctx);
    np = rdmx_size(ctx);
    RT_CHECK(np % 2 == 0, "needs an even number of ranks, got %d", np);
    peer = me ^ 1;
    if (which == "freed") t_freed();
    else if (which == "rotate") t_rotate(rt::shrunk(argc > 2 ? std::atol(argv[2]) : 100000, 2000));
    else if (which == "big") t_big();
    else RT_CHECK(false, "unknown case '%s' (freed, rotate N, big)", which.c_str());
    RT_OK(rdmx_barrier(ctx));
    RT_OK(rdmx_finalize(ctx));
    return 0;
}
