! Fortran MPI test app for the tracer's Fortran bindings (`use mpi`: the
! mpi_*_ symbols of libmpi_mpifh). Run on 2 ranks. Known payloads:
!   Send/Recv: 1000 doubles (8000 B) 0 -> 1 and back, 5 iterations
!   Sendrecv with MPI_STATUS_IGNORE: 10 integers (40 B) each way
!   Isend/Irecv + Waitall: 100 doubles (800 B) each way
!   Allreduce: 100 doubles (800 B); Bcast: 10 integers (40 B) from rank 0;
!   Gather: 3 integers per rank to rank 0; Barrier.
program fortran_mpi_app
  use mpi
  implicit none
  integer :: ierr, rank, nranks, it, peer, provided, pause_ms
  character(len=16) :: pause_arg
  integer :: status(MPI_STATUS_SIZE), reqs(2)
  double precision :: buf(1000), a(100), b(100), sums(100)
  integer :: ints(10), got(10), mine(3), all(6)
  character(len=16) :: arg

  arg = 'init'
  if (command_argument_count() > 0) call get_command_argument(1, arg)
  ! A second argument PAUSE_MS: that long before MPI_Init* and again before
  ! MPI_Finalize, so the MPI window has known lower bounds.
  pause_ms = 0
  if (command_argument_count() > 1) then
    call get_command_argument(2, pause_arg)
    read (pause_arg, *) pause_ms
  end if
  call pause_for(pause_ms)
  if (trim(arg) == 'init_thread') then
    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  else
    call MPI_Init(ierr)
  end if
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  peer = 1 - rank
  buf = rank
  do it = 1, 5
    if (rank == 0) then
      call MPI_Send(buf, 1000, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 1000, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD, status, ierr)
    else
      call MPI_Recv(buf, 1000, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, status, ierr)
      call MPI_Send(buf, 1000, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, ierr)
    end if
  end do
  ints = rank
  call MPI_Sendrecv(ints, 10, MPI_INTEGER, peer, 3, got, 10, MPI_INTEGER, peer, 3, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  a = rank
  call MPI_Irecv(b, 100, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a, 100, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
  call MPI_Allreduce(a, sums, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Bcast(ints, 10, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  mine = rank
  call MPI_Gather(mine, 3, MPI_INTEGER, all, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (got(1) /= peer .or. b(1) /= peer .or. sums(1) /= 1.0d0) then
    print *, 'rank', rank, 'wrong data'
    call MPI_Abort(MPI_COMM_WORLD, 3, ierr)
  end if
  print '(a,i0,a,i0)', 'fortran rank ', rank, ' of ', nranks
  call pause_for(pause_ms)
  call MPI_Finalize(ierr)
contains
  ! Waits `ms` milliseconds of wall-clock time (no MPI call: outside the window too).
  subroutine pause_for(ms)
    integer, intent(in) :: ms
    integer(kind=8) :: start, now, rate
    if (ms <= 0) return
    call system_clock(start, rate)
    do
      call system_clock(now)
      if ((now - start) * 1000 >= int(ms, 8) * rate) exit
    end do
  end subroutine pause_for
end program fortran_mpi_app
