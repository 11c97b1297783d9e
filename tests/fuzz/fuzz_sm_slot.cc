// Everything a local peer writes into shared memory that the sm transport
// decodes: a ring slot's header (decode_slot), a pipelined get/put request
// (decode_pipe_req), a staging chunk's fields (decode_chunk) and a mapped
// segment's header (decode_seg_info). Each verdict is compared with the
// format's definition written out below; the decoders read only the bytes
// they are given (ASan in the fuzz build, an exact-size copy in the replay).
#include <cstring>

#include "fuzz_common.h"
#include "transport/sm_shm.h"

namespace rdmx_fuzz {
namespace {

constexpr const char *kTarget = "fuzz_sm_slot";
constexpr size_t kEager = 8192;
constexpr uint64_t kMaxReq = 4u << 20;
constexpr uint64_t kJobKey = 0x5eed;
constexpr uint32_t kOwner = 3;
constexpr uint32_t kMinRings = 2;
using namespace rdmx::sm;

bool named(ShmError e) { return std::strcmp(shm_error_name(e), "?") != 0; }

bool slot_ok(const SlotHdr &h, uint32_t slot_size) {
    const uint32_t room = slot_size - static_cast<uint32_t>(sizeof(SlotHdr));
    if (h.kind == 0) return h.len >= sizeof(rdmx::wire::MsgHdr) && h.len <= room;
    if (h.kind == 1) return h.len == sizeof(PipeReq);
    return false;
}

bool req_ok(const uint8_t *data, size_t size) {
    if (size != sizeof(PipeReq)) return false;
    PipeReq r;
    std::memcpy(&r, data, sizeof(r));
    return (r.op == 1 || r.op == 2) && r.len != 0 && r.len <= kMaxReq && r.raddr + r.len >= r.raddr;
}

unsigned check_slot(const uint8_t *data, size_t size) {
    if (size < sizeof(SlotHdr)) return 0;
    const uint32_t slot_size = slot_size_for(kEager);
    SlotHdr h;
    const ShmError e = decode_slot(data, slot_size, &h);
    RDMX_FUZZ_CHECK(named(e));
    SlotHdr raw;
    std::memcpy(&raw, data, sizeof(raw));
    RDMX_FUZZ_CHECK((e == ShmError::kOk) == slot_ok(raw, slot_size));
    if (e != ShmError::kOk) return 0;
    RDMX_FUZZ_CHECK(std::memcmp(&h, &raw, sizeof(h)) == 0);
    RDMX_FUZZ_CHECK(sizeof(SlotHdr) + h.len <= slot_size);  // the body stays inside the slot
    return kSmSlot;
}

unsigned check_req(const uint8_t *data, size_t size) {
    PipeReq r;
    const ShmError e = decode_pipe_req(data, size, kMaxReq, &r);
    RDMX_FUZZ_CHECK(named(e));
    RDMX_FUZZ_CHECK((e == ShmError::kOk) == req_ok(data, size));
    if (e != ShmError::kOk) return 0;
    RDMX_FUZZ_CHECK(std::memcmp(&r, data, sizeof(r)) == 0);
    // decode_chunk: exactly the expected length and op, nothing else.
    RDMX_FUZZ_CHECK(decode_chunk(static_cast<uint32_t>(r.len), r.op_seq, static_cast<uint32_t>(r.len), r.op_seq) ==
                    ShmError::kOk);
    RDMX_FUZZ_CHECK(decode_chunk(static_cast<uint32_t>(r.len) + 1, r.op_seq, static_cast<uint32_t>(r.len), r.op_seq) !=
                    ShmError::kOk);
    RDMX_FUZZ_CHECK(decode_chunk(static_cast<uint32_t>(r.len), r.op_seq + 1, static_cast<uint32_t>(r.len), r.op_seq) !=
                    ShmError::kOk);
    return kSmReq;
}

// The mapping is as long as the header claims (the caller checked the
// memfd's size against the address): only the 64 header bytes are read.
unsigned check_seg(const uint8_t *data, size_t size) {
    if (size < sizeof(SegInfo)) {
        SegInfo s;
        Layout l;
        RDMX_FUZZ_CHECK(decode_seg_info(data, size, kJobKey, kOwner, slot_size_for(kEager), kMinRings, size, &s, &l) ==
                        ShmError::kShort);
        return 0;
    }
    SegInfo raw;
    std::memcpy(&raw, data, sizeof(raw));
    SegInfo s;
    Layout l;
    const ShmError e = decode_seg_info(data, raw.total_size, kJobKey, kOwner, slot_size_for(kEager), kMinRings,
                                       raw.total_size, &s, &l);
    RDMX_FUZZ_CHECK(named(e));
    Layout want;
    const bool ok = raw.magic == kSegMagic && raw.version == kSegVersion && raw.info_size == sizeof(SegInfo) &&
                    raw.job_key == kJobKey && raw.owner_rank == kOwner && raw.owner_pid != 0 &&
                    raw.slot_size == slot_size_for(kEager) && raw.nrings >= kMinRings &&
                    make_layout(raw.nrings, raw.nslots, raw.slot_size, raw.chunk, &want) &&
                    want.total == raw.total_size;
    RDMX_FUZZ_CHECK((e == ShmError::kOk) == ok);
    if (e != ShmError::kOk) return 0;
    // Every ring and stage lies inside the segment.
    RDMX_FUZZ_CHECK(l.ring_off + l.ring_stride * l.nrings <= l.stage_off);
    RDMX_FUZZ_CHECK(l.stage_off + l.stage_stride * l.nrings == l.total && l.total == raw.total_size);
    RDMX_FUZZ_CHECK(l.ring_stride >= sizeof(RingCtl) + uint64_t{l.nslots} * l.slot_size);
    RDMX_FUZZ_CHECK(l.stage_stride == kStageChunks * (sizeof(ChunkCtl) + uint64_t{l.chunk}));
    return kSmSeg;
}

}  // namespace

unsigned sm_slot(const uint8_t *data, size_t size) {
    return check_slot(data, size) | check_req(data, size) | check_seg(data, size);
}

}  // namespace rdmx_fuzz

#ifndef RDMX_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)rdmx_fuzz::sm_slot(data, size);
    return 0;
}
#endif
