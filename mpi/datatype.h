// Datatypes: the layout of predefined and derived MPI datatypes, and the
// pack/unpack engine that the point-to-point and collective code uses for
// non-contiguous data.
#pragma once

#include <cstddef>
#include <cstdint>

#include "abi.h"

namespace rdmx::mpi {

// What a send, a receive or a collective needs to know about a datatype.
struct TypeView {
    size_t size = 0;         // bytes of data in one element (MPI_Type_size)
    MPI_Aint lb = 0;         // lower bound (MPI_Type_get_extent)
    MPI_Aint extent = 0;     // stride between consecutive elements
    MPI_Aint true_lb = 0;    // where the first byte of data sits
    bool contiguous = false; // count elements are one block of count*size bytes at buf+true_lb
    bool committed = false;  // predefined types are always committed
};

// False when dt is not a valid datatype handle (null, freed, never created).
bool type_view(MPI_Datatype dt, TypeView *out);

// Copy count elements of dt at buf into out (count*size bytes, packed).
void type_pack(const void *buf, int64_t count, MPI_Datatype dt, void *out);
// Copy up to `bytes` packed bytes from in into count elements of dt at buf;
// a short input fills whole leading elements (and basic items) first.
void type_unpack(const void *in, size_t bytes, void *buf, int64_t count, MPI_Datatype dt);

// For reductions: the predefined type every basic item of dt is (e.g. a
// vector of MPI_DOUBLE gives MPI_DOUBLE with items = count of doubles per
// element); MPI_DATATYPE_NULL when dt mixes types.
MPI_Datatype type_basic(MPI_Datatype dt, int64_t *items_per_element);

// MPI_Get_elements: the basic elements in `bytes` packed bytes of dt (whole
// elements, then the leading basic items of a partial one; a pair type such
// as MPI_FLOAT_INT holds two). MPI_UNDEFINED when `bytes` ends inside a basic
// item or dt is not a valid handle; 0 for a type of size 0.
int64_t type_elements(MPI_Datatype dt, size_t bytes);

}  // namespace rdmx::mpi
