// Effective configuration: defaults < RDMX_* environment < rdmx_config_t
// fields. Each value remembers where it came from (rdmx-info prints it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rdmx/rdmx.h"

namespace rdmx {

enum class ConfigSource { kDefault, kEnvironment, kConfigStruct };
const char *config_source_name(ConfigSource s);

struct ConfigEntry {
    const char *env;          // RDMX_* variable name
    std::string value;        // effective value, printable
    ConfigSource source;
    const char *doc;
};

struct Config {
    std::string device;            // "" = auto; may be a comma list chosen by local rank
    std::string ifaddr;            // "" = from the device's GID table
    size_t eager_limit = 8192;
    size_t rndv_thresh = 8193;
    unsigned srq_depth = 512;
    size_t unexpected_limit = 64u << 20;
    rdmx_progress_mode_t progress = RDMX_PROGRESS_THREAD;
    int log_level = 1;
    double connect_timeout = 60.0;
    double peer_timeout = 30.0;
    unsigned spin_us = 200;        // RDMX_SPIN_US: a wait busy-polls this long before sleeping
    unsigned sq_depth = 128;       // RDMX_SQ_DEPTH: send-queue slots per connection (a testing knob)
    // Rendezvous.
    enum class RndvProto : uint8_t { kAuto, kGet, kPut };
    RndvProto rndv_proto = RndvProto::kAuto;  // RDMX_RNDV_PROTO: get (RDMA READ), put (RDMA WRITE)
    unsigned rndv_reads = 8;       // RDMX_RNDV_READS: RDMA READs in flight per peer
    size_t rndv_chunk = 1u << 20;  // RDMX_RNDV_CHUNK: largest single READ
    unsigned rndv_windows = 2;     // RDMX_RNDV_WINDOWS: 0 off, 1 on, 2 auto (on unless soft RoCE)
    unsigned rcache = 1;           // RDMX_RCACHE: cache registrations (0 = register per transfer)
    size_t rcache_max = 0;         // RDMX_RCACHE_MAX: bytes the cache may pin; 0 = auto
    unsigned rcache_max_regions = 4096;
    // Bootstrap through the caller's runtime.
    rdmx_allgather_fn_t allgather = nullptr;
    void *allgather_arg = nullptr;
    int rank = -1;
    int size = -1;

    std::vector<ConfigEntry> entries;  // for rdmx-info

    // Resolves defaults, environment and cfg (may be NULL). On a malformed
    // value returns RDMX_ERR_INVALID_ARG after logging the variable and value.
    rdmx_status_t load(const rdmx_config_t *cfg);
};

// Parses "4096", "8k", "1M", "2g" (binary multiples). False on garbage.
bool parse_size(const char *s, size_t *out);

}  // namespace rdmx
