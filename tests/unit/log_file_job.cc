// RDMX_LOG_FILE end to end: each rank of a job started by mpirun with
// RDMX_LOG_FILE=DIR/...%r...%p... and a misspelt RDMX_EAGER_LIMT initializes,
// repeats one warning kRepeats times, finalizes, then reads its own file:
// every line carries this host and pid and its rank (or "-" before the
// bootstrap), the unknown-variable warning is there once, the repeated
// warning kLogBurst times and the count of the rest once. The test fails on
// any "[rdmx " line reaching stdout or stderr (FAIL_REGULAR_EXPRESSION).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/log.h"
#include "rdmx/rdmx.h"
#include "log_prefix.h"

namespace {

constexpr int kRepeats = 30;

int fail(int rank, const std::string &what) {
    std::printf("FAIL rank %d: %s\n", rank, what.c_str());
    return 1;
}

size_t count_of(const std::string &hay, const std::string &needle) {
    size_t n = 0;
    for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
    return n;
}

void repeat_warning(int rank, int i) { RDMX_WARN("log job: rank %d warning %d", rank, i); }

}  // namespace

int main() {
    const char *pattern = std::getenv("RDMX_LOG_FILE");
    if (pattern == nullptr || std::getenv("RDMX_EAGER_LIMT") == nullptr)
        return fail(-1, "run with RDMX_LOG_FILE and RDMX_EAGER_LIMT set");
    rdmx_context_h ctx = nullptr;
    if (rdmx_init(nullptr, &ctx) != RDMX_OK) return fail(-1, "rdmx_init");
    const int rank = rdmx_rank(ctx);
    for (int i = 0; i < kRepeats; ++i) repeat_warning(rank, i);
    if (rdmx_finalize(ctx) != RDMX_OK) return fail(rank, "rdmx_finalize");

    const std::string path = rdmx::log_expand_file(pattern, rdmx::log_host(), rank, static_cast<int>(getpid()));
    std::ifstream f(path);
    if (!f) return fail(rank, "no log file " + path);
    std::stringstream all;
    for (std::string line; std::getline(f, line);) {
        rdmx::test::LogPrefix p;
        if (!rdmx::test::parse_log_prefix(line, &p) || p.host != rdmx::log_host() ||
            (p.rank != "-" && p.rank != std::to_string(rank)) || p.pid != std::to_string(getpid()))
            return fail(rank, "line without this rank's prefix: " + line);
        all << line << '\n';
    }
    const std::string log = all.str();
    if (count_of(log, "config: RDMX_EAGER_LIMT is not an rdmx variable") != 1)
        return fail(rank, "the unknown-variable warning is not in the file once:\n" + log);
    if (count_of(log, "log job: rank " + std::to_string(rank) + " warning") != static_cast<size_t>(rdmx::kLogBurst))
        return fail(rank, "the repeated warning is not there kLogBurst times:\n" + log);
    if (count_of(log, "log: " + std::to_string(kRepeats - rdmx::kLogBurst) + " similar messages suppressed") != 1)
        return fail(rank, "no count of the suppressed lines:\n" + log);
    std::printf("log job: rank %d: %s OK\n", rank, path.c_str());
    return 0;
}
