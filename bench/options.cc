// bench/options.cc: command-line parsing for rdmx-bench.
#include "options.h"

#include "allpairs_sample.h"
#include "linkrate.h"

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>

namespace rdmxbench {

namespace {

static_assert(kPortFloorFraction == 0.6, "the usage text says 60%");
static_assert(Options{}.min_bw == kMinBwUnset, "--min-bw left out means: from the port rate");
static_assert(kAloneAllMaxRanks == 32 && kAloneSamplePerRank == 2, "the usage text says 32 ranks, 2 per rank");

// Bounds of --rounds and --pause, against slips of the keyboard (a value
// meant as 0.3 typed as 300).
constexpr long kMaxRounds = 1000;
constexpr double kMaxPauseSeconds = 60.0;

const char *const kCommands[] = {"bringup", "latency", "bw", "bibw", "mr", "allpairs", "coll", "connect"};

bool parse_long(const std::string &t, long lo, long &out) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(t.c_str(), &end, 10);
  if (t.empty() || *end != '\0' || errno != 0 || v < lo) {
    return false;
  }
  out = v;
  return true;
}

// An int option within [lo, hi] (out left alone on error).
bool parse_int(const std::string &t, long lo, long hi, int &out) {
  long v = 0;
  if (!parse_long(t, lo, v) || v > hi) {
    return false;
  }
  out = static_cast<int>(v);
  return true;
}

bool parse_double(const std::string &t, double lo, double &out) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || *end != '\0' || errno != 0 || !(v >= lo)) {
    return false;
  }
  out = v;
  return true;
}

std::vector<std::string> split_commas(const std::string &t) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= t.size()) {
    std::size_t comma = t.find(',', pos);
    if (comma == std::string::npos) {
      comma = t.size();
    }
    if (comma > pos) {
      out.push_back(t.substr(pos, comma - pos));
    }
    pos = comma + 1;
  }
  return out;
}

// "R" (rank R is slow to every peer) or "A:B" (the link A -> B is slow).
bool parse_slow(const std::string &v, Options &o) {
  long a = 0;
  long b = -1;
  std::size_t colon = v.find(':');
  if (!parse_long(v.substr(0, colon), 0, a) ||
      (colon != std::string::npos && !parse_long(v.substr(colon + 1), 0, b))) {
    return false;
  }
  o.inject_slow_from = static_cast<int>(a);
  o.inject_slow_to = static_cast<int>(b);
  return true;
}

using Setter = std::function<bool(Options &, const std::string &)>;

// Options that take a value.
const std::map<std::string, Setter> &value_options() {
  static const std::map<std::string, Setter> table = {
      {"--min-size", [](Options &o, const std::string &v) { return parse_size(v, o.min_size); }},
      {"--max-size", [](Options &o, const std::string &v) { return parse_size(v, o.max_size); }},
      {"--iters", [](Options &o, const std::string &v) { return parse_long(v, 1, o.iters); }},
      {"--warmup", [](Options &o, const std::string &v) { return parse_long(v, 0, o.warmup); }},
      {"--window", [](Options &o, const std::string &v) { return parse_int(v, 1, 4096, o.window); }},
      {"--iters-scale", [](Options &o, const std::string &v) { return parse_double(v, 1e-9, o.iters_scale); }},
      {"--rounds", [](Options &o, const std::string &v) { return parse_int(v, 1, kMaxRounds, o.rounds); }},
      {"--pause", [](Options &o, const std::string &v) {
         return parse_double(v, 0.0, o.pause) && o.pause <= kMaxPauseSeconds;
       }},
      {"--json", [](Options &o, const std::string &v) { o.json = v; return !v.empty(); }},
      {"--csv", [](Options &o, const std::string &v) { o.csv = v; return !v.empty(); }},
      {"--html", [](Options &o, const std::string &v) { o.html = v; return !v.empty() && v != "-"; }},
      {"--colls", [](Options &o, const std::string &v) { o.colls = split_commas(v); return !o.colls.empty(); }},
      {"--repeat", [](Options &o, const std::string &v) { return parse_int(v, 1, 10000, o.repeat); }},
      {"--flag-fraction", [](Options &o, const std::string &v) {
         return parse_double(v, 0.0, o.flag_fraction) && o.flag_fraction < 1.0;
       }},
      {"--min-bw", [](Options &o, const std::string &v) { return parse_double(v, 0.0, o.min_bw); }},
      {"--max-lat", [](Options &o, const std::string &v) { return parse_double(v, 0.0, o.max_lat); }},
      {"--lat-size", [](Options &o, const std::string &v) { return parse_size(v, o.lat_size); }},
      {"--bw-size", [](Options &o, const std::string &v) { return parse_size(v, o.bw_size) && o.bw_size > 0; }},
      {"--inject-slow", [](Options &o, const std::string &v) { return parse_slow(v, o); }},
      {"--inject-silent", [](Options &o, const std::string &v) { return o.inject_silent = parse_slow(v, o); }},
      {"--pair-timeout", [](Options &o, const std::string &v) { return parse_double(v, 0.001, o.pair_timeout); }},
      {"--alone", [](Options &o, const std::string &v) {
         AloneMode m = AloneMode::all;
         o.alone = v;
         return parse_alone_mode(v, m);
       }},
      {"--alone-pairs", [](Options &o, const std::string &v) { return parse_long(v, 1, o.alone_pairs); }},
      {"--note", [](Options &o, const std::string &v) { o.note = v; return !v.empty(); }},
  };
  return table;
}

// Flags without a value.
bool set_flag(Options &o, const std::string &a) {
  if (a == "--quick") {
    o.quick = true;
  } else if (a == "--verify") {
    o.verify = true;
  } else if (a == "--quiet" || a == "-q") {
    o.quiet = true;
  } else if (a == "--inject-corruption") {
    o.inject_corruption = true;
  } else {
    return false;
  }
  return true;
}

// Takes "--opt=value" or "--opt value". Returns false with err set on error.
bool take_value(int argc, char **argv, int &i, const std::string &arg, Options &o, std::string &err) {
  std::string key = arg;
  std::string val;
  bool inline_val = false;
  std::size_t eq = arg.find('=');
  if (eq != std::string::npos) {
    key = arg.substr(0, eq);
    val = arg.substr(eq + 1);
    inline_val = true;
  }
  auto it = value_options().find(key);
  if (it == value_options().end()) {
    err = "unknown option '" + arg + "'";
    return false;
  }
  if (!inline_val) {
    if (i + 1 >= argc) {
      err = "option " + key + " needs a value";
      return false;
    }
    val = argv[++i];
  }
  if (!it->second(o, val)) {
    err = "bad value '" + val + "' for " + key;
    return false;
  }
  return true;
}

bool check_consistency(Options &o, std::string &err) {
  if (o.json == "-" && o.csv == "-") {
    err = "--json - and --csv - cannot both write to stdout";
    return false;
  }
  if (o.min_size != kUnset && o.max_size != kUnset && o.min_size > o.max_size) {
    err = "--min-size is larger than --max-size";
    return false;
  }
  if ((o.rounds != 1 || o.pause != 0.0) && o.command != "latency") {
    err = "--rounds and --pause apply to the latency subcommand only";
    return false;
  }
  if (o.pause != 0.0 && o.rounds == 1) {
    err = "--pause needs --rounds 2 or more (it is the idle time between rounds)";
    return false;
  }
  if (o.quick && o.iters_scale == 1.0) {
    o.iters_scale = 0.01;
  }
  if (o.bw_size == kUnset) {
    o.bw_size = o.quick ? (64u << 10) : (1u << 20);
  }
  if (o.command == "bringup") {
    o.verify = true;   // bring-up passes only with every byte checked
  }
  return true;
}

}  // namespace

bool known_command(const std::string &c) {
  for (const char *k : kCommands) {
    if (c == k) {
      return true;
    }
  }
  return false;
}

ParseResult parse_options(int argc, char **argv, Options &opt, std::string &err) {
  bool have_command = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      return ParseResult::help;
    }
    if (a == "--version") {
      return ParseResult::version;
    }
    if (!a.empty() && a[0] != '-') {
      if (have_command || !known_command(a)) {
        err = "unknown subcommand '" + a + "'";
        return ParseResult::error;
      }
      opt.command = a;
      have_command = true;
      continue;
    }
    if (set_flag(opt, a)) {
      continue;
    }
    if (!take_value(argc, argv, i, a, opt, err)) {
      return ParseResult::error;
    }
  }
  return check_consistency(opt, err) ? ParseResult::run : ParseResult::error;
}

bool parse_size(const std::string &text, std::size_t &out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || end == text.c_str() || errno != 0 || text[0] == '-') {
    return false;
  }
  std::string suffix(end);
  unsigned long long mult = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") {
    mult = 1ull << 10;
  } else if (suffix == "M" || suffix == "MiB") {
    mult = 1ull << 20;
  } else if (suffix == "G" || suffix == "GiB") {
    mult = 1ull << 30;
  } else if (!suffix.empty() && suffix != "B") {
    return false;
  }
  if (v > (1ull << 40) / mult) {
    return false;
  }
  out = static_cast<std::size_t>(v * mult);
  return true;
}

std::string format_size(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) {
    return std::to_string(bytes >> 20) + "M";
  }
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) {
    return std::to_string(bytes >> 10) + "K";
  }
  return std::to_string(bytes);
}

std::string usage_text(const std::string &prog) {
  return "usage: " + prog + " [SUBCOMMAND] [OPTIONS]   (run under mpirun; one process per rank)\n"
         "\n"
         "Subcommands:\n"
         "  bringup   (default) connect + allpairs + latency/bw 0<->1 + allreduce/bcast; PASS/FAIL\n"
         "  latency   ping-pong latency between ranks 0 and 1 (half the round trip)\n"
         "  bw        unidirectional bandwidth 0->1 (window of nonblocking sends, then an ack)\n"
         "  bibw      bidirectional bandwidth 0<->1\n"
         "  mr        multi-pair bandwidth and message rate, rank r paired with r+N/2\n"
         "  allpairs  latency and bandwidth of every ordered pair, alone then all at once\n"
         "  coll      collective latency and bus bandwidth against size\n"
         "  connect   full-mesh bring-up time\n"
         "\n"
         "Options:\n"
         "  --min-size BYTES --max-size BYTES   size range (suffixes K, M: 64K, 4M)\n"
         "  --iters N --warmup N                fixed counts (default: OSU counts by size)\n"
         "  --iters-scale X                     multiply the default counts by X\n"
         "  --quick                             --iters-scale 0.01 and smaller default sizes\n"
         "  --window N                          nonblocking sends per window (default 64)\n"
         "  --rounds R --pause S                latency: the loop R times per size, rank 0 idle S seconds\n"
         "                                      between rounds while rank 1 waits (one row per round)\n"
         "  --verify                            check every received byte; mismatch -> exit 1\n"
         "  --colls LIST                        coll subset: barrier,bcast,reduce,allreduce,\n"
         "                                      reduce_scatter_block,allgather,gather,scatter,alltoall\n"
         "  --repeat R                          connect runs (default 3)\n"
         "  --flag-fraction F                   allpairs: flag links below F x median (default 0.8; 0 off)\n"
         "  --min-bw MBPS                       allpairs: absolute bandwidth floor (default: 60% of each\n"
         "                                      link's port data rate on real hardware, else off; 0 off)\n"
         "  --max-lat US                        allpairs: absolute latency ceiling (default off)\n"
         "  --lat-size BYTES --bw-size BYTES    allpairs message sizes (default 8 and 1M; --quick 64K)\n"
         "  --pair-timeout S                    allpairs: seconds before a pair counts as silent (30)\n"
         "  --alone all|sample|none             allpairs: test every pair alone, a sample, or none\n"
         "                                      (default: all up to 32 ranks, sample above)\n"
         "  --alone-pairs K                     allpairs: pairs in the sample (default 2 per rank)\n"
         "  --note TEXT                         bringup: a line of the summary (why verdicts are off, ...)\n"
         "  --json FILE|-  --csv FILE|-         machine-readable results ('-' = stdout)\n"
         "  --html FILE                         one self-contained HTML report with charts\n"
         "  --quiet                             no progress on stderr\n"
         "  --help --version\n"
         "\n"
         "Exit status: 0 pass, 1 a check failed (data mismatch, suspect or silent link),\n"
         "2 usage error, 3 a communication call failed.\n";
}

}  // namespace rdmxbench
