// Decoders of peer-written shared memory (see sm_shm.h). No logging and no
// dependencies beyond core/wire.h, so the fuzz target compiles this file alone.
#include "transport/sm_shm.h"

#include <cstring>

namespace rdmx::sm {

namespace {
constexpr uint64_t round_line(uint64_t v) { return (v + kLine - 1) & ~uint64_t{kLine - 1}; }
constexpr uint64_t kHeadBytes = sizeof(SegInfo) + sizeof(SegLive) + sizeof(SegClosed);
constexpr uint64_t kMaxSegment = uint64_t{1} << 40;  // refuse absurd layouts before multiplying further
}  // namespace

const char *shm_error_name(ShmError e) {
    switch (e) {
    case ShmError::kOk: return "ok";
    case ShmError::kShort: return "short";
    case ShmError::kBadMagic: return "bad magic";
    case ShmError::kBadVersion: return "bad version";
    case ShmError::kBadJobKey: return "wrong job key";
    case ShmError::kBadSize: return "sizes disagree";
    case ShmError::kBadField: return "bad field";
    case ShmError::kBadKind: return "unknown slot kind";
    case ShmError::kBadLength: return "bad length";
    }
    return "?";
}

uint32_t slot_size_for(size_t eager_limit) {
    return static_cast<uint32_t>(round_line(sizeof(SlotHdr) + sizeof(wire::MsgHdr) + eager_limit));
}

bool make_layout(uint32_t nrings, uint32_t nslots, uint32_t slot_size, uint32_t chunk, Layout *out) {
    if (nrings == 0 || nrings > kMaxLocals || nslots < kMinSlots || nslots > kMaxSlots || (nslots & (nslots - 1)) != 0)
        return false;
    if (slot_size < round_line(sizeof(SlotHdr) + sizeof(PipeReq)) || slot_size % kLine != 0) return false;
    if (slot_size > (2u << 20) || chunk < kMinChunk || chunk > kMaxChunk || chunk % kLine != 0) return false;
    Layout l;
    l.nrings = nrings;
    l.nslots = nslots;
    l.slot_mask = nslots - 1;
    l.slot_size = slot_size;
    l.chunk = chunk;
    l.ring_off = round_line(kHeadBytes);
    l.ring_stride = sizeof(RingCtl) + uint64_t{nslots} * slot_size;
    l.stage_off = l.ring_off + l.ring_stride * nrings;
    l.stage_stride = kStageChunks * (sizeof(ChunkCtl) + uint64_t{chunk});
    l.total = l.stage_off + l.stage_stride * nrings;
    if (l.total > kMaxSegment) return false;
    *out = l;
    return true;
}

ShmError decode_seg_info(const void *buf, size_t len, uint64_t job_key, uint32_t owner_rank, uint32_t want_slot_size,
                         uint32_t min_rings, uint64_t total, SegInfo *out, Layout *lay) {
    if (buf == nullptr || len < sizeof(SegInfo)) return ShmError::kShort;
    SegInfo s;
    std::memcpy(&s, buf, sizeof(s));
    if (s.magic != kSegMagic) return ShmError::kBadMagic;
    if (s.version != kSegVersion || s.info_size != sizeof(SegInfo)) return ShmError::kBadVersion;
    if (s.job_key != job_key) return ShmError::kBadJobKey;
    if (s.owner_rank != owner_rank || s.owner_pid == 0) return ShmError::kBadField;
    if (s.slot_size != want_slot_size || s.nrings < min_rings) return ShmError::kBadSize;
    Layout l;
    if (!make_layout(s.nrings, s.nslots, s.slot_size, s.chunk, &l)) return ShmError::kBadField;
    if (l.total != s.total_size || l.total != total || l.total > len) return ShmError::kBadSize;
    *out = s;
    *lay = l;
    return ShmError::kOk;
}

ShmError decode_pipe_req(const void *buf, size_t len, uint64_t max_len, PipeReq *out) {
    if (buf == nullptr || len != sizeof(PipeReq)) return ShmError::kShort;
    PipeReq r;
    std::memcpy(&r, buf, sizeof(r));
    if (r.op != static_cast<uint32_t>(PipeOp::kGet) && r.op != static_cast<uint32_t>(PipeOp::kPut))
        return ShmError::kBadField;
    if (r.len == 0 || r.len > max_len) return ShmError::kBadLength;
    if (r.raddr + r.len < r.raddr) return ShmError::kBadLength;
    *out = r;
    return ShmError::kOk;
}

ShmError decode_chunk(uint32_t len, uint64_t op_seq, uint32_t want_len, uint64_t want_seq) {
    if (op_seq != want_seq) return ShmError::kBadField;
    if (len != want_len) return ShmError::kBadLength;
    return ShmError::kOk;
}

}  // namespace rdmx::sm
