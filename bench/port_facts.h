// bench/port_facts.h: what a backend reports about the library under it:
// one rank's RDMA port and its rate (Backend::port_facts; report.h carries
// one per rank), and the effective configuration (Backend::settings).
#pragma once

#include <string>

namespace rdmxbench {

// One rank's RDMA port as its backend reports it (rdmx_get_port_info; the
// MPI twin cannot tell which port MPI uses).
struct PortFacts {
  std::string device;               // "" : no port (shared memory only, or unknown)
  int port = 0;
  std::string kind = "unknown";     // "hardware", "soft-roce", "siw", "unknown"
  std::string source = "unknown";   // "ibv_query_port", "netdev", "unknown"
  std::string speed;                // "4x EDR"
  double signal_gbps = 0.0;
  double data_gbps = 0.0;           // 0: unknown
  int netdev_mbps = -1;
  int sm_peers = 0;                 // peers reached through shared memory, not the port
  std::string fw_ver;               // the device's firmware, "" unknown
  std::string state;                // "active", "down", ... (ibv_port_state_str); "" no port
  int active_mtu = 0;               // bytes; 0 unknown
  std::string link_layer;           // "InfiniBand", "Ethernet"; "" no port
  std::string detail;               // where the rate came from, or why it is unknown
  bool known() const { return data_gbps > 0; }
  std::string label() const;        // "mlx5_0:1 4x EDR, 100 Gb/s data" or "unknown (...)"
};

// One setting of the library's effective configuration, as the backend
// reports it (rdmx_config_text) for the report's provenance.
struct Setting {
  std::string name, value, source;   // "RDMX_EAGER_LIMIT", "8192", "default"
};

}  // namespace rdmxbench
