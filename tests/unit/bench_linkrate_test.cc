// rdmx-bench's port rate rules on made-up runs (no device, no launcher):
// the default --min-bw (bench/linkrate.h), the per-link floors it puts on a
// bandwidth matrix, the per-host text matrices beyond 16 ranks, and the
// HTML heat maps' drill-down data beyond 64 ranks.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "allpairs.h"
#include "html_svg.h"
#include "linkrate.h"
#include "report.h"
#include "bench_text_of.h"

namespace {

using namespace rdmxbench;

constexpr double kEdr4xGbps = 100.0;            // 4x EDR data rate
constexpr double kEdr4xMBs = kEdr4xGbps * 125;  // 12500 MB/s

PortFacts port(const std::string &kind, double data_gbps, int sm_peers) {
  PortFacts p;
  p.device = kind == "soft-roce" ? "rxe0" : "mlx5_0";
  p.port = 1;
  p.kind = kind;
  p.source = data_gbps > 0 ? "ibv_query_port" : "unknown";
  p.speed = data_gbps > 0 ? "4x EDR" : "";
  p.signal_gbps = data_gbps > 0 ? 103.125 : 0;
  p.data_gbps = data_gbps;
  p.sm_peers = sm_peers;
  p.detail = "made up";
  return p;
}

// `per_host` ranks on each of `hosts` hosts, all with the same port.
struct Job {
  std::vector<PortFacts> ports;
  std::vector<std::string> hosts;
};
Job job(int hosts, int per_host, const PortFacts &p) {
  Job j;
  for (int h = 0; h < hosts; ++h) {
    for (int k = 0; k < per_host; ++k) {
      char name[16];
      std::snprintf(name, sizeof name, "node%02d", h);
      j.hosts.emplace_back(name);
      j.ports.push_back(p);
    }
  }
  return j;
}

using rdmxbench_test::bw_matrix;

int flagged_count(const Matrix &m) {
  int k = 0;
  for (char f : m.flagged) {
    k += f ? 1 : 0;
  }
  return k;
}

TEST(BenchMinBw, DefaultsToAFractionOfThePortOnHardware) {
  Job j = job(2, 2, port("hardware", kEdr4xGbps, 1));
  MinBwSetting s = min_bw_setting(j.ports, j.hosts, kMinBwUnset);
  EXPECT_EQ(s.source, "port rate");
  EXPECT_DOUBLE_EQ(s.alone, kPortFloorFraction * kEdr4xMBs);
  EXPECT_DOUBLE_EQ(s.shift, kPortFloorFraction * kEdr4xMBs / 2);   // two ranks share each host's port
  EXPECT_NE(s.why.find("60%"), std::string::npos) << s.why;
}

TEST(BenchMinBw, TheOptionWins) {
  Job j = job(2, 2, port("hardware", kEdr4xGbps, 1));
  MinBwSetting s = min_bw_setting(j.ports, j.hosts, 1000.0);
  EXPECT_EQ(s.source, "option");
  EXPECT_DOUBLE_EQ(s.alone, 1000.0);
  s = min_bw_setting(j.ports, j.hosts, 0.0);
  EXPECT_EQ(s.source, "off");
  EXPECT_NE(s.why.find("--min-bw 0"), std::string::npos) << s.why;
}

TEST(BenchMinBw, OffOnEmulatedUnknownOrUnsaidPorts) {
  struct Case {
    PortFacts p;
    const char *why;
  };
  PortFacts none;
  none.detail = "the mpi backend cannot tell which port it uses";
  const Case cases[] = {{port("soft-roce", 10.0, 0), "emulated (soft-roce)"},
                        {port("siw", 10.0, 0), "emulated (siw)"},
                        {port("unknown", kEdr4xGbps, 0), "unknown kind"},
                        {port("hardware", 0.0, 0), "no known rate"},
                        {none, "no rank uses an RDMA port"}};
  for (const Case &c : cases) {
    Job j = job(2, 1, c.p);
    MinBwSetting s = min_bw_setting(j.ports, j.hosts, kMinBwUnset);
    EXPECT_EQ(s.source, "off") << c.why;
    EXPECT_DOUBLE_EQ(s.alone, 0.0) << c.why;
    EXPECT_NE(s.why.find(c.why), std::string::npos) << s.why;
  }
  Job j = job(2, 2, port("hardware", kEdr4xGbps, 1));
  EXPECT_EQ(min_bw_setting({}, {}, kMinBwUnset).source, "off");   // the backend said nothing at all
  j = job(1, 4, port("hardware", kEdr4xGbps, 3));                 // one host, shared memory only
  MinBwSetting s = min_bw_setting(j.ports, j.hosts, kMinBwUnset);
  EXPECT_EQ(s.source, "off");
  EXPECT_NE(s.why.find("shares memory"), std::string::npos) << s.why;
}

TEST(BenchMinBw, WhichLinksGoThroughThePort) {
  Job j = job(2, 2, port("hardware", kEdr4xGbps, 1));
  EXPECT_FALSE(link_uses_port(j.ports, j.hosts, 0, 1));   // same host, shared memory
  EXPECT_TRUE(link_uses_port(j.ports, j.hosts, 0, 2));
  EXPECT_TRUE(std::isnan(link_port_mbs(j.ports, j.hosts, 0, 1)));
  EXPECT_DOUBLE_EQ(link_port_mbs(j.ports, j.hosts, 1, 3), kEdr4xMBs);
  j.ports[3].data_gbps = 50.0;   // the slower end decides
  EXPECT_DOUBLE_EQ(link_port_mbs(j.ports, j.hosts, 1, 3), 50.0 * kMBsPerGbps);
  j = job(1, 2, port("hardware", kEdr4xGbps, 0));   // rc only (RDMX_TRANSPORTS=rc,self): loopback through the port
  EXPECT_TRUE(link_uses_port(j.ports, j.hosts, 0, 1));
  EXPECT_EQ(port_sharers(j.ports, j.hosts, 0), 2);
}

// Every link equally bad: the median rule cannot see it, the port rule does.
TEST(BenchMinBw, AUniformlyDegradedFabricFails) {
  const int n = 4;
  Job j = job(n, 1, port("hardware", kEdr4xGbps, 0));
  const MinBwSetting s = min_bw_setting(j.ports, j.hosts, kMinBwUnset);
  const FlagRule rule{0.8, 0.0, 0.0};

  Matrix bad = bw_matrix(n, 0.4 * kEdr4xMBs);   // e.g. every link trained at 1x of 4x... or worse
  flag_matrix(bad, rule);
  EXPECT_EQ(flagged_count(bad), 0) << "the median alone passes a uniform fabric";
  attach_port_rates(bad, j.ports, j.hosts, s, false);
  flag_matrix(bad, rule);
  EXPECT_EQ(flagged_count(bad), n * (n - 1));
  EXPECT_NEAR(bad.percent_of_port(0, 1), 40.0, 1e-9);

  Matrix good = bw_matrix(n, 0.92 * kEdr4xMBs);
  attach_port_rates(good, j.ports, j.hosts, s, false);
  flag_matrix(good, rule);
  EXPECT_EQ(flagged_count(good), 0);

  Matrix off = bw_matrix(n, 0.4 * kEdr4xMBs);   // --min-bw 0: rates shown, no floor
  attach_port_rates(off, j.ports, j.hosts, min_bw_setting(j.ports, j.hosts, 0.0), false);
  flag_matrix(off, rule);
  EXPECT_EQ(flagged_count(off), 0);
  EXPECT_TRUE(off.floor.empty());
  EXPECT_NEAR(off.percent_of_port(2, 3), 40.0, 1e-9);

  Report r;
  r.matrices = {bad};
  r.ports = j.ports;
  r.hosts = j.hosts;
  r.min_bw = s;
  const std::string js = json_report(r);
  EXPECT_NE(js.find("\"percent_of_port\":[[null,40,40,40]"), std::string::npos) << js.substr(0, 600);
  EXPECT_NE(js.find("\"min_bw\":{\"alone_mbs\":7500"), std::string::npos);
  EXPECT_NE(js.find("\"data_gbps\":100"), std::string::npos);
  const std::string csv = csv_report(r);
  EXPECT_NE(csv.find("allpairs,bw_alone,0,1,5000,MB/s,1,,12500,40\n"), std::string::npos) << csv;
  const std::string html = html_report(r);
  EXPECT_NE(html.find("5000.00 MB/s, 40% of the port's 12500 MB/s (flagged)"), std::string::npos);
  EXPECT_NE(html.find("Port rate: mlx5_0:1 4x EDR, 100 Gb/s data (ibv_query_port) on 4 ranks."), std::string::npos);
  EXPECT_NE(html.find("--min-bw defaults to 60%"), std::string::npos);
}

using rdmxbench_test::text_of;

// 24 ranks on 3 hosts: the text matrix is 3 x 3 hosts, each cell the
// median/lowest of its rank pairs and how many are flagged or silent.
TEST(BenchHostMatrix, AggregatesBeyondSixteenRanks) {
  const int hosts = 3, per_host = 8, n = hosts * per_host;
  Job j = job(hosts, per_host, port("hardware", kEdr4xGbps, per_host - 1));
  Matrix m = bw_matrix(n, 10000.0);
  for (int b = per_host; b < 2 * per_host; ++b) {
    m.at(0, b) = 9000.0 + b;   // node00 -> node01 a little lower, one link much lower
  }
  m.at(3, 12) = 2000.0;
  m.flagged[m.idx(3, 12)] = 1;
  m.err[m.idx(20, 5)] = "cannot talk (alone): no progress";   // node02 -> node00
  m.flagged[m.idx(20, 5)] = 1;
  m.at(20, 5) = kNaN;

  const HostMatrix h = host_matrix(m, j.hosts);
  ASSERT_EQ(h.hosts.size(), 3u);
  EXPECT_EQ(h.hosts[1], "node01");
  const HostCell &same = h.cells[0];
  EXPECT_EQ(same.pairs, per_host * (per_host - 1));
  EXPECT_EQ(same.flagged, 0);
  EXPECT_DOUBLE_EQ(same.median, 10000.0);
  const HostCell &c01 = h.cells[1];   // node00 -> node01
  EXPECT_EQ(c01.pairs, per_host * per_host);
  EXPECT_EQ(c01.flagged, 1);
  EXPECT_DOUBLE_EQ(c01.worst, 2000.0);
  EXPECT_DOUBLE_EQ(c01.median, 10000.0);
  const HostCell &c20 = h.cells[2 * 3 + 0];   // node02 -> node00: the silent pair counts, has no value
  EXPECT_EQ(c20.flagged, 1);
  EXPECT_DOUBLE_EQ(c20.worst, 10000.0);

  const std::string t = text_of(m, j.hosts);
  EXPECT_NE(t.find("per host (24 ranks on 3 hosts"), std::string::npos) << t;
  EXPECT_NE(t.find("10000.00/2000.00 1!"), std::string::npos) << t;
  EXPECT_NE(t.find("  node02"), std::string::npos) << t;
  EXPECT_EQ(t.find("        23"), std::string::npos) << "no per-rank rows:\n" << t;

  Matrix latm = bw_matrix(n, 2.0);   // latency: the worst is the highest
  latm.higher_is_better = false;
  latm.at(1, 17) = 9.0;
  EXPECT_DOUBLE_EQ(host_matrix(latm, j.hosts).cells[2].worst, 9.0);
}

TEST(BenchHostMatrix, SixteenRanksStayPerRank) {
  Job j = job(2, 8, port("hardware", kEdr4xGbps, 7));
  Matrix m = bw_matrix(16, 10000.0);
  attach_port_rates(m, j.ports, j.hosts, min_bw_setting(j.ports, j.hosts, kMinBwUnset), false);
  const std::string t = text_of(m, j.hosts);
  EXPECT_EQ(t.find("per host"), std::string::npos) << t;
  EXPECT_NE(t.find("\n      15"), std::string::npos) << t;
  EXPECT_NE(t.find("port data rate 12500.00 MB/s per link; links reached 80% of it"), std::string::npos) << t;
}


// The verdict names the host pair when every suspect link runs between the
// ranks of the same two hosts (a throttled link between two nodes), and
// still a single host when every suspect link touches only that one.
std::string verdict_of(const Matrix &m, const std::vector<std::string> &hosts) {
  const Diagnosis d = diagnose({m}, [&](int r) { return "rank " + std::to_string(r) + " (" + hosts[r] + ")"; },
                               [&](int r) { return hosts[r]; });
  for (const std::string &l : d.lines)
    if (l.rfind("Verdict:", 0) == 0) return l;
  return "";
}

TEST(BenchVerdict, SlowPathBetweenTwoHostsIsNamed) {
  for (int nhosts : {2, 3}) {
    const int per_host = 2, n = nhosts * per_host;
    const Job j = job(nhosts, per_host, port("hardware", kEdr4xGbps, 0));
    Matrix m = bw_matrix(n, 10000);
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b && j.hosts[a] != j.hosts[b] && j.hosts[a] != "node02" && j.hosts[b] != "node02")
          m.at(a, b) = 100;  // node00 <-> node01 slow, node02 fine
    flag_matrix(m, FlagRule{0.5, 1000.0, 0.0});  // an absolute floor: most links may be slow
    const std::string v = verdict_of(m, j.hosts);
    EXPECT_NE(v.find("suspect link between hosts node00 and node01"), std::string::npos) << nhosts << ": " << v;
    EXPECT_NE(v.find(nhosts == 2 ? "look the same" : "path between them"), std::string::npos) << v;
  }
  // One host's every link slow, across three hosts: that host.
  const Job j = job(3, 2, port("hardware", kEdr4xGbps, 0));
  Matrix m = bw_matrix(6, 10000);
  for (int a = 0; a < 6; ++a)
    for (int b = 0; b < 6; ++b)
      if (a != b && j.hosts[a] != j.hosts[b] && (j.hosts[a] == "node01" || j.hosts[b] == "node01")) m.at(a, b) = 100;
  flag_matrix(m, FlagRule{0.5, 1000.0, 0.0});  // an absolute floor: most links may be slow
  EXPECT_NE(verdict_of(m, j.hosts).find("suspect host node01"), std::string::npos) << verdict_of(m, j.hosts);
}

// Beyond kMaxHeatmapSide ranks the page carries each link once, as a log
// code of value / median, for its script to draw a host pair rank by rank;
// the block is inert JSON that no host name or reason can break out of.
TEST(BenchHtml, DrillDownDataBeyondSixtyFourRanks) {
  const int hosts = 5, per_host = 16, n = hosts * per_host;
  Job j = job(hosts, per_host, port("hardware", kEdr4xGbps, per_host - 1));
  for (int r = n - per_host; r < n; ++r) {
    j.hosts[static_cast<std::size_t>(r)] = "node04</script><b>";   // a hostile host name
  }
  Matrix m = bw_matrix(n, 10000.0);
  m.median = 10000.0;
  m.at(3, 40) = 1234.5;
  m.flagged[m.idx(3, 40)] = 1;
  m.at(70, 2) = 0.37;   // far below the median: kept to the same relative precision
  m.err[m.idx(79, 0)] = "cannot talk (alone): <no progress>";
  m.at(79, 0) = kNaN;

  const std::string block = drill_data(m, j.hosts, "drill-7");
  ASSERT_EQ(block.rfind("<script type=\"application/json\" class=\"rdmx-drill\" id=\"drill-7\">", 0), 0u) << block;
  const std::size_t body = block.find('>') + 1, end = block.rfind("</script>");
  EXPECT_EQ(block.find('<', body), end) << "a '<' inside the block";
  const nlohmann::json d = nlohmann::json::parse(block.substr(body, end - body));
  ASSERT_EQ(d["q"].size(), static_cast<std::size_t>(n * n));
  auto value = [&](int a, int b) {
    const nlohmann::json &q = d["q"][static_cast<std::size_t>(m.idx(a, b))];
    return q.is_null() ? kNaN : d["ref"].get<double>() * std::exp(q.get<double>() * d["step"].get<double>());
  };
  constexpr double kKept = 0.0005;   // 0.05 %
  EXPECT_NEAR(value(3, 40), 1234.5, 1234.5 * kKept);
  EXPECT_NEAR(value(70, 2), 0.37, 0.37 * kKept);
  EXPECT_NEAR(value(1, 2), 10000.0, 10000.0 * kKept);
  EXPECT_TRUE(std::isnan(value(5, 5)));
  EXPECT_EQ(d["q"][static_cast<std::size_t>(m.idx(1, 2))], 0) << "the median codes as 0";
  EXPECT_EQ(d["flagged"], nlohmann::json::array({m.idx(3, 40)}));
  ASSERT_EQ(d["errors"].size(), 1u);
  EXPECT_EQ(d["errors"][0][0], m.idx(79, 0));
  EXPECT_EQ(d["reasons"][d["errors"][0][1].get<std::size_t>()], "cannot talk (alone): <no progress>");
  EXPECT_EQ(d["axis"], "host");
  EXPECT_EQ(d["labels"].size(), static_cast<std::size_t>(hosts));
  EXPECT_EQ(d["group"][static_cast<std::size_t>(n - 1)], hosts - 1);
  EXPECT_EQ(d["hosts"][d["host"][static_cast<std::size_t>(n - 1)].get<std::size_t>()], "node04</script><b>");

  // The page: the map's cells are the drill-down's targets, one script.
  Report r;
  r.ranks = n;
  r.hosts = j.hosts;
  r.matrices = {m};
  const std::string page = html_report(r);
  EXPECT_NE(page.find("data-drill=\"drill-0\" data-matrix=\"bw_alone\""), std::string::npos);
  EXPECT_NE(page.find("data-cell=\"0,2\""), std::string::npos);
  ASSERT_NE(page.find("<script>"), std::string::npos);
  EXPECT_EQ(page.find("<script>"), page.rfind("<script>")) << "the script once";

  // At most kMaxHeatmapSide ranks: one cell per rank pair, no script.
  Report small;
  small.ranks = kMaxHeatmapSide;
  small.matrices = {bw_matrix(kMaxHeatmapSide, 10000.0)};
  EXPECT_EQ(drill_data(small.matrices[0], {}, "drill-0"), "");
  EXPECT_EQ(html_report(small).find("<script"), std::string::npos);
}

// rdmx-bench's --json parses whatever its strings hold: quotes, control
// characters, bytes that are not UTF-8 (replaced), and keeps whole numbers
// whole and other figures to six significant digits.
TEST(BenchJson, AnyStringParses) {
  Report r;
  r.prog = "rdmx-bench";
  r.command = "allpairs";
  r.ranks = 2;
  r.hosts = {"a\"b\\c\t", "bad\xff\xfe" "byte"};
  r.provenance.argv = {"rdmx-bench", "--note", "it's \"quoted\""};
  r.provenance.rdmx_env = {{"RDMX_DEVICE", "mlx5_0\n"}};
  Matrix m = bw_matrix(2, 12345.6789);
  m.at(1, 0) = 40.0;
  m.err[m.idx(0, 1)] = "cannot talk: \x01";
  r.matrices = {m};
  const nlohmann::json d = nlohmann::json::parse(json_report(r));
  EXPECT_EQ(d["hosts"][0], "a\"b\\c\t");
  EXPECT_EQ(d["hosts"][1], "bad\xef\xbf\xbd\xef\xbf\xbd" "byte") << "U+FFFD for each byte that is not UTF-8";
  EXPECT_EQ(d["provenance"]["argv"][2], "it's \"quoted\"");
  EXPECT_EQ(d["provenance"]["environment"]["RDMX_DEVICE"], "mlx5_0\n");
  EXPECT_EQ(d["matrices"][0]["errors"][0]["reason"], "cannot talk: \x01");
  EXPECT_TRUE(d["matrices"][0]["values"][1][0].is_number_integer());
  EXPECT_DOUBLE_EQ(d["matrices"][0]["values"][0][1].get<double>(), 12345.7);
  EXPECT_TRUE(d["matrices"][0]["values"][0][0].is_null());
}

}  // namespace
