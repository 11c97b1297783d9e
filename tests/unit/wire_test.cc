// Wire decoders: valid round trips and every rejection, on exact-size
// buffers (so an over-read shows up under ASan).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/wire.h"

namespace {

using namespace rdmx::wire;

template <typename T>
std::vector<uint8_t> bytes_of(const T &v, size_t total = sizeof(T)) {
    std::vector<uint8_t> b(total, 0);
    std::memcpy(b.data(), &v, std::min(total, sizeof(T)));
    return b;
}

ConnectPriv valid_connect() {
    ConnectPriv c{};
    c.magic = kMagic;
    c.version = kVersion;
    c.length = sizeof(ConnectPriv);
    c.job_key = 0x0123456789abcdefull;
    c.src_rank = 3;
    c.dst_rank = 7;
    c.credit_addr = 0x7f0000001000ull;
    c.credit_rkey = 0xdeadbeef;
    c.credits = 64;
    return c;
}

AcceptPriv valid_accept() {
    AcceptPriv a{};
    a.magic = kMagic;
    a.version = kVersion;
    a.length = sizeof(AcceptPriv);
    a.job_key = 0xfedcba9876543210ull;
    a.src_rank = 7;
    a.credits = 32;
    a.credit_addr = 0x7f0000002000ull;
    a.credit_rkey = 0x12345678;
    a.reserved = 0;
    return a;
}

// ---- connect / accept ---------------------------------------------------------

TEST(WireConnect, ValidRoundTrip) {
    const ConnectPriv in = valid_connect();
    auto b = bytes_of(in);
    ConnectPriv out{};
    ASSERT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kOk);
    EXPECT_EQ(std::memcmp(&in, &out, sizeof(in)), 0);
    EXPECT_EQ(out.src_rank, 3u);
    EXPECT_EQ(out.dst_rank, 7u);
    EXPECT_EQ(out.job_key, 0x0123456789abcdefull);
    EXPECT_EQ(out.credits, 64u);
}

TEST(WireConnect, ZeroPaddedBufferAcceptedLengthFieldAuthoritative) {
    const ConnectPriv in = valid_connect();
    auto b = bytes_of(in, kConnectPrivMax);  // the CM hands over 56 bytes
    ConnectPriv out{};
    ASSERT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kOk);
    EXPECT_EQ(std::memcmp(&in, &out, sizeof(in)), 0);
    // The same padded buffer with a length field naming the padded size is refused.
    ConnectPriv lie = in;
    lie.length = kConnectPrivMax;
    b = bytes_of(lie, kConnectPrivMax);
    EXPECT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kBadLength);
}

TEST(WireConnect, ShortBuffers) {
    ConnectPriv out{};
    EXPECT_EQ(decode_connect(nullptr, 40, &out), DecodeError::kShort);
    auto b = bytes_of(valid_connect());
    for (size_t len = 0; len < 8; ++len) {
        std::vector<uint8_t> s(b.begin(), b.begin() + static_cast<long>(len));
        EXPECT_EQ(decode_connect(s.data(), s.size(), &out), DecodeError::kShort) << len;
    }
    // A valid header whose length field promises more than arrived.
    for (size_t len = 8; len < sizeof(ConnectPriv); ++len) {
        std::vector<uint8_t> s(b.begin(), b.begin() + static_cast<long>(len));
        EXPECT_EQ(decode_connect(s.data(), s.size(), &out), DecodeError::kShort) << len;
    }
}

TEST(WireConnect, BadMagicVersionLength) {
    ConnectPriv out{};
    ConnectPriv c = valid_connect();
    c.magic = 0x12345678;
    auto b = bytes_of(c);
    EXPECT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kBadMagic);
    c = valid_connect();
    c.magic = __builtin_bswap32(kMagic);  // other endianness
    b = bytes_of(c);
    EXPECT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kBadMagic);
    for (uint16_t v : {uint16_t{0}, uint16_t{2}, uint16_t{0xffff}}) {
        c = valid_connect();
        c.version = v;
        b = bytes_of(c);
        EXPECT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kBadVersion) << v;
    }
    for (uint16_t l : {uint16_t{0}, uint16_t{8}, uint16_t{39}, uint16_t{41}, uint16_t{0xffff}}) {
        c = valid_connect();
        c.length = l;
        b = bytes_of(c, kConnectPrivMax);
        EXPECT_EQ(decode_connect(b.data(), b.size(), &out), DecodeError::kBadLength) << l;
    }
}

TEST(WireAccept, ValidRoundTripAndPadding) {
    const AcceptPriv in = valid_accept();
    for (size_t total : {sizeof(AcceptPriv), size_t{64}, kAcceptPrivMax}) {
        auto b = bytes_of(in, total);
        AcceptPriv out{};
        ASSERT_EQ(decode_accept(b.data(), b.size(), &out), DecodeError::kOk) << total;
        EXPECT_EQ(std::memcmp(&in, &out, sizeof(in)), 0);
    }
}

TEST(WireAccept, Failures) {
    AcceptPriv out{};
    auto b = bytes_of(valid_accept());
    EXPECT_EQ(decode_accept(b.data(), 7, &out), DecodeError::kShort);
    EXPECT_EQ(decode_accept(b.data(), sizeof(AcceptPriv) - 1, &out), DecodeError::kShort);
    EXPECT_EQ(decode_accept(nullptr, 0, &out), DecodeError::kShort);
    AcceptPriv a = valid_accept();
    a.magic = 0;
    b = bytes_of(a);
    EXPECT_EQ(decode_accept(b.data(), b.size(), &out), DecodeError::kBadMagic);
    a = valid_accept();
    a.version = kVersion + 1;
    b = bytes_of(a);
    EXPECT_EQ(decode_accept(b.data(), b.size(), &out), DecodeError::kBadVersion);
    a = valid_accept();
    a.length = sizeof(AcceptPriv) + 8;
    b = bytes_of(a, kAcceptPrivMax);
    EXPECT_EQ(decode_accept(b.data(), b.size(), &out), DecodeError::kBadLength);
}

// ---- reject ------------------------------------------------------------------

TEST(WireReject, ValidRoundTrip) {
    RejectPriv in{kMagic, kVersion, static_cast<uint16_t>(RejectReason::kDuplicateRank)};
    for (size_t total : {sizeof(RejectPriv), size_t{56}}) {
        auto b = bytes_of(in, total);
        RejectPriv out{};
        ASSERT_EQ(decode_reject(b.data(), b.size(), &out), DecodeError::kOk);
        EXPECT_EQ(out.reason, static_cast<uint16_t>(RejectReason::kDuplicateRank));
        EXPECT_EQ(out.magic, kMagic);
    }
}

TEST(WireReject, Failures) {
    RejectPriv out{};
    RejectPriv in{kMagic, kVersion, 1};
    auto b = bytes_of(in);
    for (size_t len = 0; len < sizeof(RejectPriv); ++len)
        EXPECT_EQ(decode_reject(b.data(), len, &out), DecodeError::kShort) << len;
    EXPECT_EQ(decode_reject(nullptr, 8, &out), DecodeError::kShort);
    in.magic = kMagic + 1;
    b = bytes_of(in);
    EXPECT_EQ(decode_reject(b.data(), b.size(), &out), DecodeError::kBadMagic);
    in = {kMagic, 0, 1};
    b = bytes_of(in);
    EXPECT_EQ(decode_reject(b.data(), b.size(), &out), DecodeError::kBadVersion);
}

TEST(WireReject, ReasonNames) {
    std::set<std::string> names;
    for (uint16_t r = 0; r <= 9; ++r) {
        const char *n = reject_reason_name(static_cast<RejectReason>(r));
        ASSERT_NE(n, nullptr);
        EXPECT_STRNE(n, "unknown reason") << r;
        names.insert(n);
    }
    EXPECT_EQ(names.size(), 10u) << "every reason has its own name";
    EXPECT_STREQ(reject_reason_name(static_cast<RejectReason>(1000)), "unknown reason");
}

// ---- message header ------------------------------------------------------------

constexpr size_t kMaxEager = 8192;

MsgHdr hdr(MsgType type, uint64_t length, int32_t tag = 7, uint8_t space = 0) {
    MsgHdr h{};
    h.version = kVersion;
    h.type = static_cast<uint8_t>(type);
    h.space = space;
    h.tag = tag;
    h.credits = 11;
    h.seq = 42;
    h.length = length;
    h.cookie = 0xc00c1e;
    return h;
}

std::vector<uint8_t> message(const MsgHdr &h, size_t body_len, uint8_t fill = 0xab) {
    std::vector<uint8_t> b(sizeof(MsgHdr) + body_len, fill);
    std::memcpy(b.data(), &h, sizeof(h));
    return b;
}

TEST(WireMsg, EagerRoundTrip) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{100}, kMaxEager}) {
        MsgHdr in = hdr(MsgType::kEager, n);
        auto b = message(in, n);
        MsgHdr out{};
        ASSERT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kOk) << n;
        EXPECT_EQ(std::memcmp(&in, &out, sizeof(in)), 0);
    }
}

TEST(WireMsg, EagerLengthMismatchAndOverMax) {
    MsgHdr out{};
    auto b = message(hdr(MsgType::kEager, 10), 11);
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadLength);
    b = message(hdr(MsgType::kEager, 12), 11);
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadLength);
    b = message(hdr(MsgType::kEager, kMaxEager + 1), kMaxEager + 1);
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadLength);
    // The same message is fine for a receiver with a larger limit.
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager + 1, &out), DecodeError::kOk);
    b = message(hdr(MsgType::kEager, 1), 1);
    EXPECT_EQ(decode_msg(b.data(), b.size(), 0, &out), DecodeError::kBadLength);
}

// decode_msg passes a good eager header on three word compares and sends
// everything else through decode_msg_fields: the two must agree on every
// header, or the fast check lets through what the field checks reject.
// Each case flips bits of a valid header (every bit alone, then random
// pairs and bytes) and varies the body length around the header's.
TEST(WireMsg, FastCheckAgreesWithFieldChecks) {
    constexpr size_t kLimit = 64;
    auto agree = [&](const MsgHdr &h, size_t body) {
        auto b = message(h, body);
        MsgHdr out{};
        const DecodeError fast = decode_msg(b.data(), b.size(), kLimit, &out);
        const DecodeError full = decode_msg_fields(b.size(), kLimit, &h);
        return fast == full;
    };
    for (MsgType t : {MsgType::kEager, MsgType::kRts, MsgType::kFin, MsgType::kCredit}) {
        const MsgHdr base = hdr(t, 8, 5, 2);
        for (size_t bit = 0; bit < sizeof(MsgHdr) * 8; ++bit) {
            MsgHdr h = base;
            reinterpret_cast<uint8_t *>(&h)[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
            for (size_t body : {size_t{0}, size_t{7}, size_t{8}, size_t{9}, kLimit, kLimit + 1})
                ASSERT_TRUE(agree(h, body)) << "type " << int(t) << " bit " << bit << " body " << body;
        }
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;  // xorshift: the same cases every run
    auto next = [&] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
    for (int i = 0; i < 200000; ++i) {
        MsgHdr h = hdr(MsgType::kEager, next() % (kLimit + 2), static_cast<int32_t>(next() % 100),
                       static_cast<uint8_t>(next() % 4));
        auto *p = reinterpret_cast<uint8_t *>(&h);
        for (int k = static_cast<int>(next() % 3); k > 0; --k) p[next() % sizeof(h)] = static_cast<uint8_t>(next());
        const size_t body = next() % 2 && h.length <= kLimit + 1 ? h.length : next() % (kLimit + 2);
        ASSERT_TRUE(agree(h, body)) << "case " << i;
    }
}

TEST(WireMsg, ShortBuffer) {
    MsgHdr out{};
    auto b = message(hdr(MsgType::kCredit, 0), 0);
    for (size_t len = 0; len < sizeof(MsgHdr); ++len)
        EXPECT_EQ(decode_msg(b.data(), len, kMaxEager, &out), DecodeError::kShort) << len;
    EXPECT_EQ(decode_msg(nullptr, 64, kMaxEager, &out), DecodeError::kShort);
}

TEST(WireMsg, BadVersion) {
    MsgHdr out{};
    for (uint8_t v : {uint8_t{0}, uint8_t{2}, uint8_t{255}}) {
        MsgHdr h = hdr(MsgType::kCredit, 0);
        h.version = v;
        auto b = message(h, 0);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadVersion) << int(v);
    }
}

TEST(WireMsg, UnknownType) {
    MsgHdr out{};
    for (uint8_t t : {uint8_t{0}, uint8_t{8}, uint8_t{0x80}, uint8_t{255}}) {
        MsgHdr h = hdr(MsgType::kEager, 0);
        h.type = t;
        auto b = message(h, 0);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadType) << int(t);
    }
}

TEST(WireMsg, NegativeTagAndSpaceOutOfRange) {
    MsgHdr out{};
    for (int32_t tag : {-1, -2, std::numeric_limits<int32_t>::min()}) {
        auto b = message(hdr(MsgType::kEager, 4, tag), 4);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadField) << tag;
    }
    auto b = message(hdr(MsgType::kEager, 4, std::numeric_limits<int32_t>::max()), 4);
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kOk);
    for (uint8_t s = 0; s <= kMaxSpace; ++s) {
        b = message(hdr(MsgType::kEager, 4, 1, s), 4);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kOk) << int(s);
    }
    for (uint8_t s : {uint8_t{kMaxSpace + 1}, uint8_t{255}}) {
        b = message(hdr(MsgType::kEager, 4, 1, s), 4);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadField) << int(s);
    }
}

TEST(WireMsg, BodySizesPerType) {
    MsgHdr out{};
    auto b = message(hdr(MsgType::kRts, 1 << 20), sizeof(RndvDesc));
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kOk);
    for (size_t n : {sizeof(RndvDesc) - 1, sizeof(RndvDesc) + 1, size_t{0}}) {
        b = message(hdr(MsgType::kRts, 1 << 20), n);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadLength) << n;
    }
    b = message(hdr(MsgType::kFin, 0), sizeof(FinBody));
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kOk);
    for (size_t n : {sizeof(FinBody) - 1, sizeof(FinBody) + 1, size_t{0}}) {
        b = message(hdr(MsgType::kFin, 0), n);
        EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadLength) << n;
    }
    b = message(hdr(MsgType::kCredit, 0), 0);
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kOk);
    b = message(hdr(MsgType::kCredit, 0), 1);
    EXPECT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &out), DecodeError::kBadLength);
}

// ---- rendezvous descriptor and FIN ------------------------------------------

std::vector<uint8_t> rts(uint64_t hdr_len, uint64_t addr, uint64_t len, uint32_t rkey = 0x55) {
    RndvDesc d{addr, len, rkey, 0};
    auto b = message(hdr(MsgType::kRts, hdr_len), sizeof(d));
    std::memcpy(b.data() + sizeof(MsgHdr), &d, sizeof(d));
    return b;
}

TEST(WireRts, ValidRoundTrip) {
    auto b = rts(1 << 20, 0x7f0012340000ull, 1 << 20, 0xabcd);
    MsgHdr h{};
    ASSERT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &h), DecodeError::kOk);
    RndvDesc d{};
    ASSERT_EQ(decode_rts(b.data(), b.size(), h, &d), DecodeError::kOk);
    EXPECT_EQ(d.addr, 0x7f0012340000ull);
    EXPECT_EQ(d.length, uint64_t{1} << 20);
    EXPECT_EQ(d.rkey, 0xabcdu);
}

TEST(WireRts, Failures) {
    RndvDesc d{};
    // Wrong message size.
    auto b = rts(4096, 0x1000, 4096);
    MsgHdr h = hdr(MsgType::kRts, 4096);
    EXPECT_EQ(decode_rts(b.data(), b.size() - 1, h, &d), DecodeError::kBadLength);
    EXPECT_EQ(decode_rts(b.data(), sizeof(MsgHdr), h, &d), DecodeError::kBadLength);
    std::vector<uint8_t> longer = b;
    longer.push_back(0);
    EXPECT_EQ(decode_rts(longer.data(), longer.size(), h, &d), DecodeError::kBadLength);
    // Descriptor length disagrees with the header.
    b = rts(4096, 0x1000, 4095);
    EXPECT_EQ(decode_rts(b.data(), b.size(), h, &d), DecodeError::kBadLength);
    // Zero length is a synchronous send of an empty message: fine.
    b = rts(0, 0x1000, 0);
    EXPECT_EQ(decode_rts(b.data(), b.size(), hdr(MsgType::kRts, 0), &d), DecodeError::kOk);
    // Address range wraps.
    const uint64_t max = std::numeric_limits<uint64_t>::max();
    b = rts(2, max, 2);
    EXPECT_EQ(decode_rts(b.data(), b.size(), hdr(MsgType::kRts, 2), &d), DecodeError::kBadField);
    b = rts(4096, max - 100, 4096);
    EXPECT_EQ(decode_rts(b.data(), b.size(), hdr(MsgType::kRts, 4096), &d), DecodeError::kBadField);
    b = rts(max, 1, max);
    EXPECT_EQ(decode_rts(b.data(), b.size(), hdr(MsgType::kRts, max), &d), DecodeError::kBadField);
    // The last range that does not wrap is fine.
    b = rts(100, max - 100, 100);
    EXPECT_EQ(decode_rts(b.data(), b.size(), hdr(MsgType::kRts, 100), &d), DecodeError::kOk);
}

TEST(WireFin, RoundTripAndSize) {
    FinBody f{static_cast<int32_t>(-2), 0};
    auto b = message(hdr(MsgType::kFin, 0), sizeof(f));
    std::memcpy(b.data() + sizeof(MsgHdr), &f, sizeof(f));
    MsgHdr h{};
    ASSERT_EQ(decode_msg(b.data(), b.size(), kMaxEager, &h), DecodeError::kOk);
    FinBody out{};
    ASSERT_EQ(decode_fin(b.data(), b.size(), &out), DecodeError::kOk);
    EXPECT_EQ(out.status, -2);
    EXPECT_EQ(decode_fin(b.data(), b.size() - 1, &out), DecodeError::kBadLength);
    EXPECT_EQ(decode_fin(b.data(), sizeof(MsgHdr), &out), DecodeError::kBadLength);
    std::vector<uint8_t> longer = b;
    longer.push_back(0);
    EXPECT_EQ(decode_fin(longer.data(), longer.size(), &out), DecodeError::kBadLength);
}

TEST(WireNames, EveryDecodeErrorHasADistinctName) {
    std::set<std::string> names;
    for (int e = 0; e <= static_cast<int>(DecodeError::kBadField); ++e) {
        const char *n = decode_error_name(static_cast<DecodeError>(e));
        ASSERT_NE(n, nullptr);
        EXPECT_STRNE(n, "?") << e;
        names.insert(n);
    }
    EXPECT_EQ(names.size(), static_cast<size_t>(DecodeError::kBadField) + 1);
}

}  // namespace

namespace rdmx::wire {
TEST(WireCts, RangeAndFlagsAreChecked) {
    MsgHdr h{kVersion, static_cast<uint8_t>(MsgType::kCts), 0, 0, 0, 0, 0, 42, 7};
    auto msg = [&](RndvDesc d) {
        std::vector<char> b(sizeof(h) + sizeof(d));
        std::memcpy(b.data(), &h, sizeof(h));
        std::memcpy(b.data() + sizeof(h), &d, sizeof(d));
        return b;
    };
    RndvDesc out{};
    MsgHdr hout{};
    auto ok = msg({0x1000, 4096, 0x55, 0});
    EXPECT_EQ(decode_msg(ok.data(), ok.size(), 8192, &hout), DecodeError::kOk);
    EXPECT_EQ(decode_cts(ok.data(), ok.size(), &out), DecodeError::kOk);
    EXPECT_EQ(out.rkey, 0x55u);
    auto empty = msg({0, 0, 0, 0});  // the receive holds nothing: nothing to write
    EXPECT_EQ(decode_cts(empty.data(), empty.size(), &out), DecodeError::kOk);
    auto wrap = msg({~0ull - 10, 100, 1, 0});
    EXPECT_EQ(decode_cts(wrap.data(), wrap.size(), &out), DecodeError::kBadField);
    auto flags = msg({0x1000, 1, 1, 2});
    EXPECT_EQ(decode_cts(flags.data(), flags.size(), &out), DecodeError::kBadField);
    EXPECT_EQ(decode_cts(ok.data(), ok.size() - 1, &out), DecodeError::kBadLength);
    // An RTS may carry only the put flag.
    h.type = static_cast<uint8_t>(MsgType::kRts);
    h.length = 64;
    auto put = msg({0x1000, 64, 0, kDescPut});
    EXPECT_EQ(decode_rts(put.data(), put.size(), h, &out), DecodeError::kOk);
    auto odd = msg({0x1000, 64, 0, 4});
    EXPECT_EQ(decode_rts(odd.data(), odd.size(), h, &out), DecodeError::kBadField);
}
}  // namespace rdmx::wire
