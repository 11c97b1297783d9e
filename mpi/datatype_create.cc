// Datatype constructors: MPI_Type_contiguous, vector, hvector, indexed,
// hindexed, indexed_block, hindexed_block, struct, resized, dup, subarray.
// Each one validates its arguments, lists its pieces (copies of old types at
// displacements) for the builder, and keeps its arguments for
// MPI_Type_get_contents.
#include <algorithm>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "datatype_impl.h"
#include "errors.h"

using rdmx::mpi::err_raise;
namespace dt = rdmx::mpi::dt;

namespace {

constexpr int kMaxDims = 64;   // subarray: far beyond any real array

int bad_type(const char *call, const char *what, MPI_Datatype t)
{
    return err_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "invalid datatype handle 0x%x (%s)",
                     static_cast<unsigned>(t), what);
}

int bad_count(const char *call, const char *what, int64_t v)
{
    return err_raise(MPI_COMM_WORLD, MPI_ERR_COUNT, call, "negative %s (%lld)", what,
                     static_cast<long long>(v));
}

// Check count >= 0, the old type, and newtype; MPI_SUCCESS or the raised error.
int check_common(const char *call, int64_t count, MPI_Datatype old, const MPI_Datatype *newtype)
{
    if (count < 0)
        return bad_count(call, "count", count);
    if (dt::lookup(old) == nullptr)
        return bad_type(call, "oldtype", old);
    if (newtype == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "newtype is NULL");
    return MPI_SUCCESS;
}

int check_blocklengths(const char *call, int count, const int *bls)
{
    if (count > 0 && bls == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "array_of_blocklengths is NULL");
    for (int i = 0; i < count; i++)
        if (bls[i] < 0)
            return err_raise(MPI_COMM_WORLD, MPI_ERR_COUNT, call, "negative blocklength %d at index %d",
                             bls[i], i);
    return MPI_SUCCESS;
}

using Adjust = std::function<void(dt::Type &)>;

// Build t from pieces, let `adjust` change what the constructor defines
// itself (bounds), give t a handle (t keeps a reference on each of its
// `types`), and store it in *newtype.
int finish(const char *call, std::unique_ptr<dt::Type> t, const std::vector<dt::Piece> &pieces,
           bool pad_struct, MPI_Datatype *newtype, const Adjust &adjust = {})
{
    try {
        dt::build(t.get(), pieces, pad_struct);
        if (adjust)
            adjust(*t);
    } catch (const std::length_error &e) {
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "%s", e.what());
    }
    for (MPI_Datatype inner : t->types)
        dt::retain(inner);
    MPI_Datatype h = dt::register_type(t.get());
    if (h == MPI_DATATYPE_NULL) {
        for (MPI_Datatype inner : t->types)
            dt::release(inner);
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "too many datatypes in use");
    }
    t.release();
    *newtype = h;
    return MPI_SUCCESS;
}

std::unique_ptr<dt::Type> new_type(int combiner, MPI_Datatype old)
{
    auto t = std::make_unique<dt::Type>();
    t->combiner = combiner;
    if (old != MPI_DATATYPE_NULL)
        t->types.push_back(old);
    return t;
}

// Entry points allocate: no exception may cross into C.
template <typename F>
int guarded(const char *call, F &&body)
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "out of memory");
    } catch (const std::length_error &e) {
        return err_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, call, "%s", e.what());
    } catch (const std::exception &e) {
        return err_raise(MPI_COMM_WORLD, MPI_ERR_INTERN, call, "%s", e.what());
    }
}

void check_pieces(size_t n)
{
    if (n > dt::kMaxBlocks)
        throw std::length_error("datatype has too many non-contiguous blocks");
}

// Vector-like: count blocks of blocklength old elements, block i at i*stride
// bytes. The combiner and its integer/address arguments are the caller's.
int make_strided(const char *call, std::unique_ptr<dt::Type> t, int count, int blocklength,
                 MPI_Aint stride_bytes, MPI_Datatype old, MPI_Datatype *newtype)
{
    const dt::Type *o = dt::lookup(old);
    // Blocks that abut are one contiguous run: no piece per block.
    if (blocklength > 0 && stride_bytes == blocklength * o->extent())
        return finish(call, std::move(t), {{0, o, int64_t{count} * blocklength}}, false, newtype);
    check_pieces(count);
    std::vector<dt::Piece> pieces;
    pieces.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; i++)
        pieces.push_back({static_cast<MPI_Aint>(i) * stride_bytes, o, blocklength, true});
    return finish(call, std::move(t), pieces, false, newtype);
}

// Indexed-like: block i of bls[i] (or bl when bls is null) old elements at
// disps[i] * unit bytes.
template <typename Disp>
int make_indexed(const char *call, std::unique_ptr<dt::Type> t, int count, const int *bls, int bl,
                 const Disp *disps, MPI_Aint unit, MPI_Datatype old, MPI_Datatype *newtype)
{
    if (count > 0 && disps == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "array_of_displacements is NULL");
    const dt::Type *o = dt::lookup(old);
    std::vector<dt::Piece> pieces;
    pieces.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; i++)
        pieces.push_back({static_cast<MPI_Aint>(disps[i]) * unit, o, bls ? bls[i] : bl, bls == nullptr});
    return finish(call, std::move(t), pieces, false, newtype);
}

int vector_common(const char *call, int combiner, int count, int blocklength, MPI_Aint stride,
                  bool stride_in_bytes, MPI_Datatype old, MPI_Datatype *newtype)
{
    if (int rc = check_common(call, count, old, newtype))
        return rc;
    if (blocklength < 0)
        return bad_count(call, "blocklength", blocklength);
    return guarded(call, [&] {
        auto t = new_type(combiner, old);
        t->ints = {count, blocklength};
        if (stride_in_bytes)
            t->addrs = {stride};
        else
            t->ints.push_back(static_cast<int>(stride));
        MPI_Aint unit = stride_in_bytes ? 1 : dt::lookup(old)->extent();
        return make_strided(call, std::move(t), count, blocklength, stride * unit, old, newtype);
    });
}

int hindexed_common(const char *call, int count, const int *bls, const MPI_Aint *disps,
                    MPI_Datatype old, MPI_Datatype *newtype)
{
    if (int rc = check_common(call, count, old, newtype))
        return rc;
    if (int rc = check_blocklengths(call, count, bls))
        return rc;
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_HINDEXED, old);
        t->ints.push_back(count);
        t->ints.insert(t->ints.end(), bls, bls + count);
        t->addrs.assign(disps, disps + (disps ? count : 0));
        return make_indexed(call, std::move(t), count, bls, 0, disps, 1, old, newtype);
    });
}

}  // namespace

RDMXMPI_WEAK(Type_contiguous)
RDMXMPI_API int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_contiguous";
    if (int rc = check_common(call, count, oldtype, newtype))
        return rc;
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_CONTIGUOUS, oldtype);
        t->ints = {count};
        return finish(call, std::move(t), {{0, dt::lookup(oldtype), count}}, false, newtype);
    });
}

RDMXMPI_WEAK(Type_vector)
RDMXMPI_API int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                                 MPI_Datatype *newtype)
{
    return vector_common("MPI_Type_vector", MPI_COMBINER_VECTOR, count, blocklength, stride, false, oldtype,
                         newtype);
}

RDMXMPI_WEAK(Type_create_hvector)
RDMXMPI_API int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                         MPI_Datatype *newtype)
{
    return vector_common("MPI_Type_create_hvector", MPI_COMBINER_HVECTOR, count, blocklength, stride, true,
                         oldtype, newtype);
}

RDMXMPI_WEAK(Type_hvector)
RDMXMPI_API int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                  MPI_Datatype *newtype)
{
    return vector_common("MPI_Type_hvector", MPI_COMBINER_HVECTOR, count, blocklength, stride, true, oldtype,
                         newtype);
}

RDMXMPI_WEAK(Type_indexed)
RDMXMPI_API int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                                  const int array_of_displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_indexed";
    if (int rc = check_common(call, count, oldtype, newtype))
        return rc;
    if (int rc = check_blocklengths(call, count, array_of_blocklengths))
        return rc;
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_INDEXED, oldtype);
        t->ints.push_back(count);
        t->ints.insert(t->ints.end(), array_of_blocklengths, array_of_blocklengths + count);
        if (array_of_displacements)
            t->ints.insert(t->ints.end(), array_of_displacements, array_of_displacements + count);
        return make_indexed(call, std::move(t), count, array_of_blocklengths, 0, array_of_displacements,
                            dt::lookup(oldtype)->extent(), oldtype, newtype);
    });
}

RDMXMPI_WEAK(Type_create_hindexed)
RDMXMPI_API int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                                          const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                          MPI_Datatype *newtype)
{
    return hindexed_common("MPI_Type_create_hindexed", count, array_of_blocklengths, array_of_displacements,
                           oldtype, newtype);
}

RDMXMPI_WEAK(Type_hindexed)
RDMXMPI_API int PMPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return hindexed_common("MPI_Type_hindexed", count, array_of_blocklengths, array_of_displacements,
                           oldtype, newtype);
}

RDMXMPI_WEAK(Type_create_indexed_block)
RDMXMPI_API int PMPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_create_indexed_block";
    if (int rc = check_common(call, count, oldtype, newtype))
        return rc;
    if (blocklength < 0)
        return bad_count(call, "blocklength", blocklength);
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_INDEXED_BLOCK, oldtype);
        t->ints = {count, blocklength};
        if (array_of_displacements)
            t->ints.insert(t->ints.end(), array_of_displacements, array_of_displacements + count);
        return make_indexed(call, std::move(t), count, nullptr, blocklength, array_of_displacements,
                            dt::lookup(oldtype)->extent(), oldtype, newtype);
    });
}

RDMXMPI_WEAK(Type_create_hindexed_block)
RDMXMPI_API int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                                const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                                MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_create_hindexed_block";
    if (int rc = check_common(call, count, oldtype, newtype))
        return rc;
    if (blocklength < 0)
        return bad_count(call, "blocklength", blocklength);
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_HINDEXED_BLOCK, oldtype);
        t->ints = {count, blocklength};
        t->addrs.assign(array_of_displacements, array_of_displacements + (array_of_displacements ? count : 0));
        return make_indexed(call, std::move(t), count, nullptr, blocklength, array_of_displacements, 1,
                            oldtype, newtype);
    });
}

namespace {

int struct_common(const char *call, int count, const int *bls, const MPI_Aint *disps,
                  const MPI_Datatype *types, MPI_Datatype *newtype)
{
    if (count < 0)
        return bad_count(call, "count", count);
    if (newtype == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "newtype is NULL");
    if (int rc = check_blocklengths(call, count, bls))
        return rc;
    if (count > 0 && (disps == nullptr || types == nullptr))
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "array_of_displacements or array_of_types is NULL");
    for (int i = 0; i < count; i++)
        if (dt::lookup(types[i]) == nullptr)
            return err_raise(MPI_COMM_WORLD, MPI_ERR_TYPE, call, "invalid datatype handle 0x%x at index %d",
                             static_cast<unsigned>(types[i]), i);
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_STRUCT, MPI_DATATYPE_NULL);
        t->ints.push_back(count);
        t->ints.insert(t->ints.end(), bls, bls + count);
        t->addrs.assign(disps, disps + count);
        t->types.assign(types, types + count);
        std::vector<dt::Piece> pieces;
        pieces.reserve(static_cast<size_t>(count));
        for (int i = 0; i < count; i++)
            pieces.push_back({disps[i], dt::lookup(types[i]), bls[i]});
        return finish(call, std::move(t), pieces, true, newtype);
    });
}

}  // namespace

RDMXMPI_WEAK(Type_create_struct)
RDMXMPI_API int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                                        const MPI_Aint array_of_displacements[],
                                        const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return struct_common("MPI_Type_create_struct", count, array_of_blocklengths, array_of_displacements,
                         array_of_types, newtype);
}

RDMXMPI_WEAK(Type_struct)
RDMXMPI_API int PMPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                                 MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return struct_common("MPI_Type_struct", count, array_of_blocklengths, array_of_displacements,
                         array_of_types, newtype);
}

RDMXMPI_WEAK(Type_create_resized)
RDMXMPI_API int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                         MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_create_resized";
    if (int rc = check_common(call, 0, oldtype, newtype))
        return rc;
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_RESIZED, oldtype);
        t->addrs = {lb, extent};
        // New bounds replace the old ones, markers included (MPI-3: no
        // markers, just a lower bound and an extent).
        return finish(call, std::move(t), {{0, dt::lookup(oldtype), 1}}, false, newtype, [&](dt::Type &n) {
            n.lb = lb;
            n.ub = lb + extent;
            n.sticky_lb = n.sticky_ub = false;
        });
    });
}

RDMXMPI_WEAK(Type_dup)
RDMXMPI_API int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_dup";
    if (int rc = check_common(call, 0, oldtype, newtype))
        return rc;
    return guarded(call, [&] {
        const dt::Type *o = dt::lookup(oldtype);
        auto t = new_type(MPI_COMBINER_DUP, oldtype);
        // The same type: bounds and markers as they are, committed if it was.
        return finish(call, std::move(t), {{0, o, 1}}, false, newtype, [&](dt::Type &n) {
            n.lb = o->lb;
            n.ub = o->ub;
            n.sticky_lb = o->sticky_lb;
            n.sticky_ub = o->sticky_ub;
            n.align = o->align;
            n.committed = o->committed;
        });
    });
}

namespace {

int check_subarray(const char *call, int ndims, const int *sizes, const int *subsizes, const int *starts,
                   int order)
{
    if (ndims <= 0 || ndims > kMaxDims)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "ndims %d is not in 1..%d", ndims, kMaxDims);
    if (sizes == nullptr || subsizes == nullptr || starts == nullptr)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "an array argument is NULL");
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
        return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call, "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN",
                         order);
    for (int i = 0; i < ndims; i++) {
        if (sizes[i] <= 0 || subsizes[i] < 0 || subsizes[i] > sizes[i] || starts[i] < 0 ||
            starts[i] > sizes[i] - subsizes[i])
            return err_raise(MPI_COMM_WORLD, MPI_ERR_ARG, call,
                             "dimension %d: size %d, subsize %d, start %d do not fit", i, sizes[i], subsizes[i],
                             starts[i]);
    }
    return MPI_SUCCESS;
}

// The rows of the subarray, in C order (the last dimension varies fastest):
// one piece per row of subsizes[last] old elements.
std::vector<dt::Piece> subarray_rows(const std::vector<int> &sizes, const std::vector<int> &subsizes,
                                     const std::vector<int> &starts, const dt::Type *o)
{
    size_t n = sizes.size();
    std::vector<MPI_Aint> stride(n);   // in old elements
    MPI_Aint s = 1;
    for (size_t i = n; i-- > 0;) {
        stride[i] = s;
        s *= sizes[i];
    }
    std::vector<dt::Piece> rows;
    for (int sub : subsizes)
        if (sub == 0)
            return rows;
    std::vector<int> idx(n, 0);   // position inside the subarray (last index unused)
    for (;;) {
        MPI_Aint elem = starts[n - 1];
        for (size_t i = 0; i + 1 < n; i++)
            elem += static_cast<MPI_Aint>(starts[i] + idx[i]) * stride[i];
        check_pieces(rows.size() + 1);
        rows.push_back({elem * o->extent(), o, subsizes[n - 1]});
        size_t d = n - 1;   // advance the odometer over dimensions 0..n-2
        while (d > 0 && ++idx[d - 1] == subsizes[d - 1])
            idx[--d] = 0;
        if (d == 0)
            return rows;
    }
}

}  // namespace

RDMXMPI_WEAK(Type_create_subarray)
RDMXMPI_API int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
                                          const int array_of_starts[], int order, MPI_Datatype oldtype,
                                          MPI_Datatype *newtype)
{
    const char *call = "MPI_Type_create_subarray";
    if (int rc = check_common(call, 0, oldtype, newtype))
        return rc;
    if (int rc = check_subarray(call, ndims, array_of_sizes, array_of_subsizes, array_of_starts, order))
        return rc;
    return guarded(call, [&] {
        auto t = new_type(MPI_COMBINER_SUBARRAY, oldtype);
        t->ints.push_back(ndims);
        for (const int *a : {array_of_sizes, array_of_subsizes, array_of_starts})
            t->ints.insert(t->ints.end(), a, a + ndims);
        t->ints.push_back(order);
        std::vector<int> sizes(array_of_sizes, array_of_sizes + ndims);
        std::vector<int> subsizes(array_of_subsizes, array_of_subsizes + ndims);
        std::vector<int> starts(array_of_starts, array_of_starts + ndims);
        if (order == MPI_ORDER_FORTRAN) {   // the first dimension varies fastest
            std::reverse(sizes.begin(), sizes.end());
            std::reverse(subsizes.begin(), subsizes.end());
            std::reverse(starts.begin(), starts.end());
        }
        const dt::Type *o = dt::lookup(oldtype);
        MPI_Aint whole = o->extent();
        for (int s : sizes)
            whole *= s;
        // The extent is the whole array's, from 0.
        return finish(call, std::move(t), subarray_rows(sizes, subsizes, starts, o), false, newtype,
                      [&](dt::Type &n) {
                          n.lb = 0;
                          n.ub = whole;
                          n.sticky_lb = n.sticky_ub = false;
                      });
    });
}
