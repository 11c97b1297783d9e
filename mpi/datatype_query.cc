// Datatype lifetime and queries: MPI_Type_commit, free, size, extents,
// names, envelope and contents; MPI_Get_address and the MPI_Aint helpers.
#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "datatype_impl.h"
#include "errors.h"

using rdmx::mpi::err_raise;
namespace dt = rdmx::mpi::dt;

namespace {

// Names given to predefined types with MPI_Type_set_name, and the lock that
// orders every name update and read (derived types keep theirs in Type).
std::mutex g_name_mu;
std::unordered_map<MPI_Datatype, std::string> &predefined_renames()
{
    static std::unordered_map<MPI_Datatype, std::string> names;
    return names;
}

const dt::Type *checked(const char *call, MPI_Datatype type)
{
    const dt::Type *t = dt::lookup(type);
    if (t == nullptr)
        err_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "invalid datatype handle 0x%x",
                  static_cast<unsigned>(type));
    return t;
}

int null_arg(const char *call, const char *what)
{
    return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "%s is NULL", what);
}

}  // namespace

RDMXMPI_WEAK(Type_commit)
RDMXMPI_API int PMPI_Type_commit(MPI_Datatype *datatype)
{
    const char *call = "MPI_Type_commit";
    if (datatype == nullptr)
        return null_arg(call, "datatype");
    if (checked(call, *datatype) == nullptr)
        return MPI_ERR_TYPE;
    // The type was flattened when it was built: committing only marks it.
    if (dt::Type *t = dt::lookup_mutable(*datatype))
        t->committed = true;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Type_free)
RDMXMPI_API int PMPI_Type_free(MPI_Datatype *datatype)
{
    const char *call = "MPI_Type_free";
    if (datatype == nullptr)
        return null_arg(call, "datatype");
    if (const char *name = dt::predefined_name(*datatype))
        return err_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "cannot free the predefined datatype %s", name);
    dt::Type *t = dt::lookup_mutable(*datatype);
    // A type the user freed may live on inside types built from it; its
    // handle is no longer the user's to free.
    int held = t ? t->user_refs.load() : 0;
    while (held > 0 && !t->user_refs.compare_exchange_weak(held, held - 1)) {
    }
    if (held <= 0)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "invalid datatype handle 0x%x (freed already?)",
                         static_cast<unsigned>(*datatype));
    dt::release(*datatype);
    *datatype = MPI_DATATYPE_NULL;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Type_size)
RDMXMPI_API int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    const dt::Type *t = checked("MPI_Type_size", datatype);
    if (t == nullptr)
        return MPI_ERR_TYPE;
    if (size == nullptr)
        return null_arg("MPI_Type_size", "size");
    *size = t->size > static_cast<size_t>(INT_MAX) ? MPI_UNDEFINED : static_cast<int>(t->size);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Type_size_x)
RDMXMPI_API int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    const dt::Type *t = checked("MPI_Type_size_x", datatype);
    if (t == nullptr)
        return MPI_ERR_TYPE;
    if (size == nullptr)
        return null_arg("MPI_Type_size_x", "size");
    *size = static_cast<MPI_Count>(t->size);
    return MPI_SUCCESS;
}

namespace {

// The four extent queries share their checks: out receives (lb, extent) or
// (true_lb, true_extent).
int get_bounds(const char *call, MPI_Datatype datatype, bool true_bounds, long *lb, long *extent)
{
    const dt::Type *t = checked(call, datatype);
    if (t == nullptr)
        return MPI_ERR_TYPE;
    if (lb == nullptr || extent == nullptr)
        return null_arg(call, "an output argument");
    *lb = true_bounds ? t->true_lb : t->lb;
    *extent = true_bounds ? t->true_ub - t->true_lb : t->extent();
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Type_get_extent)
RDMXMPI_API int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    return get_bounds("MPI_Type_get_extent", datatype, false, lb, extent);
}

RDMXMPI_WEAK(Type_get_extent_x)
RDMXMPI_API int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    return get_bounds("MPI_Type_get_extent_x", datatype, false, lb, extent);
}

RDMXMPI_WEAK(Type_get_true_extent)
RDMXMPI_API int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    return get_bounds("MPI_Type_get_true_extent", datatype, true, true_lb, true_extent);
}

RDMXMPI_WEAK(Type_get_true_extent_x)
RDMXMPI_API int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb, MPI_Count *true_extent)
{
    return get_bounds("MPI_Type_get_true_extent_x", datatype, true, true_lb, true_extent);
}

RDMXMPI_WEAK(Type_extent)
RDMXMPI_API int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    MPI_Aint lb;
    return get_bounds("MPI_Type_extent", datatype, false, &lb, extent);
}

RDMXMPI_WEAK(Type_lb)
RDMXMPI_API int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
    MPI_Aint extent;
    return get_bounds("MPI_Type_lb", datatype, false, displacement, &extent);
}

RDMXMPI_WEAK(Type_ub)
RDMXMPI_API int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
    MPI_Aint lb, extent;
    int rc = get_bounds("MPI_Type_ub", datatype, false, &lb, &extent);
    if (rc == MPI_SUCCESS && displacement != nullptr)
        *displacement = lb + extent;
    return rc;
}

RDMXMPI_WEAK(Type_get_name)
RDMXMPI_API int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    const char *call = "MPI_Type_get_name";
    const dt::Type *t = checked(call, datatype);
    if (t == nullptr)
        return MPI_ERR_TYPE;
    if (type_name == nullptr || resultlen == nullptr)
        return null_arg(call, "type_name or resultlen");
    std::lock_guard<std::mutex> lock(g_name_mu);
    const std::string *name = &t->name;
    auto &renames = predefined_renames();
    if (auto it = renames.find(datatype); it != renames.end())
        name = &it->second;
    size_t n = std::min(name->size(), static_cast<size_t>(MPI_MAX_OBJECT_NAME - 1));
    std::memcpy(type_name, name->data(), n);
    type_name[n] = '\0';
    *resultlen = static_cast<int>(n);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Type_set_name)
RDMXMPI_API int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    const char *call = "MPI_Type_set_name";
    if (checked(call, datatype) == nullptr)
        return MPI_ERR_TYPE;
    if (type_name == nullptr)
        return null_arg(call, "type_name");
    try {
        // Longer names are cut to what MPI_Type_get_name can return.
        std::string name(type_name, strnlen(type_name, MPI_MAX_OBJECT_NAME - 1));
        std::lock_guard<std::mutex> lock(g_name_mu);
        if (dt::Type *t = dt::lookup_mutable(datatype))
            t->name = std::move(name);
        else
            predefined_renames()[datatype] = std::move(name);
    } catch (const std::bad_alloc &) {
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "out of memory");
    }
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Type_get_envelope)
RDMXMPI_API int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                                       int *num_datatypes, int *combiner)
{
    const char *call = "MPI_Type_get_envelope";
    const dt::Type *t = checked(call, datatype);
    if (t == nullptr)
        return MPI_ERR_TYPE;
    if (num_integers == nullptr || num_addresses == nullptr || num_datatypes == nullptr || combiner == nullptr)
        return null_arg(call, "an output argument");
    *num_integers = static_cast<int>(t->ints.size());
    *num_addresses = static_cast<int>(t->addrs.size());
    *num_datatypes = static_cast<int>(t->types.size());
    *combiner = t->combiner;
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Type_get_contents)
RDMXMPI_API int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                                       int max_datatypes, int array_of_integers[], MPI_Aint array_of_addresses[],
                                       MPI_Datatype array_of_datatypes[])
{
    const char *call = "MPI_Type_get_contents";
    const dt::Type *t = checked(call, datatype);
    if (t == nullptr)
        return MPI_ERR_TYPE;
    if (t->combiner == MPI_COMBINER_NAMED)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "%s is a predefined datatype: it has no contents",
                         dt::predefined_name(datatype));
    if (static_cast<size_t>(std::max(max_integers, 0)) < t->ints.size() ||
        static_cast<size_t>(std::max(max_addresses, 0)) < t->addrs.size() ||
        static_cast<size_t>(std::max(max_datatypes, 0)) < t->types.size())
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call,
                         "arrays too short: the type has %zu integers, %zu addresses, %zu datatypes",
                         t->ints.size(), t->addrs.size(), t->types.size());
    std::copy(t->ints.begin(), t->ints.end(), array_of_integers);
    std::copy(t->addrs.begin(), t->addrs.end(), array_of_addresses);
    for (size_t i = 0; i < t->types.size(); i++) {
        // A derived type comes back as a handle the caller must free.
        MPI_Datatype inner = t->types[i];
        if (dt::Type *it = dt::lookup_mutable(inner)) {
            dt::retain(inner);
            it->user_refs.fetch_add(1);
        }
        array_of_datatypes[i] = inner;
    }
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Get_address)
RDMXMPI_API int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    if (address == nullptr)
        return null_arg("MPI_Get_address", "address");
    *address = static_cast<MPI_Aint>(reinterpret_cast<uintptr_t>(location));
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Address)
RDMXMPI_API int PMPI_Address(void *location, MPI_Aint *address)
{
    return PMPI_Get_address(location, address);
}

RDMXMPI_WEAK(Aint_add)
RDMXMPI_API MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    // Unsigned arithmetic: addresses may wrap past LONG_MAX without UB.
    return static_cast<MPI_Aint>(static_cast<unsigned long>(base) + static_cast<unsigned long>(disp));
}

RDMXMPI_WEAK(Aint_diff)
RDMXMPI_API MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return static_cast<MPI_Aint>(static_cast<unsigned long>(addr1) - static_cast<unsigned long>(addr2));
}
