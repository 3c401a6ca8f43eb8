#include "demo_driver.hpp"

#include "cpu_kernels.hpp"

#include <omp.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <stdexcept>

namespace rtrace::demo {

int run_cpu_demo(const ProgramInfo& program, int argc, char** argv, ProcessGroup& group) {
  const bool root = group.rank() == 0;
  DemoOptions opt;
  try {
    if (!parse_options(argc, argv, program, opt)) return 0;
  } catch (const UsageError& e) {
    if (root) std::fprintf(stderr, "%s: %s\n", program.name.c_str(), e.what());
    return 2;
  }
  if (opt.threads > 0) omp_set_num_threads(opt.threads);
  const int threads = omp_get_max_threads();

  std::vector<std::string> kernels;
  if (opt.kernel == "all") {
    for (const auto& k : program.kernels)
      if (k != "all") kernels.push_back(k);
  } else {
    kernels.push_back(opt.kernel);
  }

  bool all_ok = true;
  for (const auto& kernel : kernels) {
    for (const auto& variant : select_variants(kernel, opt.variant, false)) {
      KernelConfig cfg;
      cfg.kernel = kernel;
      cfg.variant = variant;
      cfg.size = opt.size > 0 ? opt.size : default_cpu_size(kernel);
      cfg.iters = opt.iters > 0 ? opt.iters : default_cpu_iters(kernel);
      cfg.inject_error = opt.inject_error;
      KernelResult r;
      try {
        r = run_cpu_kernel(cfg, group);
      } catch (const std::invalid_argument& e) {
        // A size/rank mismatch: every rank sees the same one.
        if (root) std::fprintf(stderr, "%s: %s\n", program.name.c_str(), e.what());
        return 2;
      } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "%s: %s: out of memory at --size %lld (rank %d)\n", program.name.c_str(),
                     kernel.c_str(), static_cast<long long>(cfg.size), group.rank());
        group.abort(1);
        return 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s (rank %d)\n", program.name.c_str(), e.what(), group.rank());
        group.abort(1);
        return 1;
      }
      if (root && !opt.quiet) std::cout << summary_line(program.name, r, threads, group.size()) << std::endl;
      if (!r.ok) {
        if (root)
          std::fprintf(stderr, "%s: %s: check FAILED: %s\n", program.name.c_str(), r.region.c_str(), r.check.c_str());
        all_ok = false;
      }
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace rtrace::demo
