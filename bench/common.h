// bench/common.h: state shared by every subcommand (the run context),
// iteration counts, the stopwatch and error/verification helpers.
#pragma once

#include "backend.h"
#include "options.h"
#include "report.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace rdmxbench {

// Exit codes (also in the usage text and docs/bench.md).
inline constexpr int kExitPass = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitError = 3;
inline constexpr int kExitSkip = 77;   // no RDMA device: ctest's SKIP_RETURN_CODE

// Message tags of the point-to-point loops (user tag space, all >= 0).
inline constexpr int kTagLatency = 10;
inline constexpr int kTagData = 11;
inline constexpr int kTagAck = 12;
inline constexpr int kTagConnect = 13;
inline constexpr int kTagReport = 14;
inline constexpr int kTagAllpairs = 1000;   // and up: one block of tags per pair/step

// Where a payload was checked, for a mismatch message.
struct Where {
  const char *test = "";
  int from = -1;
  int to = -1;
  std::uint64_t iter = 0;
  std::size_t size = 0;
  long msg = -1;              // message index within a window, -1: none
  std::string describe() const;
};

class Ctx {
 public:
  Ctx(Backend &backend, Options &options, Report &report);

  Backend &be;
  Options &opt;
  Report &rep;
  TextOut text;
  int rank;
  int nranks;
  bool root() const { return rank == 0; }

  // A failed backend call: prints op, peer, size, error; exits kExitError.
  [[noreturn]] void fatal(const Status &s, const std::string &op, int peer, std::size_t bytes);
  void check(const Status &s, const char *op, int peer, std::size_t bytes) {
    if (!s.ok()) {
      fatal(s, op, peer, bytes);
    }
  }

  // --inject-corruption: flips one byte of the first payload this process receives.
  void after_recv(void *buf, std::size_t len);
  // --verify: checks buf against the pattern; on mismatch prints where and counts it.
  bool verify(const void *buf, std::size_t len, std::uint64_t seed, const Where &w);
  void mismatch(const Where &w, const std::string &detail);
  void count_checked(std::size_t bytes) { bytes_checked_ += bytes; }
  std::uint64_t mismatches() const { return mismatches_; }
  std::uint64_t bytes_checked() const { return bytes_checked_; }

  // Progress on stderr, rank 0 only, not with --quiet; throttled.
  void progress(const std::string &msg);
  void progress_done();

  // Tables: rank 0 prints the header and each row as it is measured.
  Table &begin_table(Table t);
  void add_row(Table &t, std::vector<double> row);

  // Reductions of one double to rank 0 (fatal on error).
  double reduce_to_root(double v, ROp op);
  // Host name of every rank (collective on first call).
  const std::vector<std::string> &hosts();
  std::string rank_name(int r);   // "rank 3 (nodeC)"
  // Every rank's port (collective on first call).
  const std::vector<PortFacts> &ports();

 private:
  std::uint64_t mismatches_ = 0;
  std::uint64_t bytes_checked_ = 0;
  bool corruption_done_ = false;
  double last_progress_ = -1.0;
  bool progress_tty_ = false;
  bool progress_shown_ = false;
};

// OSU-style counts, scaled by --iters-scale, overridden by --iters/--warmup.
struct Counts {
  long warmup;
  long iters;
};
enum class Loop { latency, bandwidth, collective };
Counts loop_counts(const Options &opt, std::size_t size, Loop kind);

// Sizes by doubling from the (option or default) minimum to the maximum.
std::vector<std::size_t> size_list(const Options &opt, std::size_t def_min, std::size_t def_max);
std::size_t default_max_size(const Options &opt);

// Accumulates timed intervals. Coarse (default): one interval from the first
// start() after reset() to finish(), like OSU. Fine (--verify): only between
// start() and stop(), so pattern fill/check time is left out.
class Stopwatch {
 public:
  Stopwatch(const Backend &be, bool fine) : be_(be), fine_(fine) {}
  void reset() {
    acc_ = 0.0;
    running_ = false;
  }
  void start() {
    if (!running_) {
      t0_ = be_.wtime();
      running_ = true;
    }
  }
  void stop() {
    if (fine_) {
      finish();
    }
  }
  void finish() {
    if (running_) {
      acc_ += be_.wtime() - t0_;
      running_ = false;
    }
  }
  double seconds() const { return acc_; }

 private:
  const Backend &be_;
  bool fine_;
  bool running_ = false;
  double t0_ = 0.0;
  double acc_ = 0.0;
};

// A cycle count for timing single iterations. The backends' wtime() can be a
// system call (a guest whose kernel does not trust the TSC reads the HPET
// through clock_gettime: microseconds under emulation), which would inflate
// the very interval it brackets; the TSC costs nanoseconds. IterTimes turns
// ticks into seconds with a rate measured against wtime() over the loop.
inline std::uint64_t ticks_now() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// A percentile as a fraction in thousandths (integer, so that 99% of 100
// samples is exactly the 99th and not, by rounding, the 100th).
struct Permille {
  const char *column;
  unsigned value;
};
inline constexpr Permille kLatencyPercentiles[] = {{"P50(us)", 500}, {"P99(us)", 990}, {"P99.9(us)", 999}};

// The duration of every timed iteration, in ticks, stored in a vector sized
// before the loop (no allocation while timing), and the tick rate measured
// between calibrate_begin() and calibrate_end() (the whole timed loop).
class IterTimes {
 public:
  IterTimes(const Backend &be, std::size_t iters) : be_(be), ticks_(iters, 0) {}
  void calibrate_begin() {
    w0_ = be_.wtime();
    t0_ = ticks_now();
  }
  void calibrate_end() {
    t1_ = ticks_now();
    w1_ = be_.wtime();
  }
  void record(std::size_t i, std::uint64_t begin, std::uint64_t end) {
    if (i < ticks_.size()) {
      ticks_[i] = end - begin;
    }
  }
  // Nearest-rank percentile of the recorded durations in seconds (sorts
  // them); NaN without samples or without a usable rate.
  double percentile_seconds(unsigned permille);

 private:
  const Backend &be_;
  std::vector<std::uint64_t> ticks_;
  bool sorted_ = false;
  double w0_ = 0.0, w1_ = 0.0;
  std::uint64_t t0_ = 0, t1_ = 0;
};

// A byte buffer (page-aligned storage is not needed by either backend).
using Bytes = std::vector<unsigned char>;

}  // namespace rdmxbench
