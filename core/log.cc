#include "core/log.h"

#include <cstdio>
#include <cstring>
#include <ctime>
#include <unistd.h>

namespace rdmx {

std::atomic<int> g_log_level{static_cast<int>(LogLevel::kWarn)};
static std::atomic<int> g_log_rank{-1};

void log_set_level(int level) { g_log_level.store(level, std::memory_order_relaxed); }
void log_set_rank(int rank) { g_log_rank.store(rank, std::memory_order_relaxed); }

static const char *level_name(LogLevel lvl) {
    switch (lvl) {
    case LogLevel::kError: return "ERROR";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kTrace: return "TRACE";
    }
    return "?";
}

void log_write(LogLevel lvl, const char *fmt, ...) {
    // One write(2) per line so lines from ranks and threads never interleave.
    char line[1024];
    int n = std::snprintf(line, sizeof(line), "[rdmx %d:%d] %s: ", g_log_rank.load(), static_cast<int>(getpid()),
                          level_name(lvl));
    if (n < 0) return;
    va_list ap;
    va_start(ap, fmt);
    int m = std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
    va_end(ap);
    size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
    if (len > sizeof(line) - 2) len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = ::write(STDERR_FILENO, line, len);
    (void)w;
}

}  // namespace rdmx
