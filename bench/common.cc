// bench/common.cc: run context, counts, sizes, errors and verification.
#include "common.h"

#include "pattern.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rdmxbench {

namespace {

constexpr std::size_t kLargeMessage = 8192;   // OSU: above this, the "large" counts
constexpr int kMaxMismatchReports = 10;       // per rank
constexpr std::size_t kHostLen = 64;

std::FILE *text_stream(const Options &opt, int rank) {
  if (rank != 0 || opt.json == "-" || opt.csv == "-") {
    return nullptr;
  }
  return stdout;
}

long scaled(long base, double scale, long floor) {
  long v = std::lround(static_cast<double>(base) * scale);
  return std::max(v, floor);
}

}  // namespace

std::string Where::describe() const {
  if (from < 0) {
    return std::string(test) + " result on rank " + std::to_string(to) + ", iteration " + std::to_string(iter) +
           ", size " + std::to_string(size) + " B";
  }
  std::string s = std::string(test) + " message";
  if (msg >= 0) {
    s += " " + std::to_string(msg) + " of the window";
  }
  if (from >= 0) {
    s += " from rank " + std::to_string(from);
  }
  if (to >= 0) {
    s += " to rank " + std::to_string(to);
  }
  return s + ", iteration " + std::to_string(iter) + ", size " + std::to_string(size) + " B";
}

Ctx::Ctx(Backend &backend, Options &options, Report &report)
    : be(backend), opt(options), rep(report), text(text_stream(options, backend.rank())),
      rank(backend.rank()), nranks(backend.size()) {
  progress_tty_ = isatty(STDERR_FILENO) != 0;
}

void Ctx::fatal(const Status &s, const std::string &op, int peer, std::size_t bytes) {
  progress_done();
  std::string who = peer >= 0 ? " with rank " + std::to_string(peer) : std::string();
  std::fprintf(stderr, "%s: rank %d: %s%s (%zu B) failed: %s (code %d)\n", opt.prog.c_str(), rank, op.c_str(),
               who.c_str(), bytes, s.text.c_str(), s.code);
  be.abort(kExitError);
  std::_Exit(kExitError);   // not reached: abort() does not return
}

void Ctx::after_recv(void *buf, std::size_t len) {
  if (!opt.inject_corruption || corruption_done_ || len == 0) {
    return;
  }
  static_cast<unsigned char *>(buf)[len / 2] ^= 0x5a;
  corruption_done_ = true;
}

bool Ctx::verify(const void *buf, std::size_t len, std::uint64_t seed, const Where &w) {
  bytes_checked_ += len;
  Mismatch m;
  if (pattern_check(buf, len, seed, &m)) {
    return true;
  }
  char detail[160];
  std::snprintf(detail, sizeof detail, "byte %zu is 0x%02x, expected 0x%02x (%zu of %zu bytes differ)", m.index,
                m.got, m.want, m.count, len);
  mismatch(w, detail);
  return false;
}

void Ctx::mismatch(const Where &w, const std::string &detail) {
  ++mismatches_;
  if (mismatches_ <= kMaxMismatchReports) {
    progress_done();
    std::fprintf(stderr, "%s: rank %d: VERIFY FAILED: %s: %s\n", opt.prog.c_str(), rank, w.describe().c_str(),
                 detail.c_str());
  }
}

void Ctx::progress(const std::string &msg) {
  if (!root() || opt.quiet) {
    return;
  }
  double now = be.wtime();
  double gap = progress_tty_ ? 0.1 : 2.0;
  if (last_progress_ >= 0 && now - last_progress_ < gap) {
    return;
  }
  last_progress_ = now;
  if (progress_tty_) {
    std::fprintf(stderr, "\r\033[K%s: %s", opt.prog.c_str(), msg.c_str());
    progress_shown_ = true;
  } else {
    std::fprintf(stderr, "%s: %s\n", opt.prog.c_str(), msg.c_str());
  }
  std::fflush(stderr);
}

void Ctx::progress_done() {
  if (progress_shown_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    progress_shown_ = false;
  }
}

Table &Ctx::begin_table(Table t) {
  rep.tables.push_back(std::move(t));
  progress_done();
  text.header(rep.tables.back());
  return rep.tables.back();
}

void Ctx::add_row(Table &t, std::vector<double> row) {
  progress_done();
  text.row(t, row);
  t.rows.push_back(std::move(row));
}

double Ctx::reduce_to_root(double v, ROp op) {
  double out = 0.0;
  check(be.reduce(&v, &out, 1, DType::f64, op, 0), "reduce of timings", 0, sizeof v);
  return out;
}

const std::vector<std::string> &Ctx::hosts() {
  if (!rep.hosts.empty()) {
    return rep.hosts;
  }
  char mine[kHostLen] = {};
  gethostname(mine, kHostLen - 1);
  Bytes all(kHostLen * static_cast<std::size_t>(nranks));
  check(be.allgather(mine, kHostLen, all.data()), "allgather of host names", -1, kHostLen);
  for (int r = 0; r < nranks; ++r) {
    const char *p = reinterpret_cast<const char *>(all.data()) + kHostLen * static_cast<std::size_t>(r);
    rep.hosts.emplace_back(p, strnlen(p, kHostLen));
  }
  return rep.hosts;
}

namespace {

// One rank's PortFacts on the wire of the allgather: fixed-size fields.
struct PortRecord {
  char device[64];
  char kind[16];
  char source[16];
  char speed[32];
  char detail[256];
  char fw_ver[64];
  char state[16];
  char link_layer[16];
  double signal_gbps;
  double data_gbps;
  std::int32_t port;
  std::int32_t netdev_mbps;
  std::int32_t sm_peers;
  std::int32_t active_mtu;
};
static_assert(sizeof(PortRecord) == 64 + 16 + 16 + 32 + 256 + 64 + 16 + 16 + 2 * 8 + 4 * 4,
              "PortRecord has no padding");

template <std::size_t N>
void put(char (&dst)[N], const std::string &s) {
  std::snprintf(dst, N, "%s", s.c_str());
}

template <std::size_t N>
std::string get(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

}  // namespace

const std::vector<PortFacts> &Ctx::ports() {
  if (!rep.ports.empty()) {
    return rep.ports;
  }
  const PortFacts p = be.port_facts();
  PortRecord mine{};
  put(mine.device, p.device);
  put(mine.kind, p.kind);
  put(mine.source, p.source);
  put(mine.speed, p.speed);
  put(mine.detail, p.detail);
  mine.signal_gbps = p.signal_gbps;
  mine.data_gbps = p.data_gbps;
  mine.port = p.port;
  mine.netdev_mbps = p.netdev_mbps;
  mine.sm_peers = p.sm_peers;
  put(mine.fw_ver, p.fw_ver);
  put(mine.state, p.state);
  put(mine.link_layer, p.link_layer);
  mine.active_mtu = p.active_mtu;
  std::vector<PortRecord> all(static_cast<std::size_t>(nranks));
  check(be.allgather(&mine, sizeof mine, all.data()), "allgather of port rates", -1, sizeof mine);
  for (const PortRecord &r : all) {
    PortFacts f;
    f.device = get(r.device);
    f.kind = get(r.kind);
    f.source = get(r.source);
    f.speed = get(r.speed);
    f.detail = get(r.detail);
    f.signal_gbps = r.signal_gbps;
    f.data_gbps = r.data_gbps;
    f.port = r.port;
    f.netdev_mbps = r.netdev_mbps;
    f.sm_peers = r.sm_peers;
    f.fw_ver = get(r.fw_ver);
    f.state = get(r.state);
    f.link_layer = get(r.link_layer);
    f.active_mtu = r.active_mtu;
    rep.ports.push_back(f);
  }
  return rep.ports;
}

std::string Ctx::rank_name(int r) {
  const std::vector<std::string> &h = hosts();
  if (r < 0 || static_cast<std::size_t>(r) >= h.size()) {
    return "rank " + std::to_string(r);
  }
  return "rank " + std::to_string(r) + " (" + h[static_cast<std::size_t>(r)] + ")";
}

double IterTimes::percentile_seconds(unsigned permille) {
  constexpr unsigned kWhole = 1000;
  if (ticks_.empty() || t1_ <= t0_ || w1_ <= w0_ || permille == 0 || permille > kWhole) {
    return kNaN;
  }
  if (!sorted_) {
    std::sort(ticks_.begin(), ticks_.end());
    sorted_ = true;
  }
  // Nearest rank: the smallest sample with at least `permille` of them at or below it.
  std::size_t rank = (ticks_.size() * permille + kWhole - 1) / kWhole;
  double seconds_per_tick = (w1_ - w0_) / static_cast<double>(t1_ - t0_);
  return static_cast<double>(ticks_[rank - 1]) * seconds_per_tick;
}

Counts loop_counts(const Options &opt, std::size_t size, Loop kind) {
  bool large = size > kLargeMessage;
  long iters = 0;
  long warm = 0;
  switch (kind) {
    case Loop::latency:   // osu_latency
      iters = large ? 1000 : 10000;
      warm = large ? 10 : 100;
      break;
    case Loop::bandwidth:   // osu_bw, osu_bibw, osu_mbw_mr (windows)
      iters = large ? 20 : 100;
      warm = large ? 2 : 10;
      break;
    case Loop::collective:   // osu_allreduce and friends
      iters = large ? 100 : 1000;
      warm = large ? 10 : 100;
      break;
  }
  Counts c{scaled(warm, opt.iters_scale, 1), scaled(iters, opt.iters_scale, 1)};
  if (opt.iters > 0) {
    c.iters = opt.iters;
  }
  if (opt.warmup >= 0) {
    c.warmup = opt.warmup;
  }
  return c;
}

std::size_t default_max_size(const Options &opt) { return opt.quick ? (256u << 10) : (4u << 20); }

std::vector<std::size_t> size_list(const Options &opt, std::size_t def_min, std::size_t def_max) {
  std::size_t lo = opt.min_size != kUnset ? opt.min_size : def_min;
  std::size_t hi = opt.max_size != kUnset ? opt.max_size : def_max;
  std::vector<std::size_t> sizes;
  if (lo == 0) {
    sizes.push_back(0);
    lo = 1;
  }
  for (std::size_t s = lo; s <= hi; s *= 2) {
    sizes.push_back(s);
  }
  return sizes;
}

}  // namespace rdmxbench
