!> rdmx.f90: the `rdmx` Fortran 2008 module, ISO_C_BINDING interfaces to the
!> C API in rdmx.h (see that header for the full contract of each call).
!>
!> The module is shipped as source: compile it with your own compiler, then
!> link librdmx, e.g. with gfortran:
!>
!>     gfortran -c "$(pkg-config --variable=includedir rdmx)/rdmx/rdmx.f90"
!>     gfortran -o app app.f90 rdmx.o $(pkg-config --libs rdmx)
!>
!> Conventions:
!>  - Every function returns an integer(c_int) status: RDMX_OK (0) on success,
!>    a negative RDMX_ERR_* value on error; rdmx_strerror(status) names it.
!>  - Handles (context, request) are type(c_ptr). A completed request is
!>    c_null_ptr.
!>  - Buffers are passed as type(c_ptr): use c_loc(x) on a contiguous variable
!>    with the TARGET attribute (c_loc(x(1)) for an array). Lengths are in
!>    bytes, integer(c_size_t): e.g. int(n, c_size_t) * c_sizeof(x(1)).
!>    A buffer given to rdmx_isend / rdmx_irecv must stay in place (and, for
!>    a send, unchanged) until the request completes: do not pass array
!>    sections or temporaries.
!>  - Ranks are 0..size-1; user tags are 0..huge(0_c_int).
module rdmx
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_double, c_ptr, c_null_ptr, c_char, &
                                         c_f_pointer, c_associated, c_intptr_t, c_loc
  implicit none
  private

  ! --------------------------------------------------------- status codes ---
  !> Status values (rdmx_status_t).
  integer(c_int), parameter, public :: RDMX_OK = 0
  integer(c_int), parameter, public :: RDMX_INPROGRESS = 1
  integer(c_int), parameter, public :: RDMX_ERR_INVALID_ARG = -1
  integer(c_int), parameter, public :: RDMX_ERR_TRUNCATE = -2
  integer(c_int), parameter, public :: RDMX_ERR_PEER_LOST = -3
  integer(c_int), parameter, public :: RDMX_ERR_TIMEOUT = -4
  integer(c_int), parameter, public :: RDMX_ERR_CONNECT = -5
  integer(c_int), parameter, public :: RDMX_ERR_DEVICE = -6
  integer(c_int), parameter, public :: RDMX_ERR_NO_DEVICE = -7
  integer(c_int), parameter, public :: RDMX_ERR_NO_MEMORY = -8
  integer(c_int), parameter, public :: RDMX_ERR_CANCELED = -9
  integer(c_int), parameter, public :: RDMX_ERR_INTERNAL = -10
  integer(c_int), parameter, public :: RDMX_ERR_PROTOCOL = -11
  integer(c_int), parameter, public :: RDMX_ERR_UNSUPPORTED = -12

  !> Wildcards for receives and probes.
  integer(c_int), parameter, public :: RDMX_ANY_SOURCE = -1
  integer(c_int), parameter, public :: RDMX_ANY_TAG = -1

  !> Reduction element types (rdmx_datatype_t).
  integer(c_int), parameter, public :: RDMX_INT8 = 0
  integer(c_int), parameter, public :: RDMX_INT16 = 1
  integer(c_int), parameter, public :: RDMX_INT32 = 2
  integer(c_int), parameter, public :: RDMX_INT64 = 3
  integer(c_int), parameter, public :: RDMX_UINT8 = 4
  integer(c_int), parameter, public :: RDMX_UINT16 = 5
  integer(c_int), parameter, public :: RDMX_UINT32 = 6
  integer(c_int), parameter, public :: RDMX_UINT64 = 7
  integer(c_int), parameter, public :: RDMX_FLOAT = 8
  integer(c_int), parameter, public :: RDMX_DOUBLE = 9

  !> Reduction operations (rdmx_op_t).
  integer(c_int), parameter, public :: RDMX_SUM = 0
  integer(c_int), parameter, public :: RDMX_PROD = 1
  integer(c_int), parameter, public :: RDMX_MIN = 2
  integer(c_int), parameter, public :: RDMX_MAX = 3
  integer(c_int), parameter, public :: RDMX_BAND = 4
  integer(c_int), parameter, public :: RDMX_BOR = 5
  integer(c_int), parameter, public :: RDMX_BXOR = 6

  !> What a completed receive saw (rdmx_msg_info_t): the sender's rank and tag,
  !> the length it sent in bytes (even when truncated) and the operation's
  !> own status.
  type, bind(c), public :: rdmx_msg_info_t
    integer(c_int) :: source = RDMX_ANY_SOURCE
    integer(c_int) :: tag = RDMX_ANY_TAG
    integer(c_size_t) :: length = 0
    integer(c_int) :: error = RDMX_OK
  end type rdmx_msg_info_t

  public :: rdmx_init, rdmx_finalize, rdmx_rank, rdmx_size
  public :: rdmx_send, rdmx_recv, rdmx_isend, rdmx_irecv, rdmx_wait, rdmx_waitall
  public :: rdmx_barrier, rdmx_allreduce, rdmx_wtime, rdmx_strerror, rdmx_in_place

  ! ----------------------------------------- direct bindings (public) ---
  interface
    !> rdmx_finalize: disconnect, release every resource, free the context.
    function rdmx_finalize(ctx) bind(c, name='rdmx_finalize') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: st
    end function rdmx_finalize

    !> rdmx_rank: this process's rank, or -1 for an invalid context.
    function rdmx_rank(ctx) bind(c, name='rdmx_rank') result(r)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: r
    end function rdmx_rank

    !> rdmx_size: number of processes in the job, or -1 for an invalid context.
    function rdmx_size(ctx) bind(c, name='rdmx_size') result(n)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: n
    end function rdmx_size

    !> rdmx_send: blocking send of len bytes at buf to rank dest with tag (>= 0).
    function rdmx_send(ctx, buf, len, dest, tag) bind(c, name='rdmx_send') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: dest
      integer(c_int), value :: tag
      integer(c_int) :: st
    end function rdmx_send

    !> rdmx_isend: nonblocking send; req receives a request for rdmx_wait.
    function rdmx_isend(ctx, buf, len, dest, tag, req) bind(c, name='rdmx_isend') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: dest
      integer(c_int), value :: tag
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_isend

    !> rdmx_irecv: nonblocking receive of at most len bytes into buf.
    function rdmx_irecv(ctx, buf, len, source, tag, req) bind(c, name='rdmx_irecv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: source
      integer(c_int), value :: tag
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_irecv

    !> rdmx_barrier: returns when every rank has entered it.
    function rdmx_barrier(ctx) bind(c, name='rdmx_barrier') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: st
    end function rdmx_barrier

    !> rdmx_allreduce: count elements of type dt (RDMX_INT8 ... RDMX_DOUBLE)
    !> reduced with op (RDMX_SUM ...) into recvbuf on every rank. sendbuf may
    !> be rdmx_in_place() to reduce recvbuf in place.
    function rdmx_allreduce(ctx, sendbuf, recvbuf, count, dt, op) bind(c, name='rdmx_allreduce') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: count
      integer(c_int), value :: dt
      integer(c_int), value :: op
      integer(c_int) :: st
    end function rdmx_allreduce

    !> rdmx_wtime: seconds since an arbitrary point, monotonic.
    function rdmx_wtime() bind(c, name='rdmx_wtime') result(t)
      import :: c_double
      real(c_double) :: t
    end function rdmx_wtime
  end interface

  ! ------------------------------- raw bindings behind the wrappers below ---
  interface
    function c_rdmx_init(cfg, ctx_p) bind(c, name='rdmx_init') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: cfg
      type(c_ptr), intent(out) :: ctx_p
      integer(c_int) :: st
    end function c_rdmx_init

    function c_rdmx_recv(ctx, buf, len, source, tag, info_p) bind(c, name='rdmx_recv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: source
      integer(c_int), value :: tag
      type(c_ptr), value :: info_p
      integer(c_int) :: st
    end function c_rdmx_recv

    function c_rdmx_wait(req, info_p) bind(c, name='rdmx_wait') result(st)
      import :: c_ptr, c_int
      type(c_ptr), intent(inout) :: req
      type(c_ptr), value :: info_p
      integer(c_int) :: st
    end function c_rdmx_wait

    function c_rdmx_waitall(n, reqs, infos) bind(c, name='rdmx_waitall') result(st)
      import :: c_ptr, c_size_t, c_int
      integer(c_size_t), value :: n
      type(c_ptr), intent(inout) :: reqs(*)
      type(c_ptr), value :: infos
      integer(c_int) :: st
    end function c_rdmx_waitall

    function c_rdmx_strerror(status) bind(c, name='rdmx_strerror') result(p)
      import :: c_ptr, c_int
      integer(c_int), value :: status
      type(c_ptr) :: p
    end function c_rdmx_strerror

    function c_strlen(s) bind(c, name='strlen') result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
  end interface

contains

  !> rdmx_init with cfg NULL (defaults plus the RDMX_* environment): create
  !> the context, collective over all ranks of the job. On error ctx is
  !> c_null_ptr.
  function rdmx_init(ctx) result(st)
    type(c_ptr), intent(out) :: ctx
    integer(c_int) :: st
    st = c_rdmx_init(c_null_ptr, ctx)
  end function rdmx_init

  !> rdmx_recv: blocking receive of at most len bytes into buf from source (or
  !> RDMX_ANY_SOURCE) with tag (or RDMX_ANY_TAG). A longer message fills len
  !> bytes and returns RDMX_ERR_TRUNCATE; info%length is the size sent.
  function rdmx_recv(ctx, buf, len, source, tag, info) result(st)
    type(c_ptr), intent(in) :: ctx
    type(c_ptr), intent(in) :: buf
    integer(c_size_t), intent(in) :: len
    integer(c_int), intent(in) :: source
    integer(c_int), intent(in) :: tag
    type(rdmx_msg_info_t), intent(out), optional, target :: info
    integer(c_int) :: st
    if (present(info)) then
      st = c_rdmx_recv(ctx, buf, len, source, tag, c_loc(info))
    else
      st = c_rdmx_recv(ctx, buf, len, source, tag, c_null_ptr)
    end if
  end function rdmx_recv

  !> rdmx_wait: wait for a request, free it, set req to c_null_ptr and return
  !> the operation's own status (e.g. RDMX_ERR_TRUNCATE for a receive).
  function rdmx_wait(req, info) result(st)
    type(c_ptr), intent(inout) :: req
    type(rdmx_msg_info_t), intent(out), optional, target :: info
    integer(c_int) :: st
    if (present(info)) then
      st = c_rdmx_wait(req, c_loc(info))
    else
      st = c_rdmx_wait(req, c_null_ptr)
    end if
  end function rdmx_wait

  !> rdmx_waitall: wait for every request in reqs (all become c_null_ptr).
  !> Returns RDMX_OK or the first error in array order. infos, if present,
  !> must have at least size(reqs) elements.
  function rdmx_waitall(reqs, infos) result(st)
    type(c_ptr), intent(inout) :: reqs(:)
    type(rdmx_msg_info_t), intent(out), optional, target :: infos(:)
    integer(c_int) :: st
    type(c_ptr) :: tmp(size(reqs))
    tmp = reqs
    if (present(infos)) then
      if (size(infos) < size(reqs)) then
        st = RDMX_ERR_INVALID_ARG
        return
      end if
      st = c_rdmx_waitall(int(size(reqs), c_size_t), tmp, c_loc(infos(1)))
    else
      st = c_rdmx_waitall(int(size(reqs), c_size_t), tmp, c_null_ptr)
    end if
    reqs = tmp
  end function rdmx_waitall

  !> rdmx_strerror: the name of a status, as a Fortran string.
  function rdmx_strerror(status) result(msg)
    integer(c_int), intent(in) :: status
    character(len=:), allocatable :: msg
    type(c_ptr) :: p
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    p = c_rdmx_strerror(status)
    if (.not. c_associated(p)) then
      msg = 'unknown status'
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = chars(i)
    end do
  end function rdmx_strerror

  !> RDMX_IN_PLACE: pass as sendbuf of rdmx_allreduce to reduce recvbuf in place.
  function rdmx_in_place() result(p)
    type(c_ptr) :: p
    p = transfer(1_c_intptr_t, p)
  end function rdmx_in_place

end module rdmx
