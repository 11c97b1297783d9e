#include "core/log.h"

#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
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

namespace {
constexpr size_t kLineMax = 1024;

// "[rdmx RANK:PID] LEVEL: message\n" into line; returns its length.
size_t format_line(char (&line)[kLineMax], LogLevel lvl, const char *fmt, va_list ap) {
    int n = std::snprintf(line, sizeof(line), "[rdmx %d:%d] %s: ", g_log_rank.load(), static_cast<int>(getpid()),
                          level_name(lvl));
    if (n < 0) return 0;
    int m = std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
    size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
    if (len > sizeof(line) - 2) len = sizeof(line) - 2;
    line[len++] = '\n';
    return len;
}

struct Deferred {
    std::mutex mu;  // held only to copy a line in or the queue out, never across a write
    char lines[kLogDeferredLines][kLineMax];
    size_t lens[kLogDeferredLines];
    int count = 0;
    unsigned long dropped = 0;
};
Deferred &deferred() {
    static Deferred d;
    return d;
}
}  // namespace

std::atomic<int> g_log_deferred{0};

void log_write(LogLevel lvl, const char *fmt, ...) {
    // One write(2) per line so lines from ranks and threads never interleave.
    char line[kLineMax];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(line, lvl, fmt, ap);
    va_end(ap);
    ssize_t w = ::write(STDERR_FILENO, line, len);
    (void)w;
}

void log_defer(LogLevel lvl, const char *fmt, ...) {
    char line[kLineMax];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(line, lvl, fmt, ap);
    va_end(ap);
    Deferred &d = deferred();
    std::lock_guard<std::mutex> g(d.mu);
    if (d.count == kLogDeferredLines) {
        ++d.dropped;
    } else {
        std::memcpy(d.lines[d.count], line, len);
        d.lens[d.count++] = len;
    }
    g_log_deferred.store(1, std::memory_order_relaxed);
}

void log_flush_deferred_slow() {
    Deferred &d = deferred();
    char out[kLogDeferredLines][kLineMax];
    size_t lens[kLogDeferredLines];
    int n = 0;
    unsigned long dropped = 0;
    {
        std::lock_guard<std::mutex> g(d.mu);
        n = d.count;
        for (int i = 0; i < n; ++i) {
            std::memcpy(out[i], d.lines[i], d.lens[i]);
            lens[i] = d.lens[i];
        }
        dropped = d.dropped;
        d.count = 0;
        d.dropped = 0;
        g_log_deferred.store(0, std::memory_order_relaxed);
    }
    for (int i = 0; i < n; ++i) {
        ssize_t w = ::write(STDERR_FILENO, out[i], lens[i]);
        (void)w;
    }
    if (dropped != 0)
        log_write(LogLevel::kWarn, "log: %lu deferred line(s) dropped (more than %d waited to be written)", dropped,
                  kLogDeferredLines);
}

}  // namespace rdmx
