! A few of the calls wrapped since issue 25 through `use mpi_f08` (Open MPI's
! mpi_*_f08_ symbols; ierror left out, so it is absent): Iprobe polling while
! rank 0 computes MS ms, one-sided Put/Get between fences, and MPI-IO
! (File_open passes the file name's length as a hidden argument).
!   fortran_mpi_f08_calls_app MS FILE
program fortran_mpi_f08_calls_app
  use mpi_f08
  implicit none
  integer :: rank, peer, i
  character(len=256) :: arg, path
  double precision :: ms, t0, acc, buf(100), win_buf(200), src(100), dst(50)
  logical :: flag
  type(MPI_Win) :: win
  type(MPI_File) :: fh
  integer(kind=MPI_ADDRESS_KIND) :: size, disp
  integer(kind=MPI_OFFSET_KIND) :: off
  integer :: data(1000)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  peer = 1 - rank
  call get_command_argument(1, arg)
  read (arg, *) ms
  call get_command_argument(2, path)

  buf = rank
  if (rank == 0) then
    acc = 1.0d0
    t0 = MPI_Wtime()
    do while ((MPI_Wtime() - t0) * 1.0d3 < ms)
      do i = 1, 10000
        acc = acc * 0.999999d0 + 1.0d-9
      end do
    end do
    if (acc < 0) print *, acc
    call MPI_Send(buf, 100, MPI_DOUBLE_PRECISION, 1, 7, MPI_COMM_WORLD)
  else
    flag = .false.
    do while (.not. flag)
      call MPI_Iprobe(0, 7, MPI_COMM_WORLD, flag, MPI_STATUS_IGNORE)
    end do
    call MPI_Recv(buf, 100, MPI_DOUBLE_PRECISION, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  end if

  win_buf = rank
  src = 1.0d0
  size = 1600
  call MPI_Win_create(win_buf, size, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win)
  call MPI_Win_fence(0, win)
  disp = 0
  call MPI_Put(src, 100, MPI_DOUBLE_PRECISION, peer, disp, 100, MPI_DOUBLE_PRECISION, win)   ! sent 800
  call MPI_Win_fence(0, win)
  disp = 100
  call MPI_Get(dst, 50, MPI_DOUBLE_PRECISION, peer, disp, 50, MPI_DOUBLE_PRECISION, win)     ! received 400
  call MPI_Win_fence(0, win)
  call MPI_Win_free(win)

  do i = 1, 1000
    data(i) = i
  end do
  call MPI_File_open(MPI_COMM_WORLD, trim(path), ior(MPI_MODE_CREATE, MPI_MODE_RDWR), MPI_INFO_NULL, fh)
  off = rank * 4000
  call MPI_File_write_at_all(fh, off, data, 1000, MPI_INTEGER, MPI_STATUS_IGNORE)            ! sent 4000
  call MPI_File_read_at(fh, off, data, 500, MPI_INTEGER, MPI_STATUS_IGNORE)                  ! received 2000
  call MPI_File_close(fh)
  print '(a, i0, a)', 'rank ', rank, ': f08 done'
  call MPI_Finalize()
end program fortran_mpi_f08_calls_app
