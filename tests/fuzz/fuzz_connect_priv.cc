// rdma_cm private data from a peer: decode_connect, decode_accept and
// decode_reject on the same bytes, checked against the format's definition.
#include <cstring>

#include "core/wire.h"
#include "fuzz_common.h"

namespace rdmx_fuzz {
namespace {

constexpr const char *kTarget = "fuzz_connect_priv";
using namespace rdmx::wire;

uint16_t u16_at(const uint8_t *p, size_t off) {
    uint16_t v;
    std::memcpy(&v, p + off, sizeof(v));
    return v;
}

uint32_t u32_at(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

bool valid_name(DecodeError e) {
    const char *n = decode_error_name(e);
    return n != nullptr && std::strcmp(n, "?") != 0;
}

// A private-data struct with its own length field: accepted exactly when
// the header is ours, the length field names the struct, and that many bytes
// arrived (more is padding).
template <typename T, typename Decode>
bool check_priv(const uint8_t *data, size_t size, Decode decode) {
    T out;
    std::memset(&out, 0xa5, sizeof(out));
    const DecodeError e = decode(data, size, &out);
    RDMX_FUZZ_CHECK(valid_name(e));
    const bool expect = size >= 8 && u32_at(data) == kMagic && u16_at(data, 4) == kVersion &&
                        u16_at(data, 6) == sizeof(T) && size >= sizeof(T);
    RDMX_FUZZ_CHECK((e == DecodeError::kOk) == expect);
    if (e == DecodeError::kOk) RDMX_FUZZ_CHECK(std::memcmp(&out, data, sizeof(T)) == 0);
    if (size < 8) RDMX_FUZZ_CHECK(e == DecodeError::kShort);
    // Deterministic: the same bytes give the same answer.
    T again;
    RDMX_FUZZ_CHECK(decode(data, size, &again) == e);
    return e == DecodeError::kOk;
}

}  // namespace

unsigned connect_priv(const uint8_t *data, size_t size) {
    unsigned acc = 0;
    if (check_priv<ConnectPriv>(data, size, decode_connect)) acc |= kConnect;
    if (check_priv<AcceptPriv>(data, size, decode_accept)) acc |= kAccept;

    RejectPriv rej;
    const DecodeError e = decode_reject(data, size, &rej);
    RDMX_FUZZ_CHECK(valid_name(e));
    const bool expect = size >= sizeof(RejectPriv) && u32_at(data) == kMagic && u16_at(data, 4) == kVersion;
    RDMX_FUZZ_CHECK((e == DecodeError::kOk) == expect);
    if (e == DecodeError::kOk) {
        RDMX_FUZZ_CHECK(std::memcmp(&rej, data, sizeof(rej)) == 0);
        RDMX_FUZZ_CHECK(reject_reason_name(static_cast<RejectReason>(rej.reason)) != nullptr);
        acc |= kReject;
    }
    return acc;
}

}  // namespace rdmx_fuzz

#ifndef RDMX_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)rdmx_fuzz::connect_priv(data, size);
    return 0;
}
#endif
