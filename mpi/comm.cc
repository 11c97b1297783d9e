// Communicator management: Comm_dup (+ attribute copy callbacks),
// Comm_dup_with_info, Comm_split, Comm_split_type, Comm_create,
// Comm_create_group, Comm_free (attribute delete callbacks first),
// Comm_compare, Comm_group, Comm_test_inter, Comm_set_name/get_name.
//
// Every new communicator is an rdmx communicator (rdmx_comm_dup or
// rdmx_comm_split over the parent); its group comes from
// rdmx_comm_world_rank, MPI_COMM_WORLD being rdmx's root context.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#include "comm.h"
#include "errors.h"
#include "group.h"

namespace rdmx::mpi {
namespace {

int bad_comm(const char *call, MPI_Comm comm) {
    return err_raise(MPI_COMM_NULL, MPI_ERR_COMM, call, "invalid communicator 0x%x (null, freed, or not a communicator)",
                     static_cast<unsigned>(comm));
}

int rdmx_fail(MPI_Comm comm, const char *call, const char *what, rdmx_status_t st) {
    return err_raise(comm, err_from_rdmx(st), call, "%s failed: %s", what, rdmx_strerror(st));
}

// Wrap a new rdmx communicator (nullptr: this rank joined none) in a Comm
// that inherits the parent's error handler, and give it a handle.
int wrap(MPI_Comm parent_h, const Comm &parent, rdmx_context_h nctx, MPI_Comm *out, const char *call) {
    if (nctx == nullptr) {
        *out = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    std::unique_ptr<Comm> c;
    try {
        c = std::make_unique<Comm>();
        c->ctx = nctx;
        c->rank = rdmx_rank(nctx);
        c->size = rdmx_size(nctx);
        c->errhandler = parent.errhandler;
        c->world_ranks.resize(static_cast<size_t>(c->size));
        for (int i = 0; i < c->size; ++i) c->world_ranks[static_cast<size_t>(i)] = rdmx_comm_world_rank(nctx, i);
    } catch (...) {
        rdmx_comm_free(&nctx);
        return err_raise(parent_h, MPI_ERR_NO_MEM, call, "out of memory");
    }
    Comm *raw = c.get();
    *out = comm_register(raw);
    if (*out == MPI_COMM_NULL) {   // the table is full: the Comm and its context are still ours
        rdmx_comm_free(&raw->ctx);
        return err_raise(parent_h, MPI_ERR_INTERN, call, "no communicator handle left");
    }
    c.release();   // the table owns it now
    return MPI_SUCCESS;
}

int dup(MPI_Comm comm, MPI_Comm *newcomm, const char *call) {
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(call, comm);
    if (newcomm == nullptr) return err_raise(comm, MPI_ERR_ARG, call, "newcomm is NULL");
    rdmx_context_h nctx = nullptr;
    const rdmx_status_t st = rdmx_comm_dup(c->ctx, &nctx);
    if (st != RDMX_OK) return rdmx_fail(comm, call, "rdmx_comm_dup", st);
    int rc = wrap(comm, *c, nctx, newcomm, call);
    if (rc != MPI_SUCCESS) return rc;
    Comm *n = comm_get(*newcomm);
    rc = comm_attrs_copy(comm, c, *newcomm, n);
    if (rc != MPI_SUCCESS) {   // MPI: a failing copy callback fails the dup
        if (comm_attrs_clear(*newcomm, n) != MPI_SUCCESS) comm_attrs_drop(n);
        comm_release(*newcomm);
        *newcomm = MPI_COMM_NULL;
        return err_raise(comm, rc, call, "an attribute copy callback failed (%d)", rc);
    }
    return MPI_SUCCESS;
}

int split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm, const char *call) {
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(call, comm);
    if (newcomm == nullptr) return err_raise(comm, MPI_ERR_ARG, call, "newcomm is NULL");
    if (color < 0 && color != MPI_UNDEFINED)
        return err_raise(comm, MPI_ERR_ARG, call, "color %d is negative (and not MPI_UNDEFINED)", color);
    rdmx_context_h nctx = nullptr;
    const rdmx_status_t st = rdmx_comm_split(c->ctx, color == MPI_UNDEFINED ? RDMX_UNDEFINED : color, key, &nctx);
    if (st != RDMX_OK) return rdmx_fail(comm, call, "rdmx_comm_split", st);
    return wrap(comm, *c, nctx, newcomm, call);
}

// What tells nodes apart, as rdmx sees them: RDMX_NODE_ID when set, else
// the host name and boot id (so a rebooted host or a container with the
// same name is another node).
uint64_t node_hash() {
    std::string id;
    if (const char *e = std::getenv("RDMX_NODE_ID"); e && *e) {
        id = e;
    } else {
        char host[256] = {};
        gethostname(host, sizeof host - 1);
        std::ifstream boot("/proc/sys/kernel/random/boot_id");
        std::string bid;
        std::getline(boot, bid);
        id = std::string(host) + "/" + bid;
    }
    uint64_t h = 1469598103934665603ull;   // FNV-1a
    for (unsigned char ch : id) h = (h ^ ch) * 1099511628211ull;
    return h;
}

// MPI_COMM_TYPE_SHARED: one communicator per node. The colour is the lowest
// parent rank on this node, found from an allgather of node identities.
int split_shared(MPI_Comm comm, Comm *c, int key, MPI_Comm *newcomm, const char *call) {
    const uint64_t mine = node_hash();
    std::vector<uint64_t> all;
    try {
        all.resize(static_cast<size_t>(c->size));
    } catch (...) {
        return err_raise(comm, MPI_ERR_NO_MEM, call, "out of memory");
    }
    const rdmx_status_t st = rdmx_allgather(c->ctx, &mine, sizeof mine, all.data());
    if (st != RDMX_OK) return rdmx_fail(comm, call, "rdmx_allgather of node identities", st);
    const int color = static_cast<int>(std::find(all.begin(), all.end(), mine) - all.begin());
    const int rc = split(comm, color, key, newcomm, call);
    if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) {
        const Comm *n = comm_get(*newcomm);
        if (n->size != rdmx_local_size(c->ctx))
            std::fprintf(stderr, "rdmx MPI: %s: %d ranks share this node by identity but rdmx counts %d local ranks\n",
                         call, n->size, rdmx_local_size(c->ctx));
    }
    return rc;
}

int free_comm(MPI_Comm *comm, const char *call) {
    if (comm == nullptr) return bad_comm(call, MPI_COMM_NULL);
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
        return err_raise(*comm, MPI_ERR_COMM, call, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
    Comm *c = comm_get(*comm);
    if (c == nullptr) return bad_comm(call, *comm);
    // Delete callbacks first: they may still use the communicator.
    const int rc = comm_attrs_clear(*comm, c);
    if (rc != MPI_SUCCESS) return err_raise(*comm, rc, call, "an attribute delete callback failed (%d)", rc);
    comm_release(*comm);
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

// Colour and key of this rank for a communicator over `group` (a subset
// of c's members): its index in the group, or MPI_UNDEFINED outside it.
int group_position(MPI_Comm comm, const Comm &c, MPI_Group group, int *pos, const char *call) {
    std::vector<int> m;
    if (!group_members(group, &m))
        return err_raise(comm, MPI_ERR_GROUP, call, "invalid group 0x%x", static_cast<unsigned>(group));
    *pos = MPI_UNDEFINED;
    for (size_t i = 0; i < m.size(); ++i) {
        if (std::find(c.world_ranks.begin(), c.world_ranks.end(), m[i]) == c.world_ranks.end())
            return err_raise(comm, MPI_ERR_GROUP, call, "world rank %d of the group is not a member of the communicator",
                             m[i]);
        if (m[i] == c.world_ranks[static_cast<size_t>(c.rank)]) *pos = static_cast<int>(i);
    }
    return MPI_SUCCESS;
}

}  // namespace
}  // namespace rdmx::mpi

using namespace rdmx::mpi;

RDMXMPI_WEAK(Comm_dup)
RDMXMPI_API int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) { return dup(comm, newcomm, "MPI_Comm_dup"); }

RDMXMPI_WEAK(Comm_dup_with_info)
RDMXMPI_API int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    (void)info;   // no hint changes what a communicator does here
    return dup(comm, newcomm, "MPI_Comm_dup_with_info");
}

RDMXMPI_WEAK(Comm_split)
RDMXMPI_API int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    return split(comm, color, key, newcomm, "MPI_Comm_split");
}

RDMXMPI_WEAK(Comm_split_type)
RDMXMPI_API int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
    static constexpr const char *kCall = "MPI_Comm_split_type";
    (void)info;
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(kCall, comm);
    if (newcomm == nullptr) return err_raise(comm, MPI_ERR_ARG, kCall, "newcomm is NULL");
    if (split_type == MPI_COMM_TYPE_SHARED) return split_shared(comm, c, key, newcomm, kCall);
    // MPI_UNDEFINED, and the hardware types this library does not model:
    // every rank joins no communicator (MPI allows that for unsupported types).
    if (split_type != MPI_UNDEFINED && split_type != MPI_COMM_TYPE_HW_GUIDED &&
        split_type != MPI_COMM_TYPE_HW_UNGUIDED)
        return err_raise(comm, MPI_ERR_ARG, kCall, "unknown split_type %d", split_type);
    return split(comm, MPI_UNDEFINED, key, newcomm, kCall);
}

RDMXMPI_WEAK(Comm_create)
RDMXMPI_API int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
    static constexpr const char *kCall = "MPI_Comm_create";
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(kCall, comm);
    int pos = MPI_UNDEFINED;
    try {
        const int rc = group_position(comm, *c, group, &pos, kCall);
        if (rc != MPI_SUCCESS) return rc;
    } catch (...) {
        return err_raise(comm, MPI_ERR_NO_MEM, kCall, "out of memory");
    }
    // Members in the group's order: one colour, the key is the position.
    return split(comm, pos == MPI_UNDEFINED ? MPI_UNDEFINED : 0, pos, newcomm, kCall);
}

RDMXMPI_WEAK(Comm_create_group)
RDMXMPI_API int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
    static constexpr const char *kCall = "MPI_Comm_create_group";
    (void)tag;
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(kCall, comm);
    int pos = MPI_UNDEFINED, gsize = 0;
    try {
        const int rc = group_position(comm, *c, group, &pos, kCall);
        if (rc != MPI_SUCCESS) return rc;
        std::vector<int> m;
        group_members(group, &m);
        gsize = static_cast<int>(m.size());
    } catch (...) {
        return err_raise(comm, MPI_ERR_NO_MEM, kCall, "out of memory");
    }
    if (pos == MPI_UNDEFINED)
        return err_raise(comm, MPI_ERR_GROUP, kCall, "the calling process is not a member of the group");
    // rdmx creates communicators collectively over the parent: only a group
    // of all the parent's members has every member calling.
    if (gsize != c->size)
        return err_raise(comm, MPI_ERR_UNSUPPORTED_OPERATION, kCall,
                         "a group of %d of the communicator's %d members is not supported (rdmx creates "
                         "communicators collectively over the whole parent); use MPI_Comm_create",
                         gsize, c->size);
    return split(comm, 0, pos, newcomm, kCall);
}

RDMXMPI_WEAK(Comm_free)
RDMXMPI_API int PMPI_Comm_free(MPI_Comm *comm) { return free_comm(comm, "MPI_Comm_free"); }

RDMXMPI_WEAK(Comm_compare)
RDMXMPI_API int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
    const Comm *a = comm_get(comm1), *b = comm_get(comm2);
    if (a == nullptr) return bad_comm("MPI_Comm_compare", comm1);
    if (b == nullptr) return bad_comm("MPI_Comm_compare", comm2);
    if (comm1 == comm2) {
        *result = MPI_IDENT;
    } else if (a->world_ranks == b->world_ranks) {
        *result = MPI_CONGRUENT;
    } else {
        auto x = a->world_ranks, y = b->world_ranks;
        std::sort(x.begin(), x.end());
        std::sort(y.begin(), y.end());
        *result = x == y ? MPI_SIMILAR : MPI_UNEQUAL;
    }
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Comm_group)
RDMXMPI_API int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
    const Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm("MPI_Comm_group", comm);
    try {
        *group = group_make(c->world_ranks);
        return MPI_SUCCESS;
    } catch (...) {
        return err_raise(comm, MPI_ERR_NO_MEM, "MPI_Comm_group", "out of memory");
    }
}

RDMXMPI_WEAK(Comm_test_inter)
RDMXMPI_API int PMPI_Comm_test_inter(MPI_Comm comm, int *flag) {
    if (comm_get(comm) == nullptr) return bad_comm("MPI_Comm_test_inter", comm);
    *flag = 0;   // intercommunicators are not supported
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Comm_set_name)
RDMXMPI_API int PMPI_Comm_set_name(MPI_Comm comm, const char *comm_name) {
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm("MPI_Comm_set_name", comm);
    if (comm_name == nullptr) return err_raise(comm, MPI_ERR_ARG, "MPI_Comm_set_name", "comm_name is NULL");
    try {
        // MPI keeps at most MPI_MAX_OBJECT_NAME - 1 characters.
        c->name.assign(comm_name, strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1));
        return MPI_SUCCESS;
    } catch (...) {
        return err_raise(comm, MPI_ERR_NO_MEM, "MPI_Comm_set_name", "out of memory");
    }
}

RDMXMPI_WEAK(Comm_get_name)
RDMXMPI_API int PMPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen) {
    const Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm("MPI_Comm_get_name", comm);
    if (comm_name == nullptr || resultlen == nullptr)
        return err_raise(comm, MPI_ERR_ARG, "MPI_Comm_get_name", "a NULL output argument");
    const char *name = c->name.c_str();
    if (c->name.empty() && comm == MPI_COMM_WORLD) name = "MPI_COMM_WORLD";
    if (c->name.empty() && comm == MPI_COMM_SELF) name = "MPI_COMM_SELF";
    const size_t n = strnlen(name, MPI_MAX_OBJECT_NAME - 1);
    std::memcpy(comm_name, name, n);
    comm_name[n] = '\0';
    *resultlen = static_cast<int>(n);
    return MPI_SUCCESS;
}
