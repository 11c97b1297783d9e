// A raw-verbs peer (the forgers and spies of the hostile and exposure
// tests) joins rdmx's bootstrap as a rank that offers rc only, on a node of
// its own: both rounds of protocols/boot_record.h, through the same
// allgather callback the rdmx ranks use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/wire.h"
#include "protocols/boot_record.h"

namespace rt {

using GatherFn = int (*)(const void *in, void *out, size_t len, void *arg);

// ip (network order) and port (host order) of our listening id; ip 0: we
// have no device (our rc record says failed, so every rank gives up the
// same way). *rc_out: every rank's rc record. Returns the job key.
inline uint64_t join_bootstrap(GatherFn gather, int np, uint32_t ip, uint16_t port,
                               std::vector<rdmx::RcRecord> *rc_out = nullptr) {
    rdmx::BootRecord mine{};
    mine.version = rdmx::wire::kVersion;
    mine.lanes = rdmx::kLaneRc;
    mine.job_key_candidate = 1;
    mine.node = 0x7261772d70656572ull ^ (static_cast<uint64_t>(ip) << 16) ^ port;  // no rdmx rank's node
    std::vector<rdmx::BootRecord> all(static_cast<size_t>(np));
    gather(&mine, all.data(), sizeof(mine), nullptr);
    rdmx::RcRecord rc{};
    rc.addr = {ip, port, 0};
    rc.failed = ip == 0 ? 1 : 0;
    std::vector<rdmx::RcRecord> rcs(static_cast<size_t>(np));
    gather(&rc, rcs.data(), sizeof(rc), nullptr);
    if (rc_out != nullptr) *rc_out = rcs;
    return all[0].job_key_candidate;
}

}  // namespace rt
