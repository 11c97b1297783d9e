// bench/coll.cc: collective latency against size (average, min and max
// across ranks, OSU-style) and bus bandwidth as nccl-tests define it.
//
// Size column: the buffer for bcast/reduce/allreduce; each rank's block for
// reduce_scatter_block, allgather, gather, scatter; each peer's block for
// alltoall. algbw = S / time with S the nccl-tests size (the buffer, or N
// blocks for the block collectives); busbw = algbw x factor(N).
#include "commands.h"
#include "pattern.h"

#include <cstring>

namespace rdmxbench {

namespace {

enum class Coll { barrier, bcast, reduce, allreduce, reduce_scatter_block, allgather, gather, scatter, alltoall };

struct CollDef {
  const char *name;
  const char *label;
  Coll c;
  bool reduction;     // float sum; size must be a multiple of 4
  bool blocks;        // nccl-tests size is N x Size
  double (*factor)(int n);
};

double one(int) { return 1.0; }
double ring(int n) { return static_cast<double>(n - 1) / n; }
double allreduce_factor(int n) { return 2.0 * (n - 1) / n; }

const CollDef kColls[] = {
    {"barrier", "Barrier", Coll::barrier, false, false, one},
    {"bcast", "Broadcast", Coll::bcast, false, false, one},
    {"reduce", "Reduce", Coll::reduce, true, false, one},
    {"allreduce", "Allreduce", Coll::allreduce, true, false, allreduce_factor},
    {"reduce_scatter_block", "Reduce_scatter_block", Coll::reduce_scatter_block, true, true, ring},
    {"allgather", "Allgather", Coll::allgather, false, true, ring},
    {"gather", "Gather", Coll::gather, false, true, ring},
    {"scatter", "Scatter", Coll::scatter, false, true, ring},
    {"alltoall", "Alltoall", Coll::alltoall, false, true, ring},
};

const CollDef *find_coll(const std::string &name) {
  for (const CollDef &d : kColls) {
    if (name == d.name) {
      return &d;
    }
  }
  return nullptr;
}

struct Bufs {
  Bytes send;
  Bytes recv;
};

void size_bufs(const CollDef &d, std::size_t s, int n, Bufs &b) {
  std::size_t ns = static_cast<std::size_t>(n) * s;
  std::size_t sb = s;
  std::size_t rb = s;
  switch (d.c) {
    case Coll::barrier: sb = rb = 0; break;
    case Coll::bcast: rb = 0; break;
    case Coll::reduce_scatter_block: sb = ns; break;
    case Coll::allgather:
    case Coll::gather: rb = ns; break;
    case Coll::scatter: sb = ns; break;
    case Coll::alltoall: sb = rb = ns; break;
    default: break;
  }
  b.send.resize(sb + 1);
  b.recv.resize(rb + 1);
}

Status call(Backend &be, const CollDef &d, Bufs &b, std::size_t s) {
  unsigned char *sp = b.send.data();
  unsigned char *rp = b.recv.data();
  switch (d.c) {
    case Coll::barrier: return be.barrier();
    case Coll::bcast: return be.bcast(sp, s, 0);
    case Coll::reduce: return be.reduce(sp, rp, s / 4, DType::f32, ROp::sum, 0);
    case Coll::allreduce: return be.allreduce(sp, rp, s / 4, DType::f32, ROp::sum);
    case Coll::reduce_scatter_block: return be.reduce_scatter_block(sp, rp, s / 4, DType::f32, ROp::sum);
    case Coll::allgather: return be.allgather(sp, s, rp);
    case Coll::gather: return be.gather(sp, s, rp, 0);
    case Coll::scatter: return be.scatter(sp, s, rp, 0);
    case Coll::alltoall: return be.alltoall(sp, s, rp);
  }
  return {};
}

void fill_floats(unsigned char *p, std::size_t count, std::uint64_t seed, int rank) {
  for (std::size_t e = 0; e < count; ++e) {
    float v = reduce_value(seed, e, rank);
    std::memcpy(p + e * sizeof v, &v, sizeof v);
  }
}

// Fills the operands of iteration `iter` (--verify only; untimed).
void fill(Ctx &ctx, const CollDef &d, Bufs &b, std::size_t s, std::uint64_t iter) {
  int me = ctx.rank;
  auto n = static_cast<std::size_t>(ctx.nranks);
  std::memset(b.recv.data(), 0xee, b.recv.size());
  switch (d.c) {
    case Coll::barrier: break;
    case Coll::bcast:
      if (me == 0) {
        pattern_fill(b.send.data(), s, pattern_seed(0, kAllRanks, iter, s));
      } else {
        std::memset(b.send.data(), 0xee, s);
      }
      break;
    case Coll::reduce:
    case Coll::allreduce: fill_floats(b.send.data(), s / 4, pattern_seed(kAllRanks, kAllRanks, iter, s), me); break;
    case Coll::reduce_scatter_block:
      fill_floats(b.send.data(), n * (s / 4), pattern_seed(kAllRanks, kAllRanks, iter, s), me);
      break;
    case Coll::allgather: pattern_fill(b.send.data(), s, pattern_seed(me, kAllRanks, iter, s)); break;
    case Coll::gather: pattern_fill(b.send.data(), s, pattern_seed(me, 0, iter, s)); break;
    case Coll::scatter:
    case Coll::alltoall:
      for (std::size_t r = 0; r < n && (me == 0 || d.c == Coll::alltoall); ++r) {
        pattern_fill(b.send.data() + r * s, s, pattern_seed(me, static_cast<int>(r), iter, s));
      }
      break;
  }
}

void check_floats(Ctx &ctx, const unsigned char *p, std::size_t count, std::size_t first, std::uint64_t seed,
                  const Where &w) {
  ctx.count_checked(count * sizeof(float));
  std::size_t bad = 0;
  std::size_t at = 0;
  float got0 = 0;
  float want0 = 0;
  for (std::size_t j = 0; j < count; ++j) {
    float got = 0;
    std::memcpy(&got, p + j * sizeof got, sizeof got);
    float want = reduce_expected(seed, first + j, ctx.nranks);
    if (got != want && bad++ == 0) {
      at = j;
      got0 = got;
      want0 = want;
    }
  }
  if (bad > 0) {
    char detail[160];
    std::snprintf(detail, sizeof detail, "element %zu is %g, expected %g (%zu of %zu elements differ)", at,
                  static_cast<double>(got0), static_cast<double>(want0), bad, count);
    ctx.mismatch(w, detail);
  }
}

// Checks every block this rank received in block collectives.
void check_blocks(Ctx &ctx, const CollDef &d, const unsigned char *p, std::size_t s, std::uint64_t iter) {
  for (int r = 0; r < ctx.nranks; ++r) {
    int to = d.c == Coll::allgather ? kAllRanks : ctx.rank;
    Where w{d.name, r, ctx.rank, iter, s};
    ctx.verify(p + static_cast<std::size_t>(r) * s, s, pattern_seed(r, to, iter, s), w);
  }
}

// Checks this rank's results of iteration `iter` against the expected values.
void check(Ctx &ctx, const CollDef &d, Bufs &b, std::size_t s, std::uint64_t iter) {
  int me = ctx.rank;
  bool is_root = me == 0;
  unsigned char *out = d.c == Coll::bcast ? b.send.data() : b.recv.data();
  std::uint64_t rseed = pattern_seed(kAllRanks, kAllRanks, iter, s);
  Where w{d.name, -1, me, iter, s};
  switch (d.c) {
    case Coll::barrier: break;
    case Coll::bcast:
      if (!is_root) {
        ctx.after_recv(out, s);
        ctx.verify(out, s, pattern_seed(0, kAllRanks, iter, s), Where{d.name, 0, me, iter, s});
      }
      break;
    case Coll::reduce:
    case Coll::allreduce:
      if (is_root || d.c == Coll::allreduce) {
        ctx.after_recv(out, s);
        check_floats(ctx, out, s / 4, 0, rseed, w);
      }
      break;
    case Coll::reduce_scatter_block:
      ctx.after_recv(out, s);
      check_floats(ctx, out, s / 4, static_cast<std::size_t>(me) * (s / 4), rseed, w);
      break;
    case Coll::scatter:
      ctx.after_recv(out, s);
      ctx.verify(out, s, pattern_seed(0, me, iter, s), Where{d.name, 0, me, iter, s});
      break;
    case Coll::gather:
    case Coll::allgather:
    case Coll::alltoall:
      if (is_root || d.c != Coll::gather) {
        ctx.after_recv(out, s * static_cast<std::size_t>(ctx.nranks));
        check_blocks(ctx, d, out, s, iter);
      }
      break;
  }
}

// Measures one size; returns this rank's average time per call in us.
double measure(Ctx &ctx, const CollDef &d, std::size_t s, Bufs &b) {
  Counts c = loop_counts(ctx.opt, s, Loop::collective);
  Stopwatch sw(ctx.be, ctx.opt.verify);
  ctx.check(ctx.be.barrier(), "barrier before collective", -1, 0);
  for (long i = 0; i < c.warmup + c.iters; ++i) {
    auto iter = static_cast<std::uint64_t>(i);
    if (i == c.warmup) {
      sw.reset();
    }
    if (ctx.opt.verify) {
      fill(ctx, d, b, s, iter);
    }
    sw.start();
    Status st = call(ctx.be, d, b, s);
    sw.stop();
    ctx.check(st, d.name, -1, s);
    if (ctx.opt.verify) {
      check(ctx, d, b, s, iter);
    }
  }
  sw.finish();
  return sw.seconds() * 1e6 / static_cast<double>(c.iters);
}

std::string size_note(const CollDef &d) {
  if (d.c == Coll::barrier) {
    return "latency only";
  }
  std::string what = d.blocks ? (d.c == Coll::alltoall ? "Size = bytes for each peer" : "Size = bytes of each rank's block")
                              : "Size = buffer bytes";
  what += d.reduction ? " (float sum)" : "";
  return what + "; algbw = " + (d.blocks ? "N x Size" : "Size") + " / avg time; busbw as nccl-tests";
}

void run_one(Ctx &ctx, const CollDef &d, const std::vector<std::size_t> &sizes) {
  Table t;
  t.test = std::string("coll.") + d.name;
  t.title = std::string("OSU-style ") + d.label + " Latency Test: " + std::to_string(ctx.nranks) + " ranks";
  t.columns = {"Size", "Avg(us)", "Min(us)", "Max(us)"};
  if (d.c != Coll::barrier) {
    t.columns.insert(t.columns.end(), {"AlgBW(MB/s)", "BusBW(MB/s)"});
  }
  t.notes.push_back(size_note(d));
  Table &tab = ctx.begin_table(std::move(t));
  std::vector<std::size_t> list = d.c == Coll::barrier ? std::vector<std::size_t>{0} : sizes;
  Bufs b;
  for (std::size_t k = 0; k < list.size(); ++k) {
    std::size_t s = list[k];
    if ((d.reduction && (s < 4 || s % 4 != 0)) || (s == 0 && d.c != Coll::barrier)) {
      continue;
    }
    ctx.progress(std::string("coll ") + d.name + " " + std::to_string(s) + " B");
    size_bufs(d, s, ctx.nranks, b);
    double us = measure(ctx, d, s, b);
    double sum = ctx.reduce_to_root(us, ROp::sum);
    double lo = ctx.reduce_to_root(us, ROp::min);
    double hi = ctx.reduce_to_root(us, ROp::max);
    if (!ctx.root()) {
      continue;
    }
    double avg = sum / ctx.nranks;
    double total = static_cast<double>(s) * (d.blocks ? ctx.nranks : 1);
    double algbw = avg > 0 ? total / avg : kNaN;   // bytes/us = MB/s
    std::vector<double> row{static_cast<double>(s), avg, lo, hi};
    if (d.c != Coll::barrier) {
      row.insert(row.end(), {algbw, algbw * d.factor(ctx.nranks)});
    }
    ctx.add_row(tab, std::move(row));
  }
}

}  // namespace

std::vector<std::string> all_collective_names() {
  std::vector<std::string> out;
  for (const CollDef &d : kColls) {
    out.emplace_back(d.name);
  }
  return out;
}

bool known_collective(const std::string &name) { return find_coll(name) != nullptr; }

void run_coll(Ctx &ctx, const std::vector<std::string> &colls, const std::vector<std::size_t> &sizes) {
  for (const std::string &name : colls) {
    const CollDef *d = find_coll(name);
    if (d != nullptr) {
      run_one(ctx, *d, sizes);
    }
  }
}

}  // namespace rdmxbench
