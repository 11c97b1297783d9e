// Shared by the libFuzzer targets and the corpus replay. Each target is a
// function that runs one input through its decoders, checks invariants that
// must hold for any bytes (aborting on a violation, which both libFuzzer and
// the replay report), and returns which decoders accepted the input.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace rdmx_fuzz {

// Acceptance bits; seed file names spell them as letters (see replay_main.cc).
enum : unsigned {
    kConnect = 1u << 0,  // 'c' decode_connect
    kAccept = 1u << 1,   // 'a' decode_accept
    kReject = 1u << 2,   // 'r' decode_reject
    kMsg = 1u << 3,      // 'm' decode_msg
    kRts = 1u << 4,      // 'R' decode_rts (after decode_msg accepted an RTS)
    kFin = 1u << 5,      // 'F' decode_fin (after decode_msg accepted a FIN)
    kPmi1 = 1u << 6,     // 'p' pmi::parse, PMI-1 line
    kPmi2 = 1u << 7,     // 'P' pmi::parse, PMI-2 body
    kMapping = 1u << 8,  // 'M' pmi::parse_process_mapping
    kSmSlot = 1u << 9,   // 's' sm::decode_slot
    kSmReq = 1u << 10,   // 'q' sm::decode_pipe_req
    kSmSeg = 1u << 11,   // 'g' sm::decode_seg_info
};

unsigned connect_priv(const uint8_t *data, size_t size);
unsigned msg_hdr(const uint8_t *data, size_t size);
unsigned rndv_desc(const uint8_t *data, size_t size);
unsigned pmi(const uint8_t *data, size_t size);
unsigned sm_slot(const uint8_t *data, size_t size);

[[noreturn]] inline void violation(const char *target, const char *what, int line) {
    std::fprintf(stderr, "%s: invariant violated at line %d: %s\n", target, line, what);
    std::abort();
}

}  // namespace rdmx_fuzz

#define RDMX_FUZZ_CHECK(cond)                                                     \
    do {                                                                          \
        if (!(cond)) ::rdmx_fuzz::violation(kTarget, #cond, __LINE__);            \
    } while (0)
