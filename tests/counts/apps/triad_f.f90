! Runs kernels::triad (triad_f_kernels.f90) over N doubles (tests/counts).
!   triad_f N
program triad_f
  use kernels
  implicit none
  integer :: n
  character(len=32) :: arg
  double precision, allocatable :: a(:), b(:), c(:)
  n = 100000
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  allocate (a(n), b(n), c(n))
  b = 1.0d0
  c = 2.0d0
  call triad(a, b, c, 3.0d0, n)
  print *, a(n / 2)
end program triad_f
