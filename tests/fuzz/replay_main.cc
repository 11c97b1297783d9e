// Corpus regression without libFuzzer: every seed under <corpus>/<target>/
// goes through its target, which must accept exactly what the file name says,
// and through the other targets too (their invariants still apply).
//
// Seed names start with the decoders that must accept the bytes, then '_':
//   c connect, a accept, r reject    (fuzz_connect_priv)
//   m msg header, R rts, F fin       (fuzz_msg_hdr, fuzz_rndv_desc)
//   p PMI-1, P PMI-2, M mapping      (fuzz_pmi)
//   s sm slot, q sm pipelined request, g sm segment header (fuzz_sm_slot)
// "none_" means every decoder of that target refuses them.
//
// Usage: rdmx_fuzz_replay <corpus dir> [min seeds per target]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz_common.h"

namespace fs = std::filesystem;

namespace {

struct Target {
    const char *name;
    unsigned (*run)(const uint8_t *, size_t);
};

const Target kTargets[] = {
    {"fuzz_connect_priv", rdmx_fuzz::connect_priv},
    {"fuzz_msg_hdr", rdmx_fuzz::msg_hdr},
    {"fuzz_rndv_desc", rdmx_fuzz::rndv_desc},
    {"fuzz_pmi", rdmx_fuzz::pmi},
    {"fuzz_sm_slot", rdmx_fuzz::sm_slot},
};

bool expected_mask(const std::string &file, unsigned *out) {
    const auto us = file.find('_');
    if (us == std::string::npos || us == 0) return false;
    const std::string letters = file.substr(0, us);
    unsigned m = 0;
    if (letters == "none") {
        *out = 0;
        return true;
    }
    for (char ch : letters) {
        switch (ch) {
        case 'c': m |= rdmx_fuzz::kConnect; break;
        case 'a': m |= rdmx_fuzz::kAccept; break;
        case 'r': m |= rdmx_fuzz::kReject; break;
        case 'm': m |= rdmx_fuzz::kMsg; break;
        case 'R': m |= rdmx_fuzz::kRts; break;
        case 'F': m |= rdmx_fuzz::kFin; break;
        case 'p': m |= rdmx_fuzz::kPmi1; break;
        case 'P': m |= rdmx_fuzz::kPmi2; break;
        case 'M': m |= rdmx_fuzz::kMapping; break;
        case 's': m |= rdmx_fuzz::kSmSlot; break;
        case 'q': m |= rdmx_fuzz::kSmReq; break;
        case 'g': m |= rdmx_fuzz::kSmSeg; break;
        default: return false;
        }
    }
    *out = m;
    return true;
}

std::string letters_of(unsigned m) {
    std::string s;
    const char *l = "carmRFpPMsqg";
    for (int i = 0; i < 12; ++i)
        if (m & (1u << i)) s += l[i];
    return s.empty() ? "none" : s;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s <corpus dir> [min seeds per target]\n", argv[0]);
        return 2;
    }
    const fs::path root = argv[1];
    const size_t min_seeds = argc > 2 ? std::stoul(argv[2]) : 1;
    int failures = 0;
    size_t total = 0;
    for (const Target &t : kTargets) {
        const fs::path dir = root / t.name;
        std::vector<fs::path> files;
        std::error_code ec;
        for (const auto &e : fs::directory_iterator(dir, ec))
            if (e.is_regular_file()) files.push_back(e.path());
        if (ec) {
            std::fprintf(stderr, "FAIL %s: cannot list %s: %s\n", t.name, dir.c_str(), ec.message().c_str());
            ++failures;
            continue;
        }
        std::sort(files.begin(), files.end());
        if (files.size() < min_seeds) {
            std::fprintf(stderr, "FAIL %s: %zu seeds, expected at least %zu\n", t.name, files.size(), min_seeds);
            ++failures;
        }
        for (const fs::path &p : files) {
            std::ifstream f(p, std::ios::binary);
            const std::vector<char> raw((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            // An exact-size heap copy, so a decoder reading past the end trips ASan.
            std::vector<uint8_t> bytes(raw.begin(), raw.end());
            const std::string name = p.filename().string();
            unsigned want = 0;
            if (!expected_mask(name, &want)) {
                std::fprintf(stderr, "FAIL %s/%s: name does not start with <letters>_ or none_\n", t.name,
                             name.c_str());
                ++failures;
                continue;
            }
            const unsigned got = t.run(bytes.data(), bytes.size());
            if (got != want) {
                std::fprintf(stderr, "FAIL %s/%s: accepted by '%s', expected '%s'\n", t.name, name.c_str(),
                             letters_of(got).c_str(), letters_of(want).c_str());
                ++failures;
            }
            for (const Target &other : kTargets) (void)other.run(bytes.data(), bytes.size());
            ++total;
        }
        std::printf("%s: %zu seeds\n", t.name, files.size());
    }
    std::printf("%zu seeds replayed, %d failures\n", total, failures);
    return failures == 0 ? 0 : 1;
}
