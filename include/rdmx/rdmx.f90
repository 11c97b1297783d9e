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
!>  - Handles (context or communicator, request, matched message) are
!>    type(c_ptr). A completed request is c_null_ptr. A communicator from
!>    rdmx_comm_split / rdmx_comm_dup is a context: every call takes it.
!>  - Lengths and displacements of the v-collectives (rdmx_allgatherv ...)
!>    are integer(c_size_t) arrays in bytes, entry i+1 for rank i.
!>  - Buffers are passed as type(c_ptr): use c_loc(x) on a contiguous variable
!>    with the TARGET attribute (c_loc(x(1)) for an array). Lengths are in
!>    bytes, integer(c_size_t): e.g. int(n, c_size_t) * c_sizeof(x(1)).
!>    A buffer given to rdmx_isend / rdmx_irecv must stay in place (and, for
!>    a send, unchanged) until the request completes: do not pass array
!>    sections or temporaries.
!>  - Ranks are 0..size-1; user tags are 0..huge(0_c_int).
module rdmx
  use, intrinsic :: iso_c_binding, only: c_int, c_size_t, c_double, c_float, c_ptr, c_null_ptr, c_char, &
                                         c_f_pointer, c_associated, c_intptr_t, c_loc, c_funptr
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
  !> "No peer" for send, receive and sendrecv: completes at once, moves
  !> nothing; a receive reports source RDMX_PROC_NULL, length 0.
  integer(c_int), parameter, public :: RDMX_PROC_NULL = -2
  !> rdmx_comm_split colour of a rank that joins no new communicator.
  integer(c_int), parameter, public :: RDMX_UNDEFINED = -3

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
  integer(c_int), parameter, public :: RDMX_FLOAT_INT = 10
  integer(c_int), parameter, public :: RDMX_DOUBLE_INT = 11
  integer(c_int), parameter, public :: RDMX_INT_INT = 12

  !> Reduction operations (rdmx_op_t).
  integer(c_int), parameter, public :: RDMX_SUM = 0
  integer(c_int), parameter, public :: RDMX_PROD = 1
  integer(c_int), parameter, public :: RDMX_MIN = 2
  integer(c_int), parameter, public :: RDMX_MAX = 3
  integer(c_int), parameter, public :: RDMX_BAND = 4
  integer(c_int), parameter, public :: RDMX_BOR = 5
  integer(c_int), parameter, public :: RDMX_BXOR = 6
  integer(c_int), parameter, public :: RDMX_MINLOC = 7
  integer(c_int), parameter, public :: RDMX_MAXLOC = 8

  !> What a completed receive saw (rdmx_msg_info_t): the sender's rank and tag,
  !> the length it sent in bytes (even when truncated) and the operation's
  !> own status.
  type, bind(c), public :: rdmx_msg_info_t
    integer(c_int) :: source = RDMX_ANY_SOURCE
    integer(c_int) :: tag = RDMX_ANY_TAG
    integer(c_size_t) :: length = 0
    integer(c_int) :: error = RDMX_OK
  end type rdmx_msg_info_t

  !> Pair types of RDMX_MINLOC / RDMX_MAXLOC (RDMX_FLOAT_INT, RDMX_DOUBLE_INT,
  !> RDMX_INT_INT): the value and its index (e.g. a rank); ties keep the
  !> lower index.
  type, bind(c), public :: rdmx_float_int_t
    real(c_float) :: v = 0
    integer(c_int) :: i = 0
  end type rdmx_float_int_t

  !> {double v; int i;}: see rdmx_float_int_t.
  type, bind(c), public :: rdmx_double_int_t
    real(c_double) :: v = 0
    integer(c_int) :: i = 0
  end type rdmx_double_int_t

  !> {int v; int i;}: see rdmx_float_int_t.
  type, bind(c), public :: rdmx_int_int_t
    integer(c_int) :: v = 0
    integer(c_int) :: i = 0
  end type rdmx_int_int_t

  public :: rdmx_init, rdmx_finalize, rdmx_rank, rdmx_size
  public :: rdmx_send, rdmx_recv, rdmx_isend, rdmx_irecv, rdmx_wait, rdmx_waitall
  public :: rdmx_barrier, rdmx_allreduce, rdmx_wtime, rdmx_strerror, rdmx_in_place
  public :: rdmx_comm_split, rdmx_comm_dup, rdmx_comm_free, rdmx_comm_world_rank, rdmx_local_rank, rdmx_local_size
  public :: rdmx_abort, rdmx_sendrecv, rdmx_mprobe, rdmx_improbe, rdmx_mrecv, rdmx_imrecv
  public :: rdmx_greq_start, rdmx_greq_complete, rdmx_progress_register, rdmx_progress_unregister, rdmx_progress
  public :: rdmx_attr_key_create, rdmx_attr_set, rdmx_attr_get
  public :: rdmx_scan, rdmx_exscan, rdmx_allgatherv, rdmx_gatherv, rdmx_scatterv, rdmx_alltoallv
  public :: rdmx_ibarrier, rdmx_ibcast, rdmx_ireduce, rdmx_iallreduce, rdmx_iallgather, rdmx_ialltoall, rdmx_ialltoallv

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

    ! ------------------------------------------------------ communicators ---
    !> rdmx_comm_split: collective over ctx; the ranks passing the same color
    !> (>= 0) form newctx, ordered by (key, rank in ctx). RDMX_UNDEFINED joins
    !> none (newctx is c_null_ptr). Free it with rdmx_comm_free.
    function rdmx_comm_split(ctx, color, key, newctx) bind(c, name='rdmx_comm_split') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: color
      integer(c_int), value :: key
      type(c_ptr), intent(out) :: newctx
      integer(c_int) :: st
    end function rdmx_comm_split

    !> rdmx_comm_dup: collective over ctx; ctx's ranks in ctx's order with a
    !> message space of their own.
    function rdmx_comm_dup(ctx, newctx) bind(c, name='rdmx_comm_dup') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), intent(out) :: newctx
      integer(c_int) :: st
    end function rdmx_comm_dup

    !> rdmx_comm_free: free a communicator from split or dup (not the one
    !> rdmx_init made) and set ctx to c_null_ptr. Local, not collective.
    function rdmx_comm_free(ctx) bind(c, name='rdmx_comm_free') result(st)
      import :: c_ptr, c_int
      type(c_ptr), intent(inout) :: ctx
      integer(c_int) :: st
    end function rdmx_comm_free

    !> rdmx_comm_world_rank: job rank of ctx's member rank, -1 if out of range.
    function rdmx_comm_world_rank(ctx, rank) bind(c, name='rdmx_comm_world_rank') result(r)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: rank
      integer(c_int) :: r
    end function rdmx_comm_world_rank

    !> rdmx_local_rank: index of this rank among ctx's members on this node.
    function rdmx_local_rank(ctx) bind(c, name='rdmx_local_rank') result(r)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: r
    end function rdmx_local_rank

    !> rdmx_local_size: number of ctx's members on this node.
    function rdmx_local_size(ctx) bind(c, name='rdmx_local_size') result(n)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: n
    end function rdmx_local_size

    !> rdmx_abort: end every process of the job with exit status code. Does
    !> not return unless ctx is invalid.
    function rdmx_abort(ctx, code) bind(c, name='rdmx_abort') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: code
      integer(c_int) :: st
    end function rdmx_abort

    !> rdmx_imrecv: nonblocking receive of a matched message (from
    !> rdmx_mprobe or rdmx_improbe) into buf; msg becomes c_null_ptr.
    function rdmx_imrecv(buf, len, msg, req) bind(c, name='rdmx_imrecv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      type(c_ptr), intent(inout) :: msg
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_imrecv

    ! ------------------------ generalized requests and progress callbacks ---
    !> rdmx_greq_start: a request that completes when rdmx_greq_complete is
    !> called on it (from any thread).
    function rdmx_greq_start(ctx, req) bind(c, name='rdmx_greq_start') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_greq_start

    !> rdmx_greq_complete: complete a generalized request with status, once.
    function rdmx_greq_complete(req, status) bind(c, name='rdmx_greq_complete') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: req
      integer(c_int), value :: status
      integer(c_int) :: st
    end function rdmx_greq_complete

    !> rdmx_progress_register: call fn(arg) on every progress pass of the job;
    !> fn is c_funloc of a bind(c) function taking type(c_ptr), value and
    !> returning integer(c_int), the number of events it handled.
    function rdmx_progress_register(ctx, fn, arg) bind(c, name='rdmx_progress_register') result(st)
      import :: c_ptr, c_funptr, c_int
      type(c_ptr), value :: ctx
      type(c_funptr), value :: fn
      type(c_ptr), value :: arg
      integer(c_int) :: st
    end function rdmx_progress_register

    !> rdmx_progress_unregister: remove what rdmx_progress_register(ctx, fn, arg) added.
    function rdmx_progress_unregister(ctx, fn, arg) bind(c, name='rdmx_progress_unregister') result(st)
      import :: c_ptr, c_funptr, c_int
      type(c_ptr), value :: ctx
      type(c_funptr), value :: fn
      type(c_ptr), value :: arg
      integer(c_int) :: st
    end function rdmx_progress_unregister

    !> rdmx_attr_key_create: a new key for per-context values (one per
    !> process for each layer that keeps state per communicator).
    function rdmx_attr_key_create(key) bind(c, name='rdmx_attr_key_create') result(st)
      import :: c_int
      integer(c_int), intent(out) :: key
      integer(c_int) :: st
    end function rdmx_attr_key_create

    !> rdmx_attr_set: keep value under key on ctx; free_fn (c_null_funptr, or
    !> c_funloc of a bind(c) subroutine taking type(c_ptr), value) is called
    !> on it when it is replaced or ctx is freed.
    function rdmx_attr_set(ctx, key, value, free_fn) bind(c, name='rdmx_attr_set') result(st)
      import :: c_ptr, c_funptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: key
      type(c_ptr), value :: value
      type(c_funptr), value :: free_fn
      integer(c_int) :: st
    end function rdmx_attr_set

    !> rdmx_attr_get: the value kept under key on ctx, c_null_ptr if none.
    function rdmx_attr_get(ctx, key, value) bind(c, name='rdmx_attr_get') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: key
      type(c_ptr), intent(out) :: value
      integer(c_int) :: st
    end function rdmx_attr_get

    !> rdmx_progress: drive progress once from the calling thread; returns
    !> the number of events handled.
    function rdmx_progress(ctx) bind(c, name='rdmx_progress') result(n)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int) :: n
    end function rdmx_progress

    ! ------------------------------------------------ more collectives ---
    !> rdmx_scan: rank r's recvbuf gets op over ranks 0..r of count elements
    !> of type dt (rdmx_in_place() as sendbuf allowed).
    function rdmx_scan(ctx, sendbuf, recvbuf, count, dt, op) bind(c, name='rdmx_scan') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: count
      integer(c_int), value :: dt
      integer(c_int), value :: op
      integer(c_int) :: st
    end function rdmx_scan

    !> rdmx_exscan: rank r's recvbuf gets op over ranks 0..r-1; rank 0's is
    !> left untouched.
    function rdmx_exscan(ctx, sendbuf, recvbuf, count, dt, op) bind(c, name='rdmx_exscan') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: count
      integer(c_int), value :: dt
      integer(c_int), value :: op
      integer(c_int) :: st
    end function rdmx_exscan

    !> rdmx_allgatherv: every rank's len bytes into recvbuf, rank i's lens(i+1)
    !> bytes at byte offset displs(i+1) (one entry per rank of ctx).
    function rdmx_allgatherv(ctx, sendbuf, len, recvbuf, lens, displs) bind(c, name='rdmx_allgatherv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), value :: len
      type(c_ptr), value :: recvbuf
      integer(c_size_t), intent(in) :: lens(*)
      integer(c_size_t), intent(in) :: displs(*)
      integer(c_int) :: st
    end function rdmx_allgatherv

    !> rdmx_gatherv: as rdmx_allgatherv, into root's recvbuf only.
    function rdmx_gatherv(ctx, sendbuf, len, recvbuf, lens, displs, root) bind(c, name='rdmx_gatherv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), value :: len
      type(c_ptr), value :: recvbuf
      integer(c_size_t), intent(in) :: lens(*)
      integer(c_size_t), intent(in) :: displs(*)
      integer(c_int), value :: root
      integer(c_int) :: st
    end function rdmx_gatherv

    !> rdmx_scatterv: root's lens(i+1) bytes at sendbuf + displs(i+1) to rank
    !> i's recvbuf (len bytes).
    function rdmx_scatterv(ctx, sendbuf, lens, displs, recvbuf, len, root) bind(c, name='rdmx_scatterv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), intent(in) :: lens(*)
      integer(c_size_t), intent(in) :: displs(*)
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: len
      integer(c_int), value :: root
      integer(c_int) :: st
    end function rdmx_scatterv

    !> rdmx_alltoallv: sendlens(i+1) bytes at sendbuf + sdispls(i+1) to rank
    !> i; recvlens(j+1) bytes from rank j at recvbuf + rdispls(j+1).
    function rdmx_alltoallv(ctx, sendbuf, sendlens, sdispls, recvbuf, recvlens, rdispls) &
        bind(c, name='rdmx_alltoallv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), intent(in) :: sendlens(*)
      integer(c_size_t), intent(in) :: sdispls(*)
      type(c_ptr), value :: recvbuf
      integer(c_size_t), intent(in) :: recvlens(*)
      integer(c_size_t), intent(in) :: rdispls(*)
      integer(c_int) :: st
    end function rdmx_alltoallv

    ! ------------------------------------------- nonblocking collectives ---
    !> rdmx_ibarrier: a barrier completed by req (rdmx_wait ...). The calls
    !> below take their blocking twin's arguments plus req; their buffers
    !> (lens and displs arrays included) must stay in place until req completes.
    function rdmx_ibarrier(ctx, req) bind(c, name='rdmx_ibarrier') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_ibarrier

    !> rdmx_ibcast: len bytes at buf from root to every rank.
    function rdmx_ibcast(ctx, buf, len, root, req) bind(c, name='rdmx_ibcast') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      integer(c_int), value :: root
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_ibcast

    !> rdmx_ireduce: count elements of type dt reduced with op into root's recvbuf.
    function rdmx_ireduce(ctx, sendbuf, recvbuf, count, dt, op, root, req) bind(c, name='rdmx_ireduce') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: count
      integer(c_int), value :: dt
      integer(c_int), value :: op
      integer(c_int), value :: root
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_ireduce

    !> rdmx_iallreduce: count elements of type dt reduced with op into every
    !> rank's recvbuf (rdmx_in_place() as sendbuf allowed).
    function rdmx_iallreduce(ctx, sendbuf, recvbuf, count, dt, op, req) bind(c, name='rdmx_iallreduce') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: count
      integer(c_int), value :: dt
      integer(c_int), value :: op
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_iallreduce

    !> rdmx_iallgather: every rank's len bytes into recvbuf (size*len bytes),
    !> rank i's at byte offset i*len.
    function rdmx_iallgather(ctx, sendbuf, len, recvbuf, req) bind(c, name='rdmx_iallgather') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), value :: len
      type(c_ptr), value :: recvbuf
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_iallgather

    !> rdmx_ialltoall: len bytes per peer, block i of sendbuf to rank i.
    function rdmx_ialltoall(ctx, sendbuf, len, recvbuf, req) bind(c, name='rdmx_ialltoall') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), value :: len
      type(c_ptr), value :: recvbuf
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_ialltoall

    !> rdmx_ialltoallv: rdmx_alltoallv completed by req.
    function rdmx_ialltoallv(ctx, sendbuf, sendlens, sdispls, recvbuf, recvlens, rdispls, req) &
        bind(c, name='rdmx_ialltoallv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), intent(in) :: sendlens(*)
      integer(c_size_t), intent(in) :: sdispls(*)
      type(c_ptr), value :: recvbuf
      integer(c_size_t), intent(in) :: recvlens(*)
      integer(c_size_t), intent(in) :: rdispls(*)
      type(c_ptr), intent(out) :: req
      integer(c_int) :: st
    end function rdmx_ialltoallv
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

    function c_rdmx_sendrecv(ctx, sendbuf, sendlen, dest, sendtag, recvbuf, recvlen, source, recvtag, info_p) &
        bind(c, name='rdmx_sendrecv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: ctx
      type(c_ptr), value :: sendbuf
      integer(c_size_t), value :: sendlen
      integer(c_int), value :: dest
      integer(c_int), value :: sendtag
      type(c_ptr), value :: recvbuf
      integer(c_size_t), value :: recvlen
      integer(c_int), value :: source
      integer(c_int), value :: recvtag
      type(c_ptr), value :: info_p
      integer(c_int) :: st
    end function c_rdmx_sendrecv

    function c_rdmx_mprobe(ctx, source, tag, msg_p, info_p) bind(c, name='rdmx_mprobe') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: source
      integer(c_int), value :: tag
      type(c_ptr), intent(out) :: msg_p
      type(c_ptr), value :: info_p
      integer(c_int) :: st
    end function c_rdmx_mprobe

    function c_rdmx_improbe(ctx, source, tag, found_p, msg_p, info_p) bind(c, name='rdmx_improbe') result(st)
      import :: c_ptr, c_int
      type(c_ptr), value :: ctx
      integer(c_int), value :: source
      integer(c_int), value :: tag
      integer(c_int), intent(out) :: found_p
      type(c_ptr), intent(out) :: msg_p
      type(c_ptr), value :: info_p
      integer(c_int) :: st
    end function c_rdmx_improbe

    function c_rdmx_mrecv(buf, len, msg_p, info_p) bind(c, name='rdmx_mrecv') result(st)
      import :: c_ptr, c_size_t, c_int
      type(c_ptr), value :: buf
      integer(c_size_t), value :: len
      type(c_ptr), intent(inout) :: msg_p
      type(c_ptr), value :: info_p
      integer(c_int) :: st
    end function c_rdmx_mrecv

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

  !> rdmx_sendrecv: send sendlen bytes at sendbuf to dest and receive at most
  !> recvlen bytes into recvbuf from source at once (no deadlock when two
  !> ranks exchange); either peer may be RDMX_PROC_NULL. info, if present,
  !> describes the receive.
  function rdmx_sendrecv(ctx, sendbuf, sendlen, dest, sendtag, recvbuf, recvlen, source, recvtag, info) result(st)
    type(c_ptr), intent(in) :: ctx
    type(c_ptr), intent(in) :: sendbuf
    integer(c_size_t), intent(in) :: sendlen
    integer(c_int), intent(in) :: dest
    integer(c_int), intent(in) :: sendtag
    type(c_ptr), intent(in) :: recvbuf
    integer(c_size_t), intent(in) :: recvlen
    integer(c_int), intent(in) :: source
    integer(c_int), intent(in) :: recvtag
    type(rdmx_msg_info_t), intent(out), optional, target :: info
    integer(c_int) :: st
    if (present(info)) then
      st = c_rdmx_sendrecv(ctx, sendbuf, sendlen, dest, sendtag, recvbuf, recvlen, source, recvtag, c_loc(info))
    else
      st = c_rdmx_sendrecv(ctx, sendbuf, sendlen, dest, sendtag, recvbuf, recvlen, source, recvtag, c_null_ptr)
    end if
  end function rdmx_sendrecv

  !> rdmx_mprobe: block until a message matching (source, tag) arrives and
  !> take it off the queue as msg, for this caller alone to receive with
  !> rdmx_mrecv / rdmx_imrecv; info%length is its size in bytes.
  function rdmx_mprobe(ctx, source, tag, msg, info) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int), intent(in) :: source
    integer(c_int), intent(in) :: tag
    type(c_ptr), intent(out) :: msg
    type(rdmx_msg_info_t), intent(out), optional, target :: info
    integer(c_int) :: st
    if (present(info)) then
      st = c_rdmx_mprobe(ctx, source, tag, msg, c_loc(info))
    else
      st = c_rdmx_mprobe(ctx, source, tag, msg, c_null_ptr)
    end if
  end function rdmx_mprobe

  !> rdmx_improbe: as rdmx_mprobe if a message matches now (found = 1), else
  !> found = 0.
  function rdmx_improbe(ctx, source, tag, found, msg, info) result(st)
    type(c_ptr), intent(in) :: ctx
    integer(c_int), intent(in) :: source
    integer(c_int), intent(in) :: tag
    integer(c_int), intent(out) :: found
    type(c_ptr), intent(out) :: msg
    type(rdmx_msg_info_t), intent(out), optional, target :: info
    integer(c_int) :: st
    if (present(info)) then
      st = c_rdmx_improbe(ctx, source, tag, found, msg, c_loc(info))
    else
      st = c_rdmx_improbe(ctx, source, tag, found, msg, c_null_ptr)
    end if
  end function rdmx_improbe

  !> rdmx_mrecv: receive the matched message msg into buf (at most len
  !> bytes); msg becomes c_null_ptr. A longer message returns
  !> RDMX_ERR_TRUNCATE.
  function rdmx_mrecv(buf, len, msg, info) result(st)
    type(c_ptr), intent(in) :: buf
    integer(c_size_t), intent(in) :: len
    type(c_ptr), intent(inout) :: msg
    type(rdmx_msg_info_t), intent(out), optional, target :: info
    integer(c_int) :: st
    if (present(info)) then
      st = c_rdmx_mrecv(buf, len, msg, c_loc(info))
    else
      st = c_rdmx_mrecv(buf, len, msg, c_null_ptr)
    end if
  end function rdmx_mrecv

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
