#include "core/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace rdmx {

std::atomic<int> g_log_level{static_cast<int>(LogLevel::kWarn)};
static std::atomic<int> g_log_rank{-1};
// Where lines go. A file's descriptor is never closed while logging may use
// it: a new file is dup2'ed onto it, and going back to stderr keeps it aside
// for the next file, so a thread that loaded it writes to the old file at worst.
static std::atomic<int> g_log_fd{STDERR_FILENO};

void log_set_level(int level) { g_log_level.store(level, std::memory_order_relaxed); }

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
constexpr size_t kHostMax = 64;
constexpr int kLogSites = 64;  // call sites the rate limit tracks at once; beyond, lines pass unlimited

struct Host {
    char name[kHostMax] = "?";
    Host() {
        char h[256];
        if (gethostname(h, sizeof(h)) != 0) return;
        h[sizeof(h) - 1] = '\0';
        const size_t len = std::min(std::strcspn(h, "."), sizeof(name) - 1);
        std::memcpy(name, h, len);
        name[len] = '\0';
    }
};

uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// "[rdmx HOST:RANK:PID SEC.USEC] LEVEL: " into line; returns its length.
int format_prefix(char (&line)[kLineMax], LogLevel lvl) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    char rank[16] = "-";
    if (const int r = g_log_rank.load(std::memory_order_relaxed); r >= 0) std::snprintf(rank, sizeof(rank), "%d", r);
    return std::snprintf(line, sizeof(line), "[rdmx %s:%s:%d %lld.%06ld] %s: ", log_host(), rank,
                         static_cast<int>(getpid()), static_cast<long long>(ts.tv_sec), ts.tv_nsec / 1000,
                         level_name(lvl));
}

size_t format_line(char (&line)[kLineMax], LogLevel lvl, const char *fmt, va_list ap) {
    int n = format_prefix(line, lvl);
    if (n < 0) return 0;
    int m = std::vsnprintf(line + n, sizeof(line) - static_cast<size_t>(n) - 1, fmt, ap);
    size_t len = static_cast<size_t>(n) + (m < 0 ? 0 : static_cast<size_t>(m));
    if (len > sizeof(line) - 2) len = sizeof(line) - 2;
    line[len++] = '\n';
    return len;
}

// One write(2) per line so lines from ranks and threads never interleave.
void emit(const char *line, size_t len) {
    ssize_t w = ::write(g_log_fd.load(std::memory_order_relaxed), line, len);
    (void)w;
}

size_t format(char (&line)[kLineMax], LogLevel lvl, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(line, lvl, fmt, ap);
    va_end(ap);
    return len;
}

// ---- rate limit ---------------------------------------------------------------

struct Site {
    const char *fmt = nullptr;  // the call site's format: a literal, so its address names the site
    LogLevel lvl = LogLevel::kWarn;
    uint64_t start_ns = 0;      // this window's start
    int shown = 0;              // lines printed in this window
    uint64_t suppressed = 0;    // lines counted instead
};

struct Report {  // "N similar messages suppressed", written once the lock is released
    const char *fmt;
    LogLevel lvl;
    uint64_t n;
    int burst;
    uint64_t window_ns;
};

struct Limiter {
    std::mutex mu;
    Site sites[kLogSites];
    int burst = kLogBurst;
    uint64_t window_ns = kLogWindowNs;
    bool atexit_set = false;   // log_flush_suppressed runs at exit
};
Limiter &limiter() {
    static Limiter l;
    return l;
}

void take_report(const Limiter &l, Site &s, Report *out, int *n) {
    if (s.suppressed != 0) out[(*n)++] = {s.fmt, s.lvl, s.suppressed, l.burst, l.window_ns};
    s.suppressed = 0;
}

// Whether a line of `fmt` is printed; reports of windows that ended go to out.
bool admit(LogLevel lvl, const char *fmt, Report (&out)[kLogSites], int *nout) {
    if (lvl > LogLevel::kWarn) return true;  // info and below: what the user asked to see
    Limiter &l = limiter();
    std::lock_guard<std::mutex> g(l.mu);
    // Read under the lock: a time read before it can be older than the
    // start of a window another thread opened meanwhile, and the unsigned
    // difference then made that window look ended (a sixth line of five).
    const uint64_t now = mono_ns();
    Site *mine = nullptr, *free_slot = nullptr;
    for (Site &s : l.sites) {
        const bool ended = now - s.start_ns >= l.window_ns;
        if (ended && s.suppressed != 0) take_report(l, s, out, nout);
        if (s.fmt == fmt) mine = &s;
        else if (free_slot == nullptr && (s.fmt == nullptr || (ended && s.suppressed == 0))) free_slot = &s;
    }
    if (mine == nullptr) {
        if (free_slot == nullptr) return true;
        *free_slot = Site{fmt, lvl, now, 0, 0};
        mine = free_slot;
    } else if (now - mine->start_ns >= l.window_ns) {
        mine->start_ns = now;
        mine->shown = 0;
    }
    if (mine->shown < l.burst) {
        ++mine->shown;
        return true;
    }
    if (mine->suppressed++ == 0 && !l.atexit_set) {
        l.atexit_set = true;
        std::atexit(log_flush_suppressed);  // the count is not lost when no line follows
    }
    return false;
}

size_t format_report(char (&line)[kLineMax], const Report &r) {
    return format(line, r.lvl, "log: %llu similar messages suppressed (at most %d a site per %g s): \"%s\"",
                  static_cast<unsigned long long>(r.n), r.burst, static_cast<double>(r.window_ns) / 1e9, r.fmt);
}

void write_reports(const Report *r, int n) {
    for (int i = 0; i < n; ++i) {
        char line[kLineMax];
        emit(line, format_report(line, r[i]));
    }
}

// ---- deferred lines -------------------------------------------------------------

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

// ---- log file ---------------------------------------------------------------------

struct LogFile {
    std::mutex mu;
    std::string pattern;       // the RDMX_LOG_FILE last set
    bool waiting_rank = false; // the pattern has %r and no rank is known yet
    int spare_fd = -1;         // a former file's descriptor, reused by the next file
};
LogFile &log_file() {
    static LogFile f;
    return f;
}

void to_stderr(LogFile &f) {
    const int cur = g_log_fd.exchange(STDERR_FILENO);
    if (cur != STDERR_FILENO) f.spare_fd = cur;
}

void open_file(LogFile &f, int rank) {
    const std::string path = log_expand_file(f.pattern, log_host(), rank, static_cast<int>(getpid()));
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        const int err = errno;
        to_stderr(f);
        char line[kLineMax];
        emit(line, format(line, LogLevel::kError, "log: cannot open RDMX_LOG_FILE=%s (%s): %s; logging to stderr",
                          f.pattern.c_str(), path.c_str(), std::strerror(err)));
        return;
    }
    const int cur = g_log_fd.load();
    const int onto = cur != STDERR_FILENO ? cur : f.spare_fd;
    if (onto >= 0 && ::dup2(fd, onto) >= 0) {
        ::close(fd);
        fd = onto;
        if (onto == f.spare_fd) f.spare_fd = -1;
    }
    g_log_fd.store(fd);
}

bool needs_rank(const std::string &pattern) {
    for (size_t i = 0; i + 1 < pattern.size(); ++i) {
        if (pattern[i] != '%') continue;
        if (pattern[i + 1] == 'r') return true;
        ++i;  // "%%r" is a literal "%r"
    }
    return false;
}

}  // namespace

const char *log_host() {
    static const Host h;
    return h.name;
}

std::string log_expand_file(std::string_view pattern, std::string_view host, int rank, int pid) {
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
        if (c != '%' || (next != 'h' && next != 'r' && next != 'p' && next != '%')) {
            out += c;  // an unknown %x stays as written
            continue;
        }
        ++i;
        if (next == 'h') out += host;
        else if (next == 'r') out += std::to_string(rank);
        else if (next == 'p') out += std::to_string(pid);
        else out += '%';
    }
    return out;
}

void log_set_file(const std::string &pattern, int rank) {
    LogFile &f = log_file();
    std::lock_guard<std::mutex> g(f.mu);
    if (pattern == f.pattern && !(f.waiting_rank && rank >= 0)) return;  // already in effect (or said it failed)
    f.pattern = pattern;
    f.waiting_rank = false;
    if (pattern.empty()) return to_stderr(f);
    if (rank < 0) rank = g_log_rank.load();
    if (rank < 0 && needs_rank(pattern)) {
        f.waiting_rank = true;
        return to_stderr(f);
    }
    open_file(f, rank);
}

void log_set_rank(int rank) {
    g_log_rank.store(rank, std::memory_order_relaxed);
    LogFile &f = log_file();
    std::lock_guard<std::mutex> g(f.mu);
    if (!f.waiting_rank || rank < 0) return;
    f.waiting_rank = false;
    open_file(f, rank);
}

void log_set_rate_limit(int burst, uint64_t window_ns) {
    log_flush_suppressed();
    Limiter &l = limiter();
    std::lock_guard<std::mutex> g(l.mu);
    l.burst = burst;
    l.window_ns = window_ns;
    for (Site &s : l.sites) s = Site{};
}

void log_flush_suppressed() {
    Report out[kLogSites]{};
    int n = 0;
    {
        Limiter &l = limiter();
        std::lock_guard<std::mutex> g(l.mu);
        for (Site &s : l.sites) take_report(l, s, out, &n);
    }
    write_reports(out, n);
}

std::atomic<int> g_log_deferred{0};

void log_write(LogLevel lvl, const char *fmt, ...) {
    Report reports[kLogSites]{};
    int nrep = 0;
    const bool print = admit(lvl, fmt, reports, &nrep);
    write_reports(reports, nrep);
    if (!print) return;
    char line[kLineMax];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(line, lvl, fmt, ap);
    va_end(ap);
    emit(line, len);
}

void log_defer(LogLevel lvl, const char *fmt, ...) {
    Report reports[kLogSites]{};
    int nrep = 0;
    const bool print = admit(lvl, fmt, reports, &nrep);
    char line[kLineMax];
    size_t len = 0;
    if (print) {
        va_list ap;
        va_start(ap, fmt);
        len = format_line(line, lvl, fmt, ap);
        va_end(ap);
    } else if (nrep == 0) {
        return;  // suppressed, nothing to report
    }
    Deferred &d = deferred();
    std::lock_guard<std::mutex> g(d.mu);
    for (int i = 0; i <= nrep; ++i) {
        const bool report = i < nrep;
        if (!report && !print) break;
        if (d.count == kLogDeferredLines) {
            ++d.dropped;
            continue;
        }
        d.lens[d.count] = report ? format_report(d.lines[d.count], reports[i]) : len;
        if (!report) std::memcpy(d.lines[d.count], line, len);
        ++d.count;
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
    for (int i = 0; i < n; ++i) emit(out[i], lens[i]);
    if (dropped != 0)
        log_write(LogLevel::kWarn, "log: %lu deferred line(s) dropped (more than %d waited to be written)", dropped,
                  kLogDeferredLines);
}

}  // namespace rdmx
