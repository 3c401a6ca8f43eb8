// rtrace-demo: the OpenMP demo kernels (see examples/README.md).
#include "demo_driver.hpp"

int main(int argc, char** argv) {
  using namespace rtrace::demo;
  ProgramInfo program;
  program.name = "rtrace-demo";
  program.kernels = {"triad", "stencil7", "gsrb", "spmv", "gpp", "dgemm", "all"};
  ProcessGroup single;
  return run_cpu_demo(program, argc, argv, single);
}
