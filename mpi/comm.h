// Communicators of the MPI layer: an MPI_Comm handle names a Comm, which
// wraps an rdmx communicator (a derived rdmx_context_h) and carries what MPI
// adds on top: the error handler, the name, the group and the attributes.
#pragma once

#include <rdmx/rdmx.h>

#include <atomic>
#include <string>
#include <vector>

#include "abi.h"

namespace rdmx::mpi {

struct CommAttrs;   // the attribute table (comm.cc)

struct Comm {
    rdmx_context_h ctx = nullptr;         // rdmx's communicator (world: the root context)
    int rank = 0;
    int size = 0;
    MPI_Errhandler errhandler = MPI_ERRORS_ARE_FATAL;
    std::vector<int> world_ranks;         // member i is world rank world_ranks[i] (the group)
    std::string name;
    CommAttrs *attrs = nullptr;           // owned; null until the first attribute is set
};

// The table behind comm_get (comm_core.cc owns it): slot 0 is WORLD, 1
// SELF, the rest communicators made at run time, whose handles are MPICH's
// indirect kind 0x84000000 | slot. Every point-to-point call looks its
// communicator up here, so the lookup is inline: one atomic load, no lock.
namespace comm_table {
constexpr int kWorldSlot = 0;
constexpr int kSelfSlot = 1;
constexpr int kFirstDynamicSlot = 2;
constexpr int kMaxComms = 4096;            // rdmx's own limit on live communicators
constexpr MPI_Comm kDynamicKind = static_cast<MPI_Comm>(0x84000000);
constexpr MPI_Comm kSlotMask = 0x0000ffff;
extern std::atomic<Comm *> g_slots[kMaxComms];

inline int slot_of(MPI_Comm h)
{
    if (h == MPI_COMM_WORLD) return kWorldSlot;
    if (h == MPI_COMM_SELF) return kSelfSlot;
    if ((h & ~kSlotMask) != kDynamicKind) return -1;
    int s = h & kSlotMask;
    return s >= kFirstDynamicSlot && s < kMaxComms ? s : -1;
}
}  // namespace comm_table

// The Comm a handle names; nullptr for MPI_COMM_NULL, a freed communicator,
// or a value that never was a communicator handle.
inline Comm *comm_get(MPI_Comm handle)
{
    // MPI_COMM_WORLD first, as one load from a fixed address: most calls name it.
    if (__builtin_expect(handle == MPI_COMM_WORLD, 1))
        return comm_table::g_slots[comm_table::kWorldSlot].load(std::memory_order_acquire);
    const int s = comm_table::slot_of(handle);
    return s < 0 ? nullptr : comm_table::g_slots[s].load(std::memory_order_acquire);
}

// Give a new Comm (owning ctx) a handle (MPI_COMM_NULL when the table is
// full); comm_release frees the rdmx communicator (unless it is the world's
// root context), the Comm and the handle. Clear the attributes first.
MPI_Comm comm_register(Comm *comm);
void comm_release(MPI_Comm handle);

// MPI_COMM_WORLD over rdmx's root context and MPI_COMM_SELF (a split of it):
// called once by MPI_Init/Init_thread after rdmx_init; comm_teardown frees
// every communicator still registered, before rdmx_finalize.
int comm_setup(rdmx_context_h world);
void comm_teardown();

// Attributes (comm_attr.cc): copy callbacks run by MPI_Comm_dup (from -> to),
// delete callbacks by MPI_Comm_free and MPI_Finalize; both return an MPI code.
int comm_attrs_copy(MPI_Comm old_handle, Comm *from, MPI_Comm new_handle, Comm *to);
int comm_attrs_clear(MPI_Comm handle, Comm *c);
// Frees what comm_attrs_clear left behind (a delete callback failed) without
// running callbacks: for a communicator that goes anyway (MPI_Finalize, a
// failed dup), so its table is not leaked.
void comm_attrs_drop(Comm *c);

}  // namespace rdmx::mpi
