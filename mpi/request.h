// Requests of the MPI layer: an MPI_Request handle names a Request, which
// wraps what completes it (an rdmx request, a generalized request, a
// persistent operation's current instance) and what must happen on
// completion (unpack a non-contiguous receive, free temporaries, fill the
// status).
//
// Requests live in a table of fixed slots reached by index (handle
// 0xac000000|index, MPICH's kind bits), chained on a free list: posting an
// Isend or Irecv takes a slot and allocates nothing once the table is warm.
// A completion is harvested (the rdmx request finished, its result turned
// into an MPI_Status and an MPI error class kept in the slot) and later
// reported (copied to the caller's status; the slot freed, or a persistent
// request made inactive). The two steps are apart because MPI_Testall and
// MPI_Request_get_status must see a completion without reporting it.
#pragma once

#include <rdmx/rdmx.h>

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>

#include "abi.h"
#include "datatype.h"

namespace rdmx::mpi {

// Completion hook: runs once, after the rdmx request completed and before
// the MPI request reports completion. It may rewrite the status (count in
// bytes of the MPI type, error) and returns an MPI error code (MPI_SUCCESS).
using OnComplete = std::function<int(const rdmx_msg_info_t &info, MPI_Status *status)>;

// An MPI request completed by the rdmx request r (a nonblocking collective,
// a send or a receive); comm names the communicator whose error handler
// applies. Ownership of r passes to the MPI request. r may be NULL (done
// at post): the hook then runs with an empty info at the first test/wait.
MPI_Request request_from_rdmx(rdmx_request_h r, MPI_Comm comm, OnComplete on_complete);

// The largest tag a point-to-point call accepts (the MPI_TAG_UB attribute):
// rdmx's user tags are 0..INT32_MAX and the layer keeps none of them for itself.
constexpr int kTagUb = INT32_MAX;
inline int tag_ub() { return kTagUb; }

// ---- what the files of point-to-point share (request.cc, pt2pt.cc, ...) ----

enum class ReqKind : uint8_t { kFree, kSend, kRecv, kHook, kGreq, kMessage };
// How a send is made: MPI's four modes (ready and buffered reduce to standard
// and a copy, see pt2pt.cc).
enum class SendMode : uint8_t { kStandard, kSync, kReady, kBuffered };

struct Greq {
    MPI_Grequest_query_function *query = nullptr;
    MPI_Grequest_free_function *free = nullptr;
    MPI_Grequest_cancel_function *cancel = nullptr;
    void *state = nullptr;
    bool completed = false;           // MPI_Grequest_complete was called
};

// What a persistent request posts at each MPI_Start.
struct PersistArgs {
    void *buf = nullptr;
    int count = 0;
    MPI_Datatype dt = 0;
    int peer = 0;
    int tag = 0;
    SendMode mode = SendMode::kStandard;
};

struct Request {
    rdmx_request_h rr = nullptr;      // the engine's request; NULL once harvested or done at post
    rdmx_message_h msg = nullptr;     // kMessage: the matched message
    MPI_Comm comm = 0;                // whose error handler applies
    ReqKind kind = ReqKind::kFree;
    bool persistent = false;
    bool active = false;              // persistent: started and not yet reported
    bool done = false;                // harvested: st and err hold the result
    bool cancel_asked = false;
    bool detached = false;            // MPI_Request_free on an active request: freed once complete
    MPI_Status st{};                  // the result, once done
    int err = MPI_SUCCESS;            // the MPI error class of the result
    rdmx_status_t rst = RDMX_OK;      // rdmx's status behind err (for the error message)
    size_t msg_len = 0;               // receive: the size the sender sent
    // A non-contiguous receive lands in tmp and is unpacked into the user's
    // buffer on completion; a non-contiguous send's packed copy is freed.
    void *tmp = nullptr;
    size_t cap = 0;                   // receive capacity in bytes
    void *ubuf = nullptr;
    int count = 0;
    MPI_Datatype dt = 0;
    TypeRef dt_hold;                  // a non-contiguous receive's type, alive until the slot is freed
    size_t bsend_quota = 0;           // a buffered send's share of the attached buffer
    OnComplete hook;                  // kHook
    Greq greq;                        // kGreq
    PersistArgs args;                 // persistent
    uint32_t next_free = 0;
};

constexpr uint32_t kReqHandleBase = 0xac000000u;
constexpr uint32_t kMsgHandleBase = 0xac400000u;   // messages share the table
constexpr uint32_t kHandleIndexMask = 0x003fffffu;

// The table's lock, held for a free-list pop or push. Taken only at
// MPI_THREAD_MULTIPLE (enabled by MPI_Init_thread before a second thread
// may call): below it the application never calls concurrently, and the
// pop costs no atomic at all. At MULTIPLE it is glibc's adaptive mutex,
// which spins briefly and then sleeps on a futex: a spin-only lock would
// have its waiters burn whole time slices whenever the holder is preempted
// inside the pop (more threads than cores), the hazard the engine lock's
// header (core/spinlock.h) describes.
class TableLock {
public:
    void enable() { on_ = true; }
    void lock() {
        if (on_) pthread_mutex_lock(&mu_);
    }
    void unlock() {
        if (on_) pthread_mutex_unlock(&mu_);
    }

private:
    pthread_mutex_t mu_ = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
    bool on_ = false;
};

// The table (request.cc): chunks of slots, never freed, so a stale handle
// always reads a slot (marked free); a free list threaded through them.
struct ReqTable {
    static constexpr uint32_t kChunkSlots = 1024;
    static constexpr uint32_t kMaxChunks = (kHandleIndexMask + 1) / kChunkSlots;
    static constexpr uint32_t kNoSlot = UINT32_MAX;
    std::atomic<Request *> chunks[kMaxChunks];
    TableLock lock;
    uint32_t slots = 0;                    // slots created so far (under lock)
    uint32_t free = kNoSlot;               // free list head (under lock)
    std::atomic<size_t> detached{0};       // requests waiting in req_detach's list
};
extern ReqTable g_reqs;

inline Request *slot_at(uint32_t idx) {
    Request *chunk = g_reqs.chunks[idx / ReqTable::kChunkSlots].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[idx % ReqTable::kChunkSlots];
}

inline void req_reset(Request *r, ReqKind kind, MPI_Comm comm) {
    r->rr = nullptr;
    r->msg = nullptr;
    r->comm = comm;
    r->kind = kind;
    r->persistent = r->active = r->done = r->cancel_asked = r->detached = false;
    r->err = MPI_SUCCESS;
    r->rst = RDMX_OK;
    r->msg_len = 0;
    r->tmp = nullptr;
    r->cap = 0;
    r->bsend_quota = 0;
}

// The slow side of req_alloc: reaps detached requests, grows the table.
Request *req_alloc_slow(ReqKind kind, MPI_Comm comm, MPI_Request *handle);

// A free slot of the given kind on comm; nullptr when the table is full
// (about 4 million live requests). *handle gets its request handle.
inline Request *req_alloc(ReqKind kind, MPI_Comm comm, MPI_Request *handle) {
    if (g_reqs.detached.load(std::memory_order_relaxed) != 0) return req_alloc_slow(kind, comm, handle);
    uint32_t idx;
    {
        g_reqs.lock.lock();
        idx = g_reqs.free;
        if (idx == ReqTable::kNoSlot) {
            g_reqs.lock.unlock();
            return req_alloc_slow(kind, comm, handle);
        }
        g_reqs.free = slot_at(idx)->next_free;
        g_reqs.lock.unlock();
    }
    Request *r = slot_at(idx);
    req_reset(r, kind, comm);
    *handle = static_cast<MPI_Request>(kReqHandleBase | idx);
    return r;
}

void req_release(MPI_Request handle);

inline Request *req_lookup(uint32_t handle, uint32_t base, bool message) {
    if ((handle & ~kHandleIndexMask) != base) return nullptr;
    Request *r = slot_at(handle & kHandleIndexMask);
    if (r == nullptr || r->kind == ReqKind::kFree || (r->kind == ReqKind::kMessage) != message) return nullptr;
    return r;
}
// The Request a handle names, or nullptr (null, free, or never a request).
inline Request *req_get(MPI_Request handle) { return req_lookup(static_cast<uint32_t>(handle), kReqHandleBase, false); }
inline Request *msg_get(MPI_Message handle) { return req_lookup(static_cast<uint32_t>(handle), kMsgHandleBase, true); }
inline MPI_Message msg_handle_of(MPI_Request h) {
    return static_cast<MPI_Message>((static_cast<uint32_t>(h) & kHandleIndexMask) | kMsgHandleBase);
}
inline MPI_Request req_handle_of_msg(MPI_Message m) {
    return static_cast<MPI_Request>((static_cast<uint32_t>(m) & kHandleIndexMask) | kReqHandleBase);
}

// Keep a request that nobody will wait for (MPI_Request_free on an active
// request, a buffered send) and free it once it completes.
void req_detach(MPI_Request handle);
// Tests every detached request once; true when none is left.
bool req_reap();

// Turn a finished rdmx request (status st, info) into r->st / r->err.
void req_harvest(Request *r, rdmx_status_t st, const rdmx_msg_info_t &info);
// Harvests r if its operation has finished (block: waits until it has);
// true once r->done.
bool req_poll(Request *r, bool block);
// A harvested request at its end: a generalized request's free function
// runs, the slot is freed (a persistent request becomes inactive instead)
// and *handle becomes MPI_REQUEST_NULL. Returns the error to report.
int req_finish(Request *r, MPI_Request *handle);
// Copies a harvested result to the caller's status (may be
// MPI_STATUS_IGNORE); MPI_ERROR only when the operation failed.
void req_copy_status(const Request *r, MPI_Status *status);
// What an error message needs of a request, kept before req_finish frees it.
struct Outcome {
    MPI_Comm comm;
    ReqKind kind;
    rdmx_status_t rst;
    size_t msg_len;
    size_t cap;
};
inline Outcome outcome_of(const Request *r) { return Outcome{r->comm, r->kind, r->rst, r->msg_len, r->cap}; }
// Raises err on the request's communicator with a message saying what failed.
int req_raise(const Outcome &o, int err, const char *call);
// Raises MPI_ERR_REQUEST for a handle that names no request.
int req_bad(const char *call, MPI_Request h);

// rdmx's wildcards and null peer are MPI's with the values swapped.
inline int to_rdmx_peer(int p) {
    return p == MPI_ANY_SOURCE ? RDMX_ANY_SOURCE : p == MPI_PROC_NULL ? RDMX_PROC_NULL : p;
}
inline int from_rdmx_peer(int p) {
    return p == RDMX_ANY_SOURCE ? MPI_ANY_SOURCE : p == RDMX_PROC_NULL ? MPI_PROC_NULL : p;
}

// MPICH's status encoding: the byte count split over count_lo and the
// upper bits of count_hi_and_cancelled, whose bit 0 is the cancelled flag.
inline void status_set_bytes(MPI_Status *s, MPI_Count bytes) {
    const auto u = static_cast<uint64_t>(bytes);
    s->count_lo = static_cast<int>(static_cast<uint32_t>(u));
    s->count_hi_and_cancelled =
        (s->count_hi_and_cancelled & 1) | static_cast<int>(static_cast<uint32_t>((u >> 32) << 1));
}
inline MPI_Count status_bytes(const MPI_Status *s) {
    const uint64_t hi = static_cast<uint32_t>(s->count_hi_and_cancelled) >> 1;
    return static_cast<MPI_Count>((hi << 32) | static_cast<uint32_t>(s->count_lo));
}
inline void status_set_cancelled(MPI_Status *s, bool c) {
    s->count_hi_and_cancelled = (s->count_hi_and_cancelled & ~1) | (c ? 1 : 0);
}
// MPI's empty status: any source, any tag, no data, not cancelled, success.
inline void status_empty(MPI_Status *s) {
    s->MPI_SOURCE = MPI_ANY_SOURCE;
    s->MPI_TAG = MPI_ANY_TAG;
    s->MPI_ERROR = MPI_SUCCESS;
    s->count_lo = 0;
    s->count_hi_and_cancelled = 0;
}
// A send rdmx completed as it was posted: done, nothing to harvest.
inline void req_done_at_post(Request *r) {
    std::free(r->tmp);
    r->tmp = nullptr;
    r->done = true;
    r->err = MPI_SUCCESS;
    status_empty(&r->st);
}

// A receive's (or probe's) status from rdmx's info; `bytes` is what landed.
inline void status_from_info(MPI_Status *s, const rdmx_msg_info_t &info, size_t bytes) {
    s->MPI_SOURCE = from_rdmx_peer(info.source);
    s->MPI_TAG = info.tag;
    s->count_hi_and_cancelled = 0;
    status_set_bytes(s, static_cast<MPI_Count>(bytes));
}

// ---- the data of one call -------------------------------------------------

// MPICH's predefined datatypes: kind 0x4c, the size in bytes in bits 8-15,
// contiguous with lower bound 0: no lookup needed.
constexpr uint32_t kTypeKindMask = 0xff000000u;
constexpr uint32_t kBuiltinTypeKind = 0x4c000000u;
constexpr int kBuiltinSizeShift = 8;
constexpr uint32_t kBuiltinSizeMask = 0xffu;

inline bool builtin_size(MPI_Datatype dt, size_t *size) {
    const auto u = static_cast<uint32_t>(dt);
    if ((u & kTypeKindMask) != kBuiltinTypeKind) return false;
    *size = (u >> kBuiltinSizeShift) & kBuiltinSizeMask;
    return true;
}

// What every point-to-point entry point tries first: count elements of a
// predefined type at a buffer (or no data at all). *bytes is their size.
// Anything else (derived types, bad arguments) takes the general path.
inline bool fast_data(const void *buf, int count, MPI_Datatype dt, size_t *bytes) {
    size_t size = 0;
    if (!builtin_size(dt, &size) || count < 0) return false;
    *bytes = static_cast<size_t>(count) * size;
    return buf != nullptr || *bytes == 0;
}

// The same test split in two for MPI_Send and MPI_Recv, whose every other
// check comes between: fast_args decides, builtin_bytes (valid only after
// it said yes) computes the size as the last step before rdmx is called,
// so no register has to keep the datatype for the general path meanwhile.
// A NULL buffer with a positive count takes the general path even for the
// zero-size MPI_LB/MPI_UB, which it accepts.
inline bool fast_args(const void *buf, int count, MPI_Datatype dt) {
    return (static_cast<uint32_t>(dt) & kTypeKindMask) == kBuiltinTypeKind && count >= 0 &&
           (buf != nullptr || count == 0);
}
inline size_t builtin_bytes(int count, MPI_Datatype dt) {
    return static_cast<size_t>(count) * ((static_cast<uint32_t>(dt) >> kBuiltinSizeShift) & kBuiltinSizeMask);
}
// A rank of a communicator of `size` members (no PROC_NULL, no wildcard).
inline bool fast_rank(int rank, int size) { return static_cast<unsigned>(rank) < static_cast<unsigned>(size); }

// count elements of a datatype at buf, as rdmx sees them: `bytes` bytes at
// `base` (the user's buffer for contiguous types, else tmp, which the
// caller frees with std::free).
struct Data {
    void *base = nullptr;
    size_t bytes = 0;
    void *tmp = nullptr;
};

// Checks count and datatype and describes count elements at buf (a send
// packs them into tmp; a receive gets an unfilled tmp): an MPI error code,
// already raised on comm, or MPI_SUCCESS.
int data_for_send(MPI_Comm comm, const char *call, const void *buf, int count, MPI_Datatype dt, Data *out);
int data_for_recv(MPI_Comm comm, const char *call, void *buf, int count, MPI_Datatype dt, Data *out);
// A receive's tmp is unpacked into buf and freed.
void data_finish_recv(Data *d, void *buf, int count, MPI_Datatype dt, size_t received);

// ---- shared by the point-to-point files (pt2pt.cc) ---------------------------

struct Comm;
// The Comm of a handle; nullptr (with *err raised) for an invalid one.
Comm *comm_checked(MPI_Comm comm, const char *call, int *err);
// Rank and tag arguments: MPI_SUCCESS or the error raised on comm.
int check_peer(const Comm *c, MPI_Comm comm, const char *call, int peer, bool recv);
int check_tag(MPI_Comm comm, const char *call, int tag, bool recv);
// Posts r's receive (r->comm set by req_alloc): an error raised, or MPI_SUCCESS.
int post_recv(Request *r, Comm *c, void *buf, int count, MPI_Datatype dt, int source, int tag, const char *call);
// Posts a persistent send's instance on r.
int send_start(Request *r, Comm *c, const PersistArgs &a, const char *call);
// A buffered send's quota given back (its send completed).
void bsend_release(size_t bytes);

}  // namespace rdmx::mpi
