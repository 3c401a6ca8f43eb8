! A gfortran program for the sampler: module procedures whose symbols are
! __mesh_MOD_refine and __mesh_MOD_smooth, a main program (MAIN__), built
! with -g so samples get a .f90 file and line. `refine` does three times the
! work of `smooth`. Argument: work units (default 40).
module mesh
  implicit none
contains
  subroutine refine(units, acc)
    integer, intent(in) :: units
    double precision, intent(inout) :: acc
    integer :: u, i
    do u = 1, 3 * units
      do i = 1, 1000000
        acc = acc * 0.999999d0 + 1.0d-7 * i
      end do
    end do
  end subroutine refine

  subroutine smooth(units, acc)
    integer, intent(in) :: units
    double precision, intent(inout) :: acc
    integer :: u, i
    do u = 1, units
      do i = 1, 1000000
        acc = acc * 0.999998d0 + 2.0d-7 * i
      end do
    end do
  end subroutine smooth
end module mesh

program sampled_fortran_app
  use mesh
  implicit none
  integer :: units
  character(len=16) :: arg
  double precision :: acc
  units = 40
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) units
  end if
  acc = 1.0d0
  call refine(units, acc)
  call smooth(units, acc)
  ! The result is printed so that the loops cannot be optimised away.
  print '(a, es12.5)', 'acc ', acc
end program sampled_fortran_app
