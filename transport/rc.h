// The RC verbs transport as the engine sees it: a Transport plus the two
// bring-up phases and the test hooks. Verbs-free, so protocols/ includes it
// under the poison headers; the implementation is rc_transport.h.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/hot.h"
#include "transport/transport.h"

namespace rdmx {

// Where a rank's RC transport listens, published through the bootstrap.
struct RcAddr {
    uint32_t ip;     // IPv4, network order
    uint16_t port;   // host order
    uint16_t flags;  // how the rank connects (connect_rule.h, kConnectMode*); 0: unstated, not checked
};
static_assert(sizeof(RcAddr) == 8);

struct RcParams {
    const Config *cfg = nullptr;
    int rank = 0;
    int size = 1;
    int local_rank = 0;      // picks a device from a comma list (RDMX_DEVICE)
    size_t eager_limit = 0;  // largest eager payload (receive buffers hold it plus a header)
};

class Rc : public Transport {
public:
    // Phase 2: every rank's address and the job key; connects the peers
    // marked in `serve` (a full mesh among the ranks that use rc) within
    // the connect timeout. *seconds: how long it took.
    virtual rdmx_status_t connect(const std::vector<RcAddr> &addrs, const std::vector<uint8_t> &serve,
                                  uint64_t job_key, double *seconds) = 0;
    virtual RcAddr address() const = 0;
    virtual const char *device_name() const = 0;
    // Registration cache and exposure figures for rdmx_get_stats.
    virtual void fill_stats(rdmx_stats_t *s) const = 0;

    // Test hooks (protocols/test_hooks.h, fault_inject.h).
    virtual rdmx_status_t hold_send_completions(int peer) = 0;
    virtual void release_send_completions() = 0;
    // Checks the send rings and bounce buffers against themselves, and each
    // usable connection's READ/WRITE slots against the engine's count.
    virtual rdmx_status_t check(const std::vector<uint32_t> &rma_in_flight, std::string *why) = 0;
    virtual rdmx_status_t inject_async_event(const char *event, int peer) = 0;
};

// The engine's per-message calls into rc, made direct. The engine calls sm
// through its final class; rc's class needs the verbs headers protocols/
// may not include, so these two stand in for it: each is a qualified,
// non-virtual call on rc's one implementation (rc_open makes no other).
// A direct call, not inlined (RDMX_HOT_CALL): folded into the engine's
// flattened entry points (core/hot.h), rc's posting code made them keep a
// frame pointer and spill registers throughout, and an 8-byte ping-pong over
// sm ran 29 more instructions (callgrind) for a transport it never used.
// rc_try_send_eager is Transport::try_send for an eager message
// (wire::MsgType::kEager, body = buf, len bytes), its fields passed in
// registers rather than built in memory and read back. Six arguments, the
// most the x86-64 ABI passes in registers: tag space and communicator
// travel packed in one (rc_space_comm).
constexpr uint64_t rc_space_comm(uint8_t space, uint32_t comm) { return uint64_t{space} << 32 | comm; }
RDMX_HOT_CALL Transport::Post rc_try_send_eager(Rc *t, int peer, uint64_t space_comm, int32_t tag, const void *buf,
                                                size_t len);
RDMX_HOT_CALL int rc_progress(Rc *t, bool housekeeping);

// Protects registered pages from fork() (transport/memory.h): before the
// process's first registration.
void fork_protect();

// Phase 1: picks and opens the device, listens, sizes and creates the SRQ,
// CQ and pools for a job of p.size ranks. `sink` is the engine's own: rc
// delivers arrivals to it by engine_on_arrival (transport.h), not through
// its table.
rdmx_status_t rc_open(const RcParams &p, TransportSink *sink, std::unique_ptr<Rc> *out);

}  // namespace rdmx
