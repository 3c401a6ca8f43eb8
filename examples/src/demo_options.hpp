// Command line of the rtrace demo programs (rtrace-demo, -mpi, -cuda).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::demo {

// Bad command line: main() prints the message and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DemoOptions {
  std::string kernel;        // triad, stencil7, gsrb, spmv, gpp, dgemm, all
  long long size = -1;       // -1: the kernel's default (see examples/README.md)
  int iters = -1;            // -1: the kernel's default
  std::string variant;       // "": the kernel's default; "all": every variant
  int threads = 0;           // 0: OpenMP's default (OMP_NUM_THREADS)
  bool inject_error = false; // hidden: corrupt one result to prove the check fails
  bool quiet = false;        // no per-kernel summary lines
  std::string expect_file;   // CUDA: write the expected per-kernel counts (TSV)
};

// What a program supports, for parsing and for its usage text.
struct ProgramInfo {
  std::string name;                        // "rtrace-demo"
  std::vector<std::string> kernels;        // kernels this program runs
  bool has_threads = true;                 // --threads (OpenMP programs)
  bool has_expect = false;                 // --expect FILE (CUDA)
  bool cuda = false;                       // GPU variants (spmv warp)
};

std::string usage(const ProgramInfo& program);
// Throws UsageError naming the bad argument. Returns false when --help was given
// (usage already printed to stdout).
bool parse_options(int argc, char** argv, const ProgramInfo& program, DemoOptions& out);

// Variants of a kernel, default first. Kernels without variants have {"-"}.
const std::vector<std::string>& kernel_variants(const std::string& kernel, bool cuda);
// The variants to run for `requested` ("" -> default, "all" -> every one);
// throws UsageError for an unknown variant.
std::vector<std::string> select_variants(const std::string& kernel, const std::string& requested, bool cuda);

}  // namespace rtrace::demo
