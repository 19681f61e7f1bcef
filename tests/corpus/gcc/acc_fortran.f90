! OpenACC in Fortran as gfortran offloads it to NVPTX: explicit-shape and
! assumed-shape (descriptor) arrays, column-major, 1-based. The PTX of
! tests/fixtures/acc_fortran_gcc12.ptx is this file through gfortran-12 -O2
! -fopenacc -foffload=nvptx-none (captured as tests/corpus/gcc.py captures C).
module stencils
  implicit none
contains
  subroutine smooth1d(n, x, y)
    integer, intent(in) :: n
    real, intent(in) :: x(n)
    real, intent(out) :: y(n)
    integer :: i
    !$acc parallel loop copyin(x) copyout(y)
    do i = 2, n - 1
      y(i) = 0.25 * x(i - 1) + 0.5 * x(i) + 0.25 * x(i + 1)
    end do
  end subroutine

  subroutine jacobi2d(nx, ny, u, v)
    integer, intent(in) :: nx, ny
    double precision, intent(in) :: u(nx, ny)
    double precision, intent(out) :: v(nx, ny)
    integer :: i, j
    !$acc parallel loop gang copyin(u) copyout(v)
    do j = 2, ny - 1
      !$acc loop vector
      do i = 2, nx - 1
        v(i, j) = 0.25d0 * (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1))
      end do
    end do
  end subroutine

  subroutine lap3d(u, w)
    real, intent(in) :: u(:, :, :)
    real, intent(inout) :: w(:, :, :)
    integer :: i, j, k
    !$acc parallel loop gang collapse(2) present(u, w)
    do k = 2, size(u, 3) - 1
      do j = 2, size(u, 2) - 1
        !$acc loop vector
        do i = 2, size(u, 1) - 1
          w(i, j, k) = u(i - 1, j, k) + u(i + 1, j, k) + u(i, j - 1, k) + u(i, j + 1, k) &
                       + u(i, j, k - 1) + u(i, j, k + 1) - 6.0 * u(i, j, k)
        end do
      end do
    end do
  end subroutine
end module

program main
  use stencils
  implicit none
  integer, parameter :: n = 1000, nx = 130, ny = 66
  real :: x(n), y(n)
  double precision :: u(nx, ny), v(nx, ny)
  real, allocatable :: a(:, :, :), b(:, :, :)
  integer :: i
  x = [(real(i), i = 1, n)]
  y = 0
  call smooth1d(n, x, y)
  u = 1d0
  v = 0d0
  call jacobi2d(nx, ny, u, v)
  allocate (a(40, 20, 10), b(40, 20, 10))
  a = 1.0
  b = 0.0
  !$acc data copyin(a) copy(b)
  call lap3d(a, b)
  !$acc end data
  print *, y(2), v(2, 2), b(2, 2, 2)
end program
