// bench/pt2pt.cc: latency, bw, bibw (ranks 0 and 1) and mr (pairs r, r+N/2),
// following the OSU Micro-Benchmarks loops.
#include "commands.h"
#include "pattern.h"
#include "xfer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace rdmxbench {

namespace {

Table make_table(const std::string &test, const std::string &title, std::vector<std::string> cols) {
  Table t;
  t.test = test;
  t.title = title;
  t.columns = std::move(cols);
  return t;
}

std::string step_text(const char *test, std::size_t size, std::size_t k, std::size_t n) {
  return std::string(test) + " " + std::to_string(size) + " B (" + std::to_string(k + 1) + "/" +
         std::to_string(n) + ")";
}

void note_verify(Ctx &ctx, Table &t) {
  if (ctx.opt.verify) {
    t.notes.push_back("--verify: every received byte is checked (outside the timed region)");
  }
}

// Rank 0: send a ping, wait for the pong. Its round trip goes into `times`
// (index `slot`, negative during warm-up): the cycle counter is read just
// before the send and just after the receive, nothing else in between.
void ping(Ctx &ctx, long i, long slot, std::size_t size, Bytes &sbuf, Bytes &rbuf, Stopwatch &sw,
          IterTimes &times) {
  auto iter = static_cast<std::uint64_t>(i);
  if (ctx.opt.verify) {
    pattern_fill(sbuf.data(), size, pattern_seed(0, 1, iter, size));
  }
  sw.start();
  std::uint64_t t0 = ticks_now();
  ctx.check(ctx.be.send(sbuf.data(), size, 1, kTagLatency), "send (latency ping)", 1, size);
  ctx.check(ctx.be.recv(rbuf.data(), size, 1, kTagLatency), "recv (latency pong)", 1, size);
  std::uint64_t t1 = ticks_now();
  sw.stop();
  if (slot >= 0) {
    times.record(static_cast<std::size_t>(slot), t0, t1);
  }
  ctx.after_recv(rbuf.data(), size);
  if (ctx.opt.verify) {
    ctx.verify(rbuf.data(), size, pattern_seed(1, 0, iter, size), Where{"latency", 1, 0, iter, size});
  }
}

// Rank 1: answer the ping at once, then check it and prepare the next pong.
void pong(Ctx &ctx, long i, std::size_t size, Bytes &sbuf, Bytes &rbuf) {
  auto iter = static_cast<std::uint64_t>(i);
  ctx.check(ctx.be.recv(rbuf.data(), size, 0, kTagLatency), "recv (latency ping)", 0, size);
  ctx.check(ctx.be.send(sbuf.data(), size, 0, kTagLatency), "send (latency pong)", 0, size);
  ctx.after_recv(rbuf.data(), size);
  if (ctx.opt.verify) {
    ctx.verify(rbuf.data(), size, pattern_seed(0, 1, iter, size), Where{"latency", 0, 1, iter, size});
    pattern_fill(sbuf.data(), size, pattern_seed(1, 0, iter + 1, size));
  }
}

// One size's row: the average half round trip (total time over iterations,
// as OSU) and the percentiles of the per-iteration half round trips (rank 0).
std::vector<double> latency_one(Ctx &ctx, std::size_t size, Bytes &sbuf, Bytes &rbuf) {
  Counts c = loop_counts(ctx.opt, size, Loop::latency);
  Stopwatch sw(ctx.be, ctx.opt.verify);
  IterTimes times(ctx.be, ctx.rank == 0 ? static_cast<std::size_t>(c.iters) : 0);
  if (ctx.rank == 1 && ctx.opt.verify) {
    pattern_fill(sbuf.data(), size, pattern_seed(1, 0, 0, size));
  }
  for (long i = 0; i < c.warmup + c.iters; ++i) {
    if (i == c.warmup) {
      sw.reset();
      times.calibrate_begin();
    }
    if (ctx.rank == 0) {
      ping(ctx, i, i - c.warmup, size, sbuf, rbuf, sw, times);
    } else {
      pong(ctx, i, size, sbuf, rbuf);
    }
  }
  sw.finish();
  times.calibrate_end();
  constexpr double kHalfRoundTripUs = 1e6 / 2.0;
  std::vector<double> row{static_cast<double>(size), sw.seconds() * kHalfRoundTripUs / static_cast<double>(c.iters)};
  for (const Permille &p : kLatencyPercentiles) {
    row.push_back(times.percentile_seconds(p.value) * kHalfRoundTripUs);
  }
  return row;
}

// One size of bw/bibw/mr for this rank's role; returns the timed seconds.
double window_loop(Ctx &ctx, const WindowSpec &spec, bool with_ack, long &iters_out) {
  Counts c = loop_counts(ctx.opt, spec.size, Loop::bandwidth);
  Window win(ctx, spec);
  Waiter w(ctx.be, 0.0);
  Stopwatch sw(ctx.be, ctx.opt.verify);
  int peer = spec.dst >= 0 ? spec.dst : spec.src;
  for (long i = 0; i < c.warmup + c.iters; ++i) {
    auto iter = static_cast<std::uint64_t>(i);
    if (i == c.warmup) {
      sw.reset();
    }
    win.prepare(iter);
    sw.start();
    ctx.check(win.exchange(w, iter, sw), (std::string(spec.test) + " window").c_str(), peer, spec.size);
    if (with_ack) {
      ctx.check(win.ack(w), (std::string(spec.test) + " ack").c_str(), peer, 4);
    }
    sw.stop();
    win.check_last(iter);
  }
  sw.finish();
  iters_out = c.iters;
  return sw.seconds();
}

double mbps(double bytes, double seconds) { return seconds > 0 ? bytes / 1e6 / seconds : kNaN; }

// latency --rounds: the table of every round's row (Size, Round, then the
// main table's figures), after the main table.
void add_rounds_table(Ctx &ctx, std::vector<std::string> cols, std::vector<std::vector<double>> &rows) {
  char pause[32];
  std::snprintf(pause, sizeof(pause), "%g", ctx.opt.pause);
  Table &t = ctx.begin_table(make_table("latency-rounds",
                                        "Latency by round: " + std::to_string(ctx.opt.rounds) + " rounds per size, " +
                                            pause + " s idle between rounds",
                                        std::move(cols)));
  t.notes.push_back("each round is the whole loop (warm-up included); rank 0 sleeps between rounds while rank 1 "
                    "waits for the next ping");
  for (std::vector<double> &row : rows) {
    ctx.add_row(t, std::move(row));
  }
}

}  // namespace

// --rounds R: each size's loop R times, rank 0 idle --pause seconds before
// each round after the first while rank 1 waits in its receive, as an
// application that computes between exchanges. Does the idle time change
// what the next exchange costs, and does one process run at one level
// throughout? Round 1 is the main table's row; every round (the first
// included) is a row of a second table, written after the first.
Table &run_latency(Ctx &ctx, const std::vector<std::size_t> &sizes) {
  std::vector<std::string> cols{"Size", "Latency(us)"};
  for (const Permille &p : kLatencyPercentiles) {
    cols.emplace_back(p.column);
  }
  std::vector<std::string> round_cols = cols;
  round_cols.insert(round_cols.begin() + 1, "Round");
  Table &t = ctx.begin_table(
      make_table("latency", "OSU-style Latency Test: ranks 0 and 1, half the round trip", std::move(cols)));
  t.notes.push_back("Latency(us): average; P50/P99/P99.9: nearest-rank percentiles of each iteration's half round "
                    "trip (send + receive, timed by rank 0 with the cycle counter)");
  note_verify(ctx, t);
  const int rounds = ctx.opt.rounds;
  std::vector<std::vector<double>> round_rows;
  if (ctx.rank <= 1) {
    std::size_t top = sizes.empty() ? 1 : std::max<std::size_t>(sizes.back(), 1);
    Bytes sbuf(top, 0);
    Bytes rbuf(top, 0);
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      for (int r = 0; r < rounds; ++r) {
        if (r > 0 && ctx.rank == 0) {
          std::this_thread::sleep_for(std::chrono::duration<double>(ctx.opt.pause));
        }
        ctx.progress(step_text("latency", sizes[k], k, sizes.size()) +
                     (rounds > 1 ? " round " + std::to_string(r + 1) : ""));
        std::vector<double> row = latency_one(ctx, sizes[k], sbuf, rbuf);
        if (ctx.root() && rounds > 1) {
          std::vector<double> rr = row;
          rr.insert(rr.begin() + 1, static_cast<double>(r + 1));
          round_rows.push_back(std::move(rr));
        }
        if (ctx.root() && r == 0) {
          ctx.add_row(t, std::move(row));
        }
      }
    }
  }
  if (rounds > 1) {
    add_rounds_table(ctx, std::move(round_cols), round_rows);
  }
  ctx.check(ctx.be.barrier(), "barrier after latency", -1, 0);
  return t;
}

Table &run_bw(Ctx &ctx, const std::vector<std::size_t> &sizes, bool bidirectional) {
  const char *test = bidirectional ? "bibw" : "bw";
  std::string title = bidirectional ? "OSU-style Bi-Directional Bandwidth Test: ranks 0 <-> 1"
                                    : "OSU-style Bandwidth Test: rank 0 -> 1";
  Table &t = ctx.begin_table(make_table(test, title, {"Size", "Bandwidth(MB/s)"}));
  t.notes.push_back("window of " + std::to_string(ctx.opt.window) + " nonblocking sends" +
                    (bidirectional ? " each way" : ", then a 4-byte ack") + "; MB = 10^6 bytes");
  note_verify(ctx, t);
  if (ctx.rank <= 1) {
    int peer = 1 - ctx.rank;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      ctx.progress(step_text(test, sizes[k], k, sizes.size()));
      WindowSpec ws{test, sizes[k], ctx.opt.window, -1, -1};
      ws.dst = bidirectional || ctx.rank == 0 ? peer : -1;
      ws.src = bidirectional || ctx.rank == 1 ? peer : -1;
      long iters = 0;
      double secs = window_loop(ctx, ws, !bidirectional, iters);
      double bytes = static_cast<double>(sizes[k]) * ctx.opt.window * static_cast<double>(iters);
      if (ctx.root()) {
        ctx.add_row(t, {static_cast<double>(sizes[k]), mbps(bytes * (bidirectional ? 2 : 1), secs)});
      }
    }
  }
  ctx.check(ctx.be.barrier(), bidirectional ? "barrier after bibw" : "barrier after bw", -1, 0);
  return t;
}

Table &run_mr(Ctx &ctx, const std::vector<std::size_t> &sizes) {
  int pairs = ctx.nranks / 2;
  Table &t = ctx.begin_table(make_table(
      "mr", "OSU-style Multiple Bandwidth / Message Rate Test: " + std::to_string(pairs) + " pairs (r -> r+N/2)",
      {"Size", "MB/s", "Messages/s"}));
  t.notes.push_back("aggregate over all pairs, timed by the slowest sender; window of " +
                    std::to_string(ctx.opt.window));
  note_verify(ctx, t);
  WindowSpec ws{"mr", 0, ctx.opt.window, -1, -1};
  if (ctx.rank < pairs) {
    ws.dst = ctx.rank + pairs;
  } else if (ctx.rank < 2 * pairs) {
    ws.src = ctx.rank - pairs;
  }
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    ctx.progress(step_text("mr", sizes[k], k, sizes.size()));
    ctx.check(ctx.be.barrier(), "barrier before mr", -1, 0);
    ws.size = sizes[k];
    long iters = 0;
    double secs = ws.dst >= 0 || ws.src >= 0 ? window_loop(ctx, ws, true, iters) : 0.0;
    double slowest = ctx.reduce_to_root(ws.dst >= 0 ? secs : 0.0, ROp::max);
    if (ctx.root()) {
      double msgs = static_cast<double>(pairs) * ctx.opt.window * static_cast<double>(iters);
      ctx.add_row(t, {static_cast<double>(sizes[k]), mbps(msgs * static_cast<double>(sizes[k]), slowest),
                      slowest > 0 ? msgs / slowest : kNaN});
    }
  }
  return t;
}

}  // namespace rdmxbench
