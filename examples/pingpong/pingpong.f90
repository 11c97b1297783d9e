! pingpong: round trips between ranks 0 and 1 with the rdmx Fortran module.
!
! Rank 0 sends a message of NWORDS 64-bit integers to rank 1, which checks the
! payload and sends it back with every word incremented; rank 0 checks the
! reply. Small messages go eagerly, the large ones by rendezvous (RDMA READ).
! Rank 0 prints the half round-trip latency per size, and "pingpong: ... OK"
! if every payload was right. Ranks above 1 only take part in the final
! allreduce of the error count and the barrier.
!
! A job of one rank plays both parts itself (no RDMA device needed); the
! times are then those of a copy through rdmx, not of the network.
!
!     mpirun -np 2 ./pingpong
program pingpong
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_size_t, c_double, c_ptr, c_loc, c_sizeof, c_null_ptr
  use rdmx
  implicit none

  integer, parameter :: nsizes = 3
  integer, parameter :: sizes(nsizes) = [1, 512, 16384]   ! 8 B, 4 KiB, 128 KiB
  integer, parameter :: iters(nsizes) = [50, 20, 5]
  integer(c_int), parameter :: TAG_PING = 10, TAG_PONG = 11

  type(c_ptr) :: ctx
  integer(c_int) :: st, me, np, peer
  integer(c_int64_t), allocatable, target :: ping(:), pong(:), echo(:)
  integer(c_int64_t), target :: nerr(1), total(1)
  integer :: s, i, n
  real(c_double) :: t0, t1
  character(len=16) :: lat

  me = -1
  st = rdmx_init(ctx)
  call check(st, 'rdmx_init')
  me = rdmx_rank(ctx)
  np = rdmx_size(ctx)
  peer = 1 - me
  if (np == 1) peer = 0
  nerr = 0

  do s = 1, nsizes
    n = sizes(s)
    allocate (ping(n), pong(n), echo(n))
    if (me == 0) then
      call round_trip(1)                       ! warm-up: connects, registers
      t0 = rdmx_wtime()
      do i = 1, iters(s)
        call round_trip(i)
      end do
      t1 = rdmx_wtime()
      write (lat, '(f16.2)') (t1 - t0) / (2 * iters(s)) * 1.0d6
      write (*, '(a, i0, a, i0, 3a)') 'pingpong: ', 8 * n, ' bytes, ', iters(s), &
        ' round trips, latency ', trim(adjustl(lat)), ' us'
    else if (me == 1) then
      do i = 1, iters(s) + 1
        call answer()
      end do
    end if
    deallocate (ping, pong, echo)
  end do

  ! Every rank learns the total number of bad payloads.
  st = rdmx_allreduce(ctx, c_loc(nerr), c_loc(total), 1_c_size_t, RDMX_INT64, RDMX_SUM)
  call check(st, 'rdmx_allreduce')
  st = rdmx_barrier(ctx)
  call check(st, 'rdmx_barrier')
  if (me == 0) then
    if (total(1) == 0) then
      write (*, '(a, i0, a)') 'pingpong: ', np, ' ranks, every payload verified OK'
    else
      write (*, '(a, i0, a)') 'pingpong: ', total(1), ' bad payloads FAILED'
    end if
  end if
  st = rdmx_finalize(ctx)
  call check(st, 'rdmx_finalize')
  if (total(1) /= 0) error stop 1

contains

  ! Rank 0: one ping and its pong, both checked.
  subroutine round_trip(it)
    integer, intent(in) :: it
    type(c_ptr) :: reqs(2)
    integer(c_size_t) :: bytes
    integer :: k
    bytes = int(n, c_size_t) * c_sizeof(ping(1))
    do k = 1, n
      ping(k) = pattern(it, k)
    end do
    pong = -1
    reqs = c_null_ptr
    ! The reply's receive is posted before the ping leaves.
    st = rdmx_irecv(ctx, c_loc(pong), bytes, peer, TAG_PONG, reqs(1))
    call check(st, 'rdmx_irecv')
    st = rdmx_isend(ctx, c_loc(ping), bytes, peer, TAG_PING, reqs(2))
    call check(st, 'rdmx_isend')
    if (peer == me) call answer()              ! one rank: play rank 1 too
    st = rdmx_waitall(reqs)
    call check(st, 'rdmx_waitall')
    do k = 1, n
      if (pong(k) /= ping(k) + 1) then
        nerr = nerr + 1
        write (*, '(a, i0, a, i0, a, i0)') 'pingpong: bad reply word ', k, ': ', pong(k), ' expected ', ping(k) + 1
        exit
      end if
    end do
  end subroutine round_trip

  ! Rank 1: receive a ping, check it, send it back incremented.
  subroutine answer()
    type(rdmx_msg_info_t) :: info
    integer(c_size_t) :: bytes
    integer(c_int) :: from
    integer :: k
    bytes = int(n, c_size_t) * c_sizeof(echo(1))
    from = 0
    st = rdmx_recv(ctx, c_loc(echo), bytes, from, TAG_PING, info)
    call check(st, 'rdmx_recv')
    if (info%length /= bytes .or. info%source /= from) then
      nerr = nerr + 1
      write (*, '(a, i0, a, i0)') 'pingpong: got ', info%length, ' bytes from rank ', info%source
    end if
    ! The iteration number is in the first word's pattern: recover it.
    do k = 1, n
      if (echo(k) /= pattern(int(echo(1) / 1000000), k)) then
        nerr = nerr + 1
        write (*, '(a, i0)') 'pingpong: bad ping word ', k
        exit
      end if
    end do
    echo = echo + 1
    st = rdmx_send(ctx, c_loc(echo), bytes, from, TAG_PONG)
    call check(st, 'rdmx_send')
  end subroutine answer

  ! Word k of the ping of iteration it: it * 10^6 + k, so each word differs.
  pure function pattern(it, k) result(v)
    integer, intent(in) :: it, k
    integer(c_int64_t) :: v
    v = int(it, c_int64_t) * 1000000_c_int64_t + int(k, c_int64_t)
  end function pattern

  subroutine check(status, what)
    integer(c_int), intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= RDMX_OK) then
      write (*, '(a, i0, 4a)') 'pingpong: rank ', me, ': ', what, ' failed: ', rdmx_strerror(status)
      error stop 1
    end if
  end subroutine check
end program pingpong
