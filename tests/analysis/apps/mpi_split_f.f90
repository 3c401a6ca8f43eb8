! Known-answer MPI app in Fortran, started as most hybrid Fortran codes start
! MPI: MPI_INIT_THREAD (issue 30; `use mpi`, the tracer's Fortran wrappers).
! The same work split as mpi_split.c:
!   mpi_split_f balanced SECONDS   every rank busy for SECONDS / ranks
!   mpi_split_f 3:1 SECONDS        rank 0 gets 3 parts, every other rank 1 part
! then one MPI_BARRIER. Busy for wall-clock time: the shares do not depend on
! how loaded the machine is.
program mpi_split_f
  use mpi
  implicit none
  integer :: ierr, rank, nranks, provided
  character(len=16) :: mode, arg
  double precision :: total, share, part

  if (command_argument_count() /= 2) then
    write (0, '(a)') 'usage: mpi_split_f balanced|3:1 SECONDS'
    stop 2
  end if
  call get_command_argument(1, mode)
  call get_command_argument(2, arg)
  read (arg, *) total
  call MPI_INIT_THREAD(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  share = total / nranks
  if (trim(mode) == '3:1' .and. nranks > 1) then
    part = total / (nranks + 2)
    if (rank == 0) then
      share = 3 * part
    else
      share = part
    end if
  end if
  call busy(share)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_FINALIZE(ierr)
contains
  ! Computes for `seconds` of wall-clock time.
  subroutine busy(seconds)
    double precision, intent(in) :: seconds
    integer(kind=8) :: start, now, rate
    double precision :: x
    integer :: i
    x = 1.0d0
    call system_clock(start, rate)
    do
      do i = 1, 10000
        x = x * 1.0000001d0 + 1.0d-9
      end do
      call system_clock(now)
      if (dble(now - start) / dble(rate) >= seconds) exit
    end do
    if (x < 0) print *, x  ! keeps x alive
  end subroutine busy
end program mpi_split_f
