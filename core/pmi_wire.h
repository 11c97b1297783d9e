// The PMI-1 and PMI-2 wire formats, as MPICH's hydra (mpiexec) and Slurm's
// mpi/pmi2 plugin speak them over the socket named by PMI_FD. Pure functions
// (no I/O), so the unit tests and the fuzzer drive them directly.
//
//   PMI-1: one line per message, "cmd=NAME key=value key=value\n".
//   PMI-2: a 6-character decimal length, blank-padded, then
//          that many bytes: "cmd=NAME;key=value;key=value;". A ';' inside a
//          value is written ";;".
// Replies carry "rc=0" on success; anything else is the server's refusal.
// rdmx's own values are hex, so they never need escaping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace rdmx::pmi {

// Longest message either side may send: hydra's and Slurm's own limit.
constexpr size_t kMaxMessage = 64 * 1024;
// The PMI-2 length field.
constexpr size_t kV2LengthField = 6;

enum class Wire : uint8_t { kV1, kV2 };

// A parsed message: its fields in order (cmd first). Views into the text
// it was parsed from, except for PMI-2 values with ";;", kept unescaped in
// `owned` (a deque: its elements never move, so the views stay valid).
struct Message {
    std::vector<std::pair<std::string_view, std::string_view>> fields;
    std::deque<std::string> owned;
    std::string_view get(std::string_view key) const;  // "" when absent
    bool has(std::string_view key) const;
    std::string_view cmd() const { return get("cmd"); }
    // rc=0 (or no rc at all, as hydra's barrier_out) means success.
    bool ok() const;
};

enum class ParseError : uint8_t { kOk, kEmpty, kTooLong, kNoCmd, kBadField, kBadEscape };
const char *parse_error_name(ParseError e);

// PMI-1: `line` without its newline. PMI-2: the body after the length field.
ParseError parse(Wire w, std::string_view text, Message *out);

// Formats a command: `fields` as key, value pairs after "cmd=NAME".
// PMI-1 ends with '\n'; PMI-2 starts with the length field.
std::string format(Wire w, std::string_view cmd,
                   std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

// Reads the PMI-2 length field; false unless 6 bytes of digits padded with
// blanks on either side, giving a length in [1, kMaxMessage].
bool parse_v2_length(std::string_view field, size_t *len);

std::string hex_encode(const void *data, size_t len);
// False on odd length or a non-hex digit; `out` gets len/2 bytes.
bool hex_decode(std::string_view hex, std::vector<uint8_t> *out);

// PMI_process_mapping, "(vector,(start,nodes,ranks_per_node),...)": node
// index of each of `size` ranks (the blocks repeat when they cover fewer).
// False on a malformed mapping.
bool parse_process_mapping(std::string_view map, int size, std::vector<int> *node_of_rank);

}  // namespace rdmx::pmi
