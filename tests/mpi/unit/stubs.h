// What the unit test's stand-in err_raise saw last (stubs.cc), and the
// prototypes of the MPI calls the tests make.
#pragma once

#include <mpi.h>

#include "mpi_dt_proto.h"

#include <string>

namespace rdmx::mpi {
struct LastError {
    int code = MPI_SUCCESS;
    std::string call;
    std::string what;
};
}  // namespace rdmx::mpi

rdmx::mpi::LastError &test_last_error();
