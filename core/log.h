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
