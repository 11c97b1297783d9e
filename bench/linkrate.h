// bench/linkrate.h: each link's port rate and the default --min-bw rule.
//
// A link A -> B goes through an RDMA port when A and B are on different
// hosts, or on one host that shares no memory between them (rdmx with
// RDMX_TRANSPORTS=rc,self). Its port rate is the lower data rate of the two
// ends. When every port in use is real hardware with a known rate, --min-bw
// defaults to kPortFloorFraction of each link's port rate, so a fabric that
// is uniformly slow (every link trained at half width, say) fails even
// though every link matches the median. Pure functions: no device needed.
#pragma once

#include "report.h"

#include <string>
#include <vector>

namespace rdmxbench {

// The default floor, as a fraction of the port's data rate. A healthy link
// moves large messages at 85-95% of it; a link trained at half its width or
// a generation below lands at or under 55%.
inline constexpr double kPortFloorFraction = 0.6;
inline constexpr double kMBsPerGbps = 125.0;   // 1 Gb/s = 125 MB/s (MB = 10^6 bytes, as in the tables)
inline constexpr double kMinBwUnset = -1.0;    // Options::min_bw when --min-bw was not given

bool link_uses_port(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts, int a, int b);
// MB/s the link's two ports allow; NaN when it does not go through a port or a rate is unknown.
double link_port_mbs(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts, int a, int b);
// Ranks on a's host that send through the same device as a: they share its
// port when all pairs run at once.
int port_sharers(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts, int a);

// What --min-bw is for this run: the option when given (>= 0; 0 = off), else
// the port rule above, or off with the reason.
MinBwSetting min_bw_setting(const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts,
                            double option);

// Fills a bandwidth matrix's per-link port rates and, when the setting comes
// from the port rate, its per-link floors (`shift`: all pairs at once, the
// floor divided among the ranks sharing a port).
void attach_port_rates(Matrix &m, const std::vector<PortFacts> &ports, const std::vector<std::string> &hosts,
                       const MinBwSetting &setting, bool shift);

}  // namespace rdmxbench
