// bench/commands.h: the subcommands. Every rank calls the same function
// with the same arguments; rank 0 fills the report.
#pragma once

#include "allpairs_sample.h"
#include "common.h"

#include <optional>
#include <string>
#include <vector>

namespace rdmxbench {

// Point-to-point (pt2pt.cc). Ranks 0 and 1 measure; others wait at a barrier.
Table &run_latency(Ctx &ctx, const std::vector<std::size_t> &sizes);
Table &run_bw(Ctx &ctx, const std::vector<std::size_t> &sizes, bool bidirectional);
Table &run_mr(Ctx &ctx, const std::vector<std::size_t> &sizes);

// All pairs (allpairs.cc).
struct AllpairsConfig {
  std::size_t lat_size = 8;
  std::size_t bw_size = 1u << 20;
  long lat_iters = 1000;
  long lat_warmup = 10;
  long bw_iters = 10;
  long bw_warmup = 1;
  int window = 64;
  double pair_timeout = 30.0;
  std::optional<AloneMode> alone;   // --alone; none: by rank count (allpairs_sample.h)
  long alone_pairs = 0;             // --alone-pairs; 0: the default sample size
};
AllpairsConfig allpairs_config(const Options &opt);
struct AllpairsOutcome {
  int links = 0;          // ordered pairs checked
  int suspect = 0;        // flagged pairs (slow or silent)
  int silent = 0;         // pairs that could not talk
  int alone = 0;          // ordered pairs also measured each alone (--alone)
  bool corrupted = false;
  std::vector<std::string> summary;   // plain-language diagnosis
};
AllpairsOutcome run_allpairs(Ctx &ctx, const AllpairsConfig &cfg);

// Collectives (coll.cc). Names as in --colls.
std::vector<std::string> all_collective_names();
bool known_collective(const std::string &name);
void run_coll(Ctx &ctx, const std::vector<std::string> &colls, const std::vector<std::size_t> &sizes);

// Full-mesh bring-up time (connect.cc). Returns the table (Run, Init(ms), ...).
Table &run_connect(Ctx &ctx, int repeat);

// The administrator's check of a new cluster (bringup.cc). Adds checks.
void run_bringup(Ctx &ctx);

}  // namespace rdmxbench
