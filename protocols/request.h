// Requests: one object per isend/irecv, from a per-context pool (no malloc
// on the hot path once the pool is warm). The user's handle is its address.
#pragma once
#include <atomic>
#include <cstdint>

#include "core/ilist.h"
#include "core/tag_match.h"
#include "core/wire.h"
#include "rdmx/rdmx.h"
#include "transport/transport.h"

struct rdmx_context;

namespace rdmx {
struct CommView;
}

// kGreq: a generalized request (rdmx_greq_start), completed by the layer that made it.
enum class ReqKind : uint8_t { kSend, kRecv, kGreq };

// Where a send stands (a small state machine; each stage one function).
enum class SendStage : uint8_t { kQueued, kEagerDone, kRtsSent, kInvalidating, kDone };

// A request is a PostedEntry so the matcher hands back the request itself.
struct rdmx_request : rdmx::PostedEntry {
    rdmx::ListNode link;              // endpoint pending queue / context lists
    rdmx_context *ctx = nullptr;
    rdmx::CommView *comm = nullptr;   // the communicator it was posted on (numbers info.source)
    ReqKind kind = ReqKind::kSend;
    SendStage stage = SendStage::kQueued;
    std::atomic<int> done{0};
    rdmx_status_t status = RDMX_OK;
    rdmx_msg_info_t info{};
    void *buf = nullptr;
    size_t len = 0;
    int peer = -1;                    // send: destination; recv: matched source
    int tag = 0;
    uint8_t space = 0;
    bool matched = false;
    bool blocking_user = false;
    bool sync = false;                // send: rendezvous whatever the size (rdmx_issend)
    // Rendezvous. A request's fields from `cookie` on are in use only once it
    // goes the rendezvous way (rndv set by rndv_send_start/rndv_recv_start);
    // they are reset when such a request is freed, so an eager request's
    // allocation and completion never touch them.
    bool rndv = false;
    uint64_t cookie = 0;              // send: our transfer id; recv: the sender's
    rdmx::XferMem mem;                // what the peer's transport holds for this transfer
    bool exposed = false;             // mem exposes the buffer to the peer (revoked before completion)
    rdmx_status_t fin_status = RDMX_OK;  // outcome to complete with once the exposure is revoked
    bool put = false;                 // send: rendezvous by put (the sender writes)
    uint64_t xfer_id = 0;             // put: the receiver's transfer id
    uint64_t sq_id = 0;               // names this request's gets/puts or revocation to its transport
    rdmx::wire::RndvDesc remote{};    // recv: what the sender advertised
    size_t rd_issued = 0;             // bytes with gets/puts posted
    size_t rd_done = 0;               // bytes moved
    size_t copy_len = 0;              // recv: bytes that fit the buffer
    rdmx_request *pool_next = nullptr;
    // In the pool (free, or retired with its finalized context): a handle to
    // it is stale. Request memory is never freed, so this stays readable.
    bool pooled = true;
};
