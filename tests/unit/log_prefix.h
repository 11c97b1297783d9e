// Parses rdmx's log prefix, "[rdmx HOST:RANK:PID SECONDS.MICROS] ", and counts
// strings in captured output, for the log and config tests (by hand: GCC
// 12's std::regex trips -Werror in sanitizer builds).
#pragma once
#include <cctype>
#include <string>
#include <string_view>

namespace rdmx::test {

struct LogPrefix {
    std::string host, rank, pid, seconds;  // rank "-" before the bootstrap
    std::string rest;                      // "LEVEL: message"
};

// Takes chars up to `stop` (at least one, none of them ' ' or ':') off s.
inline bool take_until(std::string_view &s, char stop, std::string *out) {
    const size_t end = s.find(stop);
    if (end == 0 || end == std::string_view::npos) return false;
    *out = s.substr(0, end);
    if (out->find_first_of(" :") != std::string::npos) return false;
    s.remove_prefix(end + 1);
    return true;
}

// How many times needle occurs in hay (overlapping occurrences too).
inline size_t count_of(const std::string &hay, const std::string &needle) {
    size_t n = 0;
    for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
    return n;
}

inline bool all_digits(const std::string &s) {
    if (s.empty()) return false;
    for (char c : s)
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
}

inline bool parse_log_prefix(std::string_view line, LogPrefix *p) {
    constexpr std::string_view kOpen = "[rdmx ";
    constexpr size_t kMicroDigits = 6;
    if (line.substr(0, kOpen.size()) != kOpen) return false;
    line.remove_prefix(kOpen.size());
    std::string micros;
    if (!take_until(line, ':', &p->host) || !take_until(line, ':', &p->rank) || !take_until(line, ' ', &p->pid) ||
        !take_until(line, '.', &p->seconds) || !take_until(line, ']', &micros))
        return false;
    if ((p->rank != "-" && !all_digits(p->rank)) || !all_digits(p->pid) || !all_digits(p->seconds) ||
        !all_digits(micros) || micros.size() != kMicroDigits || line.substr(0, 1) != " ")
        return false;
    p->rest = line.substr(1);
    return true;
}

}  // namespace rdmx::test
