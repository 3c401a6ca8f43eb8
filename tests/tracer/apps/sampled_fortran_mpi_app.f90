! A gfortran MPI program (`use mpi`) for the sampler: rank 0 alone computes
! (`rank0_work`), then every rank meets in MPI_Alltoall, where the other
! ranks wait the whole time, polling in Open MPI's progress loop. That wait is
! MPI time, sampled and timed (issue 25: its samples, under the tracer's
! Fortran wrapper, were booked as the tracer's own). Argument: work units.
program sampled_fortran_mpi_app
  use mpi
  implicit none
  integer :: ierr, rank, nranks, units
  double precision :: acc
  double precision, allocatable :: sbuf(:), rbuf(:)
  character(len=16) :: arg
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  units = 40
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) units
  end if
  acc = 1.0d0
  if (rank == 0) call rank0_work(units, acc)
  allocate(sbuf(1000 * nranks), rbuf(1000 * nranks))
  sbuf = acc
  call MPI_Alltoall(sbuf, 1000, MPI_DOUBLE_PRECISION, rbuf, 1000, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  ! The result is printed so that the loop cannot be optimised away.
  if (rank == 0) print '(a, es12.5, a, i0)', 'acc ', rbuf(1), ' ranks ', nranks
  call MPI_Finalize(ierr)
contains
  subroutine rank0_work(units, acc)
    integer, intent(in) :: units
    double precision, intent(inout) :: acc
    integer :: u, i
    do u = 1, units
      do i = 1, 1000000
        acc = acc * 0.999999d0 + 1.0d-7 * i
      end do
    end do
  end subroutine rank0_work
end program sampled_fortran_mpi_app
