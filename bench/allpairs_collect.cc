// bench/allpairs_collect.cc: gathering each rank's all-pairs row at rank 0
// (point to point, with the pair deadline, so a silent rank is named rather
// than hanging the run), then flagging, printing and the diagnosis.
#include "allpairs.h"

#include "commands.h"
#include "linkrate.h"
#include "xfer.h"

#include <cstring>
#include <sstream>

namespace rdmxbench {

namespace {

struct MatrixInfo {
  const char *name;
  const char *title;
  const char *unit;
  bool higher_is_better;
};

const MatrixInfo kInfo[kApMatrices] = {
    {"lat_alone", "All-pairs latency (us), each pair alone", "us", false},
    {"bw_alone", "All-pairs bandwidth (MB/s), each pair alone", "MB/s", true},
    {"lat_shift", "All-pairs latency (us), all pairs at once (shift pattern)", "us", false},
    {"bw_shift", "All-pairs bandwidth (MB/s), all pairs at once (shift pattern)", "MB/s", true},
};

std::size_t fixed_bytes(int n) { return sizeof(std::uint64_t) + kApMatrices * sizeof(double) * static_cast<std::size_t>(n); }

Bytes pack(const std::vector<double> (&rows)[kApMatrices], std::size_t text_len, int n) {
  Bytes b(fixed_bytes(n));
  std::uint64_t len = text_len;
  std::memcpy(b.data(), &len, sizeof len);
  for (int m = 0; m < kApMatrices; ++m) {
    std::memcpy(b.data() + sizeof len + static_cast<std::size_t>(m * n) * sizeof(double), rows[m].data(),
                static_cast<std::size_t>(n) * sizeof(double));
  }
  return b;
}

void set_err(std::vector<Matrix> &ms, int phase, int from, int to, const std::string &why) {
  for (int k = 0; k < 2; ++k) {
    Matrix &m = ms[static_cast<std::size_t>(phase * 2 + k)];
    if (from < 0 || to < 0 || from >= m.n || to >= m.n) {
      continue;
    }
    std::string &e = m.err[m.idx(from, to)];
    if (e.empty()) {
      e = why;
    }
  }
}

void unpack(const Bytes &fixed, const std::string &text, int r, std::vector<Matrix> &ms) {
  for (int m = 0; m < kApMatrices; ++m) {
    for (int b = 0; b < ms[0].n; ++b) {
      double v = 0.0;
      std::memcpy(&v, fixed.data() + sizeof(std::uint64_t) + static_cast<std::size_t>(m * ms[0].n + b) * sizeof v,
                  sizeof v);
      ms[static_cast<std::size_t>(m)].at(r, b) = v;
    }
  }
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    int phase = 0;
    int from = 0;
    int to = 0;
    std::string why;
    if (ls >> phase >> from >> to && std::getline(ls >> std::ws, why) && (phase == 0 || phase == 1)) {
      set_err(ms, phase, from, to, why);
    }
  }
}

void send_report(Ctx &ctx, const AllpairsConfig &cfg, const Bytes &fixed, const std::string &text) {
  Waiter w(ctx.be, cfg.pair_timeout);
  w.arm();
  Request q[2];
  Status s = ctx.be.isend(fixed.data(), fixed.size(), 0, kTagReport, q[0]);
  if (s.ok() && !text.empty()) {
    s = ctx.be.isend(text.data(), text.size(), 0, kTagReport + 1, q[1]);
  }
  if (s.ok()) {
    s = w.wait(q);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s: rank %d: could not send all-pairs results to rank 0: %s\n", ctx.opt.prog.c_str(),
                 ctx.rank, s.text.c_str());
  }
}

Status receive_report(Ctx &ctx, const AllpairsConfig &cfg, int r, std::vector<Matrix> &ms) {
  Waiter w(ctx.be, cfg.pair_timeout);
  w.arm();
  Bytes fixed(fixed_bytes(ctx.nranks));
  Request q;
  Status s = ctx.be.irecv(fixed.data(), fixed.size(), r, kTagReport, q);
  if (s.ok()) {
    s = w.wait_one(q);
  }
  if (!s.ok()) {
    return s;
  }
  std::uint64_t len = 0;
  std::memcpy(&len, fixed.data(), sizeof len);
  std::string text(static_cast<std::size_t>(len), '\0');
  if (len > 0) {
    s = ctx.be.irecv(text.data(), text.size(), r, kTagReport + 1, q);
    if (s.ok()) {
      s = w.wait_one(q);
    }
  }
  if (s.ok()) {
    unpack(fixed, text, r, ms);
  }
  return s;
}

}  // namespace

void collect_allpairs(Ctx &ctx, const AllpairsConfig &cfg, const std::vector<double> (&rows)[kApMatrices],
                      const std::string &records, std::vector<Matrix> &out) {
  int n = ctx.nranks;
  Bytes fixed = pack(rows, records.size(), n);
  if (!ctx.root()) {
    send_report(ctx, cfg, fixed, records);
    return;
  }
  out.resize(kApMatrices);
  for (int m = 0; m < kApMatrices; ++m) {
    Matrix &mx = out[static_cast<std::size_t>(m)];
    mx.resize(n);
    mx.name = kInfo[m].name;
    mx.title = kInfo[m].title;
    mx.unit = kInfo[m].unit;
    mx.higher_is_better = kInfo[m].higher_is_better;
  }
  unpack(fixed, records, 0, out);
  for (int r = 1; r < n; ++r) {
    Status s = receive_report(ctx, cfg, r, out);
    for (int b = 0; b < n && !s.ok(); ++b) {
      if (b != r) {
        set_err(out, 0, r, b, "no results from rank " + std::to_string(r) + ": " + s.text);
        set_err(out, 1, r, b, "no results from rank " + std::to_string(r) + ": " + s.text);
      }
    }
  }
}

// The alone pairs the plan left out: not measured, which is no failure (a
// "no results from rank r" error there concerns pairs it never had to test).
void mark_unsampled(const AlonePlan &plan, std::vector<Matrix> &ms) {
  if (static_cast<long>(plan.pairs.size()) == plan.total) {
    return;
  }
  for (int k : {kLatAlone, kBwAlone}) {
    Matrix &m = ms[static_cast<std::size_t>(k)];
    m.skipped.assign(m.v.size(), 0);
    for (int a = 0; a < m.n; ++a) {
      for (int b = 0; b < m.n; ++b) {
        if (a != b && !plan.covers(a, b)) {
          m.skipped[m.idx(a, b)] = 1;
          m.err[m.idx(a, b)].clear();
        }
      }
    }
  }
}

AllpairsOutcome finish_allpairs(Ctx &ctx, const AlonePlan &plan, std::vector<Matrix> &ms) {
  AllpairsOutcome out;
  if (!ctx.root()) {
    return out;
  }
  mark_unsampled(plan, ms);
  ctx.rep.min_bw = min_bw_setting(ctx.rep.ports, ctx.rep.hosts, ctx.opt.min_bw);
  FlagRule rule{ctx.opt.flag_fraction, ctx.rep.min_bw.source == "option" ? ctx.opt.min_bw : 0.0, ctx.opt.max_lat};
  for (std::size_t k = 0; k < ms.size(); ++k) {
    Matrix &m = ms[k];
    if (m.higher_is_better) {
      attach_port_rates(m, ctx.rep.ports, ctx.rep.hosts, ctx.rep.min_bw, k == kBwShift);
    }
    flag_matrix(m, rule);
    ctx.progress_done();
    if (plan.mode == AloneMode::none && (k == kLatAlone || k == kBwAlone)) {
      continue;   // nothing measured: no empty matrix in the report
    }
    ctx.text.matrix(m, ctx.rep.hosts);
    ctx.rep.matrices.push_back(m);
  }
  ctx.text.line("\n# Port rate: " + ports_line(ctx.rep.ports));
  ctx.text.line("# " + ctx.rep.min_bw.why);
  ctx.rep.summary.push_back("Port rate: " + ports_line(ctx.rep.ports));
  ctx.rep.summary.push_back(ctx.rep.min_bw.why);
  Diagnosis d = diagnose(ms, [&](int r) { return ctx.rank_name(r); },
                         [&](int r) { return ctx.rep.hosts.at(static_cast<std::size_t>(r)); });
  d.lines.insert(d.lines.begin() + 1, plan.why);
  ctx.text.line("\n# All-pairs summary");
  for (const std::string &l : d.lines) {
    ctx.text.line("# " + l);
    ctx.rep.summary.push_back(l);
  }
  out.links = d.links;
  out.suspect = d.suspect;
  out.silent = d.silent;
  out.alone = static_cast<int>(plan.pairs.size());
  out.summary = d.lines;
  std::string detail = std::to_string(d.links) + " links checked, " + std::to_string(d.suspect) + " suspect, " +
                       std::to_string(d.silent) + " cannot talk or corrupt data";
  ctx.rep.checks.push_back(Check{"all-pairs links", d.suspect == 0, detail});
  return out;
}

}  // namespace rdmxbench
