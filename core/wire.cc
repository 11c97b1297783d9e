#include "core/wire.h"

#include <cstring>

namespace rdmx::wire {

const char *reject_reason_name(RejectReason r) {
    switch (r) {
    case RejectReason::kNone: return "none";
    case RejectReason::kBadMagic: return "bad magic (not an rdmx peer)";
    case RejectReason::kBadVersion: return "protocol version mismatch";
    case RejectReason::kBadJobKey: return "job key mismatch (a process of another job)";
    case RejectReason::kShortData: return "private_data too short";
    case RejectReason::kRankOutOfRange: return "rank out of range";
    case RejectReason::kDuplicateRank: return "rank already connected";
    case RejectReason::kWrongDirection: return "wrong connect direction (lower rank connects)";
    case RejectReason::kResources: return "out of resources";
    case RejectReason::kShuttingDown: return "shutting down";
    case RejectReason::kAddressMismatch: return "source address is not the one that rank published";
    case RejectReason::kCrossed: return "crossed connects (the lower rank's connection is used)";
    }
    return "unknown reason";
}

const char *decode_error_name(DecodeError e) {
    switch (e) {
    case DecodeError::kOk: return "ok";
    case DecodeError::kShort: return "too short";
    case DecodeError::kBadMagic: return "bad magic";
    case DecodeError::kBadVersion: return "bad version";
    case DecodeError::kBadLength: return "bad length";
    case DecodeError::kBadType: return "unknown type";
    case DecodeError::kBadField: return "field out of range";
    }
    return "?";
}

namespace {

template <typename T>
DecodeError decode_priv(const void *buf, size_t len, T *out) {
    if (buf == nullptr || len < 8) return DecodeError::kShort;
    uint32_t magic;
    uint16_t version, length;
    std::memcpy(&magic, buf, 4);
    std::memcpy(&version, static_cast<const char *>(buf) + 4, 2);
    std::memcpy(&length, static_cast<const char *>(buf) + 6, 2);
    if (magic != kMagic) return DecodeError::kBadMagic;
    if (version != kVersion) return DecodeError::kBadVersion;
    if (length != sizeof(T)) return DecodeError::kBadLength;
    if (len < sizeof(T)) return DecodeError::kShort;
    std::memcpy(out, buf, sizeof(T));
    return DecodeError::kOk;
}

}  // namespace

DecodeError decode_connect(const void *buf, size_t len, ConnectPriv *out) { return decode_priv(buf, len, out); }
DecodeError decode_accept(const void *buf, size_t len, AcceptPriv *out) { return decode_priv(buf, len, out); }

DecodeError decode_reject(const void *buf, size_t len, RejectPriv *out) {
    if (buf == nullptr || len < sizeof(RejectPriv)) return DecodeError::kShort;
    std::memcpy(out, buf, sizeof(*out));
    if (out->magic != kMagic) return DecodeError::kBadMagic;
    if (out->version != kVersion) return DecodeError::kBadVersion;
    return DecodeError::kOk;
}

DecodeError decode_rts(const void *buf, size_t len, const MsgHdr &hdr, RndvDesc *out) {
    if (len != sizeof(MsgHdr) + sizeof(RndvDesc)) return DecodeError::kBadLength;
    std::memcpy(out, static_cast<const char *>(buf) + sizeof(MsgHdr), sizeof(*out));
    // Zero bytes: a synchronous send (rdmx_issend) of an empty message.
    if (out->length != hdr.length) return DecodeError::kBadLength;
    if (out->addr + out->length < out->addr || (out->flags & ~kDescPut) != 0) return DecodeError::kBadField;
    return DecodeError::kOk;
}

DecodeError decode_cts(const void *buf, size_t len, RndvDesc *out) {
    if (len != sizeof(MsgHdr) + sizeof(RndvDesc)) return DecodeError::kBadLength;
    std::memcpy(out, static_cast<const char *>(buf) + sizeof(MsgHdr), sizeof(*out));
    if (out->addr + out->length < out->addr || out->flags != 0) return DecodeError::kBadField;
    return DecodeError::kOk;
}

DecodeError decode_fin(const void *buf, size_t len, FinBody *out) {
    if (len != sizeof(MsgHdr) + sizeof(FinBody)) return DecodeError::kBadLength;
    std::memcpy(out, static_cast<const char *>(buf) + sizeof(MsgHdr), sizeof(*out));
    return DecodeError::kOk;
}

}  // namespace rdmx::wire
