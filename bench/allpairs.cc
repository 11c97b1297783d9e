// bench/allpairs.cc: latency and bandwidth of every ordered pair, first each
// pair alone (the others wait at a barrier; above kAloneAllMaxRanks ranks
// only a sample of the pairs, allpairs_sample.h), then all pairs at once in a
// shift pattern (step k: rank r sends to (r+k)%N, receives from (r-k+N)%N).
//
// A pair that cannot talk (an error from the backend or no completion within
// --pair-timeout) is recorded with the reason instead of ending the run.
#include "allpairs.h"

#include "commands.h"
#include <sstream>

namespace rdmxbench {

namespace {

void sync(Ctx &ctx) { ctx.check(ctx.be.barrier(), "barrier between all-pairs tests", -1, 0); }

int tag_for(int nranks, int phase, int index) {
  return kTagAllpairs + 4 * (phase * nranks * nranks + index);
}

// Each pair of the plan alone: the two ranks measure, the others wait.
void phase_alone(Ctx &ctx, const AllpairsConfig &cfg, const AlonePlan &plan, ApLocal &local) {
  int n = ctx.nranks;
  const std::string total = std::to_string(plan.pairs.size());
  for (std::size_t p = 0; p < plan.pairs.size(); ++p) {
    auto [a, b] = plan.pairs[p];
    ctx.progress("allpairs: pair " + std::to_string(p + 1) + "/" + total + " alone (" + std::to_string(a) + " -> " +
                 std::to_string(b) + ")");
    Roles roles{ctx.rank == a ? b : -1, ctx.rank == b ? a : -1, tag_for(n, 0, static_cast<int>(p))};
    if (roles.dst >= 0 || roles.src >= 0) {
      run_pair(ctx, cfg, roles, 0, local, [&] { sync(ctx); });
    } else {
      sync(ctx);
    }
    sync(ctx);
  }
}

void phase_shift(Ctx &ctx, const AllpairsConfig &cfg, ApLocal &local) {
  int n = ctx.nranks;
  for (int k = 1; k < n; ++k) {
    ctx.progress("allpairs: all at once, shift " + std::to_string(k) + "/" + std::to_string(n - 1));
    Roles roles{(ctx.rank + k) % n, (ctx.rank - k + n) % n, tag_for(n, 1, k)};
    run_pair(ctx, cfg, roles, 1, local, [&] { sync(ctx); });
    sync(ctx);
  }
}

}  // namespace

AllpairsConfig allpairs_config(const Options &opt) {
  AllpairsConfig c;
  c.lat_size = opt.lat_size;
  c.bw_size = opt.bw_size;
  c.window = opt.window;
  c.pair_timeout = opt.pair_timeout;
  AloneMode mode = AloneMode::all;
  if (parse_alone_mode(opt.alone, mode)) {   // parse_options rejected any other text
    c.alone = mode;
  }
  c.alone_pairs = opt.alone_pairs;
  auto scale = [&](long base, long floor) {
    long v = static_cast<long>(static_cast<double>(base) * opt.iters_scale + 0.5);
    return v < floor ? floor : v;
  };
  c.lat_iters = opt.iters > 0 ? opt.iters : scale(1000, 1);
  c.lat_warmup = opt.warmup >= 0 ? opt.warmup : scale(10, 1);
  c.bw_iters = opt.iters > 0 ? opt.iters : scale(10, 1);
  c.bw_warmup = opt.warmup >= 0 ? opt.warmup : scale(1, 1);
  return c;
}

AllpairsOutcome run_allpairs(Ctx &ctx, const AllpairsConfig &cfg) {
  ctx.hosts();   // collective: before any pair can fail
  ctx.ports();   // the same
  ApLocal local;
  for (auto &row : local.rows) {
    row.assign(static_cast<std::size_t>(ctx.nranks), kNaN);
  }
  const AlonePlan plan = plan_alone(ctx.nranks, cfg.alone, cfg.alone_pairs);
  phase_alone(ctx, cfg, plan, local);
  phase_shift(ctx, cfg, local);
  std::ostringstream recs;
  for (const ApRecord &r : local.records) {
    recs << r.phase << ' ' << r.from << ' ' << r.to << ' ' << r.why << '\n';
  }
  std::vector<Matrix> ms;
  collect_allpairs(ctx, cfg, local.rows, recs.str(), ms);
  return finish_allpairs(ctx, plan, ms);
}

}  // namespace rdmxbench
