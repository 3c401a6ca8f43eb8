! The same calls and payloads as fortran_mpi_app.f90 through `use mpi_f08`
! (Open MPI's mpi_*_f08_ symbols; ierror left out, so it is absent).
program fortran_mpi_f08_app
  use mpi_f08
  implicit none
  integer :: rank, nranks, it, peer
  type(MPI_Status) :: status
  type(MPI_Request) :: reqs(2)
  double precision :: buf(1000), a(100), b(100), sums(100)
  integer :: ints(10), got(10), mine(3), all(6)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  peer = 1 - rank
  buf = rank
  do it = 1, 5
    if (rank == 0) then
      call MPI_Send(buf, 1000, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD)
      call MPI_Recv(buf, 1000, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD, status)
    else
      call MPI_Recv(buf, 1000, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, status)
      call MPI_Send(buf, 1000, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD)
    end if
  end do
  ints = rank
  call MPI_Sendrecv(ints, 10, MPI_INTEGER, peer, 3, got, 10, MPI_INTEGER, peer, 3, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE)
  a = rank
  call MPI_Irecv(b, 100, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(a, 100, MPI_DOUBLE_PRECISION, peer, 5, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
  call MPI_Allreduce(a, sums, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  call MPI_Bcast(ints, 10, MPI_INTEGER, 0, MPI_COMM_WORLD)
  mine = rank
  call MPI_Gather(mine, 3, MPI_INTEGER, all, 3, MPI_INTEGER, 0, MPI_COMM_WORLD)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (got(1) /= peer .or. b(1) /= peer .or. sums(1) /= 1.0d0) then
    print *, 'rank', rank, 'wrong data'
    call MPI_Abort(MPI_COMM_WORLD, 3)
  end if
  print '(a,i0,a,i0)', 'fortran f08 rank ', rank, ' of ', nranks
  call MPI_Finalize()
end program fortran_mpi_f08_app
