// What a status says: MPI_Get_count, MPI_Get_elements (and their _x and
// _c forms), MPI_Status_set_elements(_x), MPI_Status_set_cancelled and
// MPI_Test_cancelled. A status keeps the byte count (MPICH's encoding, see
// request.h); counts in elements are derived from the datatype here.
#include <climits>

#include "datatype.h"
#include "errors.h"
#include "request.h"

using namespace rdmx::mpi;

namespace {

// The size of one element of dt; false for an invalid handle.
bool size_of(MPI_Datatype dt, size_t *size) {
    if (builtin_size(dt, size)) return true;
    TypeView v;
    if (!type_view(dt, &v)) return false;
    *size = v.size;
    return true;
}

// The size of one basic element of dt (what MPI_Get_elements counts); 0
// when dt mixes basic types.
size_t basic_size_of(MPI_Datatype dt) {
    size_t size = 0;
    if (builtin_size(dt, &size)) return size;
    int64_t items = 0;
    const MPI_Datatype basic = type_basic(dt, &items);
    if (basic == MPI_DATATYPE_NULL || !size_of(basic, &size)) return 0;
    return size;
}

int bad_type(const char *call, MPI_Datatype dt) {
    return err_raise(MPI_COMM_NULL, MPI_ERR_TYPE, call, "invalid datatype 0x%x", static_cast<unsigned>(dt));
}

// Whole elements of `unit` bytes in a status; MPI_UNDEFINED when the bytes
// are not whole elements. Elements of size 0: 0 (as MPICH).
MPI_Count whole(const MPI_Status *status, size_t unit) {
    const MPI_Count bytes = status_bytes(status);
    if (unit == 0) return 0;
    if (bytes % static_cast<MPI_Count>(unit) != 0) return MPI_UNDEFINED;
    return bytes / static_cast<MPI_Count>(unit);
}

int to_int(MPI_Count n) { return n > INT_MAX ? MPI_UNDEFINED : static_cast<int>(n); }

int get_count(const char *call, const MPI_Status *status, MPI_Datatype dt, MPI_Count *count) {
    size_t size = 0;
    if (status == nullptr || status == MPI_STATUS_IGNORE)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "status is NULL or MPI_STATUS_IGNORE");
    if (!size_of(dt, &size)) return bad_type(call, dt);
    *count = whole(status, size);
    return MPI_SUCCESS;
}

int get_elements(const char *call, const MPI_Status *status, MPI_Datatype dt, MPI_Count *count) {
    size_t size = 0;
    if (status == nullptr || status == MPI_STATUS_IGNORE)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "status is NULL or MPI_STATUS_IGNORE");
    if (!size_of(dt, &size)) return bad_type(call, dt);
    *count = type_elements(dt, static_cast<size_t>(status_bytes(status)));
    return MPI_SUCCESS;
}

int set_elements(const char *call, MPI_Status *status, MPI_Datatype dt, MPI_Count count) {
    if (status == nullptr || status == MPI_STATUS_IGNORE)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, call, "status is NULL or MPI_STATUS_IGNORE");
    if (count < 0) return err_raise(MPI_COMM_NULL, MPI_ERR_COUNT, call, "count %ld is negative", count);
    size_t size = 0;
    if (!size_of(dt, &size)) return bad_type(call, dt);
    const size_t basic = basic_size_of(dt);
    status_set_bytes(status, count * static_cast<MPI_Count>(basic != 0 ? basic : size));
    return MPI_SUCCESS;
}

}  // namespace

RDMXMPI_WEAK(Get_count)
RDMXMPI_API int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count n = 0;
    const int e = get_count("MPI_Get_count", status, datatype, &n);
    if (e == MPI_SUCCESS) *count = to_int(n);
    return e;
}

RDMXMPI_WEAK(Get_count_c)
RDMXMPI_API int PMPI_Get_count_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_count("MPI_Get_count_c", status, datatype, count);
}

RDMXMPI_WEAK(Get_elements)
RDMXMPI_API int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    MPI_Count n = 0;
    const int e = get_elements("MPI_Get_elements", status, datatype, &n);
    if (e == MPI_SUCCESS) *count = to_int(n);
    return e;
}

RDMXMPI_WEAK(Get_elements_x)
RDMXMPI_API int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_elements("MPI_Get_elements_x", status, datatype, count);
}

RDMXMPI_WEAK(Get_elements_c)
RDMXMPI_API int PMPI_Get_elements_c(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
    return get_elements("MPI_Get_elements_c", status, datatype, count);
}

RDMXMPI_WEAK(Status_set_elements)
RDMXMPI_API int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return set_elements("MPI_Status_set_elements", status, datatype, count);
}

RDMXMPI_WEAK(Status_set_elements_x)
RDMXMPI_API int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return set_elements("MPI_Status_set_elements_x", status, datatype, count);
}

RDMXMPI_WEAK(Status_set_cancelled)
RDMXMPI_API int PMPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    if (status == nullptr || status == MPI_STATUS_IGNORE)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Status_set_cancelled", "status is NULL or MPI_STATUS_IGNORE");
    status_set_cancelled(status, flag != 0);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Test_cancelled)
RDMXMPI_API int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    if (status == nullptr || status == MPI_STATUS_IGNORE || flag == nullptr)
        return err_raise(MPI_COMM_NULL, MPI_ERR_ARG, "MPI_Test_cancelled", "status or flag is NULL");
    *flag = status->count_hi_and_cancelled & 1;
    return MPI_SUCCESS;
}
