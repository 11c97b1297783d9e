// Internals of the datatype files (datatype*.cc, pack.cc): the flattened
// representation of a datatype and the handle table. Other parts of the MPI
// layer use datatype.h only.
//
// A type is stored flattened: the byte blocks of ONE element, in type-map
// order (the order Pack produces), adjacent blocks merged; plus the run-length
// list of its basic types (its signature) for reductions and Get_elements.
// Constructors compose the blocks of their old types, so a committed type is
// never walked recursively on the data path.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "datatype.h"

namespace rdmx::mpi::dt {

// A flattened type beyond this many blocks (16 bytes each), signature runs
// or constructor pieces is refused (MPI_ERR_NO_MEM) rather than eating the
// node's memory.
inline constexpr size_t kMaxBlocks = size_t{1} << 26;

// One contiguous run of data bytes, at `off` from the element's origin.
struct Block {
    MPI_Aint off = 0;
    MPI_Aint len = 0;
};

// `count` consecutive basic items of the predefined type `type` (a pair
// type such as MPI_FLOAT_INT counts as one item here).
struct SigRun {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    int64_t count = 0;
};

struct Type {
    std::vector<Block> blocks;
    std::vector<SigRun> sig;
    size_t size = 0;
    MPI_Aint lb = 0, ub = 0;            // extent = ub - lb
    MPI_Aint true_lb = 0, true_ub = 0;  // 0, 0 when the type holds no data
    bool has_data = false;              // true bounds are set (a type of size 0 has them too)
    bool sticky_lb = false, sticky_ub = false;  // MPI_LB / MPI_UB markers inside
    MPI_Aint align = 1;                 // C alignment, for a struct's padding
    bool committed = false;
    bool predefined = false;
    // The constructor call, for MPI_Type_get_envelope/get_contents.
    int combiner = MPI_COMBINER_NAMED;
    std::vector<int> ints;
    std::vector<MPI_Aint> addrs;
    std::vector<MPI_Datatype> types;    // each holds a reference while this type lives
    std::string name;
    std::atomic<int> refs{1};           // user_refs + one per type built from this one
    std::atomic<int> user_refs{1};      // the constructor's handle + each get_contents copy

    MPI_Aint extent() const { return ub - lb; }
    // Count elements are one block of count*size bytes starting at true_lb.
    bool contiguous() const
    {
        return size == 0 || (blocks.size() == 1 && static_cast<MPI_Aint>(size) == extent());
    }
};

// The Type a handle names (predefined ones included); nullptr when invalid.
const Type *lookup(MPI_Datatype dt);
Type *lookup_mutable(MPI_Datatype dt);   // derived types only; for naming and freeing
bool is_predefined(MPI_Datatype dt);

// Register a new derived type (takes ownership); MPI_DATATYPE_NULL when the
// table is full. Its inner `types` must already hold a reference each.
MPI_Datatype register_type(Type *t);
// Take / drop a reference; dropping the last one frees the type (and its
// references on inner types). No-op on predefined types.
void retain(MPI_Datatype dt);
void release(MPI_Datatype dt);

// Builder: a new type's type map as the union of pieces, each `count`
// copies of `old` at stride old.extent starting at `disp`.
struct Piece {
    MPI_Aint disp = 0;
    const Type *old = nullptr;
    int64_t count = 0;
    bool keep_empty = false;   // count 0 still bounds the type (MPICH's vector family)
};
// Fill blocks, signature, size, bounds and alignment of t from pieces. With
// pad_struct, round the extent up to the alignment as a C struct would
// (MPI_Type_create_struct without MPI_UB). Throws std::length_error when the
// flattened form would be unreasonably large.
void build(Type *t, const std::vector<Piece> &pieces, bool pad_struct);

// Name of a predefined type ("MPI_INT"); nullptr for others.
const char *predefined_name(MPI_Datatype dt);

// Basic elements (MPI_Get_elements) in one item of the predefined type dt.
int elements_per_item(MPI_Datatype dt);
// Size of the first basic element of an item holding two (the value of a
// pair type, one int of MPI_2INT): Get_elements counts a partial item.
size_t first_element_size(MPI_Datatype dt);

}  // namespace rdmx::mpi::dt
