!> The Fortran module's new collective interfaces, under mpirun: scan and
!> exscan, MINLOC/MAXLOC over rdmx_double_int_t, allgatherv, gatherv,
!> scatterv and alltoallv with uneven lengths (zeros included), and the
!> nonblocking collectives, all outstanding at once. Integers, checked
!> exactly. Prints "f_coll_test: OK on N ranks" on rank 0.
program f_coll_test
  use, intrinsic :: iso_c_binding
  use rdmx
  implicit none
  integer, parameter :: nmax = 64
  type(c_ptr) :: ctx
  type(c_ptr) :: reqs(7)
  integer(c_int) :: st, me, np, r, root
  integer(c_int64_t), target :: sv(3), so(3), red(2), ared(2)
  integer(c_int), target :: bc(4), ginp(1), gout(nmax), ain(nmax), aout(nmax), inplace(2)
  integer(c_int8_t), target :: mine(8), allv(8 * nmax), back(8), sb(8 * nmax), rb(8 * nmax)
  integer(c_size_t) :: lens(nmax), displs(nmax), sl(nmax), sd(nmax), rl(nmax), rd(nmax), tot, st_tot, rt_tot
  type(rdmx_double_int_t), target :: pin, pout

  st = rdmx_init(ctx)
  if (st == RDMX_ERR_NO_DEVICE) then
    print '(a)', 'SKIP: no RDMA device'
    stop 77
  end if
  call ok(st, 'rdmx_init')
  me = rdmx_rank(ctx)
  np = rdmx_size(ctx)
  call check(np <= nmax, 'too many ranks for this test')
  root = np / 2

  ! scan / exscan of int64 sums.
  sv = [int(me, c_int64_t), 1_c_int64_t, int(2 * me, c_int64_t)]
  call ok(rdmx_scan(ctx, c_loc(sv(1)), c_loc(so(1)), 3_c_size_t, RDMX_INT64, RDMX_SUM), 'rdmx_scan')
  call check(so(1) == me * (me + 1) / 2 .and. so(2) == me + 1 .and. so(3) == me * (me + 1), 'scan values')
  so = -1
  call ok(rdmx_exscan(ctx, c_loc(sv(1)), c_loc(so(1)), 3_c_size_t, RDMX_INT64, RDMX_SUM), 'rdmx_exscan')
  if (me == 0) then
    call check(all(so == -1), 'exscan touched rank 0')
  else
    call check(so(1) == me * (me - 1) / 2 .and. so(2) == me, 'exscan values')
  end if

  ! MINLOC with ties: ranks 2k and 2k+1 share a value; the lower index wins.
  pin%v = real(mod(me / 2 + 1, 3), c_double)
  pin%i = me
  call ok(rdmx_allreduce(ctx, c_loc(pin), c_loc(pout), 1_c_size_t, RDMX_DOUBLE_INT, RDMX_MINLOC), 'MINLOC')
  call check(pout%v == minval([(real(mod(r / 2 + 1, 3), c_double), r = 0, np - 1)]), 'MINLOC value')
  call check(pout%i == lowest_with(pout%v), 'MINLOC index')
  call ok(rdmx_allreduce(ctx, c_loc(pin), c_loc(pout), 1_c_size_t, RDMX_DOUBLE_INT, RDMX_MAXLOC), 'MAXLOC')
  call check(pout%i == lowest_with(pout%v), 'MAXLOC index')

  ! v-collectives: rank r has mod(r, 3) * 3 bytes, blocks packed with a one-byte gap.
  tot = 0
  do r = 0, np - 1
    lens(r + 1) = int(mod(r, 3) * 3, c_size_t)
    displs(r + 1) = tot
    tot = tot + lens(r + 1) + 1
  end do
  do r = 1, 8
    mine(r) = int(mod(me * 16 + r, 127), c_int8_t)
  end do
  allv = -1
  call ok(rdmx_allgatherv(ctx, c_loc(mine(1)), lens(me + 1), c_loc(allv(1)), lens, displs), 'rdmx_allgatherv')
  do r = 0, np - 1
    call check(block_ok(allv, displs(r + 1), lens(r + 1), r), 'allgatherv block')
    call check(allv(displs(r + 1) + lens(r + 1) + 1) == -1, 'allgatherv gap')
  end do
  allv = -1
  call ok(rdmx_gatherv(ctx, c_loc(mine(1)), lens(me + 1), c_loc(allv(1)), lens, displs, root), 'rdmx_gatherv')
  if (me == root) then
    do r = 0, np - 1
      call check(block_ok(allv, displs(r + 1), lens(r + 1), r), 'gatherv block')
    end do
  end if
  back = 0
  call ok(rdmx_scatterv(ctx, c_loc(allv(1)), lens, displs, c_loc(back(1)), lens(me + 1), root), 'rdmx_scatterv')
  call check(all(back(1:lens(me + 1)) == mine(1:lens(me + 1))), 'scatterv data')

  ! alltoallv: rank s sends rank d mod(s + d, 3) * 2 bytes, each byte s * 16 + d.
  st_tot = 0
  rt_tot = 0
  do r = 0, np - 1
    sl(r + 1) = int(mod(me + r, 3) * 2, c_size_t)
    sd(r + 1) = st_tot
    sb(st_tot + 1:st_tot + sl(r + 1)) = int(mod(me * 16 + r, 127), c_int8_t)
    st_tot = st_tot + sl(r + 1)
    rl(r + 1) = int(mod(r + me, 3) * 2, c_size_t)
    rd(r + 1) = rt_tot
    rt_tot = rt_tot + rl(r + 1)
  end do
  rb = -1
  call ok(rdmx_alltoallv(ctx, c_loc(sb(1)), sl, sd, c_loc(rb(1)), rl, rd), 'rdmx_alltoallv')
  do r = 0, np - 1
    call check(all(rb(rd(r + 1) + 1:rd(r + 1) + rl(r + 1)) == int(mod(r * 16 + me, 127), c_int8_t)), 'alltoallv data')
  end do

  ! Nonblocking: all outstanding at once, started in the same order everywhere.
  bc = 0
  if (me == root) bc = 77
  red = -1
  sv(1:2) = [int(me, c_int64_t), int(2 * me, c_int64_t)]
  ginp(1) = me
  do r = 1, np
    ain(r) = me * 100 + r - 1
  end do
  inplace = [1, me]
  call ok(rdmx_ibarrier(ctx, reqs(1)), 'rdmx_ibarrier')
  call ok(rdmx_ibcast(ctx, c_loc(bc(1)), 16_c_size_t, root, reqs(2)), 'rdmx_ibcast')
  call ok(rdmx_ireduce(ctx, c_loc(sv(1)), c_loc(red(1)), 2_c_size_t, RDMX_INT64, RDMX_SUM, root, reqs(3)), 'rdmx_ireduce')
  call ok(rdmx_iallreduce(ctx, c_loc(sv(1)), c_loc(ared(1)), 2_c_size_t, RDMX_INT64, RDMX_MAX, reqs(4)), 'rdmx_iallreduce')
  call ok(rdmx_iallreduce(ctx, rdmx_in_place(), c_loc(inplace(1)), 2_c_size_t, RDMX_INT32, RDMX_SUM, reqs(5)), &
          'rdmx_iallreduce in place')
  call ok(rdmx_iallgather(ctx, c_loc(ginp(1)), 4_c_size_t, c_loc(gout(1)), reqs(6)), 'rdmx_iallgather')
  call ok(rdmx_ialltoall(ctx, c_loc(ain(1)), 4_c_size_t, c_loc(aout(1)), reqs(7)), 'rdmx_ialltoall')
  call ok(rdmx_waitall(reqs), 'rdmx_waitall')
  call check(all(bc == 77), 'ibcast')
  if (me == root) call check(red(1) == np * (np - 1) / 2 .and. red(2) == np * (np - 1), 'ireduce')
  call check(ared(1) == np - 1 .and. ared(2) == 2 * (np - 1), 'iallreduce MAX')
  call check(inplace(1) == np .and. inplace(2) == np * (np - 1) / 2, 'iallreduce in place')
  do r = 1, np
    call check(gout(r) == r - 1, 'iallgather')
    call check(aout(r) == (r - 1) * 100 + me, 'ialltoall')
  end do
  ! ialltoallv with the layout above.
  rb = -1
  call ok(rdmx_ialltoallv(ctx, c_loc(sb(1)), sl, sd, c_loc(rb(1)), rl, rd, reqs(1)), 'rdmx_ialltoallv')
  call ok(rdmx_wait(reqs(1)), 'wait ialltoallv')
  do r = 0, np - 1
    call check(all(rb(rd(r + 1) + 1:rd(r + 1) + rl(r + 1)) == int(mod(r * 16 + me, 127), c_int8_t)), 'ialltoallv data')
  end do

  call ok(rdmx_finalize(ctx), 'rdmx_finalize')
  if (me == 0) print '(a,i0,a)', 'f_coll_test: OK on ', np, ' ranks'

contains

  !> The lowest rank whose MINLOC/MAXLOC value is v.
  integer(c_int) function lowest_with(v)
    real(c_double), intent(in) :: v
    integer(c_int) :: k
    lowest_with = -1
    do k = np - 1, 0, -1
      if (real(mod(k / 2 + 1, 3), c_double) == v) lowest_with = k
    end do
  end function lowest_with

  !> Rank `from`'s len bytes at byte offset off of buf are what it sent.
  logical function block_ok(buf, off, len, from)
    integer(c_int8_t), intent(in) :: buf(:)
    integer(c_size_t), intent(in) :: off, len
    integer(c_int), intent(in) :: from
    integer(c_size_t) :: k
    block_ok = .true.
    do k = 1, len
      if (buf(off + k) /= int(mod(from * 16 + k, 127_c_size_t), c_int8_t)) block_ok = .false.
    end do
  end function block_ok

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
end program f_coll_test
