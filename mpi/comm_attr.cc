// Communicator attributes: keyvals (Comm_create_keyval/free_keyval and the
// deprecated Keyval_create/Keyval_free), attributes (Comm_set_attr/
// get_attr/delete_attr and Attr_put/get/delete), the predefined attributes
// (MPI_TAG_UB and friends), copy callbacks on Comm_dup and delete callbacks
// on Comm_free and MPI_Finalize.
//
// One process-wide recursive lock guards keyvals and every communicator's
// table; callbacks run under it, so a callback may itself set or get
// attributes (MPI allows that) from the same thread.
#include <mutex>
#include <utility>
#include <vector>

#include "comm.h"
#include "errors.h"
#include "request.h"

namespace rdmx::mpi {

struct CommAttrs {
    std::vector<std::pair<int, void *>> items;   // (keyval, value) in the order they were set
};

namespace {

constexpr unsigned kKeyvalKind = 0xa4000000u;   // MPICH's kind bits of a run-time comm keyval
constexpr unsigned kIndexMask = 0x03ffffffu;

struct Keyval {
    MPI_Comm_copy_attr_function *copy = nullptr;
    MPI_Comm_delete_attr_function *del = nullptr;
    void *extra = nullptr;
    int refs = 0;          // the user's handle (until freed) plus every attribute set under it
    bool user_freed = false;
};

struct AttrState {
    std::recursive_mutex mu;
    std::vector<Keyval> keyvals;
};
AttrState &attr_state() {
    static AttrState s;
    return s;
}

// The predefined attributes' values: MPI returns a pointer to an int.
struct Predefined {
    int tag_upper = tag_ub();   // the point-to-point module's largest tag
    int host = MPI_PROC_NULL;       // no process is the "host"
    int io = MPI_ANY_SOURCE;        // every rank may do I/O
    int wtime_is_global = 0;
    int universe_size = 1;
    int lastusedcode = MPICH_ERR_LAST_MPIX;
    int appnum = 0;
};
Predefined g_pre;

bool predefined(int keyval, int **value) {
    switch (keyval) {
    case MPI_TAG_UB: *value = &g_pre.tag_upper; return true;
    case MPI_HOST: *value = &g_pre.host; return true;
    case MPI_IO: *value = &g_pre.io; return true;
    case MPI_WTIME_IS_GLOBAL: *value = &g_pre.wtime_is_global; return true;
    case MPI_UNIVERSE_SIZE: {
        const Comm *w = comm_get(MPI_COMM_WORLD);
        g_pre.universe_size = w ? w->size : 1;
        *value = &g_pre.universe_size;
        return true;
    }
    case MPI_LASTUSEDCODE: *value = &g_pre.lastusedcode; return true;
    case MPI_APPNUM: *value = &g_pre.appnum; return true;
    default: return false;
    }
}

// The keyval a handle names, with the lock held; nullptr when it is not one.
Keyval *keyval_of(int handle) {
    const auto u = static_cast<unsigned>(handle);
    if ((u & ~kIndexMask) != kKeyvalKind) return nullptr;
    auto &kv = attr_state().keyvals;
    const size_t i = u & kIndexMask;
    if (i >= kv.size() || kv[i].refs == 0) return nullptr;
    return &kv[i];
}

void unref(Keyval *k) {
    if (--k->refs == 0) *k = Keyval{};   // the slot is free for reuse
}

int bad_comm(const char *call, MPI_Comm comm) {
    return err_raise(MPI_COMM_NULL, MPI_ERR_COMM, call, "invalid communicator 0x%x", static_cast<unsigned>(comm));
}

int bad_keyval(MPI_Comm comm, const char *call, int keyval) {
    return err_raise(comm, MPI_ERR_KEYVAL, call, "invalid keyval 0x%x (freed, predefined where a user keyval is needed, "
                     "or not a communicator keyval)", static_cast<unsigned>(keyval));
}

// Run keyval's delete callback on value; MPI_SUCCESS or its code.
int run_delete(MPI_Comm handle, int keyval, Keyval *k, void *value) {
    return k->del ? k->del(handle, keyval, value, k->extra) : MPI_SUCCESS;
}

int create_keyval(MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del, int *keyval, void *extra,
                  const char *call) {
    if (keyval == nullptr) return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "keyval pointer is NULL");
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    try {
        size_t i = 0;
        while (i < s.keyvals.size() && s.keyvals[i].refs != 0) ++i;
        if (i > kIndexMask) return err_raise(MPI_COMM_NULL, MPI_ERR_INTERN, call, "too many keyvals");
        if (i == s.keyvals.size()) s.keyvals.emplace_back();
        s.keyvals[i] = Keyval{copy, del, extra, 1, false};
        *keyval = static_cast<int>(kKeyvalKind | static_cast<unsigned>(i));
        return MPI_SUCCESS;
    } catch (...) {
        return err_raise(MPI_COMM_NULL, MPI_ERR_NO_MEM, call, "out of memory");
    }
}

int free_keyval(int *keyval, const char *call) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    Keyval *k = keyval ? keyval_of(*keyval) : nullptr;
    if (k == nullptr || k->user_freed) return bad_keyval(MPI_COMM_NULL, call, keyval ? *keyval : MPI_KEYVAL_INVALID);
    // Attributes still set under it keep it alive (their callbacks still run).
    k->user_freed = true;
    unref(k);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

int set_attr(MPI_Comm comm, int keyval, void *value, const char *call) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(call, comm);
    Keyval *k = keyval_of(keyval);
    if (k == nullptr || k->user_freed) return bad_keyval(comm, call, keyval);
    try {
        if (c->attrs == nullptr) c->attrs = new CommAttrs;
        for (auto &it : c->attrs->items) {
            if (it.first != keyval) continue;
            // Replacing a value deletes the old one first, as MPI says.
            const int rc = run_delete(comm, keyval, k, it.second);
            if (rc != MPI_SUCCESS) return err_raise(comm, rc, call, "the delete callback of keyval 0x%x failed (%d)",
                                                    static_cast<unsigned>(keyval), rc);
            it.second = value;
            return MPI_SUCCESS;
        }
        c->attrs->items.emplace_back(keyval, value);
        ++k->refs;
        return MPI_SUCCESS;
    } catch (...) {
        return err_raise(comm, MPI_ERR_NO_MEM, call, "out of memory");
    }
}

int get_attr(MPI_Comm comm, int keyval, void *value, int *flag, const char *call) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(call, comm);
    if (flag == nullptr || value == nullptr) return err_raise(comm, MPI_ERR_ARG, call, "a NULL output argument");
    int *pre = nullptr;
    if (predefined(keyval, &pre)) {
        *static_cast<void **>(value) = pre;
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (keyval_of(keyval) == nullptr) return bad_keyval(comm, call, keyval);
    *flag = 0;
    if (c->attrs == nullptr) return MPI_SUCCESS;
    for (const auto &it : c->attrs->items) {
        if (it.first != keyval) continue;
        *static_cast<void **>(value) = it.second;
        *flag = 1;
        break;
    }
    return MPI_SUCCESS;
}

int delete_attr(MPI_Comm comm, int keyval, const char *call) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    Comm *c = comm_get(comm);
    if (c == nullptr) return bad_comm(call, comm);
    Keyval *k = keyval_of(keyval);
    if (k == nullptr) return bad_keyval(comm, call, keyval);
    if (c->attrs == nullptr)
        return err_raise(comm, MPI_ERR_KEYVAL, call, "no attribute is set under keyval 0x%x", static_cast<unsigned>(keyval));
    auto &items = c->attrs->items;
    for (auto it = items.begin(); it != items.end(); ++it) {
        if (it->first != keyval) continue;
        const int rc = run_delete(comm, keyval, k, it->second);
        if (rc != MPI_SUCCESS) return err_raise(comm, rc, call, "the delete callback of keyval 0x%x failed (%d)",
                                                static_cast<unsigned>(keyval), rc);
        items.erase(it);
        unref(k);
        return MPI_SUCCESS;
    }
    return err_raise(comm, MPI_ERR_KEYVAL, call, "no attribute is set under keyval 0x%x", static_cast<unsigned>(keyval));
}

}  // namespace

int comm_attrs_copy(MPI_Comm old, Comm *from, MPI_Comm nu, Comm *to) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    if (from->attrs == nullptr) return MPI_SUCCESS;
    const auto items = from->attrs->items;   // a callback may change from's table
    try {
        for (const auto &[keyval, value] : items) {
            Keyval *k = keyval_of(keyval);
            if (k == nullptr || k->copy == nullptr) continue;   // MPI_COMM_NULL_COPY_FN: not copied
            void *out = nullptr;
            int flag = 0;
            const int rc = k->copy(old, keyval, k->extra, value, &out, &flag);
            if (rc != MPI_SUCCESS) return rc;
            if (!flag) continue;
            if (to->attrs == nullptr) to->attrs = new CommAttrs;
            to->attrs->items.emplace_back(keyval, out);
            ++k->refs;
        }
    } catch (...) {
        return MPI_ERR_NO_MEM;
    }
    (void)nu;   // the new handle is not an argument of MPI's copy callback
    return MPI_SUCCESS;
}

int comm_attrs_clear(MPI_Comm handle, Comm *c) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    if (c == nullptr || c->attrs == nullptr) return MPI_SUCCESS;
    auto &items = c->attrs->items;
    // Last set, first deleted (what MPI requires of MPI_COMM_SELF at finalize).
    while (!items.empty()) {
        const auto [keyval, value] = items.back();
        Keyval *k = keyval_of(keyval);
        if (k != nullptr) {
            const int rc = run_delete(handle, keyval, k, value);
            if (rc != MPI_SUCCESS) return rc;   // the rest stay: the communicator is not freed
        }
        // The callback may have deleted attributes itself: find the item again.
        for (auto it = items.rbegin(); it != items.rend(); ++it) {
            if (it->first != keyval) continue;
            items.erase(std::next(it).base());
            if (k != nullptr) unref(k);
            break;
        }
    }
    delete c->attrs;
    c->attrs = nullptr;
    return MPI_SUCCESS;
}

void comm_attrs_drop(Comm *c) {
    AttrState &s = attr_state();
    std::lock_guard lk(s.mu);
    if (c == nullptr || c->attrs == nullptr) return;
    for (const auto &[keyval, value] : c->attrs->items)
        if (Keyval *k = keyval_of(keyval)) unref(k);
    delete c->attrs;
    c->attrs = nullptr;
}

}  // namespace rdmx::mpi

using namespace rdmx::mpi;

// MPI_COMM_DUP_FN (MPIR_Dup_fn) is in globals.cc with the ABI's other objects.

RDMXMPI_WEAK(Comm_create_keyval)
RDMXMPI_API int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                        MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                                        void *extra_state) {
    return create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state, "MPI_Comm_create_keyval");
}

RDMXMPI_WEAK(Keyval_create)
RDMXMPI_API int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                                   void *extra_state) {
    return create_keyval(copy_fn, delete_fn, keyval, extra_state, "MPI_Keyval_create");
}

RDMXMPI_WEAK(Comm_free_keyval)
RDMXMPI_API int PMPI_Comm_free_keyval(int *comm_keyval) { return free_keyval(comm_keyval, "MPI_Comm_free_keyval"); }

RDMXMPI_WEAK(Keyval_free)
RDMXMPI_API int PMPI_Keyval_free(int *keyval) { return free_keyval(keyval, "MPI_Keyval_free"); }

RDMXMPI_WEAK(Comm_set_attr)
RDMXMPI_API int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val) {
    return set_attr(comm, comm_keyval, attribute_val, "MPI_Comm_set_attr");
}

RDMXMPI_WEAK(Attr_put)
RDMXMPI_API int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val) {
    return set_attr(comm, keyval, attribute_val, "MPI_Attr_put");
}

RDMXMPI_WEAK(Comm_get_attr)
RDMXMPI_API int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag) {
    return get_attr(comm, comm_keyval, attribute_val, flag, "MPI_Comm_get_attr");
}

RDMXMPI_WEAK(Attr_get)
RDMXMPI_API int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag) {
    return get_attr(comm, keyval, attribute_val, flag, "MPI_Attr_get");
}

RDMXMPI_WEAK(Comm_delete_attr)
RDMXMPI_API int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval) {
    return delete_attr(comm, comm_keyval, "MPI_Comm_delete_attr");
}

RDMXMPI_WEAK(Attr_delete)
RDMXMPI_API int PMPI_Attr_delete(MPI_Comm comm, int keyval) { return delete_attr(comm, keyval, "MPI_Attr_delete"); }
