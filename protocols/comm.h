// Communicators: derived contexts over a subset of the job's ranks that
// share the engine (connections, memory, progress) of the context rdmx_init
// made. The engine speaks engine ranks; a CommView translates a member's
// rank to the engine's and back, and its id (carried in every message
// header) keeps its messages apart in matching.
//
// Handles: the root's handle is the engine itself (rdmx_context); a derived
// handle is the address of a CommView from a process-wide pool whose memory
// is never freed, so a stale handle is still readable and is refused by its
// `alive` flag. resolve() (api_internal.h) tells the two apart by address.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/wire.h"
#include "rdmx/rdmx.h"

struct rdmx_context;

namespace rdmx {

constexpr uint32_t kRootCommId = 0;
constexpr size_t kCommIdWords = wire::kMaxComms / 64;
constexpr int kMaxAttrKeys = 64;

struct Attr {
    void *value = nullptr;
    rdmx_attr_free_fn_t free_fn = nullptr;
};

struct CommView {
    rdmx_context *eng = nullptr;
    uint32_t id = kRootCommId;
    int rank = 0;
    int size = 1;
    std::vector<int> world_of;  // member -> engine rank; empty: identity (the root)
    std::vector<int> comm_of;   // engine rank -> member or -1; empty: identity
    int local_rank = 0;
    int local_size = 1;
    std::atomic<bool> alive{false};
    // Guarded by the engine lock: requests naming this view, and whether it
    // was freed while some were pending (released with the last one).
    size_t live_reqs = 0;
    bool freeing = false;
    // Attributes (rdmx_attr_*), guarded by attr_mu.
    std::mutex attr_mu;
    Attr attrs[kMaxAttrKeys];
    CommView *pool_next = nullptr;

    bool is_root() const { return id == kRootCommId; }
    int to_engine(int r) const { return world_of.empty() ? r : world_of[static_cast<size_t>(r)]; }
    int from_engine(int e) const { return comm_of.empty() || e < 0 ? e : comm_of[static_cast<size_t>(e)]; }
};

// What the engine keeps about its communicators (guarded by `mu`).
struct CommRegistry {
    std::mutex mu;
    uint64_t used[kCommIdWords] = {};   // ids in use on this rank (bit 0: the root)
    std::vector<CommView *> views;      // live derived views (freed by finalize)
    std::vector<uint64_t> node_of;      // engine rank -> node identity (local rank/size)
};

// The pool of derived views (comm.cc).
CommView *comm_view_alloc();
void comm_view_release(CommView *v);
bool comm_pool_owns(const void *p);

}  // namespace rdmx
