// Groups of the MPI layer: an MPI_Group handle names an ordered list of
// world ranks (member i of the group is world rank members[i]).
#pragma once

#include <vector>

#include "abi.h"

namespace rdmx::mpi {

// The members of g (MPI_GROUP_EMPTY has none); false for MPI_GROUP_NULL, a
// freed group or a value that never was a group.
bool group_members(MPI_Group g, std::vector<int> *out);

// A new group handle for these world ranks (MPI_GROUP_EMPTY when empty).
// Throws std::bad_alloc.
MPI_Group group_make(std::vector<int> world_ranks);

// This process's rank in MPI_COMM_WORLD (-1 before MPI_Init).
int world_rank_self();

}  // namespace rdmx::mpi
