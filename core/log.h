// Logging: one line per event, where it is found, with context and a hint.
// Levels follow RDMX_LOG_LEVEL (0 error .. 4 trace). Lines carry the rank.
#pragma once
#include <atomic>
#include <cstdarg>

namespace rdmx {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

extern std::atomic<int> g_log_level;

void log_set_level(int level);
void log_set_rank(int rank);
[[gnu::cold, gnu::format(printf, 2, 3)]] void log_write(LogLevel lvl, const char *fmt, ...);

// Deferred lines: formatted now, written by log_flush_deferred. For lines
// found under a lock other threads spin on (the engine lock): a write(2) to a
// slow or full stderr pipe must not stall them. Up to kLogDeferredLines wait;
// beyond that they are counted and the count is written with the next flush.
constexpr int kLogDeferredLines = 16;
[[gnu::cold, gnu::format(printf, 2, 3)]] void log_defer(LogLevel lvl, const char *fmt, ...);
[[gnu::cold]] void log_flush_deferred_slow();
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
