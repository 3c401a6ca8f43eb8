! The STREAM triad in a Fortran module procedure (counted and named
! `kernels::triad`, as the symboliser demangles gfortran's __kernels_MOD_triad);
! its own file, so the program (triad_f.f90) cannot inline it.
module kernels
  implicit none
contains
  subroutine triad(a, b, c, s, n)
    integer, intent(in) :: n
    double precision, intent(out) :: a(n)
    double precision, intent(in) :: b(n), c(n), s
    integer :: i
    do i = 1, n
      a(i) = b(i) + s * c(i)
    end do
  end subroutine triad
end module kernels
