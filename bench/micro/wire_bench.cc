// Message header and rendezvous descriptor codecs (core/wire.h), as the
// engine uses them per message: the sender fills a MsgHdr (and a RndvDesc
// for an RTS) and copies it into the send buffer; the receiver runs
// decode_msg() (and decode_rts()) on the bytes before anything else reads
// them. Encoding and decoding happen on different hosts, so they are timed
// apart: timed back to back on one buffer, the decoder's loads would wait on
// the encoder's stores, which no real message does.
//
//   WireEncode/<type>    build the header (+ descriptor), copy to the buffer
//   WireDecode/<type>    decode a valid message: eager (8-byte payload) or RTS
//   WireRejected/<case>  decode a corrupt message; the decoders must say
//                        exactly which check failed
#include <cstdint>
#include <cstring>

#include "bench/micro/micro.h"
#include "core/wire.h"

namespace {

using namespace rdmx::wire;

constexpr size_t kMaxEager = 8192;
constexpr size_t kPayload = 8;
constexpr uint64_t kRndvLen = 1 << 20;

// The engine's send path (protocols/eager.cc, post_msg) builds the header
// the same way.
inline MsgHdr make_hdr(MsgType type, uint32_t seq, uint64_t length) {
    return MsgHdr{kVersion, static_cast<uint8_t>(type), 0, 0, 42, 64, seq, length, 0x1234};
}

struct Message {
    alignas(64) char buf[sizeof(MsgHdr) + sizeof(RndvDesc)] = {};
    size_t len = 0;
};

// Returns the encoded length.
inline size_t encode(MsgType type, uint32_t seq, uint64_t addr, char *buf) {
    if (type == MsgType::kRts) {
        const MsgHdr h = make_hdr(type, seq, kRndvLen);
        const RndvDesc d{addr, kRndvLen, 0xabcd, 0};
        std::memcpy(buf, &h, sizeof(h));
        std::memcpy(buf + sizeof(h), &d, sizeof(d));
        return sizeof(h) + sizeof(d);
    }
    const MsgHdr h = make_hdr(type, seq, kPayload);
    std::memcpy(buf, &h, sizeof(h));
    return sizeof(h) + kPayload;
}

void BM_WireEncode(benchmark::State &state, MsgType type) {
    Message m;
    char *out = m.buf;
    benchmark::DoNotOptimize(out);  // escapes: the clobber below keeps every store
    uint32_t seq = 0;
    uint64_t addr = 0x7f0000000000ull;
    for (auto _ : state) {
        m.len = encode(type, seq++, addr, out);
        addr += 4096;
        benchmark::ClobberMemory();
    }
    MsgHdr h;
    std::memcpy(&h, m.buf, sizeof(h));
    if (h.seq != seq - 1 || h.type != static_cast<uint8_t>(type)) rdmx::micro::fail(state, "header not written");
    state.SetItemsProcessed(state.iterations());
}

void BM_WireDecode(benchmark::State &state, MsgType type) {
    Message m;
    const uint64_t addr = 0x7f0000000000ull;
    m.len = encode(type, 7, addr, m.buf);
    for (auto _ : state) {
        MsgHdr h;
        RndvDesc d{};
        DecodeError e = decode_msg(m.buf, m.len, kMaxEager, &h);
        if (e == DecodeError::kOk && type == MsgType::kRts) e = decode_rts(m.buf, m.len, h, &d);
        benchmark::DoNotOptimize(h);
        benchmark::DoNotOptimize(d);
        if (e != DecodeError::kOk || h.seq != 7 || (type == MsgType::kRts && d.addr != addr)) {
            rdmx::micro::fail(state, "a valid message was not decoded back");
            break;
        }
    }
    state.SetItemsProcessed(state.iterations());
}

enum class Corrupt { kShort, kVersion, kNegativeTag, kSpace, kEagerLength, kType, kRtsWraps };

struct RejectCase : Message {
    DecodeError want = DecodeError::kOk;
};

RejectCase make_case(Corrupt c) {
    RejectCase r;
    MsgHdr h = make_hdr(MsgType::kEager, 7, kPayload);
    r.len = sizeof(MsgHdr) + kPayload;
    switch (c) {
    case Corrupt::kShort: r.len = sizeof(MsgHdr) - 1; r.want = DecodeError::kShort; break;
    case Corrupt::kVersion: h.version = kVersion + 1; r.want = DecodeError::kBadVersion; break;
    case Corrupt::kNegativeTag: h.tag = -5; r.want = DecodeError::kBadField; break;
    case Corrupt::kSpace: h.space = kMaxSpace + 1; r.want = DecodeError::kBadField; break;
    case Corrupt::kEagerLength: h.length = kPayload + 1; r.want = DecodeError::kBadLength; break;
    case Corrupt::kType: h.type = 99; r.want = DecodeError::kBadType; break;
    case Corrupt::kRtsWraps: {
        h = make_hdr(MsgType::kRts, 7, 4096);
        const RndvDesc d{~0ull - 100, 4096, 1, 0};
        std::memcpy(r.buf + sizeof(MsgHdr), &d, sizeof(d));
        r.len = sizeof(MsgHdr) + sizeof(RndvDesc);
        r.want = DecodeError::kBadField;
        break;
    }
    }
    std::memcpy(r.buf, &h, sizeof(h));
    return r;
}

void BM_WireRejected(benchmark::State &state, Corrupt c) {
    const RejectCase r = make_case(c);
    for (auto _ : state) {
        MsgHdr h;
        RndvDesc d;
        DecodeError e = decode_msg(r.buf, r.len, kMaxEager, &h);
        if (e == DecodeError::kOk && h.type == static_cast<uint8_t>(MsgType::kRts))
            e = decode_rts(r.buf, r.len, h, &d);
        benchmark::DoNotOptimize(e);
        if (e != r.want) {
            rdmx::micro::fail(state, "a corrupt message was not rejected for the expected reason");
            break;
        }
    }
    state.SetItemsProcessed(state.iterations());
}

BENCHMARK_CAPTURE(BM_WireEncode, eager, MsgType::kEager);
BENCHMARK_CAPTURE(BM_WireEncode, rts, MsgType::kRts);
BENCHMARK_CAPTURE(BM_WireDecode, eager, MsgType::kEager);
BENCHMARK_CAPTURE(BM_WireDecode, rts, MsgType::kRts);
BENCHMARK_CAPTURE(BM_WireRejected, short, Corrupt::kShort);
BENCHMARK_CAPTURE(BM_WireRejected, bad_version, Corrupt::kVersion);
BENCHMARK_CAPTURE(BM_WireRejected, negative_tag, Corrupt::kNegativeTag);
BENCHMARK_CAPTURE(BM_WireRejected, bad_space, Corrupt::kSpace);
BENCHMARK_CAPTURE(BM_WireRejected, eager_length, Corrupt::kEagerLength);
BENCHMARK_CAPTURE(BM_WireRejected, bad_type, Corrupt::kType);
BENCHMARK_CAPTURE(BM_WireRejected, rts_range_wraps, Corrupt::kRtsWraps);

}  // namespace
