// The sm transport: segment, rings, liveness, sleeping (RMA in sm_rma.cc).
#include "transport/sm.h"
#include "transport/sm_poll.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "core/copy.h"
#include "core/log.h"

namespace rdmx {

using namespace rdmx::sm;

namespace {

constexpr uint32_t kDefaultMaxLocals = 64;
constexpr unsigned kMemfdSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

int sys_pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

// Opens another process's memfd through /proc (the same user may).
int open_proc_fd(uint32_t pid, int fd, int flags) {
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%u/fd/%d", pid, fd);
    return ::open(path, flags | O_CLOEXEC);
}


}  // namespace

rdmx_status_t SmTransport::open(const SmParams &p, TransportSink *sink, std::unique_ptr<SmTransport> *out) {
    if (sink == nullptr || out == nullptr || p.rank < 0 || p.size <= 0 || p.rank >= p.size || p.slots < kMinSlots ||
        p.slots > kMaxSlots || (p.slots & (p.slots - 1)) != 0 || p.eager_limit > (1u << 20)) {
        RDMX_ERROR("sm: open: bad parameters (rank %d of %d, %u slots per ring: need a power of two in %u..%u, eager "
                   "limit %zu)", p.rank,
                   p.size, p.slots, kMinSlots, kMaxSlots, p.eager_limit);
        return RDMX_ERR_INVALID_ARG;
    }
    if (p.max_locals > kMaxLocals) {
        RDMX_ERROR("sm: the launcher puts %u ranks on this node; shared memory serves at most %u", p.max_locals,
                   kMaxLocals);
        return RDMX_ERR_INVALID_ARG;
    }
    std::unique_ptr<SmTransport> t(new SmTransport(p, sink));
    if (t->p_.max_locals == 0)
        t->p_.max_locals = static_cast<uint32_t>(p.size) < kDefaultMaxLocals ? static_cast<uint32_t>(p.size)
                                                                               : kDefaultMaxLocals;
    if (rdmx_status_t st = t->create_segment(); st != RDMX_OK) return st;
    const sm::Layout &l = t->lay_;
    RDMX_INFO("sm: segment of %.1f MiB: %u rings (%s) of %u slots x %u B, %u staging chunks of %u KiB each",
              static_cast<double>(l.total) / (1 << 20), l.nrings,
              p.max_locals != 0 ? "the node's ranks, as the launcher counts them" : "launcher silent: min(job size, 64)",
              l.nslots, l.slot_size, kStageChunks, l.chunk >> 10);
    if (rdmx_status_t st = t->init_cma(); st != RDMX_OK) return st;
    *out = std::move(t);
    return RDMX_OK;
}

// memfd (nothing in /dev/shm, gone with its last reference), sealed against
// resizing so no peer can make our mappings fault, first touched here so its
// pages sit on our NUMA node.
rdmx_status_t SmTransport::create_segment() {
    if (!make_layout(p_.max_locals, p_.slots, slot_size_for(p_.eager_limit), p_.stage_chunk, &lay_)) {
        RDMX_ERROR("sm: segment layout refused (%u rings, %u slots, chunk %u)", p_.max_locals, p_.slots,
                   p_.stage_chunk);
        return RDMX_ERR_INVALID_ARG;
    }
    seg_fd_ = memfd_create("rdmx-sm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (seg_fd_ < 0 || ftruncate(seg_fd_, static_cast<off_t>(lay_.total)) != 0 ||
        fcntl(seg_fd_, F_ADD_SEALS, kMemfdSeals) != 0) {
        RDMX_ERROR("sm: segment of %llu bytes: %s (memfd_create/ftruncate/seal; hint: memory limits)",
                   static_cast<unsigned long long>(lay_.total), std::strerror(errno));
        return RDMX_ERR_NO_MEMORY;
    }
    void *m = mmap(nullptr, lay_.total, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd_, 0);
    if (m == MAP_FAILED) {
        RDMX_ERROR("sm: mmap of our segment (%llu bytes): %s", static_cast<unsigned long long>(lay_.total),
                   std::strerror(errno));
        return RDMX_ERR_NO_MEMORY;
    }
    seg_ = static_cast<char *>(m);
    std::memset(seg_, 0, lay_.total);  // first touch: the pages land on our node
    SegInfo info{};
    info.magic = kSegMagic;
    info.version = kSegVersion;
    info.info_size = sizeof(SegInfo);
    info.job_key = p_.job_key;
    info.owner_rank = static_cast<uint32_t>(p_.rank);
    info.owner_pid = static_cast<uint32_t>(getpid());
    info.nrings = lay_.nrings;
    info.nslots = lay_.nslots;
    info.slot_size = lay_.slot_size;
    info.chunk = lay_.chunk;
    info.total_size = lay_.total;
    std::memcpy(seg_, &info, sizeof(info));
    live_ = new (seg_ + sizeof(SegInfo)) SegLive{};
    closed_ = new (seg_ + sizeof(SegInfo) + sizeof(SegLive)) SegClosed{};
    event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (event_fd_ < 0) {
        RDMX_ERROR("sm: eventfd: %s", std::strerror(errno));
        return RDMX_ERR_NO_MEMORY;
    }
    addr_.pid = info.owner_pid;
    addr_.seg_fd = seg_fd_;
    addr_.event_fd = event_fd_;
    addr_.seg_size = lay_.total;
    addr_.nrings = lay_.nrings;
    addr_.job_key = p_.job_key;
    return RDMX_OK;
}

SmTransport::~SmTransport() { disconnect_all(0); }

rdmx_status_t SmTransport::connect(const std::vector<SmPeer> &locals) {
    if (locals.size() > lay_.nrings) {
        RDMX_ERROR("sm: %zu local ranks but the segment serves %u (SmParams::max_locals)", locals.size(), lay_.nrings);
        return RDMX_ERR_INVALID_ARG;
    }
    rank_to_peer_.assign(static_cast<size_t>(p_.size), -1);
    remote_.clear();
    peers_.clear();
    peers_.resize(locals.size());
    bool found_self = false;
    for (size_t i = 0; i < locals.size(); ++i) {
        if (locals[i].rank < 0 || locals[i].rank >= p_.size || rank_to_peer_[locals[i].rank] != -1 ||
            (i > 0 && locals[i].rank <= locals[i - 1].rank)) {
            RDMX_ERROR("sm: connect: local rank list must be sorted, distinct, in [0, %d) (entry %zu: %d)", p_.size, i,
                       locals[i].rank);
            return RDMX_ERR_INVALID_ARG;
        }
        rank_to_peer_[locals[i].rank] = static_cast<int>(i);
        Peer &pe = peers_[i];
        pe.rank = locals[i].rank;
        pe.idx = static_cast<uint32_t>(i);
        pe.addr = locals[i].addr;
        std::snprintf(pe.name, sizeof(pe.name), "pid %u", pe.addr.pid);
        if (pe.rank == p_.rank) {
            my_idx_ = pe.idx;
            found_self = true;
        }
    }
    if (!found_self) {
        RDMX_ERROR("sm: connect: our rank %d is not in the local rank list", p_.rank);
        return RDMX_ERR_INVALID_ARG;
    }
    rdmx_status_t st = RDMX_OK;
    for (Peer &pe : peers_) {
        if (pe.rank == p_.rank) continue;
        remote_.push_back(&pe);
        if (rdmx_status_t s = map_peer(pe); s != RDMX_OK && st == RDMX_OK) st = s;
    }
    return st;
}

// Maps one peer's segment and opens its eventfd and a pidfd. Its header is
// untrusted: checked against the layout we would compute for it.
rdmx_status_t SmTransport::map_peer(Peer &pe) {
    const SmAddress &a = pe.addr;
    int fd = open_proc_fd(a.pid, a.seg_fd, O_RDWR);
    if (fd < 0) {
        RDMX_ERROR("sm: rank %d (%s): cannot open its segment /proc/%u/fd/%d: %s (hint: same user? a container "
                   "hiding /proc?)", pe.rank, pe.name, a.pid, a.seg_fd, std::strerror(errno));
        return RDMX_ERR_CONNECT;
    }
    struct stat sb {};
    const int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &sb) != 0 || static_cast<uint64_t>(sb.st_size) != a.seg_size || seals < 0 ||
        (static_cast<unsigned>(seals) & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
        RDMX_ERROR("sm: rank %d (%s): segment is %lld bytes, address says %llu, seals 0x%x (must be sealed against "
                   "resizing)", pe.rank, pe.name, static_cast<long long>(sb.st_size),
                   static_cast<unsigned long long>(a.seg_size), seals);
        ::close(fd);
        return RDMX_ERR_PROTOCOL;
    }
    void *m = mmap(nullptr, a.seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) {
        RDMX_ERROR("sm: rank %d (%s): mmap of %llu bytes: %s", pe.rank, pe.name,
                   static_cast<unsigned long long>(a.seg_size), std::strerror(errno));
        return RDMX_ERR_NO_MEMORY;
    }
    pe.seg = static_cast<char *>(m);
    const ShmError e = decode_seg_info(pe.seg, a.seg_size, p_.job_key, static_cast<uint32_t>(pe.rank),
                                       lay_.slot_size, static_cast<uint32_t>(peers_.size()), a.seg_size, &pe.info,
                                       &pe.lay);
    if (e != ShmError::kOk) {
        RDMX_ERROR("sm: rank %d (%s): its segment header is invalid (%s)", pe.rank, pe.name, shm_error_name(e));
        munmap(pe.seg, a.seg_size);
        pe.seg = nullptr;
        return RDMX_ERR_PROTOCOL;
    }
    pe.pidfd = sys_pidfd_open(static_cast<pid_t>(a.pid));
    if (pe.pidfd < 0) {
        RDMX_ERROR("sm: rank %d (%s): pidfd_open: %s", pe.rank, pe.name, std::strerror(errno));
        return RDMX_ERR_CONNECT;
    }
    // An eventfd cannot be reopened through /proc (ENXIO): duplicate it.
    pe.event_fd = static_cast<int>(syscall(SYS_pidfd_getfd, pe.pidfd, a.event_fd, 0));
    if (pe.event_fd < 0) {
        RDMX_ERROR("sm: rank %d (%s): pidfd_getfd of its eventfd %d: %s (hint: ptrace restrictions, Yama "
                   "ptrace_scope 3?)", pe.rank, pe.name, a.event_fd, std::strerror(errno));
        return RDMX_ERR_CONNECT;
    }
    char *ring = pe.seg + pe.lay.ring_off + pe.lay.ring_stride * my_idx_;
    pe.out_ring = reinterpret_cast<RingCtl *>(ring);
    pe.out_slots = ring + sizeof(RingCtl);
    char *in = seg_ + lay_.ring_off + lay_.ring_stride * pe.idx;
    pe.in_ring = reinterpret_cast<RingCtl *>(in);
    pe.in_slots = in + sizeof(RingCtl);
    pe.held.assign(lay_.nslots, 0);
    pe.ops.reserve(p_.rma_depth * 2);
    pe.state = PeerState::kUp;
    return RDMX_OK;
}

SmTransport::Peer *SmTransport::peer_of(int rank) {
    if (static_cast<size_t>(rank) >= rank_to_peer_.size()) return nullptr;  // negative ones too
    const int i = rank_to_peer_[static_cast<size_t>(rank)];
    if (i < 0 || static_cast<uint32_t>(i) == my_idx_) return nullptr;  // not on this node, or ourselves
    return &peers_[static_cast<size_t>(i)];
}
const SmTransport::Peer *SmTransport::peer_of(int rank) const {
    return const_cast<SmTransport *>(this)->peer_of(rank);
}

bool SmTransport::usable(int peer) const {
    const Peer *pe = peer_of(peer);
    return pe != nullptr && pe->state == PeerState::kUp;
}

const char *SmTransport::peer_addr(int peer) const {
    const Peer *pe = peer_of(peer);
    return pe != nullptr ? pe->name : "?";
}

// The connection is gone: stop reading, tell the peer through our header,
// and report (ops with ok=false first, then on_peer_failed) from progress.
void SmTransport::fail(Peer &pe, rdmx_status_t why, const char *fmt, ...) {
    if (pe.state != PeerState::kUp) return;
    char buf[200];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    pe.state = PeerState::kFailing;
    pe.why = why;
    pe.reason = buf;
    publish_closed(pe);
    failures_pending_ = true;
}

void SmTransport::violation(Peer &pe, const char *fmt, ...) {
    if (pe.state != PeerState::kUp) return;
    char buf[160];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    RDMX_ERROR("sm: rank %d (%s) broke the shared-memory protocol: %s; its connection is closed (hint: a bug or "
               "memory corruption in that process)", pe.rank, pe.name, buf);
    fail(pe, RDMX_ERR_PROTOCOL, "%s", buf);
}

void SmTransport::publish_closed(Peer &pe) {
    closed_->closed[pe.idx].store(1, std::memory_order_release);
    pe.served.active = false;
}

void SmTransport::close_peer(int peer, rdmx_status_t why) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || pe->state == PeerState::kNone || pe->state == PeerState::kDown) return;
    (void)why;
    if (pe->state == PeerState::kUp) publish_closed(*pe);
    fail_ops(*pe);
    pe->state = PeerState::kDown;  // no on_peer_failed: the engine closed it
}

void SmTransport::report_failures() {
    failures_pending_ = false;
    for (Peer &pe : peers_) {
        if (pe.state != PeerState::kFailing) continue;
        fail_ops(pe);
        report_done();
        pe.state = PeerState::kDown;
        sink_->on_peer_failed(pe.rank, pe.why, pe.reason.c_str());
    }
}

// ---- messages ----------------------------------------------------------------

// Free slots in our ring in the peer's segment; the tail is the peer's to
// write, so it is checked like wire bytes.
bool SmTransport::ring_room(Peer &pe, uint32_t need) {
    // The tail is re-read only when the last value read leaves too little
    // room: one shared-line read per ring-full of messages, not per message.
    if (pe.lay.nslots - (pe.out_head - pe.out_tail) >= need) return true;
    const uint64_t tail = pe.out_ring->tail.load(std::memory_order_acquire);
    if (tail > pe.out_head || tail < pe.out_tail || pe.out_head - tail > pe.lay.nslots) {
        violation(pe, "ring tail %llu outside [%llu, head %llu]", static_cast<unsigned long long>(tail),
                  static_cast<unsigned long long>(pe.out_tail), static_cast<unsigned long long>(pe.out_head));
        return false;
    }
    pe.out_tail = tail;
    // Remember a refusal: arm() must not sleep through the room coming back.
    pe.out_blocked = pe.lay.nslots - (pe.out_head - tail) < need;
    return !pe.out_blocked;
}

bool SmTransport::can_send(int peer, size_t body_len, bool ctrl, unsigned extra) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || pe->state != PeerState::kUp || body_len > p_.eager_limit) return false;
    // One slot per pair stays for control messages: data never starves them.
    return ring_room(*pe, 1 + extra + (ctrl ? 0 : 1));
}

bool SmTransport::post_slot(Peer &pe, SlotKind kind, const void *a, size_t alen, const void *b, size_t blen) {
    char *slot = next_slot(pe);
    const SlotHdr sh{static_cast<uint32_t>(alen + blen), static_cast<uint32_t>(kind), 0};
    std::memcpy(slot, &sh, sizeof(sh));
    std::memcpy(slot + sizeof(sh), a, alen);
    copy_bytes(slot + sizeof(sh) + alen, b, blen);
    publish_slot(pe);
    return true;
}

// A full barrier between a store and the load after it (the sleeper/waker
// handshake: each side stores, then loads what the other stored). TSan does
// not model atomic_thread_fence (GCC's -Wtsan); under it a seq_cst
// read-modify-write, a full barrier on x86, stands in. Across processes
// TSan sees nothing anyway; within one the engine lock orders these.
static inline void store_load_fence() {
#if defined(__SANITIZE_THREAD__)
    static std::atomic<int> barrier{0};
    barrier.fetch_add(0, std::memory_order_seq_cst);
#else
    std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Only a sleeping receiver costs a syscall. Pairs with arm(): each side
// stores then loads with seq_cst fences in between.
void SmTransport::wake(Peer &pe) {
    store_load_fence();
    auto *live = reinterpret_cast<SegLive *>(pe.seg + sizeof(SegInfo));
    if (live->sleeping.load(std::memory_order_relaxed) != 0) {
        const uint64_t one = 1;
        if (::write(pe.event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            RDMX_DEBUG("sm: wake rank %d: %s", pe.rank, std::strerror(errno));
    }
}

bool SmTransport::send(int peer, const MsgOut &m, bool ctrl) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || pe->state != PeerState::kUp) return false;
    return send_msg(*pe, m, ctrl) == Post::kSent;
}

Transport::Post SmTransport::try_send(int peer, const MsgOut &m) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || pe->state != PeerState::kUp) return Post::kNoRoom;  // the engine's peer state says why
    return send_msg(*pe, m, false);
}

// One slot for control messages stays free of data (see can_send).
Transport::Post SmTransport::send_msg(Peer &pe, const MsgOut &m, bool ctrl) {
    auto *closed = reinterpret_cast<SegClosed *>(pe.seg + sizeof(SegInfo) + sizeof(SegLive));
    if (closed->closed[my_idx_].load(std::memory_order_acquire) != 0) {
        fail(pe, RDMX_ERR_PEER_LOST, "peer closed its connection to us");
        return Post::kFailed;
    }
    if (m.body_len > p_.eager_limit || !ring_room(pe, ctrl ? 1 : 2)) return Post::kNoRoom;
    // Both headers are written field by field straight into the slot (raw
    // shared memory, line-aligned): built on the stack and copied, GCC made
    // them a `rep stos` and a `rep movs`, slow to start for 40 bytes.
    char *slot = next_slot(pe);
    auto *sh = reinterpret_cast<SlotHdr *>(slot);
    sh->len = static_cast<uint32_t>(sizeof(wire::MsgHdr) + m.body_len);
    sh->kind = static_cast<uint32_t>(SlotKind::kMsg);
    sh->reserved = 0;
    auto *h = reinterpret_cast<wire::MsgHdr *>(slot + sizeof(SlotHdr));
    h->version = static_cast<uint8_t>(wire::kVersion);
    h->type = static_cast<uint8_t>(m.type);
    h->space = m.space;
    h->flags = 0;
    h->tag = m.tag;
    h->credits = 0;
    h->seq = pe.send_seq++;
    h->length = m.length;
    h->cookie = m.cookie;
    h->comm = m.comm;
    h->reserved = 0;
    copy_bytes(slot + sizeof(SlotHdr) + sizeof(wire::MsgHdr), m.body, m.body_len);
    publish_slot(pe);
    return Post::kSent;
}

// Marks a slot free and advances the tail over the freed prefix; the tail
// is published (and a sleeping sender woken) by publish_tail, once per
// progress pass for slots given back during delivery.
void SmTransport::give_back(Peer &pe, uint64_t slot, bool publish) {
    pe.held[slot & lay_.slot_mask] = 0;
    if (slot == pe.in_tail && slot + 1 == pe.in_next) pe.in_tail = pe.in_next;  // in order, none held: the usual case
    else
        while (pe.in_tail < pe.in_next && pe.held[pe.in_tail & lay_.slot_mask] == 0) ++pe.in_tail;
    if (publish) publish_tail(pe);
}

void SmTransport::publish_tail(Peer &pe) {
    if (pe.in_tail == pe.in_published) return;
    const uint64_t old_tail = pe.in_published;
    pe.in_published = pe.in_tail;
    pe.in_ring->tail.store(pe.in_tail, std::memory_order_release);
    // A sender that found the ring full (for data: all but the control slot)
    // may be asleep waiting for room: wake it like an arrival would. The
    // head is read now, after the store, not taken from the last poll: the
    // sender may have filled the ring since (a slot released long after its
    // delivery, or a pass preempted between its poll and here), and a sleep
    // judged by the stale head was never woken. The value only decides
    // whether to look for a sleeper, so a bad one costs a wake-up at most.
    // No fence before the load (it would cost every delivery one): the
    // window left is a sender that publishes, finds the ring full, arms and
    // reads the old tail while our tail store is still in the store buffer;
    // that sleep ends at its poll's timeout (1 ms for a waiting caller).
    const uint64_t head = pe.in_ring->head.load(std::memory_order_acquire);
    if (head - old_tail + 1 >= lay_.nslots && pe.state == PeerState::kUp) wake(pe);
}

void SmTransport::release(int peer, uint64_t token) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || (token >> kSmTokenSlotBits) != pe->idx) return;
    // Tokens carry the slot count modulo 2^48: rebuild it within [tail, next).
    const uint64_t low = token & kSmTokenSlotMask;
    const uint64_t slot = (pe->in_next & ~kSmTokenSlotMask) | low;
    if (slot < pe->in_tail || slot >= pe->in_next || pe->held[slot & lay_.slot_mask] == 0) {
        RDMX_WARN("sm: release of slot %llu from rank %d that is not held (ignored)",
                  static_cast<unsigned long long>(slot), peer);
        return;
    }
    give_back(*pe, slot, true);
}

// ---- progress, liveness --------------------------------------------------------

// A peer that exited or closed its side (it finalized) sent what is in its
// ring before that: delivered first, as rc delivers completions queued
// before a disconnect. (The engine logs the loss; once is enough.)
void SmTransport::housekeep(Peer &pe, double now) {
    pollfd pf{pe.pidfd, POLLIN, 0};
    auto *closed = reinterpret_cast<SegClosed *>(pe.seg + sizeof(SegInfo) + sizeof(SegLive));
    const bool exited = ::poll(&pf, 1, 0) > 0;
    if (exited || closed->closed[my_idx_].load(std::memory_order_acquire) != 0) {
        while (pe.state == PeerState::kUp && poll_ring(pe, *sink_) > 0) {
        }
        if (pe.state == PeerState::kUp)
            fail(pe, RDMX_ERR_PEER_LOST, exited ? "process exited" : "peer closed its connection to us");
        return;
    }
    if (std::memcmp(pe.seg, &pe.info, sizeof(SegInfo)) != 0) {
        violation(pe, "its segment header changed after connect");
        return;
    }
    if (!pe.ops.empty() && pe.ops.front().sent && now - pe.op_progress_at > p_.peer_timeout) {
        RDMX_ERROR("sm: rank %d (%s): pipelined copy made no progress for %.1f s (RDMX_PEER_TIMEOUT)", pe.rank,
                   pe.name, p_.peer_timeout);
        fail(pe, RDMX_ERR_PEER_LOST, "pipelined copy timed out");
    }
}

int SmTransport::progress(bool housekeeping) { return progress_with(*sink_, housekeeping); }

bool SmTransport::pending_work() {
    if (!done_.empty() || failures_pending_) return true;
    for (Peer &pe : peers_) {
        if (pe.state != PeerState::kUp) continue;
        if (pe.in_ring->head.load(std::memory_order_acquire) != pe.in_next) return true;
        if (pe.out_blocked && ring_room(pe, 2)) return true;  // the receiver gave slots back
        if (!pe.ops.empty() || pe.served.active) return true;  // copies poll their chunks
    }
    return false;
}

bool SmTransport::arm() {
    live_->sleeping.store(1, std::memory_order_relaxed);
    store_load_fence();
    if (pending_work()) {
        live_->sleeping.store(0, std::memory_order_relaxed);
        return false;
    }
    return true;
}

int SmTransport::fds(pollfd *out, int max, bool data) {
    int n = 0;
    if (data && n < max) out[n++] = pollfd{event_fd_, POLLIN, 0};
    for (const Peer &pe : peers_)
        if (pe.state == PeerState::kUp && pe.pidfd >= 0 && n < max) out[n++] = pollfd{pe.pidfd, POLLIN, 0};
    return n;
}

void SmTransport::after_sleep() {
    live_->sleeping.store(0, std::memory_order_relaxed);
    uint64_t v;
    while (::read(event_fd_, &v, sizeof(v)) == sizeof(v)) {
    }
}

bool SmTransport::quiet() {
    for (const Peer &pe : peers_)
        if (pe.state == PeerState::kUp && (!pe.ops.empty() || pe.in_flight != 0)) return false;
    return done_.empty();
}

void SmTransport::disconnect_all(double) {
    for (Peer &pe : peers_) {
        if (pe.state == PeerState::kUp) publish_closed(pe);
        if (pe.seg != nullptr) munmap(pe.seg, pe.addr.seg_size);
        if (pe.event_fd >= 0) ::close(pe.event_fd);
        if (pe.pidfd >= 0) ::close(pe.pidfd);
        pe.seg = nullptr;
        pe.event_fd = pe.pidfd = -1;
        pe.state = PeerState::kDown;
    }
    if (seg_ != nullptr) munmap(seg_, lay_.total);
    if (seg_fd_ >= 0) ::close(seg_fd_);
    if (event_fd_ >= 0) ::close(event_fd_);
    seg_ = nullptr;
    seg_fd_ = event_fd_ = -1;
}

}  // namespace rdmx
