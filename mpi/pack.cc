// The pack/unpack engine (datatype.h: type_pack, type_unpack) and
// MPI_Pack, MPI_Unpack, MPI_Pack_size on top of it.
//
// Elements are `extent` apart; inside one, the flattened blocks are copied
// in type-map order. A contiguous type is one memcpy for all elements.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "comm.h"
#include "datatype_impl.h"
#include "errors.h"

namespace rdmx::mpi {
namespace {

// buf + off without pointer arithmetic on a null base: with MPI_BOTTOM the
// displacements are absolute addresses.
const char *at(const void *base, MPI_Aint off)
{
    return reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(off));
}

char *at(void *base, MPI_Aint off)
{
    return reinterpret_cast<char *>(reinterpret_cast<uintptr_t>(base) + static_cast<uintptr_t>(off));
}

}  // namespace

void type_pack(const void *buf, int64_t count, MPI_Datatype dt, void *out)
{
    const dt::Type *t = dt::lookup(dt);
    if (t == nullptr || count <= 0 || t->size == 0)
        return;
    auto *dst = static_cast<char *>(out);
    if (t->contiguous()) {
        std::memcpy(dst, at(buf, t->true_lb), t->size * static_cast<size_t>(count));
        return;
    }
    MPI_Aint ext = t->extent();
    for (int64_t i = 0; i < count; i++) {
        MPI_Aint base = static_cast<MPI_Aint>(i) * ext;
        for (const dt::Block &b : t->blocks) {
            std::memcpy(dst, at(buf, base + b.off), static_cast<size_t>(b.len));
            dst += b.len;
        }
    }
}

void type_unpack(const void *in, size_t bytes, void *buf, int64_t count, MPI_Datatype dt)
{
    const dt::Type *t = dt::lookup(dt);
    if (t == nullptr || count <= 0 || t->size == 0)
        return;
    bytes = std::min(bytes, t->size * static_cast<size_t>(count));
    const auto *src = static_cast<const char *>(in);
    if (t->contiguous()) {
        std::memcpy(at(buf, t->true_lb), src, bytes);
        return;
    }
    MPI_Aint ext = t->extent();
    for (int64_t i = 0; bytes > 0; i++) {
        MPI_Aint base = static_cast<MPI_Aint>(i) * ext;
        for (const dt::Block &b : t->blocks) {
            // A short input ends inside an element: copy what there is.
            size_t n = std::min(bytes, static_cast<size_t>(b.len));
            std::memcpy(at(buf, base + b.off), src, n);
            src += n;
            bytes -= n;
            if (bytes == 0)
                return;
        }
    }
}

namespace {

// The checks MPI_Pack and MPI_Unpack share; the type, in *t.
int check_pack(const char *call, MPI_Comm comm, int count, MPI_Datatype datatype, const int *position,
               const dt::Type **t)
{
    if (comm_get(comm) == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_COMM, call, "invalid communicator 0x%x",
                         static_cast<unsigned>(comm));
    if (count < 0)
        return err_raise(comm, MPI_ERR_COUNT, call, "negative count %d", count);
    *t = dt::lookup(datatype);
    if (*t == nullptr)
        return err_raise(comm, MPI_ERR_TYPE, call, "invalid datatype handle 0x%x", static_cast<unsigned>(datatype));
    if (!(*t)->committed)
        return err_raise(comm, MPI_ERR_TYPE, call, "datatype 0x%x is not committed",
                         static_cast<unsigned>(datatype));
    if (position == nullptr)
        return err_raise(comm, MPI_ERR_ARG, call, "position is NULL");
    return MPI_SUCCESS;
}

}  // namespace

}  // namespace rdmx::mpi

using rdmx::mpi::err_raise;
namespace dt = rdmx::mpi::dt;

RDMXMPI_WEAK(Pack)
RDMXMPI_API int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
                          int *position, MPI_Comm comm)
{
    const char *call = "MPI_Pack";
    const dt::Type *t = nullptr;
    if (int rc = rdmx::mpi::check_pack(call, comm, incount, datatype, position, &t))
        return rc;
    int64_t need = static_cast<int64_t>(t->size) * incount;
    if (*position < 0 || *position > outsize || need > outsize - *position)
        return err_raise(comm, MPI_ERR_TRUNCATE, call,
                         "%lld bytes do not fit at position %d of a buffer of %d bytes",
                         static_cast<long long>(need), *position, outsize);
    if (need > 0)
        rdmx::mpi::type_pack(inbuf, incount, datatype, static_cast<char *>(outbuf) + *position);
    *position += static_cast<int>(need);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Unpack)
RDMXMPI_API int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                            MPI_Datatype datatype, MPI_Comm comm)
{
    const char *call = "MPI_Unpack";
    const dt::Type *t = nullptr;
    if (int rc = rdmx::mpi::check_pack(call, comm, outcount, datatype, position, &t))
        return rc;
    int64_t need = static_cast<int64_t>(t->size) * outcount;
    if (*position < 0 || *position > insize || need > insize - *position)
        return err_raise(comm, MPI_ERR_TRUNCATE, call,
                         "%lld bytes wanted at position %d of a buffer of %d bytes",
                         static_cast<long long>(need), *position, insize);
    if (need > 0)
        rdmx::mpi::type_unpack(static_cast<const char *>(inbuf) + *position, static_cast<size_t>(need), outbuf,
                               outcount, datatype);
    *position += static_cast<int>(need);
    return MPI_SUCCESS;
}

RDMXMPI_WEAK(Pack_size)
RDMXMPI_API int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    const char *call = "MPI_Pack_size";
    if (rdmx::mpi::comm_get(comm) == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_COMM, call, "invalid communicator 0x%x",
                         static_cast<unsigned>(comm));
    if (incount < 0)
        return err_raise(comm, MPI_ERR_COUNT, call, "negative count %d", incount);
    const dt::Type *t = dt::lookup(datatype);
    if (t == nullptr)
        return err_raise(comm, MPI_ERR_TYPE, call, "invalid datatype handle 0x%x", static_cast<unsigned>(datatype));
    if (size == nullptr)
        return err_raise(comm, MPI_ERR_ARG, call, "size is NULL");
    // Same representation on every rank: the packed form is the data alone.
    int64_t need = static_cast<int64_t>(t->size) * incount;
    if (need > INT_MAX)
        return err_raise(comm, MPI_ERR_VALUE_TOO_LARGE, call, "%lld bytes do not fit in an int",
                         static_cast<long long>(need));
    *size = static_cast<int>(need);
    return MPI_SUCCESS;
}
