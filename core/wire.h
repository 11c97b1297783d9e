// Everything rdmx puts on the wire, with static_assert'ed layouts, and the
// decoders that check bytes a peer sent before anything else looks at them.
// All multi-byte fields are little-endian (x86 and arm64 hosts; checked below).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rdmx::wire {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "rdmx's wire format is little-endian");

constexpr uint32_t kMagic = 0x784d4452;  // "RDMx"
constexpr uint16_t kVersion = 1;

// ---- rdma_cm private_data -------------------------------------------------
// A connect request carries at most 56 bytes on RDMA_PS_TCP, an accept 196.
constexpr size_t kConnectPrivMax = 56;
constexpr size_t kAcceptPrivMax = 196;

struct ConnectPriv {           // active (lower rank) -> passive
    uint32_t magic;
    uint16_t version;
    uint16_t length;           // sizeof(ConnectPriv): authoritative, buffers arrive zero-padded
    uint64_t job_key;
    uint32_t src_rank;
    uint32_t dst_rank;
    uint64_t credit_addr;      // where the passive side writes credits it grants us
    uint32_t credit_rkey;
    uint32_t credits;          // receive credits we grant the passive side
};
static_assert(std::is_trivially_copyable_v<ConnectPriv> && sizeof(ConnectPriv) == 40);
static_assert(sizeof(ConnectPriv) <= kConnectPrivMax);

struct AcceptPriv {            // passive -> active
    uint32_t magic;
    uint16_t version;
    uint16_t length;
    uint64_t job_key;
    uint32_t src_rank;
    uint32_t credits;
    uint64_t credit_addr;
    uint32_t credit_rkey;
    uint32_t reserved;
};
static_assert(std::is_trivially_copyable_v<AcceptPriv> && sizeof(AcceptPriv) == 40);
static_assert(sizeof(AcceptPriv) <= kAcceptPrivMax);

enum class RejectReason : uint16_t {
    kNone = 0, kBadMagic = 1, kBadVersion = 2, kBadJobKey = 3, kShortData = 4, kRankOutOfRange = 5,
    kDuplicateRank = 6, kWrongDirection = 7, kResources = 8, kShuttingDown = 9,
    kAddressMismatch = 10,  // the request's source is not the address its rank published
    kCrossed = 11,          // lazy connect: both sides dialled at once; the lower rank's connection wins,
                            // so the higher rank waits for it (not a failure)
};
const char *reject_reason_name(RejectReason r);

struct RejectPriv {
    uint32_t magic;
    uint16_t version;
    uint16_t reason;
};
static_assert(sizeof(RejectPriv) == 8);

enum class DecodeError {
    kOk = 0, kShort, kBadMagic, kBadVersion, kBadLength, kBadType, kBadField,
};
const char *decode_error_name(DecodeError e);

// `len` is the length the CM reported; the struct's own length field decides.
DecodeError decode_connect(const void *buf, size_t len, ConnectPriv *out);
DecodeError decode_accept(const void *buf, size_t len, AcceptPriv *out);
DecodeError decode_reject(const void *buf, size_t len, RejectPriv *out);

// ---- message header (every SEND) -------------------------------------------
enum class MsgType : uint8_t {
    kEager = 1,   // payload follows the header
    kRts = 2,     // rendezvous request: RndvDesc follows
    kFin = 3,     // rendezvous done (receiver -> sender): cookie names the send
    kCredit = 4,  // explicit credit return, no payload (unused when RDMA WRITE carries credits)
    kCts = 5,     // rendezvous put: receiver -> sender, RndvDesc of the receive buffer follows;
                  // cookie names the send, length carries the receiver's transfer id
    kPutFin = 6,  // rendezvous put done (sender -> receiver): cookie names the receive
    kAbort = 7,   // rdmx_abort: the job ends; tag carries the exit code, no payload
};

struct MsgHdr {
    uint8_t version;
    uint8_t type;
    uint8_t space;      // tag space
    uint8_t flags;
    int32_t tag;
    uint32_t credits;   // cumulative credits granted to this header's receiver
    uint32_t seq;       // per-connection send sequence, checked in order
    uint64_t length;    // message length (eager: payload bytes that follow)
    uint64_t cookie;    // rendezvous: sender's transfer id
    uint32_t comm;      // communicator id (0: the job's root context), < kMaxComms
    uint32_t reserved;  // zero
};
static_assert(std::is_trivially_copyable_v<MsgHdr> && sizeof(MsgHdr) == 40);
static_assert(offsetof(MsgHdr, tag) == 4 && offsetof(MsgHdr, length) == 16 && offsetof(MsgHdr, cookie) == 24 &&
              offsetof(MsgHdr, comm) == 32);

struct RndvDesc {       // follows an RTS header
    uint64_t addr;      // sender's buffer
    uint64_t length;    // == MsgHdr::length
    uint32_t rkey;
    uint32_t flags;     // RTS: kDescPut asks the receiver for a CTS; otherwise 0
};
static_assert(std::is_trivially_copyable_v<RndvDesc> && sizeof(RndvDesc) == 24);
constexpr uint32_t kDescPut = 1;

struct FinBody {        // follows a FIN header
    int32_t status;     // 0 ok, else the receiver's failure
    uint32_t reserved;
};
static_assert(sizeof(FinBody) == 8);

// Tag spaces 0..2 are the public ones (rdmx_tagspace_t); 3 is the engine's
// own (communicator creation).
constexpr uint8_t kMaxSpace = 3;
// Communicator ids a rank can hold at once (agreed by a bitmap reduction:
// protocols/comm.cc); an id at or above it is a protocol error.
constexpr uint32_t kMaxComms = 4096;
// The largest receive window (credits) a rank grants a peer: announced in
// ConnectPriv/AcceptPriv, never exceeded by a cumulative grant.
constexpr uint32_t kMaxCredits = 64;

// decode_msg's every check, one field at a time, naming the first that fails.
[[gnu::noinline]] inline DecodeError decode_msg_fields(size_t len, size_t max_eager, const MsgHdr *hdr) {
    if (hdr->version != kVersion) return DecodeError::kBadVersion;
    if (hdr->space > kMaxSpace || hdr->tag < 0 || hdr->comm >= kMaxComms || hdr->reserved != 0)
        return DecodeError::kBadField;
    size_t body = len - sizeof(MsgHdr);
    switch (static_cast<MsgType>(hdr->type)) {
    case MsgType::kEager:
        if (hdr->length != body || body > max_eager) return DecodeError::kBadLength;
        return DecodeError::kOk;
    case MsgType::kRts:
        if (body != sizeof(RndvDesc)) return DecodeError::kBadLength;
        return DecodeError::kOk;
    case MsgType::kCts:
        if (body != sizeof(RndvDesc)) return DecodeError::kBadLength;
        return DecodeError::kOk;
    case MsgType::kFin:
    case MsgType::kPutFin:
        if (body != sizeof(FinBody)) return DecodeError::kBadLength;
        return DecodeError::kOk;
    case MsgType::kCredit:
    case MsgType::kAbort:
        if (body != 0) return DecodeError::kBadLength;
        return DecodeError::kOk;
    }
    return DecodeError::kBadType;
}

// An eager header's first word (version, type, space, flags, tag) has these
// bits as in kEagerHeadWant: version 1, type kEager, space <= kMaxSpace (the
// bits above it clear), tag >= 0 (its sign bit clear); flags are not
// checked. Its last word (comm, reserved) is below kMaxComms: comm in range
// and reserved zero.
static_assert((kMaxSpace & (kMaxSpace + 1)) == 0 && (kMaxComms & (kMaxComms - 1)) == 0,
              "the eager fast check masks: kMaxSpace + 1 and kMaxComms are powers of two");
constexpr uint64_t kEagerHeadMask = 0xFFull | 0xFFull << 8 | uint64_t{0xFF & ~kMaxSpace} << 16 | 0x80ull << 56;
constexpr uint64_t kEagerHeadWant = uint64_t{kVersion} | uint64_t{static_cast<uint8_t>(MsgType::kEager)} << 8;

// Checks a received message of `len` bytes. For eager, payload length must be
// exactly len - sizeof(MsgHdr) and at most max_eager. On kOk *hdr is filled.
// Inline: every arrival on every transport passes here. A good eager
// message passes three compares of whole words; anything else goes through
// decode_msg_fields, which names what was wrong (the fast check accepts
// nothing that it rejects: tests/unit/wire_test.cc holds them to that).
inline DecodeError decode_msg(const void *buf, size_t len, size_t max_eager, MsgHdr *hdr) {
    if (buf == nullptr || len < sizeof(MsgHdr)) return DecodeError::kShort;
    std::memcpy(hdr, buf, sizeof(*hdr));
    uint64_t head, tail;
    std::memcpy(&head, hdr, sizeof(head));
    std::memcpy(&tail, &hdr->comm, sizeof(tail));
    const size_t body = len - sizeof(MsgHdr);
    if ((head & kEagerHeadMask) == kEagerHeadWant && tail < kMaxComms && hdr->length == body && body <= max_eager)
        [[likely]] return DecodeError::kOk;
    return decode_msg_fields(len, max_eager, hdr);
}
// Checks an RTS body: sizes agree with the header and the range does not wrap.
DecodeError decode_rts(const void *buf, size_t len, const MsgHdr &hdr, RndvDesc *out);
DecodeError decode_fin(const void *buf, size_t len, FinBody *out);
// Checks a CTS body: the range does not wrap (length 0: nothing to write).
DecodeError decode_cts(const void *buf, size_t len, RndvDesc *out);

}  // namespace rdmx::wire
