// bench/bringup.cc: the default subcommand, what an administrator runs on a
// new cluster: connect, a quick all-pairs check, latency and bandwidth
// between ranks 0 and 1 at a few sizes, a short allreduce/bcast, and a
// summary a newcomer can read, ending in PASS or FAIL.
#include "commands.h"
#include "linkrate.h"

#include <cmath>
#include <map>

namespace rdmxbench {

namespace {

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) {
    return "n/a";
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string size_label(std::size_t s) {
  if (s >= (1u << 20)) {
    return std::to_string(s >> 20) + " MiB";
  }
  if (s >= (1u << 10)) {
    return std::to_string(s >> 10) + " KiB";
  }
  return std::to_string(s) + " B";
}

std::string line(const std::string &label, const std::string &text) {
  std::string l = label + ":";
  l.resize(std::max<std::size_t>(l.size() + 1, 17), ' ');
  return l + text;
}

std::vector<std::size_t> up_to(std::vector<std::size_t> sizes, std::size_t max) {
  std::vector<std::size_t> out;
  for (std::size_t s : sizes) {
    if (s <= max) {
      out.push_back(s);
    }
  }
  return out;
}

std::string hosts_line(Ctx &ctx) {
  std::map<std::string, int> per_host;
  for (const std::string &h : ctx.hosts()) {
    ++per_host[h];
  }
  std::string s = std::to_string(ctx.nranks) + " ranks on " + std::to_string(per_host.size()) + " host(s):";
  int shown = 0;
  for (const auto &kv : per_host) {
    if (++shown > 8) {
      return s + " ...";
    }
    s += " " + kv.first + " (" + std::to_string(kv.second) + ")";
  }
  return s;
}

std::string connect_line(const Ctx &ctx, const Table &t) {
  double first = t.rows.empty() ? kNaN : t.rows[0][4];
  double best = first;
  for (const auto &r : t.rows) {
    best = std::isfinite(r[4]) && (!std::isfinite(best) || r[4] < best) ? r[4] : best;
  }
  if (ctx.be.can_restart()) {
    std::string s = fixed(first, 2) + " ms to connect the full mesh (init, slowest rank)";
    return t.rows.size() < 2 ? s : s + "; best of " + std::to_string(t.rows.size()) + " runs " + fixed(best, 2) + " ms";
  }
  double init = t.rows.empty() ? kNaN : t.rows[0][1];
  return fixed(first, 2) + " ms for a first message to and from every peer (MPI connects lazily; MPI_Init " +
         fixed(init, 2) + " ms)";
}

std::string pt2pt_line(const Table &t, const std::string &col, const std::string &unit, int decimals) {
  std::string s;
  for (const auto &r : t.rows) {
    s += (s.empty() ? "" : ", ") + fixed(t.lookup(r[0], col), decimals) + " " + unit + " at " +
         size_label(static_cast<std::size_t>(r[0]));
  }
  return s.empty() ? "n/a" : s;
}

std::string coll_line(const Table &t) {
  if (t.rows.empty()) {
    return "n/a";
  }
  const auto &small = t.rows.front();
  const auto &big = t.rows.back();
  return fixed(small[1], 2) + " us at " + size_label(static_cast<std::size_t>(small[0])) + "; " + fixed(big[1], 1) +
         " us and bus bandwidth " + fixed(big[5], 1) + " MB/s at " + size_label(static_cast<std::size_t>(big[0]));
}

// " (94% of the port's 12500 MB/s at 1 MiB)": the largest size against the
// link's port data rate, "" when that is unknown.
std::string of_port(double port_mbs, const Table &t) {
  if (!std::isfinite(port_mbs) || t.rows.empty()) {
    return "";
  }
  const auto &big = t.rows.back();
  const double v = t.lookup(big[0], "Bandwidth(MB/s)");
  if (!std::isfinite(v)) {
    return "";
  }
  constexpr double kPercent = 100.0;
  return " (" + fixed(kPercent * v / port_mbs, 0) + "% of the port's " + fixed(port_mbs, 0) + " MB/s at " +
         size_label(static_cast<std::size_t>(big[0])) + ")";
}

// "median 91% of the port data rate, lowest 88% (rank 2 -> rank 0)"
std::string reached(const Matrix &m) {
  std::vector<double> pct;
  int wa = -1;
  int wb = -1;
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      const double p = m.percent_of_port(a, b);
      if (a == b || !std::isfinite(p)) {
        continue;
      }
      if (pct.empty() || p < m.percent_of_port(wa, wb)) {
        wa = a;
        wb = b;
      }
      pct.push_back(p);
    }
  }
  if (pct.empty()) {
    return "";
  }
  return "median " + fixed(median_of(pct), 0) + "% of the port data rate, lowest " +
         fixed(m.percent_of_port(wa, wb), 0) + "% (rank " + std::to_string(wa) + " -> rank " + std::to_string(wb) +
         ")";
}

bool positive(const Table &t, std::size_t col) {
  for (const auto &r : t.rows) {
    if (!(r.size() > col && std::isfinite(r[col]) && r[col] > 0)) {
      return false;
    }
  }
  return !t.rows.empty();
}

}  // namespace

void run_bringup(Ctx &ctx) {
  Options &o = ctx.opt;
  if (!o.quick && o.iters < 0 && o.iters_scale == 1.0) {
    o.iters_scale = 0.1;   // a check, not a full characterisation
  }
  Table &conn = run_connect(ctx, o.quick ? 1 : o.repeat);
  std::string hl = hosts_line(ctx);
  std::vector<std::string> s{"", "== Bring-up summary (" + ctx.be.version() + ") ==", line("Ranks", hl),
                             line("Bring-up", connect_line(ctx, conn))};
  if (!o.note.empty()) {
    s.insert(s.begin() + 2, line("Note", o.note));
  }
  if (ctx.nranks < 2) {
    s.push_back(line("Links", "none: bring-up needs at least 2 ranks to check links"));
    ctx.rep.checks.push_back(Check{"ranks", false, "at least 2 ranks are needed to check links"});
    ctx.rep.summary = s;
    return;
  }
  std::size_t top = default_max_size(o);
  AllpairsOutcome ap = run_allpairs(ctx, allpairs_config(o));
  Table &lat = run_latency(ctx, up_to({8, 4096, 65536, 1u << 20}, top));
  Table &bw = run_bw(ctx, up_to({65536, 1u << 20}, top), false);
  run_coll(ctx, {"allreduce", "bcast"}, up_to({8, 65536, 1u << 20}, top));
  if (!ctx.root()) {
    return;
  }
  const MinBwSetting &mb = ctx.rep.min_bw;
  if (o.flag_fraction == 0 && mb.source == "off" && o.max_lat == 0) {
    s.insert(s.begin() + 2, line("Verdicts", "speed verdicts are off (--flag-fraction 0, no --min-bw or --max-lat): "
                                             "links are checked for reachability and data only"));
  }
  s.push_back(line("Port rate", ports_line(ctx.rep.ports)));
  s.push_back(line("Min bandwidth", mb.why));
  s.push_back(line("Latency 0<->1", pt2pt_line(lat, "Latency(us)", "us", 2) + " (half round trip)"));
  s.push_back(line("Bandwidth 0->1", pt2pt_line(bw, "Bandwidth(MB/s)", "MB/s", 1) +
                                         of_port(link_port_mbs(ctx.rep.ports, ctx.rep.hosts, 0, 1), bw)));
  for (const Matrix &m : ctx.rep.matrices) {
    if (m.name == "bw_alone" || m.name == "bw_shift") {
      std::string r = reached(m);
      if (!r.empty()) {
        s.push_back(line(m.name == "bw_alone" ? "Links alone" : "Links at once", r));
      }
    }
  }
  for (const Table &t : ctx.rep.tables) {
    if (t.test == "coll.allreduce" || t.test == "coll.bcast") {
      s.push_back(line(t.test == "coll.allreduce" ? "Allreduce" : "Broadcast", coll_line(t)));
    }
  }
  const std::string how = ap.alone == ap.links ? "(every ordered pair, alone and all at once), "
                                               : "(every ordered pair all at once, " + std::to_string(ap.alone) +
                                                     " of them alone), ";
  s.push_back(line("Links", std::to_string(ap.links) + " checked " + how +
                                (ap.suspect == 0 ? std::string("none suspect")
                                                 : std::to_string(ap.suspect) + " SUSPECT")));
  for (std::size_t i = 1; i < ap.summary.size(); ++i) {
    s.push_back("                 " + ap.summary[i]);
  }
  double up = conn.rows.empty() ? kNaN : conn.rows[0][4];
  ctx.rep.checks.push_back(Check{"connect", std::isfinite(up), "full mesh up in " + fixed(up, 2) + " ms"});
  bool pt_ok = positive(lat, 1) && positive(bw, 1);
  ctx.rep.checks.push_back(Check{"latency and bandwidth 0<->1", pt_ok, pt_ok ? "measured" : "no valid figure"});
  ctx.rep.summary = s;
}

}  // namespace rdmxbench
