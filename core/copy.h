// Copies of the few bytes a small message carries. memcpy with a length
// known only at run time is a call into libc (through the PLT from a shared
// library) whose size dispatch costs more than moving 8 bytes; at the sizes
// latency-bound programs send, two overlapping loads and stores do it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rdmx {

constexpr size_t kInlineCopyMax = 16;  // longer copies go to memcpy

// Copies n bytes from src to dst (which must not overlap), as memcpy does.
inline void copy_bytes(void *dst, const void *src, size_t n) {
    auto *d = static_cast<unsigned char *>(dst);
    const auto *s = static_cast<const unsigned char *>(src);
    if (n > kInlineCopyMax) {
        std::memcpy(d, s, n);
    } else if (n >= sizeof(uint64_t)) {  // [8, 16]: first and last 8 bytes, overlapping in the middle
        uint64_t a, b;
        std::memcpy(&a, s, sizeof(a));
        std::memcpy(&b, s + n - sizeof(b), sizeof(b));
        std::memcpy(d, &a, sizeof(a));
        std::memcpy(d + n - sizeof(b), &b, sizeof(b));
    } else if (n >= sizeof(uint32_t)) {  // [4, 7]
        uint32_t a, b;
        std::memcpy(&a, s, sizeof(a));
        std::memcpy(&b, s + n - sizeof(b), sizeof(b));
        std::memcpy(d, &a, sizeof(a));
        std::memcpy(d + n - sizeof(b), &b, sizeof(b));
    } else if (n > 0) {  // [1, 3]: first, middle and last byte
        const unsigned char first = s[0], mid = s[n / 2], last = s[n - 1];
        d[0] = first;
        d[n / 2] = mid;
        d[n - 1] = last;
    }
}

}  // namespace rdmx
