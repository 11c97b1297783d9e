// The non-function symbols of MPICH's ABI and the library functions its
// headers reach through macros.
//
// A binary compiled against MPICH's mpi.h refers to these by name: the
// status-ignore pointers of the Fortran interop (MPI_F_STATUS_IGNORE, ...),
// the topology sentinels MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY, MPI_DUP_FN
// (a macro for MPIR_Dup_fn), MPI_T_PVAR_ALL_HANDLES. The objects have the
// sizes MPICH gives them: an executable that copies one at link time
// (a copy relocation) copies as many bytes as MPICH's library had.
//
// MPICH's C++ bindings (libmpichcxx.so.12, linked by mpicxx.mpich) need
// three more functions of libmpich.so.12, MPII_*_set_cxx and
// MPII_Keyval_set_proxy: they make the library call C++ callbacks through
// C++ trampolines. This library has no such trampolines, so those calls
// report MPI_ERR_UNSUPPORTED_OPERATION; the rest of the C++ bindings works
// (they call the C functions).
#include "abi.h"
#include "errors.h"

// Used in an extern "C" block: `extern "C" T x = v;` draws a warning. The
// const pointers below go without it (GCC ignores it on them): their
// declarations in rdmx_mpi_proto.h give them default visibility.
#define RDMXMPI_DATA __attribute__((visibility("default")))

namespace {

// Storage the status-ignore pointers point at: distinct addresses, never
// written, so a conversion function can recognize them.
MPI_Fint f_status_ignore[MPI_F_STATUS_SIZE];
MPI_Fint f_statuses_ignore[MPI_F_STATUS_SIZE];

// What MPI_T_PVAR_ALL_HANDLES points at: only its address matters.
char pvar_all_handles_tag;

}  // namespace

extern "C" {

RDMXMPI_DATA MPI_Fint *MPI_F_STATUS_IGNORE = f_status_ignore;
RDMXMPI_DATA MPI_Fint *MPI_F_STATUSES_IGNORE = f_statuses_ignore;

// The Fortran 2008 binding's objects, and C pointers to them.
RDMXMPI_DATA MPI_F08_status MPIR_F08_MPI_STATUS_IGNORE_OBJ = {};
RDMXMPI_DATA MPI_F08_status MPIR_F08_MPI_STATUSES_IGNORE_OBJ[1] = {};
RDMXMPI_DATA int MPIR_F08_MPI_IN_PLACE = 0;
RDMXMPI_DATA int MPIR_F08_MPI_BOTTOM = 0;
RDMXMPI_DATA MPI_F08_status *MPI_F08_STATUS_IGNORE = &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
RDMXMPI_DATA MPI_F08_status *MPI_F08_STATUSES_IGNORE = MPIR_F08_MPI_STATUSES_IGNORE_OBJ;

// MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are pointers a program passes as
// the weights of a distributed graph topology; the library tells them apart
// by address. MPICH's targets are 8-byte objects.
RDMXMPI_DATA int MPIR_C_MPI_UNWEIGHTED[2] = {};
RDMXMPI_DATA int MPIR_C_MPI_WEIGHTS_EMPTY[2] = {};
int *const MPI_UNWEIGHTED = MPIR_C_MPI_UNWEIGHTED;
int *const MPI_WEIGHTS_EMPTY = MPIR_C_MPI_WEIGHTS_EMPTY;

struct MPIR_T_pvar_handle_s *const MPI_T_PVAR_ALL_HANDLES =
    reinterpret_cast<struct MPIR_T_pvar_handle_s *>(&pvar_all_handles_tag);

}  // extern "C"

// MPI_DUP_FN (and MPI_COMM_DUP_FN, MPI_TYPE_DUP_FN, MPI_WIN_DUP_FN): the
// copy callback that gives the new object the same attribute value.
RDMXMPI_API int MPIR_Dup_fn(MPI_Comm, int, void *, void *attribute_val_in, void *attribute_val_out,
                            int *flag)
{
    *static_cast<void **>(attribute_val_out) = attribute_val_in;
    *flag = 1;
    return MPI_SUCCESS;
}

// The C++ bindings' hooks (see the top of the file). The function pointers
// are C++ trampolines of libmpichcxx; their exact types do not matter here.
using CxxTrampoline = void (*)(void);

RDMXMPI_API void MPII_Op_set_cxx(MPI_Op, CxxTrampoline)
{
    rdmx::mpi::err_unsupported("MPI::Op::Init of the MPI C++ bindings (C++ user-defined ops)");
}

RDMXMPI_API void MPII_Errhandler_set_cxx(MPI_Errhandler, CxxTrampoline)
{
    rdmx::mpi::err_unsupported("Create_errhandler of the MPI C++ bindings (C++ error handlers)");
}

RDMXMPI_API void MPII_Keyval_set_proxy(int, CxxTrampoline, CxxTrampoline)
{
    rdmx::mpi::err_unsupported("Create_keyval of the MPI C++ bindings (C++ attribute callbacks)");
}
