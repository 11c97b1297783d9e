// The seam between the protocol engine (protocols/) and the transports
// (transport/rc_*, sm_*, self). A transport moves framed messages and bytes
// between this rank and the peers it serves; the engine picks one transport
// per peer (a lane), so messages on a pair stay in order without any
// reordering above. The engine never sees verbs, queue pairs or shared
// memory: it sends messages, exposes buffers under a transport-defined key,
// asks for zero-copy get/put, and drives progress, which calls back into
// the engine through a TransportSink.
//
// Like UCX's uct under ucp: the interface is the set of operations, each
// transport a final class, and the engine calls the hot ones (send,
// can_send, progress) through a pointer the compiler can devirtualise under
// LTO. Everything here is called with the engine lock held; transports keep
// no lock of their own on these paths.
//
// This header includes no verbs or rdma_cm header: protocols/ compiles with
// the poison headers (cmake/poison) that forbid them.
#pragma once
#include <poll.h>

#include <cstddef>
#include <cstdint>

#include "core/wire.h"
#include "rdmx/rdmx.h"

namespace rdmx {

enum class TransportKind : uint8_t { kSelf, kSm, kRc };

// What the engine sends. The transport frames it as a wire::MsgHdr (it owns
// version, seq and credits) followed by `body` (an eager payload, or a
// rendezvous descriptor / FIN body).
struct MsgOut {
    wire::MsgType type = wire::MsgType::kEager;
    uint8_t space = 0;
    uint32_t comm = 0;     // communicator id (wire::MsgHdr::comm)
    int32_t tag = 0;
    uint64_t length = 0;   // message length (eager: body_len)
    uint64_t cookie = 0;
    const void *body = nullptr;
    size_t body_len = 0;
};

// A message to post, built by value: where the post inlines, its fields stay
// in registers instead of a copy on the stack.
inline MsgOut msg_out(wire::MsgType type, uint8_t space, uint32_t comm, int32_t tag, uint64_t length,
                      uint64_t cookie, const void *body, size_t body_len) {
    MsgOut m;
    m.type = type;
    m.space = space;
    m.comm = comm;
    m.tag = tag;
    m.length = length;
    m.cookie = cookie;
    m.body = body;
    m.body_len = body_len;
    return m;
}

// How a peer may use a buffer exposed to it (never both).
enum class Access : uint8_t { kRemoteRead, kRemoteWrite };

// What a transport keeps in a request for one transfer's memory: a
// registration, a cached one, a window or an exposure-table entry. The
// engine stores it, zero-initialised, and hands it back; only the transport
// that filled it reads it. release_mem() empties it.
struct XferMem {
    void *reg = nullptr;     // rc: an ibv_mr owned for this transfer
    void *cached = nullptr;  // rc: a registration-cache region (a reference)
    int32_t window = -1;     // rc: memory window index on the peer's QP; sm: exposure slot
    uint32_t lkey = 0;       // rc: local key for the get/put's local side
};

// Upcalls from a transport's progress() into the engine (engine lock held).
// A transport never calls these from inside send/get/put/expose: results of
// posts are reported on the next progress() pass.
class TransportSink {
public:
    // A message from `peer`, in that peer's send order. The transport has
    // checked the header (wire::decode_msg against the eager limit, the
    // sequence number, credits); `buf` holds `len` bytes starting with the
    // header and stays valid until release(peer, token). Return true to keep
    // the buffer (the engine calls release later; the transport may stop
    // that peer's flow until then), false to give it back now.
    virtual bool on_arrival(int peer, const wire::MsgHdr &h, const char *buf, uint32_t len, uint64_t token) = 0;
    // A get or put posted with `id` finished `bytes`; ok false: it failed
    // (the peer's failure, if any, comes through on_peer_failed too). Called
    // once per get/put posted, also for ids the engine has forgotten.
    virtual void on_rma_done(int peer, uint64_t id, uint32_t bytes, bool ok) = 0;
    // An unexpose() that returned false has finished revoking (ok false: the
    // revocation itself failed; access ended anyway).
    virtual void on_unexposed(int peer, uint64_t id, bool ok) = 0;
    // The connection to `peer` is gone for good; `why` is the first cause.
    // The transport has stopped delivering from it.
    virtual void on_peer_failed(int peer, rdmx_status_t why, const char *reason) = 0;
    // Everything the transport serves failed (a device gone); every peer on
    // it is lost.
    virtual void on_fatal(rdmx_status_t why) = 0;

protected:
    ~TransportSink() = default;
};

// The engine's on_arrival called by name, not through the table: rc's
// receive path (rc_progress, flattened; see rc.h) reaches the engine this
// way, so that in the LTO-linked library the matching and the copy inline
// into the poll (the upcall's prologue, epilogue and indirect call were
// 23 instructions of an 8-byte round trip). `engine` must be the engine's
// own sink, the one it opens its transports with (protocols/arrival.cc
// defines this for that type); sinks of any other type (a unit test's, over
// sm) are reached only through the table.
bool engine_on_arrival(TransportSink *engine, int peer, const wire::MsgHdr &h, const char *buf, uint32_t len,
                       uint64_t token);

class Transport {
public:
    virtual ~Transport() = default;
    virtual TransportKind kind() const = 0;
    virtual const char *name() const = 0;  // for messages: "rc rxe0:1", "sm", "self"

    // ---- connection state per peer --------------------------------------
    // true while `peer` can carry messages.
    virtual bool usable(int peer) const = 0;
    // The engine closes `peer` (it broke the protocol, or is lost): stop
    // delivering its messages, disconnect; no upcall follows for this.
    virtual void close_peer(int peer, rdmx_status_t why) = 0;
    // Printable address of `peer` on this transport, for messages.
    virtual const char *peer_addr(int peer) const = 0;
    // Something will need `peer` (a receive names it): a transport that
    // connects on demand starts connecting, so a peer that cannot be reached
    // fails that receive (on_peer_failed) instead of leaving it posted
    // forever. Sends need no call: can_send starts the connection and says
    // no until it is up, and the engine queues them meanwhile, in order.
    // Called only when on_demand() is true: a directed receive pays no
    // virtual call on a transport that connected everyone at start.
    virtual void reach(int peer) { (void)peer; }
    bool on_demand() const { return on_demand_; }

    // ---- messages ----------------------------------------------------------
    // Room to post one message of `body_len` body bytes to `peer` now
    // (credit, send slot, buffer). `ctrl`: a control message of a transfer
    // under way (FIN, CTS, PutFin), which may borrow one credit past the
    // grant. `extra` more send slots are wanted behind it (a window bind).
    virtual bool can_send(int peer, size_t body_len, bool ctrl, unsigned extra = 0) = 0;
    // Posts a message; `m.body` may be reused on return (copied or inlined).
    // Call only after can_send said yes. false: the post failed and the
    // peer is lost (on_peer_failed comes on the next progress).
    virtual bool send(int peer, const MsgOut &m, bool ctrl) = 0;
    // True while progress() would find nothing to do: kept by a transport
    // whose work only ever comes from calls into it (self), so the engine's
    // pass skips it without a call. Others leave it false: always polled.
    bool idle() const { return idle_; }

    // The send fast path: can_send and send in one call (a transport
    // overrides it to check room once). kNoRoom: nothing was posted.
    enum class Post : uint8_t { kSent, kNoRoom, kFailed };
    virtual Post try_send(int peer, const MsgOut &m) {
        if (!can_send(peer, m.body_len, false)) return Post::kNoRoom;
        return send(peer, m, false) ? Post::kSent : Post::kFailed;
    }
    // Gives back an arrival's buffer (and the credit it holds).
    virtual void release(int peer, uint64_t token) = 0;

    // ---- zero copy -----------------------------------------------------------
    // Exposes [buf, buf+len) to `peer` only, for `a`; *key is what the peer
    // passes to get/put (rc: an rkey; sm: an exposure slot; the address is
    // the buffer's own). RDMX_OK, or a status the transfer fails with.
    virtual rdmx_status_t expose(int peer, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) = 0;
    // Whether expose() for `peer` can run now (rc: a window bind needs send
    // slots); false: the engine retries after progress.
    virtual bool can_expose(int peer) = 0;
    // Revokes an exposure. true: done (m emptied); false: on_unexposed(id)
    // follows, and the engine keeps `m` until then.
    virtual bool unexpose(int peer, XferMem *m, uint64_t id) = 0;
    // Prepares [buf, buf+len) as the local side of get (write=true) or put.
    virtual rdmx_status_t prepare_local(void *buf, size_t len, bool write, XferMem *m) = 0;
    // Releases whatever `m` holds, without telling the peer (a failed or
    // finished transfer).
    virtual void release_mem(int peer, XferMem *m) = 0;
    // Get/put operations that may be posted to `peer` now beyond those in
    // flight (`in_flight` counted by the engine).
    virtual uint32_t rma_room(int peer, bool read, uint32_t in_flight) = 0;
    // Largest single get/put.
    virtual size_t rma_chunk() const = 0;
    // Rendezvous by put (the sender writes) rather than get on this lane:
    // where the transport recovers writes better than reads (Soft-RoCE).
    virtual bool prefer_put() const { return false; }
    // Copies `len` bytes between local memory (prepared in `m`) and the
    // peer's [raddr, raddr+len) exposed under `key`. Completion: on_rma_done
    // (peer, id, len, ok) from progress. false: the post failed and the peer
    // is lost.
    virtual bool get(int peer, void *dst, const XferMem &m, uint64_t raddr, uint32_t key, size_t len,
                     uint64_t id) = 0;
    virtual bool put(int peer, const void *src, const XferMem &m, uint64_t raddr, uint32_t key, size_t len,
                     uint64_t id) = 0;

    // ---- progress ------------------------------------------------------------
    // Polls for completions and arrivals and makes the upcalls; returns how
    // many events it handled. `housekeeping`: also the slow checks (CM and
    // async events, keepalives, watchdogs, dead local processes), run about
    // once a millisecond and before sleeping.
    virtual int progress(bool housekeeping) = 0;
    // Sleeping: arm() asks for a wake-up on the next arrival or completion
    // (or room coming back, where a full queue holds a send) and returns
    // false when one is already there (do not sleep); fds() writes at most
    // `max` descriptors to poll (data: the completion/arrival ones too, else
    // only connection events); the caller polls them after releasing the
    // engine lock. after_sleep() consumes wake-ups; it alone may run without
    // the engine lock, so it touches nothing but the transport's own wake-up
    // descriptors and flags.
    virtual bool arm() = 0;
    virtual int fds(pollfd *out, int max, bool data) = 0;
    virtual void after_sleep() = 0;

    // ---- shutdown --------------------------------------------------------------
    // Nothing posted to any peer is still unacknowledged (finalize's drain);
    // flush() asks for the acknowledgements that would prove it.
    virtual bool quiet() = 0;
    virtual void flush() = 0;
    virtual void disconnect_all(double timeout) = 0;

protected:
    bool idle_ = false;
    bool on_demand_ = false;  // connects peers on first use (see reach)
};

}  // namespace rdmx
