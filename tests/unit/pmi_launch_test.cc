// Bootstrap under a real launcher's PMI: MPICH's mpiexec (hydra) starts N
// copies with PMI_FD; each bootstraps through rdmx's PMI-1 or PMI-2 client
// (RDMX_BOOTSTRAP picks), checks rank, size and local rank against what the
// launcher put in the environment, and exchanges records of several sizes
// (one larger than a PMI value, so it travels in pieces) twice, as two
// rdmx_init calls in one process would. No RDMA device needed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/bootstrap.h"

namespace {

int fail(int rank, const char *what) {
    std::fprintf(stderr, "FAIL rank %d: %s\n", rank, what);
    return 1;
}

int env_int(const char *n) {
    const char *v = std::getenv(n);
    return v != nullptr ? std::atoi(v) : -1;
}

uint8_t byte_of(int rank, size_t len, size_t i) { return static_cast<uint8_t>(rank * 31 + len * 7 + i * 13); }

}  // namespace

int main(int argc, char **argv) {
    const char *want = argc > 1 ? argv[1] : "PMI-1";
    rdmx::Config cfg;
    if (cfg.load(nullptr) != RDMX_OK) return fail(-1, "config");
    std::unique_ptr<rdmx::Bootstrap> b;
    if (rdmx::bootstrap_create(cfg, &b) != RDMX_OK) return fail(-1, "bootstrap_create");
    const int rank = b->rank(), size = b->size();
    if (std::strcmp(b->name(), want) != 0) return fail(rank, "bootstrap is not the one asked for");
    if (rank != env_int("PMI_RANK") || size != env_int("PMI_SIZE")) return fail(rank, "rank/size disagree with PMI_RANK/PMI_SIZE");
    if (env_int("MPI_LOCALRANKID") >= 0 && b->local_rank() != env_int("MPI_LOCALRANKID"))
        return fail(rank, "local rank disagrees with MPI_LOCALRANKID");
    if (env_int("MPI_LOCALNRANKS") >= 0 && b->local_size() != env_int("MPI_LOCALNRANKS"))
        return fail(rank, "local size disagrees with MPI_LOCALNRANKS");
    for (size_t len : {size_t{16}, size_t{1}, size_t{3000}, size_t{16}}) {
        std::vector<uint8_t> in(len), out(len * static_cast<size_t>(size), 0);
        for (size_t i = 0; i < len; ++i) in[i] = byte_of(rank, len, i);
        if (b->allgather(in.data(), out.data(), len) != RDMX_OK) return fail(rank, "allgather");
        for (int r = 0; r < size; ++r)
            for (size_t i = 0; i < len; ++i)
                if (out[static_cast<size_t>(r) * len + i] != byte_of(r, len, i)) return fail(rank, "allgather data");
    }
    std::printf("rank %d of %d (local %d) via %s: OK\n", rank, size, b->local_rank(), b->name());
    return 0;
}
