// Logging: one line per event, where it is found, with context and a hint.
// Levels follow RDMX_LOG_LEVEL (0 error .. 4 trace). Each line starts
//   [rdmx HOST:RANK:PID SECONDS.MICROS] LEVEL: message
// (RANK "-" until the bootstrap knows it; the time is the wall clock, so lines
// of different hosts sort together). RDMX_LOG_FILE sends the lines to a file.
#pragma once
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <string>
#include <string_view>

namespace rdmx {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

extern std::atomic<int> g_log_level;

void log_set_level(int level);
void log_set_rank(int rank);  // also opens an RDMX_LOG_FILE that waited for the rank (%r)

// RDMX_LOG_FILE: lines go to this file (appended) instead of stderr; "" is
// stderr. %h, %r, %p expand to the host, the rank, the pid (%% is a %). With
// %r and no rank yet (rank < 0 and log_set_rank not called) the file opens at
// log_set_rank; until then lines go to stderr. A file that cannot be opened
// is said once on stderr, where the lines then stay. Setting the same pattern
// again keeps the open file (each rdmx_init loads the configuration).
void log_set_file(const std::string &pattern, int rank);
std::string log_expand_file(std::string_view pattern, std::string_view host, int rank, int pid);
const char *log_host();  // this host's name up to its first dot

// Rate limit: a call site (its format) at warn or error level prints at most
// kLogBurst lines per kLogWindowNs; the rest are counted and one line says how
// many were suppressed, when the site logs after the window ended, when any
// line is logged after it, at rdmx_finalize and at exit.
constexpr int kLogBurst = 10;
constexpr uint64_t kLogWindowNs = 5'000'000'000ull;
void log_flush_suppressed();
void log_set_rate_limit(int burst, uint64_t window_ns);  // for tests
[[gnu::cold, gnu::noinline, gnu::format(printf, 2, 3)]] void log_write(LogLevel lvl, const char *fmt, ...);

// Deferred lines: formatted now, written by log_flush_deferred. For lines
// found under a lock other threads spin on (the engine lock): a write(2) to a
// slow or full stderr pipe must not stall them. Up to kLogDeferredLines wait;
// beyond that they are counted and the count is written with the next flush.
constexpr int kLogDeferredLines = 16;
[[gnu::cold, gnu::noinline, gnu::format(printf, 2, 3)]] void log_defer(LogLevel lvl, const char *fmt, ...);
[[gnu::cold, gnu::noinline]] void log_flush_deferred_slow();
extern std::atomic<int> g_log_deferred;  // lines (or drops) waiting to be written
// Call with no lock held; one relaxed load when nothing waits.
inline void log_flush_deferred() {
    if (__builtin_expect(g_log_deferred.load(std::memory_order_relaxed) != 0, 0)) log_flush_deferred_slow();
}

inline bool log_enabled(LogLevel lvl) {
    return static_cast<int>(lvl) <= g_log_level.load(std::memory_order_relaxed);
}

}  // namespace rdmx

#define RDMX_LOG(lvl, ...)                                              \
    do {                                                                \
        if (__builtin_expect(::rdmx::log_enabled(lvl), 0))              \
            ::rdmx::log_write(lvl, __VA_ARGS__);                        \
    } while (0)
#define RDMX_ERROR(...) RDMX_LOG(::rdmx::LogLevel::kError, __VA_ARGS__)
#define RDMX_WARN(...) RDMX_LOG(::rdmx::LogLevel::kWarn, __VA_ARGS__)
#define RDMX_INFO(...) RDMX_LOG(::rdmx::LogLevel::kInfo, __VA_ARGS__)
#define RDMX_DEBUG(...) RDMX_LOG(::rdmx::LogLevel::kDebug, __VA_ARGS__)
#define RDMX_TRACE(...) RDMX_LOG(::rdmx::LogLevel::kTrace, __VA_ARGS__)
#define RDMX_WARN_DEFERRED(...)                                          \
    do {                                                                \
        if (::rdmx::log_enabled(::rdmx::LogLevel::kWarn))               \
            ::rdmx::log_defer(::rdmx::LogLevel::kWarn, __VA_ARGS__);    \
    } while (0)
