// GPU pieces that exist in every build: driver detection through dlopen and
// the SM-count snapping rule. The CUDA runner itself is gpu_runner.cu.
#include "rtrace/ert/gpu.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <string>

namespace rtrace::ert {

bool gpu_support_built() noexcept {
#ifdef RTRACE_ERT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

void require_gpu() {
  // RTLD_NOLOAD first: a process that already has the driver keeps its handle.
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw GpuUnavailable("no GPU found (libcuda.so.1 not loadable)");
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  if (!init || !count) throw GpuUnavailable("no GPU found (libcuda.so.1 lacks cuInit/cuDeviceGetCount)");
  const int rc = init(0);
  if (rc != 0) throw GpuUnavailable("no GPU found (cuInit failed with CUDA error " + std::to_string(rc) + ")");
  int n = 0;
  if (count(&n) != 0 || n < 1) throw GpuUnavailable("no GPU found (the driver reports no CUDA device)");
  if (!gpu_support_built())
    throw GpuUnavailable("this rtrace was built without CUDA (configure with -DRTRACE_ENABLE_CUDA=ON)");
  // The handle stays open: the runner looks its entry points up again.
}

int snap_sm_count(int requested, int total, int min_sms, int alignment) {
  alignment = std::max(alignment, 1);
  min_sms = std::max(min_sms, 1);
  if (total <= 0) return 0;
  if (requested >= total) return total;
  // Round to the nearest multiple of the alignment (ties up), within [min, total].
  int snapped = ((requested + alignment / 2) / alignment) * alignment;
  snapped = std::max(snapped, std::max(min_sms, alignment));
  // Round min up to the alignment as well.
  snapped = (snapped + alignment - 1) / alignment * alignment;
  // A partial partition is whole groups of `alignment` SMs; the whole device
  // (no green context) is only what was asked for when requested >= total.
  const int largest_partition = total / alignment * alignment;
  return largest_partition > 0 ? std::min(snapped, largest_partition) : total;
}

#ifndef RTRACE_ERT_HAVE_CUDA
GpuRunResult run_gpu_ert(const GpuRunOptions&) {
  throw GpuUnavailable("this rtrace was built without CUDA (configure with -DRTRACE_ENABLE_CUDA=ON)");
}
#endif

}  // namespace rtrace::ert
