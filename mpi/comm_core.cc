// The communicator table: MPI_Comm handles to Comm objects, MPI_COMM_WORLD
// and MPI_COMM_SELF, and MPI_Comm_rank/MPI_Comm_size.
//
// Handles are MPICH's: the two predefined ones are direct handles
// (0x44000000, 0x44000001); a communicator made at run time is an indirect
// handle 0x84000000|slot. Lookup is one atomic load (no lock), because every
// point-to-point call makes one; creating and freeing take a mutex.
#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>

#include "comm.h"
#include "errors.h"
#include "state.h"

namespace rdmx::mpi {
namespace comm_table {
constinit std::atomic<Comm *> g_slots[kMaxComms] = {};
}  // namespace comm_table

namespace {

using namespace comm_table;

// Serialises register/release (lookups take no lock).
std::mutex &table_mu()
{
    static std::mutex mu;
    return mu;
}

MPI_Comm handle_of(int slot)
{
    if (slot == kWorldSlot) return MPI_COMM_WORLD;
    if (slot == kSelfSlot) return MPI_COMM_SELF;
    return kDynamicKind | slot;
}

void release_slot(int s)
{
    Comm *c = g_slots[s].exchange(nullptr, std::memory_order_acq_rel);
    if (!c) return;
    if (c->ctx && s != kWorldSlot) rdmx_comm_free(&c->ctx);
    delete c;   // its attributes went with comm_attrs_clear
}

}  // namespace

MPI_Comm comm_register(Comm *comm)
{
    std::lock_guard<std::mutex> lock(table_mu());
    for (int s = kFirstDynamicSlot; s < kMaxComms; ++s) {
        if (!g_slots[s].load(std::memory_order_relaxed)) {
            g_slots[s].store(comm, std::memory_order_release);
            return handle_of(s);
        }
    }
    return MPI_COMM_NULL;
}

void comm_release(MPI_Comm handle)
{
    int s = slot_of(handle);
    if (s < 0) return;
    std::lock_guard<std::mutex> lock(table_mu());
    release_slot(s);
}

int comm_setup(rdmx_context_h world)
{
    auto *w = new Comm;
    w->ctx = world;
    w->rank = rdmx_rank(world);
    w->size = rdmx_size(world);
    w->world_ranks.resize(static_cast<size_t>(w->size));
    for (int i = 0; i < w->size; ++i) w->world_ranks[static_cast<size_t>(i)] = i;
    w->name = "MPI_COMM_WORLD";
    g_slots[kWorldSlot].store(w, std::memory_order_release);

    // MPI_COMM_SELF: every rank alone, a split of the world by rank.
    rdmx_context_h self = nullptr;
    rdmx_status_t st = rdmx_comm_split(world, w->rank, 0, &self);
    if (st != RDMX_OK)
        return err_raise(MPI_COMM_WORLD, err_from_rdmx(st), "MPI_Init", "creating MPI_COMM_SELF: %s",
                         rdmx_strerror(st));
    auto *s = new Comm;
    s->ctx = self;
    s->rank = 0;
    s->size = 1;
    s->world_ranks = {w->rank};
    s->name = "MPI_COMM_SELF";
    g_slots[kSelfSlot].store(s, std::memory_order_release);
    return MPI_SUCCESS;
}

void comm_teardown()
{
    // MPI: MPI_Finalize first deletes MPI_COMM_SELF's attributes (libraries
    // hang their cleanup there), then the rest go with their communicators.
    // A failing delete callback leaves its attributes; the communicator goes
    // anyway, so they are dropped (not leaked).
    if (Comm *s = comm_get(MPI_COMM_SELF); s && comm_attrs_clear(MPI_COMM_SELF, s) != MPI_SUCCESS)
        comm_attrs_drop(s);
    for (int slot = kMaxComms - 1; slot >= 0; --slot) {
        MPI_Comm h = handle_of(slot);
        if (Comm *c = comm_get(h); c && slot != kSelfSlot && comm_attrs_clear(h, c) != MPI_SUCCESS)
            comm_attrs_drop(c);
    }
    std::lock_guard<std::mutex> lock(table_mu());
    for (int slot = kMaxComms - 1; slot >= 0; --slot) release_slot(slot);
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

RDMXMPI_WEAK(Comm_rank)
RDMXMPI_API int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    Comm *c = running() ? comm_get(comm) : nullptr;
    if (!c) {
        if (int rc = require_running("MPI_Comm_rank")) return rc;
        return err_raise(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_rank", "invalid communicator %#x", comm);
    }
    *rank = c->rank;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Comm_size)
RDMXMPI_API int PMPI_Comm_size(MPI_Comm comm, int *size)
{
    Comm *c = running() ? comm_get(comm) : nullptr;
    if (!c) {
        if (int rc = require_running("MPI_Comm_size")) return rc;
        return err_raise(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_size", "invalid communicator %#x", comm);
    }
    *size = c->size;
    return MPI_SUCCESS;
}
