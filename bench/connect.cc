// bench/connect.cc: full-mesh bring-up time.
//
// rdmx connects the full mesh inside rdmx_init, so run 1 is the init the
// process started with and runs 2..R finalize and init again. MPI connects
// lazily and MPI_Init runs once, so its bring-up is the first exchange of one
// byte with every peer; later runs repeat the exchange on warm connections.
// Every figure is the maximum across ranks.
#include "commands.h"
#include "pattern.h"

#include <cmath>

namespace rdmxbench {

namespace {

// One byte to and from every peer; returns this rank's seconds.
double first_exchange(Ctx &ctx, int run) {
  int n = ctx.nranks;
  auto peers = static_cast<std::size_t>(n);
  Bytes out(peers, 0);
  Bytes in(peers, 0);
  std::vector<Request> reqs(2 * peers);
  double t0 = ctx.be.wtime();
  for (int k = 1; k < n; ++k) {
    int src = (ctx.rank - k + n) % n;
    ctx.check(ctx.be.irecv(&in[static_cast<std::size_t>(src)], 1, src, kTagConnect, reqs[static_cast<std::size_t>(k)]),
              "irecv (connect exchange)", src, 1);
  }
  for (int k = 1; k < n; ++k) {
    int dst = (ctx.rank + k) % n;
    auto d = static_cast<std::size_t>(dst);
    out[d] = pattern_byte(pattern_seed(ctx.rank, dst, static_cast<std::uint64_t>(run), 1), 0);
    ctx.check(ctx.be.isend(&out[d], 1, dst, kTagConnect, reqs[peers + static_cast<std::size_t>(k)]),
              "isend (connect exchange)", dst, 1);
  }
  ctx.check(ctx.be.waitall(reqs), "waitall (connect exchange with every peer)", -1, 1);
  double secs = ctx.be.wtime() - t0;
  for (int src = 0; src < n; ++src) {
    if (src != ctx.rank) {
      auto s = static_cast<std::size_t>(src);
      ctx.after_recv(&in[s], 1);
      if (ctx.opt.verify) {
        Where w{"connect", src, ctx.rank, static_cast<std::uint64_t>(run), 1};
        ctx.verify(&in[s], 1, pattern_seed(src, ctx.rank, static_cast<std::uint64_t>(run), 1), w);
      }
    }
  }
  return secs;
}

Table make_connect_table(Ctx &ctx) {
  Table t;
  t.test = "connect";
  t.title = "Full-mesh bring-up time: " + std::to_string(ctx.nranks) + " ranks, " + ctx.be.name() +
            " backend (max across ranks)";
  t.columns = {"Run", "Init(ms)", "FirstExchange(ms)", "Finalize(ms)", "BringUp(ms)"};
  if (ctx.be.can_restart()) {
    t.notes.push_back("BringUp = init, which connects the full mesh; run 1 is the process's first init");
  } else {
    t.notes.push_back("MPI connects lazily: BringUp = first 1-byte exchange with every peer after MPI_Init;");
    t.notes.push_back("MPI_Init runs once, so runs after the first reuse warm connections");
  }
  return t;
}

}  // namespace

Table &run_connect(Ctx &ctx, int repeat) {
  // Measure before anything else talks: for MPI, run 1 must be the first exchange.
  std::vector<double> local(4 * static_cast<std::size_t>(repeat), -1.0);
  for (int run = 0; run < repeat; ++run) {
    double init_s = run == 0 ? ctx.be.init_seconds() : kNaN;
    double fin_s = kNaN;
    if (run > 0 && ctx.be.can_restart()) {
      ctx.progress("connect: run " + std::to_string(run + 1) + "/" + std::to_string(repeat));
      ctx.check(ctx.be.barrier(), "barrier before re-init", -1, 0);
      ctx.check(ctx.be.restart(fin_s, init_s), "finalize + init (re-connect)", -1, 0);
    }
    double exch_s = first_exchange(ctx, run);
    double bring = ctx.be.can_restart() ? init_s : exch_s;
    double vals[4] = {init_s, exch_s, fin_s, bring};
    for (int k = 0; k < 4; ++k) {   // -1: not applicable (NaN does not reduce portably)
      local[static_cast<std::size_t>(4 * run + k)] = std::isfinite(vals[k]) ? vals[k] * 1e3 : -1.0;
    }
  }
  std::vector<double> worst(local.size(), 0.0);
  ctx.check(ctx.be.reduce(local.data(), worst.data(), local.size(), DType::f64, ROp::max, 0),
            "reduce of connect timings", 0, local.size() * sizeof(double));
  Table &t = ctx.begin_table(make_connect_table(ctx));
  if (ctx.root()) {
    for (int run = 0; run < repeat; ++run) {
      std::vector<double> row{static_cast<double>(run + 1)};
      for (int k = 0; k < 4; ++k) {
        double w = worst[static_cast<std::size_t>(4 * run + k)];
        row.push_back(w < 0 ? kNaN : w);
      }
      ctx.add_row(t, std::move(row));
    }
  }
  return t;
}

}  // namespace rdmxbench
