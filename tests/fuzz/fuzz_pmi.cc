// A launcher's PMI reply (core/pmi_wire.h): the PMI-1 and PMI-2 parsers, the
// PMI-2 length field and PMI_process_mapping, on any bytes. What one parse
// accepts must survive format -> parse unchanged.
#include <cstring>
#include <string>
#include <string_view>

#include "core/pmi_wire.h"
#include "fuzz_common.h"

namespace rdmx_fuzz {
namespace {

constexpr const char *kTarget = "fuzz_pmi";
constexpr int kRanks = 8;
using namespace rdmx::pmi;

// Re-formats `m` in wire `w` and parses it again: the fields must match.
void round_trip(Wire w, const Message &m) {
    std::string text = [&] {
        std::string s;
        if (w == Wire::kV1) {
            s = "cmd=" + std::string(m.cmd());
            for (size_t i = 1; i < m.fields.size(); ++i)
                s += " " + std::string(m.fields[i].first) + "=" + std::string(m.fields[i].second);
            return s;
        }
        for (const auto &f : m.fields) {  // the cmd too: it may hold an escaped ';'
            s += std::string(f.first) + "=";
            for (char ch : f.second) s += ch == ';' ? std::string(";;") : std::string(1, ch);
            s += ";";
        }
        return s;
    }();
    Message again;
    RDMX_FUZZ_CHECK(parse(w, text, &again) == ParseError::kOk);
    RDMX_FUZZ_CHECK(again.fields.size() == m.fields.size());
    for (size_t i = 0; i < m.fields.size(); ++i)
        RDMX_FUZZ_CHECK(again.fields[i].first == m.fields[i].first && again.fields[i].second == m.fields[i].second);
}

unsigned one_wire(Wire w, std::string_view text, unsigned bit) {
    Message m;
    const ParseError e = parse(w, text, &m);
    RDMX_FUZZ_CHECK(std::strcmp(parse_error_name(e), "?") != 0);
    if (e != ParseError::kOk) return 0;
    RDMX_FUZZ_CHECK(!m.fields.empty() && m.fields[0].first == "cmd" && !m.cmd().empty());
    for (const auto &f : m.fields) {
        RDMX_FUZZ_CHECK(!f.first.empty() && f.first.find('=') == std::string_view::npos);
        if (w == Wire::kV1) RDMX_FUZZ_CHECK(f.second.find(' ') == std::string_view::npos);
    }
    if (text.find('\n') == std::string_view::npos) round_trip(w, m);
    return bit;
}

}  // namespace

unsigned pmi(const uint8_t *data, size_t size) {
    const std::string_view text(reinterpret_cast<const char *>(data), size);
    unsigned acc = one_wire(Wire::kV1, text, kPmi1) | one_wire(Wire::kV2, text, kPmi2);
    size_t len = 0;
    if (parse_v2_length(text.substr(0, kV2LengthField), &len)) RDMX_FUZZ_CHECK(len >= 1 && len <= kMaxMessage);
    std::vector<int> node;
    if (parse_process_mapping(text, kRanks, &node)) {
        RDMX_FUZZ_CHECK(node.size() == static_cast<size_t>(kRanks));
        for (int n : node) RDMX_FUZZ_CHECK(n >= 0);
        acc |= kMapping;
    }
    std::vector<uint8_t> bytes;
    if (hex_decode(text, &bytes)) RDMX_FUZZ_CHECK(hex_encode(bytes.data(), bytes.size()).size() == size);
    return acc;
}

}  // namespace rdmx_fuzz

#ifndef RDMX_FUZZ_REPLAY
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    (void)rdmx_fuzz::pmi(data, size);
    return 0;
}
#endif
