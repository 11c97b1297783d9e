// The sm transport's zero-copy side: the exposure table, CMA single copy
// (process_vm_readv/writev) and the copy pipeline through the exposer's
// segment, used when CMA is denied or slower (docs/design/sm.md).
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "core/log.h"
#include "transport/sm.h"

namespace rdmx {

using namespace rdmx::sm;

namespace {

constexpr uint32_t kKeyIndexBits = 16;
constexpr uint32_t kMaxExposures = 1u << kKeyIndexBits;
std::atomic<bool> g_cma_notice{false};  // the fallback notice, once per process

double now_s() { return static_cast<double>(now_ns()) * 1e-9; }

int yama_scope() {
    FILE *f = std::fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    if (f == nullptr) return 0;
    int v = 0;
    if (std::fscanf(f, "%d", &v) != 1) v = 0;
    std::fclose(f);
    return v;
}

}  // namespace

void SmTransport::cma_denied(const char *why) {
    std::snprintf(cma_off_buf_, sizeof(cma_off_buf_), "%s", why);
    cma_off_ = cma_off_buf_;
    if (!g_cma_notice.exchange(true))
        RDMX_WARN("sm: cross-memory attach unavailable (%s): large transfers use the copy pipeline", why);
}

// Yama scope 1 lets only declared tracers use CMA on us: declare everyone
// (peers are the same user's processes of this job). Scopes 2/3, seccomp
// and containers are found by reading and by a probe on ourselves.
rdmx_status_t SmTransport::init_cma() {
    if (p_.cma == SmCma::kOff) {
        cma_denied("RDMX_SM_CMA=off");
        return RDMX_OK;
    }
    (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    char probe_src[8] = "probe", probe_dst[8] = {};
    iovec l{probe_dst, sizeof(probe_dst)}, r{probe_src, sizeof(probe_src)};
    const int scope = yama_scope();
    char why[96] = "";
    if (scope >= 2) {
        std::snprintf(why, sizeof(why), "Yama ptrace_scope=%d", scope);
    } else if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) != static_cast<ssize_t>(sizeof(probe_src))) {
        std::snprintf(why, sizeof(why), "process_vm_readv: %s%s", std::strerror(errno),
                      errno == EPERM ? ", seccomp or a container policy" : "");
    }
    if (why[0] == '\0') {
        if (p_.cma == SmCma::kOn) p_.cma_thresh = 0;
        return RDMX_OK;
    }
    if (p_.cma == SmCma::kOn) {
        RDMX_ERROR("sm: RDMX_SM_CMA=on but cross-memory attach is denied (%s); hint: RDMX_SM_CMA=auto falls back to "
                   "the copy pipeline", why);
        return RDMX_ERR_UNSUPPORTED;
    }
    cma_denied(why);
    return RDMX_OK;
}

// ---- exposure table -------------------------------------------------------------

rdmx_status_t SmTransport::expose(int peer, void *buf, size_t len, Access a, XferMem *m, uint32_t *key) {
    if (peer_of(peer) == nullptr || m == nullptr || key == nullptr) return RDMX_ERR_INVALID_ARG;
    uint32_t idx;
    if (!free_exp_.empty()) {
        idx = free_exp_.back();
        free_exp_.pop_back();
    } else if (exposures_.size() < kMaxExposures) {
        idx = static_cast<uint32_t>(exposures_.size());
        exposures_.emplace_back();
    } else {
        RDMX_ERROR("sm: exposure table full (%u entries)", kMaxExposures);
        return RDMX_ERR_NO_MEMORY;
    }
    Exposure &e = exposures_[idx];
    e.buf = buf;
    e.len = len;
    e.peer = peer;
    e.access = a;
    e.used = true;
    m->window = static_cast<int32_t>(idx);
    *key = (uint32_t{e.gen} << kKeyIndexBits) | idx;
    return RDMX_OK;
}

void SmTransport::release_mem(int, XferMem *m) {
    if (m == nullptr || m->window < 0 || static_cast<size_t>(m->window) >= exposures_.size()) return;
    Exposure &e = exposures_[static_cast<size_t>(m->window)];
    if (e.used) {
        e.used = false;
        e.gen = static_cast<uint16_t>(e.gen + 1 == 0 ? 1 : e.gen + 1);  // a stale key never matches
        free_exp_.push_back(static_cast<uint32_t>(m->window));
    }
    m->window = -1;
}

bool SmTransport::unexpose(int peer, XferMem *m, uint64_t) {
    release_mem(peer, m);
    return true;
}

uint32_t SmTransport::rma_room(int peer, bool, uint32_t in_flight) {
    if (!usable(peer)) return 0;
    return in_flight < p_.rma_depth ? p_.rma_depth - in_flight : 0;
}

// ---- get / put ------------------------------------------------------------------

// One copy by the kernel. false: CMA was refused (the caller takes the
// pipeline); otherwise the result is queued for progress().
bool SmTransport::cma_copy(Peer &pe, bool put, char *local, uint64_t raddr, size_t len, uint64_t id) {
    size_t done = 0;
    while (done < len) {
        iovec l{local + done, len - done};
        iovec r{reinterpret_cast<void *>(raddr + done), len - done};
        const ssize_t n = put ? process_vm_writev(static_cast<pid_t>(pe.addr.pid), &l, 1, &r, 1, 0)
                              : process_vm_readv(static_cast<pid_t>(pe.addr.pid), &l, 1, &r, 1, 0);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EPERM || errno == ENOSYS) && done == 0) {
            char why[96];
            std::snprintf(why, sizeof(why), "process_vm_%s on rank %d: %s", put ? "writev" : "readv", pe.rank,
                          std::strerror(errno));
            cma_denied(why);
            return false;
        }
        const int err = n < 0 ? errno : EIO;
        done_.push_back({pe.rank, id, 0, false});
        if (err == ESRCH) {
            fail(pe, RDMX_ERR_PEER_LOST, "process exited");
        } else {
            RDMX_ERROR("sm: %s of %zu bytes at 0x%llx on rank %d (%s): %s (hint: the address the peer gave is not "
                       "mapped)", put ? "put" : "get", len, static_cast<unsigned long long>(raddr), pe.rank, pe.name,
                       std::strerror(err));
        }
        return true;
    }
    done_.push_back({pe.rank, id, static_cast<uint32_t>(len), true});
    return true;
}

bool SmTransport::queue_pipe(Peer &pe, bool put, char *local, uint64_t raddr, uint32_t key, size_t len, uint64_t id) {
    RmaOp op;
    op.id = id;
    op.local = local;
    op.raddr = raddr;
    op.len = len;
    op.key = key;
    op.put = put;
    pe.ops.push_back(op);
    return true;
}

bool SmTransport::get(int peer, void *dst, const XferMem &, uint64_t raddr, uint32_t key, size_t len, uint64_t id) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || pe->state != PeerState::kUp || len == 0 || len > p_.rma_chunk) return false;
    ++pe->in_flight;
    if (use_cma(len) && cma_copy(*pe, false, static_cast<char *>(dst), raddr, len, id)) return true;
    return queue_pipe(*pe, false, static_cast<char *>(dst), raddr, key, len, id);
}

bool SmTransport::put(int peer, const void *src, const XferMem &, uint64_t raddr, uint32_t key, size_t len,
                      uint64_t id) {
    Peer *pe = peer_of(peer);
    if (pe == nullptr || pe->state != PeerState::kUp || len == 0 || len > p_.rma_chunk) return false;
    ++pe->in_flight;
    char *s = const_cast<char *>(static_cast<const char *>(src));  // only read
    if (use_cma(len) && cma_copy(*pe, true, s, raddr, len, id)) return true;
    return queue_pipe(*pe, true, s, raddr, key, len, id);
}

void SmTransport::fail_ops(Peer &pe) {
    for (const RmaOp &op : pe.ops) done_.push_back({pe.rank, op.id, 0, false});
    pe.ops.clear();
    pe.op_chunks = pe.op_freed = 0;
    pe.op_filled = 0;
    pe.served.active = false;
}

int SmTransport::report_done() {
    int n = 0;
    // Upcalls may post new gets/puts (which append to done_): take one entry at a time.
    for (size_t i = 0; i < done_.size(); ++i) {
        const Done d = done_[i];
        if (Peer *pe = peer_of(d.peer); pe != nullptr && pe->in_flight > 0) --pe->in_flight;
        sink_->on_rma_done(d.peer, d.id, d.bytes, d.ok);
        ++n;
    }
    done_.clear();
    return n;
}

// ---- the copy pipeline ------------------------------------------------------------
// Per ordered pair, one op at a time in kStageChunks chunks of the exposer's
// segment (stage[requester's index]). Get: the exposer fills, the requester
// drains. Put: the requester fills, the exposer drains. Each chunk's state
// moves free -> full -> free, each transition by one side only.

ChunkCtl *SmTransport::chunk_ctl(char *seg, const Layout &l, uint32_t ring, uint32_t c) {
    return reinterpret_cast<ChunkCtl *>(seg + l.stage_off + l.stage_stride * ring +
                                        (sizeof(ChunkCtl) + uint64_t{l.chunk}) * (c % kStageChunks));
}

// The exposer checks a request against its table: key and generation, the
// peer it was exposed to, access, and the range.
void SmTransport::serve_request(Peer &pe, const PipeReq &r) {
    if (pe.served.active || r.op_seq != pe.served.next_seq) {
        violation(pe, "pipelined request %llu while %s (expected op %llu)", static_cast<unsigned long long>(r.op_seq),
                  pe.served.active ? "one is being served" : "idle",
                  static_cast<unsigned long long>(pe.served.next_seq));
        return;
    }
    const uint32_t idx = r.key & (kMaxExposures - 1);
    const uint16_t gen = static_cast<uint16_t>(r.key >> kKeyIndexBits);
    const Access want = r.op == static_cast<uint32_t>(PipeOp::kGet) ? Access::kRemoteRead : Access::kRemoteWrite;
    const Exposure *e = idx < exposures_.size() ? &exposures_[idx] : nullptr;
    const uint64_t base = e != nullptr ? reinterpret_cast<uint64_t>(e->buf) : 0;
    if (e == nullptr || !e->used || e->gen != gen || e->peer != pe.rank || e->access != want || r.raddr < base ||
        r.raddr + r.len > base + e->len) {
        violation(pe, "pipelined %s of %llu bytes at 0x%llx with key 0x%x matches no exposure to it",
                  want == Access::kRemoteRead ? "get" : "put", static_cast<unsigned long long>(r.len),
                  static_cast<unsigned long long>(r.raddr), r.key);
        return;
    }
    pe.served.active = true;
    pe.served.req = r;
    pe.served.buf = reinterpret_cast<char *>(r.raddr);
    pe.served.done = 0;
    pe.served.chunks = 0;
    ++pe.served.next_seq;
}

int SmTransport::pump_served(Peer &pe) {
    Served &s = pe.served;
    if (!s.active) return 0;
    const bool get = s.req.op == static_cast<uint32_t>(PipeOp::kGet);
    int n = 0;
    while (s.done < s.req.len) {
        ChunkCtl *c = chunk_ctl(seg_, lay_, pe.idx, s.chunks);
        char *data = reinterpret_cast<char *>(c) + sizeof(ChunkCtl);
        const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(lay_.chunk, s.req.len - s.done));
        const uint32_t st = c->state.load(std::memory_order_acquire);
        if (get) {
            if (st != kChunkFree) break;
            std::memcpy(data, s.buf + s.done, want);
            c->len = want;
            c->op_seq = s.req.op_seq;
            c->state.store(kChunkFull, std::memory_order_release);
        } else {
            if (st != kChunkFull) break;
            const uint32_t len = c->len;
            const uint64_t seq = c->op_seq;
            if (ShmError e = decode_chunk(len, seq, want, s.req.op_seq); e != ShmError::kOk) {
                violation(pe, "put chunk %u: %s (len %u, want %u)", s.chunks, shm_error_name(e), len, want);
                return n;
            }
            std::memcpy(s.buf + s.done, data, want);
            c->state.store(kChunkFree, std::memory_order_release);
        }
        s.done += want;
        ++s.chunks;
        ++n;
    }
    if (s.done == s.req.len) s.active = false;
    return n;
}

// Get, requester side: copy out the chunks the exposer filled, in order.
// true when the whole op is copied.
bool SmTransport::drain_get(Peer &pe, RmaOp &op, uint32_t total, int *n) {
    while (pe.op_chunks < total) {
        ChunkCtl *c = chunk_ctl(pe.seg, pe.lay, my_idx_, pe.op_chunks);
        if (c->state.load(std::memory_order_acquire) != kChunkFull) return false;
        const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(pe.lay.chunk, op.len - op.done));
        const uint32_t len = c->len;
        const uint64_t seq = c->op_seq;
        if (ShmError e = decode_chunk(len, seq, want, pe.op_seq); e != ShmError::kOk) {
            violation(pe, "get chunk %u: %s (len %u, want %u)", pe.op_chunks, shm_error_name(e), len, want);
            return false;
        }
        std::memcpy(op.local + op.done, reinterpret_cast<char *>(c) + sizeof(ChunkCtl), want);
        c->state.store(kChunkFree, std::memory_order_release);
        op.done += want;
        ++pe.op_chunks;
        ++*n;
    }
    return true;
}

// Put, requester side: fill free chunks in order, then wait until the
// exposer has drained them all. true when it has.
bool SmTransport::fill_put(Peer &pe, RmaOp &op, uint32_t total, int *n) {
    while (pe.op_chunks < total) {
        ChunkCtl *c = chunk_ctl(pe.seg, pe.lay, my_idx_, pe.op_chunks);
        if (c->state.load(std::memory_order_acquire) != kChunkFree) break;
        const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>(pe.lay.chunk, op.len - pe.op_filled));
        std::memcpy(reinterpret_cast<char *>(c) + sizeof(ChunkCtl), op.local + pe.op_filled, want);
        c->len = want;
        c->op_seq = pe.op_seq;
        c->state.store(kChunkFull, std::memory_order_release);
        pe.op_filled += want;
        ++pe.op_chunks;
        ++*n;
    }
    while (pe.op_freed < pe.op_chunks &&
           chunk_ctl(pe.seg, pe.lay, my_idx_, pe.op_freed)->state.load(std::memory_order_acquire) == kChunkFree) {
        ++pe.op_freed;
        ++*n;
    }
    if (pe.op_freed < total) return false;
    op.done = op.len;
    return true;
}

// The requester's side: send the front op's request, then drain (get) or
// fill and wait for drained (put) chunks in the exposer's segment.
int SmTransport::pump_requester(Peer &pe, double now) {
    if (pe.ops.empty()) return 0;
    RmaOp &op = pe.ops.front();
    if (!op.sent) {
        if (!ring_room(pe, 1)) return 0;
        PipeReq r{static_cast<uint32_t>(op.put ? PipeOp::kPut : PipeOp::kGet), op.key, op.raddr, op.len, pe.op_seq};
        post_slot(pe, SlotKind::kPipeReq, &r, sizeof(r), nullptr, 0);
        op.sent = true;
        pe.op_chunks = pe.op_freed = 0;
        pe.op_filled = 0;
        pe.op_progress_at = now != 0 ? now : now_s();
    }
    int n = 0;
    const uint32_t total = static_cast<uint32_t>((op.len + pe.lay.chunk - 1) / pe.lay.chunk);
    const bool finished = op.put ? fill_put(pe, op, total, &n) : drain_get(pe, op, total, &n);
    if (n > 0) pe.op_progress_at = now != 0 ? now : now_s();
    if (!finished || pe.state != PeerState::kUp) return n;
    done_.push_back({pe.rank, op.id, static_cast<uint32_t>(op.len), true});
    pe.ops.erase(pe.ops.begin());
    ++pe.op_seq;
    return n + 1;
}

}  // namespace rdmx
