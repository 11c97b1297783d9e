// A tiny harness for multi-rank verbs tests launched by mpirun: every check
// names rank, test and values; the first failure exits nonzero. Exit 77
// (ctest SKIP) when the machine has no RDMA device.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rdmx/rdmx.h"

namespace rt {

inline int g_rank = -1;
inline const char *g_test = "?";

#define RT_CHECK(cond, ...)                                                           \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "FAIL rank %d [%s] %s:%d: %s: ", rt::g_rank, rt::g_test, \
                         __FILE__, __LINE__, #cond);                                  \
            std::fprintf(stderr, __VA_ARGS__);                                        \
            std::fprintf(stderr, "\n");                                               \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

#define RT_OK(expr)                                                                   \
    do {                                                                              \
        rdmx_status_t st_ = (expr);                                                   \
        RT_CHECK(st_ == RDMX_OK, "%s returned %d (%s)", #expr, st_, rdmx_strerror(st_)); \
    } while (0)

// RDMX_TEST_SHRINK=N divides repetition and message counts by N (the
// sanitizer runs and the guest's twins, where everything is many times
// slower), never below the floor at which a case still proves its point.
inline long shrunk(long count, long floor) {
    const char *v = std::getenv("RDMX_TEST_SHRINK");
    long n = v != nullptr ? std::atol(v) : 1;
    if (n <= 1 || count <= floor) return count;
    return count / n > floor ? count / n : floor;
}

// Payload pattern: depends on sender, tag, length and byte index.
inline uint8_t pattern(int src, int tag, size_t len, size_t i) {
    return static_cast<uint8_t>((static_cast<size_t>(src) * 131u) ^ (static_cast<size_t>(tag) * 31u) ^ (len * 7u) ^
                                (i * 2654435761u >> 13));
}
inline void fill(std::vector<uint8_t> &b, int src, int tag) {
    for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(src, tag, b.size(), i);
}
// Index of the first wrong byte, or SIZE_MAX.
inline size_t verify(const uint8_t *b, size_t n, int src, int tag, size_t sent_len) {
    for (size_t i = 0; i < n; ++i)
        if (b[i] != pattern(src, tag, sent_len, i)) return i;
    return SIZE_MAX;
}

// rdmx_init or exit 77 when there is no device to run on.
inline rdmx_context_h init_or_skip(const rdmx_config_t *cfg = nullptr) {
    rdmx_context_h ctx = nullptr;
    rdmx_status_t st = rdmx_init(cfg, &ctx);
    if (st == RDMX_ERR_NO_DEVICE) {
        std::fprintf(stderr, "SKIP: no RDMA device (%s)\n", rdmx_strerror(st));
        std::exit(77);
    }
    RT_CHECK(st == RDMX_OK, "rdmx_init: %s", rdmx_strerror(st));
    g_rank = rdmx_rank(ctx);
    return ctx;
}

}  // namespace rt
