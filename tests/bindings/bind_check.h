// Checks for the binding tests (rdmx.hpp under mpirun): the first failure
// names rank, case, line and values and exits 1; a machine without an RDMA
// device exits 77 (ctest SKIP). Only the public C++ layer is used.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rdmx/rdmx.hpp"

namespace bt {

inline int g_rank = -1;
inline std::string g_case = "?";

#define BT_CHECK(cond, ...)                                                                          \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            std::fprintf(stderr, "FAIL rank %d [%s] %s:%d: %s: ", bt::g_rank, bt::g_case.c_str(), __FILE__, \
                         __LINE__, #cond);                                                           \
            std::fprintf(stderr, __VA_ARGS__);                                                       \
            std::fprintf(stderr, "\n");                                                              \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

// A Context, or exit 77 when there is no device to run on (the verbs tests
// outside the guest).
inline rdmx::Context open_or_skip(const rdmx_config_t &cfg) {
    try {
        rdmx::Context ctx(cfg);
        g_rank = ctx.rank();
        return ctx;
    } catch (const rdmx::Error &e) {
        if (e.status() == RDMX_ERR_NO_DEVICE) {
            std::fprintf(stderr, "SKIP: no RDMA device (%s)\n", e.what());
            std::exit(77);
        }
        std::fprintf(stderr, "FAIL: %s\n", e.what());
        std::exit(1);
    }
}

// Runs one case; an rdmx::Error escaping it is a failure that names the call.
template <class F>
int run_case(F &&body) {
    try {
        body();
    } catch (const rdmx::Error &e) {
        std::fprintf(stderr, "FAIL rank %d [%s]: rdmx::Error %s (status %d)\n", g_rank, g_case.c_str(), e.what(),
                     e.status());
        return 1;
    }
    return 0;
}

}  // namespace bt
