// bench/allpairs.h: internals shared by allpairs.cc (measuring) and
// allpairs_diag.cc (flagging and the plain-language diagnosis).
#pragma once

#include "allpairs_sample.h"
#include "report.h"

#include <functional>
#include <string>
#include <vector>

namespace rdmxbench {

// Matrix order in Report::matrices for one allpairs run.
enum ApMatrix { kLatAlone = 0, kBwAlone = 1, kLatShift = 2, kBwShift = 3, kApMatrices = 4 };

// One rank's roles in one all-pairs measurement: ping and send a window to
// dst, answer the pings and receive the window of src (-1: no such role).
struct Roles {
  int dst = -1;
  int src = -1;
  int tag = 0;   // tag, tag+1: ping/pong; tag+2, tag+3: data/ack
};

struct ApRecord {   // a link that failed, as seen by this rank
  int phase;        // 0: alone, 1: all at once
  int from;
  int to;
  std::string why;
};

// What one rank knows after both phases: its own row of each matrix (as the
// sender) and the failures it saw on links it took part in.
struct ApLocal {
  std::vector<double> rows[kApMatrices];
  std::vector<ApRecord> records;
};

struct FlagRule {
  double fraction = 0.8;   // relative to the median; 0: off
  double min_bw = 0.0;     // MB/s; 0: off
  double max_lat = 0.0;    // us; 0: off
};

// Computes the median and limit of m and sets m.flagged.
void flag_matrix(Matrix &m, const FlagRule &rule);

struct Diagnosis {
  int links = 0;
  int suspect = 0;
  int silent = 0;
  std::vector<std::string> lines;
};
// `name(r)` names rank r (with its host); `host(r)` is its host name.
Diagnosis diagnose(const std::vector<Matrix> &ms, const std::function<std::string(int)> &name,
                   const std::function<std::string(int)> &host);

class Ctx;
struct AllpairsConfig;
struct AllpairsOutcome;

// allpairs_pair.cc: one measurement in this rank's roles: latency, then
// `between()` (the same barrier on every rank), then bandwidth.
void run_pair(Ctx &ctx, const AllpairsConfig &cfg, Roles roles, int phase, ApLocal &local,
              const std::function<void()> &between);
// allpairs_collect.cc: rows to rank 0, which builds the matrices ...
void collect_allpairs(Ctx &ctx, const AllpairsConfig &cfg, const std::vector<double> (&rows)[kApMatrices],
                      const std::string &records, std::vector<Matrix> &out);
// ... then marks the alone pairs outside `plan` as not measured, flags,
// prints and diagnoses them (rank 0; others get an empty outcome).
AllpairsOutcome finish_allpairs(Ctx &ctx, const AlonePlan &plan, std::vector<Matrix> &ms);

}  // namespace rdmxbench
