// The main loop shared by rtrace-demo and rtrace-demo-mpi.
#pragma once

#include "demo_common.hpp"
#include "demo_options.hpp"

namespace rtrace::demo {

// Parses argv, runs the selected kernels on `group` and prints one summary line
// per kernel on rank 0. Returns the exit code: 0 all checks passed, 1 a wrong
// result or a failure, 2 bad usage.
int run_cpu_demo(const ProgramInfo& program, int argc, char** argv, ProcessGroup& group);

}  // namespace rtrace::demo
