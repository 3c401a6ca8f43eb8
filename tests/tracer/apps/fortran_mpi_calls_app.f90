! The calls the tracer wraps since issue 25, through `use mpi` (Open MPI's
! mpi_*_ symbols, which call PMPI_* directly). Run on 2 ranks. Modes as in
! mpi_calls_app.c: poll-iprobe MS, poll-testany MS, rma, io FILE, collectives.
! Known payloads per rank are noted next to the calls.
program fortran_mpi_calls_app
  use mpi
  implicit none
  integer :: ierr, rank, peer
  character(len=256) :: mode, arg
  double precision :: ms

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  peer = 1 - rank
  mode = ''
  arg = ''
  if (command_argument_count() > 0) call get_command_argument(1, mode)
  if (command_argument_count() > 1) call get_command_argument(2, arg)
  select case (trim(mode))
  case ('poll-iprobe')
    read (arg, *) ms
    call poll_iprobe(ms)
  case ('poll-testany')
    read (arg, *) ms
    call poll_testany(ms)
  case ('rma')
    call rma()
  case ('io')
    call io(trim(arg))
  case ('collectives')
    call collectives()
  case default
    print *, 'usage: fortran_mpi_calls_app poll-iprobe MS | poll-testany MS | rma | io FILE | collectives'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end select
  print '(a, i0, a, a)', 'rank ', rank, ': done ', trim(mode)
  call MPI_Finalize(ierr)

contains

  ! Work for `ms` milliseconds of wall time.
  subroutine compute_for(ms)
    double precision, intent(in) :: ms
    double precision :: t0, acc
    integer :: i
    acc = 1.0d0
    t0 = MPI_Wtime()
    do while ((MPI_Wtime() - t0) * 1.0d3 < ms)
      do i = 1, 10000
        acc = acc * 0.999999d0 + 1.0d-9
      end do
    end do
    if (acc < 0) print *, acc
  end subroutine compute_for

  subroutine poll_iprobe(ms)
    double precision, intent(in) :: ms
    double precision :: buf(100)
    logical :: flag
    buf = rank
    if (rank == 0) then
      call compute_for(ms)
      call MPI_Send(buf, 100, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD, ierr)
    else
      flag = .false.
      do while (.not. flag)
        call MPI_Iprobe(0, 7, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE, ierr)
      end do
      call MPI_Recv(buf, 100, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end if
  end subroutine poll_iprobe

  subroutine poll_testany(ms)
    double precision, intent(in) :: ms
    double precision :: a(10), b(10), c(10)
    integer :: rq(3), idx, outcount, indices(3)
    logical :: flag
    a = 0; b = 0; c = 0
    if (rank == 0) then
      call compute_for(ms)
      call MPI_Send(a, 10, MPI_DOUBLE_PRECISION, 1, 1, MPI_COMM_WORLD, ierr)
      call compute_for(ms / 4)
      call MPI_Send(b, 10, MPI_DOUBLE_PRECISION, 1, 2, MPI_COMM_WORLD, ierr)
      call compute_for(ms / 4)
      call MPI_Send(c, 10, MPI_DOUBLE_PRECISION, 1, 3, MPI_COMM_WORLD, ierr)
    else
      call MPI_Irecv(a, 10, MPI_DOUBLE_PRECISION, 0, 1, MPI_COMM_WORLD, rq(1), ierr)
      call MPI_Irecv(b, 10, MPI_DOUBLE_PRECISION, 0, 2, MPI_COMM_WORLD, rq(2), ierr)
      call MPI_Irecv(c, 10, MPI_DOUBLE_PRECISION, 0, 3, MPI_COMM_WORLD, rq(3), ierr)
      flag = .false.
      do while (.not. flag)
        call MPI_Testany(3, rq, idx, flag, MPI_STATUS_IGNORE, ierr)
      end do
      outcount = 0
      do while (outcount == 0)
        call MPI_Testsome(3, rq, outcount, indices, MPI_STATUSES_IGNORE, ierr)
      end do
      flag = .false.
      do while (.not. flag)
        call MPI_Testall(3, rq, flag, MPI_STATUSES_IGNORE, ierr)
      end do
    end if
  end subroutine poll_testany

  subroutine rma()
    double precision :: win_buf(1000), src(100), dst(100), res(10)
    integer(kind=MPI_ADDRESS_KIND) :: size, disp
    integer :: win, lwin, i, world_group, peer_group
    integer(kind=8) :: counters(4), mine, compare, old
    win_buf = rank
    do i = 1, 100
      src(i) = i
    end do
    size = 8000
    call MPI_Win_create(win_buf, size, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call MPI_Win_fence(0, win, ierr)
    disp = 0
    call MPI_Put(src, 100, MPI_DOUBLE_PRECISION, peer, disp, 100, MPI_DOUBLE_PRECISION, win, ierr)  ! sent 800
    call MPI_Win_fence(0, win, ierr)
    disp = 100
    call MPI_Get(dst, 50, MPI_DOUBLE_PRECISION, peer, disp, 50, MPI_DOUBLE_PRECISION, win, ierr)    ! received 400
    call MPI_Win_fence(0, win, ierr)
    disp = 200
    call MPI_Accumulate(src, 10, MPI_DOUBLE_PRECISION, peer, disp, 10, MPI_DOUBLE_PRECISION, MPI_SUM, win, ierr) ! 80
    call MPI_Win_fence(0, win, ierr)
    call MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win, ierr)
    disp = 300
    call MPI_Get_accumulate(src, 5, MPI_DOUBLE_PRECISION, res, 5, MPI_DOUBLE_PRECISION, peer, disp, 5, &
                            MPI_DOUBLE_PRECISION, MPI_SUM, win, ierr)                              ! 40 / 40
    disp = 400
    call MPI_Fetch_and_op(src, res, MPI_DOUBLE_PRECISION, peer, disp, MPI_SUM, win, ierr)          ! 8 / 8
    call MPI_Win_flush(peer, win, ierr)
    call MPI_Win_unlock(peer, win, ierr)
    call MPI_Win_lock_all(0, win, ierr)
    call MPI_Win_flush_all(win, ierr)
    call MPI_Win_unlock_all(win, ierr)
    call MPI_Comm_group(MPI_COMM_WORLD, world_group, ierr)
    call MPI_Group_incl(world_group, 1, [peer], peer_group, ierr)
    call MPI_Win_post(peer_group, 0, win, ierr)
    call MPI_Win_start(peer_group, 0, win, ierr)
    call MPI_Win_complete(win, ierr)
    call MPI_Win_wait(win, ierr)
    call MPI_Group_free(peer_group, ierr)
    call MPI_Group_free(world_group, ierr)
    call MPI_Win_free(win, ierr)
    counters = 0
    mine = 1
    compare = 0
    size = 32
    call MPI_Win_create(counters, size, 8, MPI_INFO_NULL, MPI_COMM_WORLD, lwin, ierr)
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, lwin, ierr)
    disp = 0
    call MPI_Compare_and_swap(mine, compare, old, MPI_INTEGER8, peer, disp, lwin, ierr)           ! 16 / 8
    call MPI_Win_unlock(peer, lwin, ierr)
    call MPI_Win_free(lwin, ierr)
  end subroutine rma

  subroutine io(path)
    character(len=*), intent(in) :: path
    integer :: fh, data(1000), back(1000), rq, i
    integer(kind=MPI_OFFSET_KIND) :: off
    do i = 1, 1000
      data(i) = rank * 1000 + i
    end do
    call MPI_File_open(MPI_COMM_WORLD, path, ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, fh, ierr)
    if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 4, ierr)
    off = 0
    call MPI_File_set_view(fh, off, MPI_BYTE, MPI_BYTE, 'native', MPI_INFO_NULL, ierr)
    off = rank * 4000
    call MPI_File_write_at(fh, off, data, 1000, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)      ! sent 4000
    off = 8000 + rank * 2000
    call MPI_File_write_at_all(fh, off, data, 500, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)   ! sent 2000
    off = 12000 + rank * 1000
    call MPI_File_iwrite_at(fh, off, data, 250, MPI_INTEGER, rq, ierr)                     ! sent 1000
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_File_sync(fh, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_File_sync(fh, ierr)
    off = peer * 4000
    call MPI_File_read_at(fh, off, back, 1000, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)       ! received 4000
    if (back(1) /= peer * 1000 + 1 .or. back(1000) /= peer * 1000 + 1000) then
      print *, 'rank', rank, 'read back wrong data'
      call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
    end if
    off = 8000 + peer * 2000
    call MPI_File_read_at_all(fh, off, back, 500, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)    ! received 2000
    off = 12000
    call MPI_File_iread_at(fh, off, back, 250, MPI_INTEGER, rq, ierr)                      ! received 1000
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_File_close(fh, ierr)
  end subroutine io

  subroutine collectives()
    integer :: ints(20), got(20), counts(2), displs(2), rq, ring, split, dup, i
    double precision :: d(100), r(100)
    integer :: dims(1)
    logical :: periods(1)
    do i = 1, 20
      ints(i) = rank + i
    end do
    d = rank
    counts = 5
    displs = [0, 5]
    call MPI_Ibarrier(MPI_COMM_WORLD, rq, ierr)
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_Ibcast(ints, 10, MPI_INTEGER, 0, MPI_COMM_WORLD, rq, ierr)                           ! root 40 / 40
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_Iallreduce(d, r, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, rq, ierr)       ! 800 / 800
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_Ialltoall(ints, 6, MPI_INTEGER, got, 6, MPI_INTEGER, MPI_COMM_WORLD, rq, ierr)       ! 48 / 48
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_Iallgatherv(ints, 5, MPI_INTEGER, got, counts, displs, MPI_INTEGER, MPI_COMM_WORLD, rq, ierr) ! 20 / 40
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_Scan(d, r, 9, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)                   ! 72 / 72
    dims = 2
    periods = .true.
    call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., ring, ierr)
    call MPI_Neighbor_alltoall(ints, 3, MPI_INTEGER, got, 3, MPI_INTEGER, ring, ierr)             ! 24 / 24
    call MPI_Ineighbor_allgather(ints, 3, MPI_INTEGER, got, 3, MPI_INTEGER, ring, rq, ierr)       ! 24 / 24
    call MPI_Wait(rq, MPI_STATUS_IGNORE, ierr)
    call MPI_Comm_free(ring, ierr)
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, split, ierr)
    call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
    call MPI_Comm_free(split, ierr)
    call MPI_Comm_free(dup, ierr)
  end subroutine collectives

end program fortran_mpi_calls_app
