// The rendezvous descriptor. The input is laid out as
//   [0, 24)  RndvDesc body (addr, length, rkey, flags)
//   24       space        25       flags
//   [26, 30) tag          [30, 38) XOR applied to the body's length to give
//                                  the header's length (0: they agree)
//   [38, 46) cookie       [46, 50) credits      [50, 54) seq
//   the communicator id is bytes 25 and 26 (flags, tag's low byte) masked to
//   13 bits: half of them are ids a peer may send, half out of range.
// Missing bytes are zero, so any short input is an RTS with a valid header
// and the fuzzer spends its time on the body and on header deviations.
#include <cstring>

#include "core/wire.h"
#include "fuzz_common.h"

namespace rdmx_fuzz {
namespace {

constexpr const char *kTarget = "fuzz_rndv_desc";
constexpr size_t kMaxEager = 8192;
constexpr size_t kInputBytes = 54;
using namespace rdmx::wire;

}  // namespace

unsigned rndv_desc(const uint8_t *data, size_t size) {
    uint8_t in[kInputBytes] = {};
    if (size > 0) std::memcpy(in, data, size < kInputBytes ? size : kInputBytes);

    RndvDesc body;
    std::memcpy(&body, in, sizeof(body));
    uint64_t len_xor, cookie;
    int32_t tag;
    uint32_t credits, seq;
    std::memcpy(&tag, in + 26, 4);
    std::memcpy(&len_xor, in + 30, 8);
    std::memcpy(&cookie, in + 38, 8);
    std::memcpy(&credits, in + 46, 4);
    std::memcpy(&seq, in + 50, 4);
    // The communicator id: half the range valid (< kMaxComms), half not.
    const uint32_t comm = (static_cast<uint32_t>(in[25]) << 8 | in[26]) & 0x1fff;
    MsgHdr h{kVersion, static_cast<uint8_t>(MsgType::kRts), in[24], in[25], tag, credits, seq,
             body.length ^ len_xor, cookie, comm, 0};

    // The message exactly as a peer would send it, in an exact-size buffer.
    const size_t n = sizeof(MsgHdr) + sizeof(RndvDesc);
    auto *msg = new uint8_t[n];
    std::memcpy(msg, &h, sizeof(h));
    std::memcpy(msg + sizeof(h), &body, sizeof(body));

    unsigned acc = 0;
    MsgHdr got;
    const DecodeError e = decode_msg(msg, n, kMaxEager, &got);
    const bool hdr_ok = h.space <= kMaxSpace && h.tag >= 0 && h.comm < kMaxComms && h.reserved == 0;
    RDMX_FUZZ_CHECK((e == DecodeError::kOk) == hdr_ok);
    if (!hdr_ok) RDMX_FUZZ_CHECK(e == DecodeError::kBadField);

    RndvDesc d;
    const DecodeError er = decode_rts(msg, n, h, &d);
    // Length 0 is an empty synchronous send (rdmx_issend): valid.
    const bool body_ok = body.length == h.length && body.addr + body.length >= body.addr &&
                         (body.flags & ~kDescPut) == 0;
    RDMX_FUZZ_CHECK((er == DecodeError::kOk) == body_ok);
    if (er == DecodeError::kOk) {
        RDMX_FUZZ_CHECK(std::memcmp(&d, &body, sizeof(d)) == 0);
        RDMX_FUZZ_CHECK(d.addr + d.length >= d.addr);  // a range that does not wrap
    } else if (body.length != h.length) {
        RDMX_FUZZ_CHECK(er == DecodeError::kBadLength);
    } else {
        RDMX_FUZZ_CHECK(er == DecodeError::kBadField);
    }
    // One byte short or one byte long is never an RTS, whatever the body.
    RDMX_FUZZ_CHECK(decode_rts(msg, n - 1, h, &d) == DecodeError::kBadLength);
    auto *longer = new uint8_t[n + 1];
    std::memcpy(longer, msg, n);
    longer[n] = 0;
    RDMX_FUZZ_CHECK(decode_rts(longer, n + 1, h, &d) == DecodeError::kBadLength);
    MsgHdr tmp;
    RDMX_FUZZ_CHECK(decode_msg(longer, n + 1, kMaxEager, &tmp) != DecodeError::kOk);
    delete[] longer;
    delete[] msg;

    if (e == DecodeError::kOk) {
        acc |= kMsg;
        if (er == DecodeError::kOk) acc |= kRts;
    }
    return acc;
}

}  // namespace rdmx_fuzz

#ifndef RDMX_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)rdmx_fuzz::rndv_desc(data, size);
    return 0;
}
#endif
