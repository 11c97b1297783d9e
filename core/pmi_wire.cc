#include "core/pmi_wire.h"

#include <cstdio>

namespace rdmx::pmi {

std::string_view Message::get(std::string_view key) const {
    for (const auto &f : fields)
        if (f.first == key) return f.second;
    return {};
}

bool Message::has(std::string_view key) const {
    for (const auto &f : fields)
        if (f.first == key) return true;
    return false;
}

bool Message::ok() const {
    if (!has("rc")) return true;
    std::string_view rc = get("rc");
    return rc == "0";
}

const char *parse_error_name(ParseError e) {
    switch (e) {
    case ParseError::kOk: return "ok";
    case ParseError::kEmpty: return "empty message";
    case ParseError::kTooLong: return "message too long";
    case ParseError::kNoCmd: return "no cmd= first";
    case ParseError::kBadField: return "field without '=' or with an empty key";
    case ParseError::kBadEscape: return "bad ';' escape";
    }
    return "?";
}

namespace {

// One "key=value" token; the key must be non-empty and hold no '='.
bool split_field(std::string_view tok, std::pair<std::string_view, std::string_view> *kv) {
    size_t eq = tok.find('=');
    if (eq == std::string_view::npos || eq == 0) return false;
    *kv = {tok.substr(0, eq), tok.substr(eq + 1)};
    return true;
}

ParseError parse_v1(std::string_view text, Message *out) {
    size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && text[i] == ' ') ++i;
        if (i == text.size()) break;
        size_t end = text.find(' ', i);
        if (end == std::string_view::npos) end = text.size();
        std::pair<std::string_view, std::string_view> kv;
        if (!split_field(text.substr(i, end - i), &kv)) return ParseError::kBadField;
        out->fields.push_back(kv);
        i = end;
    }
    return ParseError::kOk;
}

// PMI-2 fields end with ';'; ";;" inside a value stands for one ';'.
ParseError parse_v2(std::string_view text, Message *out) {
    size_t i = 0;
    while (i < text.size()) {
        size_t eq = text.find('=', i);
        size_t semi = text.find(';', i);
        if (eq == std::string_view::npos || eq == i || (semi != std::string_view::npos && semi < eq))
            return ParseError::kBadField;
        std::string_view key = text.substr(i, eq - i);
        bool escaped = false;
        size_t j = eq + 1;
        for (;; ++j) {
            if (j == text.size()) return ParseError::kBadEscape;  // a field must end with ';'
            if (text[j] != ';') continue;
            if (j + 1 < text.size() && text[j + 1] == ';') {
                escaped = true;
                ++j;
                continue;
            }
            break;
        }
        std::string_view raw = text.substr(eq + 1, j - eq - 1);
        if (escaped) {
            std::string v;
            for (size_t k = 0; k < raw.size(); ++k) {
                v.push_back(raw[k]);
                if (raw[k] == ';') ++k;  // the pair's second ';'
            }
            out->owned.push_back(std::move(v));
            out->fields.emplace_back(key, std::string_view(out->owned.back()));
        } else {
            out->fields.emplace_back(key, raw);
        }
        i = j + 1;
    }
    return ParseError::kOk;
}

}  // namespace

ParseError parse(Wire w, std::string_view text, Message *out) {
    out->fields.clear();
    out->owned.clear();
    if (text.empty()) return ParseError::kEmpty;
    if (text.size() > kMaxMessage) return ParseError::kTooLong;
    ParseError e = w == Wire::kV1 ? parse_v1(text, out) : parse_v2(text, out);
    if (e != ParseError::kOk) return e;
    if (out->fields.empty() || out->fields[0].first != "cmd" || out->fields[0].second.empty())
        return ParseError::kNoCmd;
    return ParseError::kOk;
}

namespace {

// PMI-2 doubles every ';' inside a name or value.
void append_escaped(Wire w, std::string *out, std::string_view v) {
    for (char ch : v) {
        out->push_back(ch);
        if (w == Wire::kV2 && ch == ';') out->push_back(';');
    }
}

}  // namespace

std::string format(Wire w, std::string_view cmd,
                   std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
    std::string body = "cmd=";
    append_escaped(w, &body, cmd);
    if (w == Wire::kV2) body.push_back(';');
    for (const auto &f : fields) {
        if (w == Wire::kV1) body.push_back(' ');
        body.append(f.first);
        body.push_back('=');
        append_escaped(w, &body, f.second);
        if (w == Wire::kV2) body.push_back(';');
    }
    if (w == Wire::kV1) {
        body.push_back('\n');
        return body;
    }
    char len[kV2LengthField + 1];
    std::snprintf(len, sizeof(len), "%6zu", body.size());
    return std::string(len, kV2LengthField) + body;
}

bool parse_v2_length(std::string_view field, size_t *len) {
    if (field.size() != kV2LengthField) return false;
    size_t i = 0, v = 0;
    while (i < field.size() && field[i] == ' ') ++i;  // hydra right-aligns, MPICH's client left-aligns
    const size_t first = i;
    for (; i < field.size() && field[i] >= '0' && field[i] <= '9'; ++i) v = v * 10 + static_cast<size_t>(field[i] - '0');
    if (i == first) return false;
    for (; i < field.size(); ++i)
        if (field[i] != ' ') return false;
    if (v == 0 || v > kMaxMessage) return false;
    *len = v;
    return true;
}

std::string hex_encode(const void *data, size_t len) {
    static const char kDigits[] = "0123456789abcdef";
    std::string s(len * 2, '0');
    const auto *p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < len; ++i) {
        s[2 * i] = kDigits[p[i] >> 4];
        s[2 * i + 1] = kDigits[p[i] & 15];
    }
    return s;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool hex_decode(std::string_view hex, std::vector<uint8_t> *out) {
    if (hex.size() % 2 != 0) return false;
    out->resize(hex.size() / 2);
    for (size_t i = 0; i < out->size(); ++i) {
        int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    return true;
}

namespace {

// Reads a non-negative decimal at `s[*i]`, at most `limit`.
bool read_int(std::string_view s, size_t *i, long limit, long *v) {
    size_t j = *i;
    long x = 0;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
        x = x * 10 + (s[j] - '0');
        if (x > limit) return false;
        ++j;
    }
    if (j == *i) return false;
    *i = j;
    *v = x;
    return true;
}

bool expect(std::string_view s, size_t *i, char c) {
    if (*i >= s.size() || s[*i] != c) return false;
    ++*i;
    return true;
}

}  // namespace

bool parse_process_mapping(std::string_view map, int size, std::vector<int> *node_of_rank) {
    constexpr std::string_view kHead = "(vector";
    constexpr long kLimit = 1 << 24;  // nodes or ranks per block: far beyond any machine
    if (size <= 0 || map.substr(0, kHead.size()) != kHead) return false;
    struct Block { long start, nodes, ppn; };
    std::vector<Block> blocks;
    size_t i = kHead.size();
    while (i < map.size() && map[i] == ',') {
        ++i;
        Block b{};
        if (!expect(map, &i, '(') || !read_int(map, &i, kLimit, &b.start) || !expect(map, &i, ',') ||
            !read_int(map, &i, kLimit, &b.nodes) || !expect(map, &i, ',') || !read_int(map, &i, kLimit, &b.ppn) ||
            !expect(map, &i, ')') || b.nodes == 0 || b.ppn == 0)
            return false;
        blocks.push_back(b);
    }
    if (!expect(map, &i, ')') || i != map.size() || blocks.empty()) return false;
    node_of_rank->assign(static_cast<size_t>(size), 0);
    size_t r = 0;
    while (r < static_cast<size_t>(size))  // the pattern repeats over the ranks it does not cover
        for (const Block &b : blocks)
            for (long n = 0; n < b.nodes; ++n)
                for (long k = 0; k < b.ppn && r < static_cast<size_t>(size); ++k)
                    (*node_of_rank)[r++] = static_cast<int>(b.start + n);
    return true;
}

}  // namespace rdmx::pmi
