// A received SEND: decode_msg with the default eager limit (8192), then, for
// an accepted RTS, CTS, FIN or PutFin, decode_rts / decode_cts / decode_fin
// on the same bytes. Each
// verdict is compared with the format's definition written out below.
#include <cstring>
#include <limits>

#include "core/wire.h"
#include "fuzz_common.h"

namespace rdmx_fuzz {
namespace {

constexpr const char *kTarget = "fuzz_msg_hdr";
constexpr size_t kMaxEager = 8192;
using namespace rdmx::wire;

bool valid_name(DecodeError e) {
    const char *n = decode_error_name(e);
    return n != nullptr && std::strcmp(n, "?") != 0;
}

// What decode_msg must accept.
bool msg_ok(const uint8_t *data, size_t size, size_t max_eager) {
    if (size < sizeof(MsgHdr)) return false;
    MsgHdr h;
    std::memcpy(&h, data, sizeof(h));
    if (h.version != kVersion || h.space > kMaxSpace || h.tag < 0 || h.comm >= kMaxComms || h.reserved != 0)
        return false;
    const size_t body = size - sizeof(MsgHdr);
    switch (h.type) {
    case static_cast<uint8_t>(MsgType::kEager): return h.length == body && body <= max_eager;
    case static_cast<uint8_t>(MsgType::kRts): return body == sizeof(RndvDesc);
    case static_cast<uint8_t>(MsgType::kFin): return body == sizeof(FinBody);
    case static_cast<uint8_t>(MsgType::kCts): return body == sizeof(RndvDesc);
    case static_cast<uint8_t>(MsgType::kPutFin): return body == sizeof(FinBody);
    case static_cast<uint8_t>(MsgType::kCredit):
    case static_cast<uint8_t>(MsgType::kAbort): return body == 0;
    default: return false;
    }
}

}  // namespace

unsigned msg_hdr(const uint8_t *data, size_t size) {
    unsigned acc = 0;
    MsgHdr h;
    std::memset(&h, 0x5a, sizeof(h));
    const DecodeError e = decode_msg(data, size, kMaxEager, &h);
    RDMX_FUZZ_CHECK(valid_name(e));
    RDMX_FUZZ_CHECK((e == DecodeError::kOk) == msg_ok(data, size, kMaxEager));
    if (size < sizeof(MsgHdr)) RDMX_FUZZ_CHECK(e == DecodeError::kShort);
    // A larger limit never refuses what a smaller one accepts.
    MsgHdr big;
    const DecodeError eb = decode_msg(data, size, std::numeric_limits<size_t>::max(), &big);
    RDMX_FUZZ_CHECK((eb == DecodeError::kOk) == msg_ok(data, size, std::numeric_limits<size_t>::max()));
    if (e == DecodeError::kOk) RDMX_FUZZ_CHECK(eb == DecodeError::kOk);

    // decode_rts / decode_fin check the size before reading: safe on any bytes.
    MsgHdr raw{};
    if (size >= sizeof(raw)) std::memcpy(&raw, data, sizeof(raw));
    RndvDesc d;
    FinBody f;
    const DecodeError er = decode_rts(data, size, raw, &d);
    const DecodeError ef = decode_fin(data, size, &f);
    RndvDesc cts;
    const DecodeError ec = decode_cts(data, size, &cts);
    RDMX_FUZZ_CHECK(valid_name(er) && valid_name(ef) && valid_name(ec));
    if (size != sizeof(MsgHdr) + sizeof(RndvDesc)) RDMX_FUZZ_CHECK(er == DecodeError::kBadLength && ec == DecodeError::kBadLength);
    if (size != sizeof(MsgHdr) + sizeof(FinBody)) RDMX_FUZZ_CHECK(ef == DecodeError::kBadLength);

    if (e != DecodeError::kOk) return acc;
    acc |= kMsg;
    RDMX_FUZZ_CHECK(std::memcmp(&h, data, sizeof(h)) == 0);
    RDMX_FUZZ_CHECK(h.version == kVersion && h.space <= kMaxSpace && h.tag >= 0 && h.comm < kMaxComms &&
                    h.reserved == 0);
    if (h.type == static_cast<uint8_t>(MsgType::kRts)) {
        RndvDesc want;
        std::memcpy(&want, data + sizeof(MsgHdr), sizeof(want));
        // Length 0 is an empty synchronous send (rdmx_issend): valid.
        const bool ok = want.length == h.length && want.addr + want.length >= want.addr &&
                        (want.flags & ~kDescPut) == 0;
        RDMX_FUZZ_CHECK((er == DecodeError::kOk) == ok);
        if (er == DecodeError::kOk) {
            RDMX_FUZZ_CHECK(std::memcmp(&d, &want, sizeof(d)) == 0);
            acc |= kRts;
        }
    } else if (h.type == static_cast<uint8_t>(MsgType::kCts)) {
        RndvDesc want;  // any length (0: nothing to write), no wrap, no flags
        std::memcpy(&want, data + sizeof(MsgHdr), sizeof(want));
        RDMX_FUZZ_CHECK((ec == DecodeError::kOk) == (want.addr + want.length >= want.addr && want.flags == 0));
        if (ec == DecodeError::kOk) RDMX_FUZZ_CHECK(std::memcmp(&cts, &want, sizeof(cts)) == 0);
    } else if (h.type == static_cast<uint8_t>(MsgType::kFin) || h.type == static_cast<uint8_t>(MsgType::kPutFin)) {
        RDMX_FUZZ_CHECK(ef == DecodeError::kOk);  // any status value is a valid FIN
        RDMX_FUZZ_CHECK(std::memcmp(&f, data + sizeof(MsgHdr), sizeof(f)) == 0);
        acc |= kFin;
    } else if (h.type == static_cast<uint8_t>(MsgType::kEager)) {
        RDMX_FUZZ_CHECK(h.length == size - sizeof(MsgHdr) && h.length <= kMaxEager);
    }
    return acc;
}

}  // namespace rdmx_fuzz

#ifndef RDMX_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)rdmx_fuzz::msg_hdr(data, size);
    return 0;
}
#endif
