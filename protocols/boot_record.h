// What each rank publishes through the bootstrap, in two rounds. Round one
// (every rank): the wire version, a job-key candidate (rank 0's becomes the
// job's key), which node the rank is on, which lanes it offers and its
// shared-memory address. From round one every rank computes the same lane
// for every pair; round two (only when some pair uses rc) carries each
// rank's rc listening address, zero for a rank that has no rc peer, and a
// failed flag for a rank whose device would not open, so that every rank
// fails the same way instead of waiting for it.
// Internal, verbs-free: tests that join a job as a raw peer use it too.
#pragma once
#include <cstdint>
#include <type_traits>

#include "transport/rc.h"

namespace rdmx {

constexpr uint16_t kLaneSm = 1;  // the rank offers shared memory to ranks on its node
constexpr uint16_t kLaneRc = 2;  // the rank offers rc
constexpr size_t kSmAddressMax = 32;

// The CPUs a rank may run on, for telling whether the ranks on a host
// outnumber its CPUs: the first kCpuMaskBits as a bitmap, and the count.
constexpr size_t kCpuMaskBits = 256;

struct BootRecord {
    uint16_t version;              // wire::kVersion
    uint16_t lanes;                // kLane* bits
    uint32_t cpus;                 // CPUs in the rank's affinity mask
    uint64_t job_key_candidate;
    uint64_t node;                 // equal on ranks that share memory (hostname + boot id, or RDMX_NODE_ID)
    uint64_t host;                 // equal on ranks of one host (hostname + boot id, whatever RDMX_NODE_ID says)
    uint64_t cpu_mask[kCpuMaskBits / 64];  // CPUs 0..255 of the affinity mask
    unsigned char sm[kSmAddressMax];  // the sm transport's address (SmAddress), when kLaneSm
};
static_assert(std::is_trivially_copyable_v<BootRecord> && sizeof(BootRecord) == 96);

struct RcRecord {
    RcAddr addr;                   // zero: no rc peer
    uint32_t failed;               // 1: this rank's rc transport did not open
    uint32_t reserved;
};
static_assert(std::is_trivially_copyable_v<RcRecord> && sizeof(RcRecord) == 16);

}  // namespace rdmx
