// bench/linkrate.cc: per-link port rates and the default --min-bw rule.
#include "linkrate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rdmxbench {

namespace {

std::size_t at(int r) { return static_cast<std::size_t>(r); }

std::string mbs(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MB/s", v);
  return buf;
}

// The first reason the port rule cannot apply, "" when it can.
std::string why_not(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts) {
  const int n = static_cast<int>(ports.size());
  bool any = false;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b || !link_uses_port(ports, hosts, a, b)) {
        continue;
      }
      any = true;
      for (int r : {a, b}) {
        const PortFacts &p = ports[at(r)];
        const std::string who = "rank " + std::to_string(r) + "'s " + p.device + ":" + std::to_string(p.port);
        if (p.kind == "soft-roce" || p.kind == "siw") {
          return who + " is emulated (" + p.kind + "): its rate is not a line rate";
        }
        if (p.kind != "hardware") {
          return who + " is of an unknown kind (not known to be hardware)";
        }
        if (!p.known()) {
          return who + " has no known rate (" + p.detail + ")";
        }
      }
    }
  }
  if (any) {
    return "";
  }
  const bool none = std::all_of(ports.begin(), ports.end(), [](const PortFacts &p) { return p.device.empty(); });
  return none && !ports.empty() ? "no rank uses an RDMA port it can name (see the port rate)"
                                : "no link goes through an RDMA port (every pair shares memory on its host)";
}

}  // namespace

bool link_uses_port(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts, int a, int b) {
  const int n = static_cast<int>(ports.size());
  if (a == b || a < 0 || b < 0 || a >= n || b >= n || ports[at(a)].device.empty() || ports[at(b)].device.empty()) {
    return false;
  }
  const bool same_host = hosts.size() == ports.size() && hosts[at(a)] == hosts[at(b)];
  return !same_host || (ports[at(a)].sm_peers == 0 && ports[at(b)].sm_peers == 0);
}

double link_port_mbs(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts, int a, int b) {
  if (!link_uses_port(ports, hosts, a, b) || !ports[at(a)].known() || !ports[at(b)].known()) {
    return kNaN;
  }
  return std::min(ports[at(a)].data_gbps, ports[at(b)].data_gbps) * kMBsPerGbps;
}

int port_sharers(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts, int a) {
  int k = 0;
  for (std::size_t r = 0; r < ports.size(); ++r) {
    const bool same_host = hosts.size() == ports.size() && hosts[r] == hosts[at(a)];
    k += same_host && ports[r].device == ports[at(a)].device && ports[r].port == ports[at(a)].port ? 1 : 0;
  }
  return std::max(k, 1);
}

MinBwSetting min_bw_setting(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts,
                            double option) {
  MinBwSetting s;
  if (option >= 0) {
    s.alone = s.shift = option;
    s.source = option > 0 ? "option" : "off";
    s.why = option > 0 ? "--min-bw " + mbs(option) + " (given)" : "--min-bw 0: the absolute floor is off";
    return s;
  }
  s.source = "off";
  if (ports.empty()) {
    s.why = "--min-bw default off: this backend cannot tell which port each rank uses";
    return s;
  }
  if (std::string why = why_not(ports, hosts); !why.empty()) {
    s.why = "--min-bw default off: " + why;
    return s;
  }
  const int n = static_cast<int>(ports.size());
  s.alone = s.shift = kNaN;
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      const double p = link_port_mbs(ports, hosts, a, b);
      if (std::isfinite(p)) {
        const double f = kPortFloorFraction * p;
        const int share = std::max(port_sharers(ports, hosts, a), port_sharers(ports, hosts, b));
        s.alone = std::isfinite(s.alone) ? std::min(s.alone, f) : f;
        s.shift = std::isfinite(s.shift) ? std::min(s.shift, f / share) : f / share;
      }
    }
  }
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.0f%%", kPortFloorFraction * 100);
  s.source = "port rate";
  s.why = std::string("--min-bw defaults to ") + pct + " of each link's port data rate: " + mbs(s.alone) +
          " each pair alone, " + mbs(s.shift) + " all at once (ranks on a host share its port)";
  return s;
}

void attach_port_rates(Matrix &m, const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts,
                       const MinBwSetting &setting, bool shift) {
  if (ports.size() != static_cast<std::size_t>(m.n)) {
    return;
  }
  m.port.assign(m.v.size(), kNaN);
  const bool floors = setting.source == "port rate";
  if (floors) {
    m.floor.assign(m.v.size(), kNaN);
  }
  for (int a = 0; a < m.n; ++a) {
    for (int b = 0; b < m.n; ++b) {
      const double p = link_port_mbs(ports, hosts, a, b);
      m.port[m.idx(a, b)] = p;
      if (floors && std::isfinite(p)) {
        const int share = shift ? std::max(port_sharers(ports, hosts, a), port_sharers(ports, hosts, b)) : 1;
        m.floor[m.idx(a, b)] = kPortFloorFraction * p / share;
      }
    }
  }
}

}  // namespace rdmxbench
