// The sm transport's shared-memory layout and the decoders for everything a
// peer writes into it. Each rank owns one segment holding its *inbound*
// side: a single-producer ring per local sender and a staging area per local
// sender for pipelined get/put. Every field a peer can write is read once
// into a local, checked here, and only the local is used: a buggy or hostile
// peer loses its own connection, never makes us read or write outside our
// mappings or wait forever.
//
//   [ SegInfo (static, 64 B) | SegLive (sleeping flag, own line) | closed[] ]
//   [ ring 0: head line | tail line | nslots x slot ] ... [ ring n-1 ]
//   [ stage 0: kStageChunks x (ChunkCtl line + chunk bytes) ] ... [ stage n-1 ]
//
// Ring i and stage i serve local sender i (its index in the sorted list of
// local ranks, the same on every rank).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/wire.h"

namespace rdmx::sm {

constexpr uint32_t kSegMagic = 0x536d4452;  // "RDmS"
constexpr uint16_t kSegVersion = 1;
constexpr size_t kLine = 64;
constexpr uint32_t kMaxLocals = 256;        // closed[] entries; local ranks per node
constexpr uint32_t kStageChunks = 4;        // pipelined copy: chunks in flight per pair
constexpr uint32_t kMinSlots = 4;
constexpr uint32_t kMaxSlots = 4096;          // and a power of two between
constexpr uint32_t kMinChunk = 4096;
constexpr uint32_t kMaxChunk = 16u << 20;

struct SegInfo {            // written once by the owner before anyone maps it
    uint32_t magic;
    uint16_t version;
    uint16_t info_size;     // sizeof(SegInfo)
    uint64_t job_key;
    uint32_t owner_rank;
    uint32_t owner_pid;
    uint32_t nrings;        // local senders this segment can serve
    uint32_t nslots;        // slots per ring, a power of two
    uint32_t slot_size;     // bytes per slot (SlotHdr + MsgHdr + eager limit, line-rounded)
    uint32_t chunk;         // staging chunk bytes
    uint64_t total_size;    // bytes of the whole segment
    uint64_t reserved[2];
};
static_assert(std::is_trivially_copyable_v<SegInfo> && sizeof(SegInfo) == kLine);

struct alignas(kLine) SegLive {
    std::atomic<uint32_t> sleeping;  // owner sleeps on its eventfd: senders write it
};
static_assert(sizeof(SegLive) == kLine && std::atomic<uint32_t>::is_always_lock_free);

// closed[i] != 0: the owner closed local sender i (its sends must fail).
struct alignas(kLine) SegClosed {
    std::atomic<uint8_t> closed[kMaxLocals];
};

struct alignas(kLine) RingCtl {
    alignas(kLine) std::atomic<uint64_t> head;  // slots published (producer writes)
    alignas(kLine) std::atomic<uint64_t> tail;  // slots given back (consumer writes)
};
static_assert(sizeof(RingCtl) == 2 * kLine && std::atomic<uint64_t>::is_always_lock_free);

enum class SlotKind : uint32_t {
    kMsg = 0,       // wire::MsgHdr + body, for the engine
    kPipeReq = 1,   // PipeReq: a pipelined get/put, sm-internal
};
struct SlotHdr {
    uint32_t len;   // bytes after this header
    uint32_t kind;  // SlotKind
    uint64_t reserved;
};
static_assert(std::is_trivially_copyable_v<SlotHdr> && sizeof(SlotHdr) == 16);

enum class PipeOp : uint32_t { kGet = 1, kPut = 2 };
struct PipeReq {            // requester -> exposer, through the requester's ring
    uint32_t op;            // PipeOp
    uint32_t key;           // exposure key the exposer handed out
    uint64_t raddr;         // exposer's address
    uint64_t len;
    uint64_t op_seq;        // requester's per-pair pipelined op count (chunks carry it)
};
static_assert(std::is_trivially_copyable_v<PipeReq> && sizeof(PipeReq) == 32);

enum ChunkState : uint32_t { kChunkFree = 0, kChunkFull = 1 };
struct alignas(kLine) ChunkCtl {
    std::atomic<uint32_t> state;  // free -> full by the producer of the bytes, full -> free by the consumer
    uint32_t len;                 // bytes in this chunk
    uint64_t op_seq;              // which op the bytes belong to
};
static_assert(sizeof(ChunkCtl) == kLine);

// Where things are in a segment of these parameters (the same formula on
// every rank: a peer's header is checked against it).
struct Layout {
    uint32_t nrings = 0, nslots = 0, slot_size = 0, chunk = 0;
    uint32_t slot_mask = 0;  // nslots - 1: nslots is a power of two, so a ring indexes by mask, not division
    uint64_t ring_off = 0, ring_stride = 0, stage_off = 0, stage_stride = 0, total = 0;
};
uint32_t slot_size_for(size_t eager_limit);
bool make_layout(uint32_t nrings, uint32_t nslots, uint32_t slot_size, uint32_t chunk, Layout *out);

enum class ShmError { kOk = 0, kShort, kBadMagic, kBadVersion, kBadJobKey, kBadSize, kBadField, kBadKind, kBadLength };
const char *shm_error_name(ShmError e);

// A peer's segment header, as mapped: magic, version, job key, owner rank,
// and a layout that matches `want_slot_size`/`total` and holds `min_rings`.
ShmError decode_seg_info(const void *buf, size_t len, uint64_t job_key, uint32_t owner_rank, uint32_t want_slot_size,
                         uint32_t min_rings, uint64_t total, SegInfo *out, Layout *lay);
// A slot header read from a ring (`slot_size` bytes per slot): a known kind
// and a length that fits (a message: a MsgHdr at least; a request: exactly).
// Inline: every arrival passes here (a message's case first).
inline ShmError decode_slot(const void *buf, uint32_t slot_size, SlotHdr *out) {
    if (buf == nullptr || slot_size < sizeof(SlotHdr)) return ShmError::kShort;
    SlotHdr h;
    std::memcpy(&h, buf, sizeof(h));
    const uint32_t room = slot_size - static_cast<uint32_t>(sizeof(SlotHdr));
    if (h.kind == static_cast<uint32_t>(SlotKind::kMsg)) {
        if (h.len < sizeof(wire::MsgHdr) || h.len > room) return ShmError::kBadLength;
    } else if (h.kind == static_cast<uint32_t>(SlotKind::kPipeReq)) {
        if (h.len != sizeof(PipeReq) || h.len > room) return ShmError::kBadLength;
    } else {
        return ShmError::kBadKind;
    }
    *out = h;
    return ShmError::kOk;
}
// A pipelined request: known op, length in (0, max_len], range not wrapping.
ShmError decode_pipe_req(const void *buf, size_t len, uint64_t max_len, PipeReq *out);
// A staging chunk's length must be exactly what the op expects next.
ShmError decode_chunk(uint32_t len, uint64_t op_seq, uint32_t want_len, uint64_t want_seq);

}  // namespace rdmx::sm
