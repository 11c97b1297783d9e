!> The Fortran module's communicator and point-to-point interfaces, under
!> mpirun: split, dup, free, world/local ranks, sendrecv, RDMX_PROC_NULL,
!> matched probe, generalized requests and progress callbacks. Prints
!> "f_test: OK on N ranks" on rank 0; a failure prints FAIL and exits 1;
!> no RDMA device exits 77 (ctest SKIP).
module f_test_hook
  use, intrinsic :: iso_c_binding, only: c_int, c_ptr, c_f_pointer
  implicit none
  integer(c_int), save, target :: hook_calls = 0
contains
  !> A progress callback: counts its calls in the integer arg points to.
  function count_calls(arg) bind(c) result(n)
    type(c_ptr), value :: arg
    integer(c_int) :: n
    integer(c_int), pointer :: counter
    call c_f_pointer(arg, counter)
    counter = counter + 1
    n = 0
  end function count_calls
end module f_test_hook

program f_test
  use, intrinsic :: iso_c_binding
  use rdmx
  use f_test_hook
  implicit none
  type(c_ptr) :: ctx, half, none, d, req, rreq, msg
  integer(c_int) :: st, me, np, right, left, up, down, found, i, events
  integer(c_int), target :: sbuf(2), rbuf(2), big(8), small(1)
  real(c_double), target :: edge, halo
  character(kind=c_char), target :: text(16), got(16)
  type(rdmx_msg_info_t) :: info
  integer(c_int) :: key
  integer(c_int), target :: attr_value
  type(c_ptr) :: got_value
  integer(c_size_t) :: msg_len

  st = rdmx_init(ctx)
  if (st == RDMX_ERR_NO_DEVICE) then
    print '(a)', 'SKIP: no RDMA device'
    stop 77
  end if
  call ok(st, 'rdmx_init')
  me = rdmx_rank(ctx)
  np = rdmx_size(ctx)
  right = mod(me + 1, np)
  left = mod(me + np - 1, np)

  ! Split into the even and odd ranks, each half ordered backwards.
  call ok(rdmx_comm_split(ctx, mod(me, 2), -me, half), 'rdmx_comm_split')
  call check(rdmx_size(half) == (np + 1 - mod(me, 2)) / 2, 'half size')
  call check(rdmx_comm_world_rank(half, rdmx_rank(half)) == me, 'half world rank')
  call check(rdmx_comm_world_rank(half, rdmx_size(half)) == -1, 'world rank out of range')
  call check(rdmx_local_rank(half) >= 0 .and. rdmx_local_rank(half) < rdmx_local_size(half), 'local rank')
  call check(rdmx_local_size(ctx) <= np, 'local size')
  sbuf = [me, 1]
  call ok(rdmx_allreduce(half, rdmx_in_place(), c_loc(sbuf(1)), 2_c_size_t, RDMX_INT32, RDMX_SUM), 'allreduce half')
  call check(sbuf(2) == rdmx_size(half), 'allreduce on half')

  ! RDMX_UNDEFINED joins nothing.
  if (me == 0) then
    call ok(rdmx_comm_split(ctx, RDMX_UNDEFINED, 0, none), 'split UNDEFINED')
    call check(.not. c_associated(none), 'UNDEFINED gave a communicator')
  else
    call ok(rdmx_comm_split(ctx, 0, 0, none), 'split 0')
    call check(rdmx_size(none) == np - 1 .and. rdmx_rank(none) == me - 1, 'split without rank 0')
    call ok(rdmx_comm_free(none), 'free none')
  end if

  ! A ring shift on a dup.
  call ok(rdmx_comm_dup(ctx, d), 'rdmx_comm_dup')
  sbuf = [me, -me]
  rbuf = -7
  call ok(rdmx_sendrecv(d, c_loc(sbuf(1)), 8_c_size_t, right, 4, c_loc(rbuf(1)), 8_c_size_t, left, 4, info), 'sendrecv')
  call check(rbuf(1) == left .and. rbuf(2) == -left, 'ring data')
  call check(info%source == left .and. info%tag == 4 .and. info%length == 8, 'ring info')

  ! A chain: the ends exchange with RDMX_PROC_NULL.
  up = RDMX_PROC_NULL
  if (me < np - 1) up = me + 1
  down = RDMX_PROC_NULL
  if (me > 0) down = me - 1
  edge = me + 0.5d0
  halo = -1
  call ok(rdmx_sendrecv(ctx, c_loc(edge), 8_c_size_t, up, 6, c_loc(halo), 8_c_size_t, down, 6, info), 'chain')
  if (down == RDMX_PROC_NULL) then
    call check(info%source == RDMX_PROC_NULL .and. info%length == 0 .and. halo == -1, 'chain end')
  else
    call check(info%source == down .and. halo == down + 0.5d0, 'chain data')
  end if
  call ok(rdmx_send(ctx, c_loc(sbuf(1)), 8_c_size_t, RDMX_PROC_NULL, 1), 'send PROC_NULL')
  call ok(rdmx_recv(ctx, c_loc(rbuf(1)), 8_c_size_t, RDMX_PROC_NULL, 1, info), 'recv PROC_NULL')
  call check(info%source == RDMX_PROC_NULL .and. info%length == 0, 'recv PROC_NULL info')

  ! Truncation in sendrecv.
  big = me
  st = rdmx_sendrecv(ctx, c_loc(big(1)), 32_c_size_t, right, 11, c_loc(small(1)), 4_c_size_t, left, 11, info)
  call check(st == RDMX_ERR_TRUNCATE .and. info%length == 32 .and. small(1) == left, 'sendrecv truncation')

  ! Matched probe: blocking, then nonblocking with an imrecv.
  do i = 1, 16
    text(i) = achar(iachar('a') + mod(me + i, 26))
  end do
  call ok(rdmx_isend(ctx, c_loc(text(1)), 16_c_size_t, right, 10, req), 'isend 10')
  call ok(rdmx_mprobe(ctx, left, 10, msg, info), 'rdmx_mprobe')
  call check(c_associated(msg) .and. info%length == 16 .and. info%source == left, 'mprobe info')
  got = ' '
  ! The length goes through a variable of its own: info is intent(out) in
  ! the same call, so info%length may be reset before len is read.
  msg_len = info%length
  call ok(rdmx_mrecv(c_loc(got(1)), msg_len, msg, info), 'rdmx_mrecv')
  call check(.not. c_associated(msg) .and. got(1) == achar(iachar('a') + mod(left + 1, 26)), 'mrecv data')
  call ok(rdmx_wait(req), 'wait isend 10')
  call ok(rdmx_isend(ctx, c_loc(text(1)), 16_c_size_t, right, 12, req), 'isend 12')
  found = 0
  do while (found == 0)
    call ok(rdmx_improbe(ctx, left, 12, found, msg, info), 'rdmx_improbe')
    if (found == 0) events = rdmx_progress(ctx)
  end do
  got = ' '
  call ok(rdmx_imrecv(c_loc(got(1)), 16_c_size_t, msg, rreq), 'rdmx_imrecv')
  call ok(rdmx_wait(rreq, info), 'wait imrecv')
  call check(info%length == 16 .and. got(16) == achar(iachar('a') + mod(left + 16, 26)), 'imrecv data')
  call ok(rdmx_wait(req), 'wait isend 12')

  ! A generalized request completed before it is waited for.
  call ok(rdmx_greq_start(ctx, req), 'rdmx_greq_start')
  call ok(rdmx_greq_complete(req, RDMX_ERR_CANCELED), 'rdmx_greq_complete')
  call check(rdmx_wait(req) == RDMX_ERR_CANCELED .and. .not. c_associated(req), 'greq status')

  ! A progress callback runs while a receive waits.
  call ok(rdmx_progress_register(ctx, c_funloc(count_calls), c_loc(hook_calls)), 'rdmx_progress_register')
  call ok(rdmx_sendrecv(ctx, c_loc(sbuf(1)), 8_c_size_t, right, 13, c_loc(rbuf(1)), 8_c_size_t, left, 13), 'sendrecv 13')
  events = rdmx_progress(ctx)
  call check(events >= 0 .and. hook_calls > 0, 'the progress callback never ran')
  call ok(rdmx_barrier(ctx), 'barrier')
  call ok(rdmx_progress_unregister(ctx, c_funloc(count_calls), c_loc(hook_calls)), 'rdmx_progress_unregister')

  ! A per-context value.
  call ok(rdmx_attr_key_create(key), 'rdmx_attr_key_create')
  call ok(rdmx_attr_get(d, key, got_value), 'rdmx_attr_get (none)')
  call check(.not. c_associated(got_value), 'a new key has a value')
  call ok(rdmx_attr_set(d, key, c_loc(attr_value), c_null_funptr), 'rdmx_attr_set')
  call ok(rdmx_attr_get(d, key, got_value), 'rdmx_attr_get')
  call check(c_associated(got_value, c_loc(attr_value)), 'attr_get value')

  call ok(rdmx_comm_free(d), 'free dup')
  call check(.not. c_associated(d), 'free left the handle')
  call ok(rdmx_comm_free(half), 'free half')
  call ok(rdmx_finalize(ctx), 'rdmx_finalize')
  if (me == 0) print '(a,i0,a)', 'f_test: OK on ', np, ' ranks'

contains

  subroutine ok(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= RDMX_OK) then
      print '(a,i0,4a)', 'FAIL rank ', me, ': ', what, ': ', rdmx_strerror(status)
      error stop 1
    end if
  end subroutine ok

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      print '(a,i0,2a)', 'FAIL rank ', me, ': ', what
      error stop 1
    end if
  end subroutine check
end program f_test
