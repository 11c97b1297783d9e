// bench/options.h: command line of rdmx-bench and rdmx-bench-mpi.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rdmxbench {

inline constexpr std::size_t kUnset = static_cast<std::size_t>(-1);

struct Options {
  std::string prog = "rdmx-bench";
  std::string command = "bringup";
  std::size_t min_size = kUnset;     // defaults depend on the subcommand
  std::size_t max_size = kUnset;
  long iters = -1;                   // -1: by size, OSU-style
  long warmup = -1;
  int window = 64;
  double iters_scale = 1.0;
  int rounds = 1;                    // latency: the loop this many times per size ...
  double pause = 0.0;                // ... rank 0 idle this many seconds between them
  bool quick = false;
  bool verify = false;
  bool quiet = false;
  bool inject_corruption = false;    // hidden: proves --verify can fail
  int inject_slow_from = -1;         // hidden: this rank delays its all-pairs sends ...
  int inject_slow_to = -1;           // ... to this rank (-1: to every rank)
  bool inject_silent = false;        // hidden: ... and never sends them at all
  std::string json, csv, html;
  std::vector<std::string> colls;    // empty: all
  int repeat = 3;                    // connect runs
  double flag_fraction = 0.8;        // allpairs: flag below this x median
  double min_bw = -1.0;              // allpairs: absolute floor, MB/s (0: off; -1: from the port rate)
  double max_lat = 0.0;              // allpairs: absolute ceiling, us (0: off)
  std::size_t lat_size = 8;          // allpairs latency message
  std::size_t bw_size = kUnset;      // allpairs bandwidth message
  double pair_timeout = 30.0;        // allpairs: seconds before a pair is "cannot talk"
  std::string alone;                 // allpairs: "all", "sample", "none" ("": by rank count)
  long alone_pairs = 0;              // allpairs: pairs in the alone sample (0: 2 per rank)
  std::string note;                  // bringup: a line for the summary (e.g. why verdicts are off)
};

enum class ParseResult { run, help, version, error };

// Parses argv (after the backend removed its own arguments). On error, `err`
// says what was wrong. Applies --quick defaults last.
ParseResult parse_options(int argc, char **argv, Options &opt, std::string &err);
std::string usage_text(const std::string &prog);
bool known_command(const std::string &c);

// "4M", "64K", "64KiB", "1048576" -> bytes.
bool parse_size(const std::string &text, std::size_t &out);
std::string format_size(std::size_t bytes);   // 1K, 4M, 123 (for labels)

}  // namespace rdmxbench
