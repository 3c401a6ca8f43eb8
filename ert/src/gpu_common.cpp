// GPU pieces that exist in every build: driver detection through dlopen and
// the SM-count snapping rule. The CUDA runner itself is gpu_runner.cu.
#include "rtrace/ert/gpu.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

std::string format_gpu_list(const std::vector<GpuDeviceInfo>& gpus) {
  std::string out;
  auto num = [](double v, const char* fmt) {
    if (!std::isfinite(v) || v < 0) return std::string("unknown");
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  for (const GpuDeviceInfo& g : gpus) {
    const store::GpuRow& r = g.row;
    std::string name = store::get_str(r.name);
    std::replace(name.begin(), name.end(), '"', '\'');
    out += "gpu=" + std::to_string(r.index) + " name=\"" + name + "\"";
    out += " sms=" + std::to_string(r.sm_count);
    out += " cc=" + std::to_string(r.cc_major) + "." + std::to_string(r.cc_minor);
    out += " sm_clock_mhz=" + num(r.sm_clock_khz / 1e3, "%.0f");
    out += " memory_clock_mhz=" + num(r.memory_clock_khz / 1e3, "%.0f");
    out += " memory_bus_bits=" + std::to_string(r.memory_bus_bits);
    out += " memory_gib=" + num(double(r.memory_bytes) / 1073741824.0, "%.1f");
    out += " l2_mib=" + num(double(r.l2_bytes) / 1048576.0, "%.1f");
    out += " spec_bandwidth_gbs=" + num(r.spec_bandwidth_gbs, "%.1f");
    out += " sm_partition_min=" + std::to_string(g.sm_partition_min);
    out += " sm_partition_align=" + std::to_string(g.sm_partition_align);
    out += " driver_cuda=" + std::to_string(g.driver_version / 1000) + "." + std::to_string(g.driver_version % 1000 / 10);
    // EXCLUSIVE_PROCESS matters to an sms sweep (an MPS server holds the device).
    out += std::string(" compute_mode=") + (g.compute_mode == 0   ? "DEFAULT"
                                            : g.compute_mode == 2 ? "PROHIBITED"
                                            : g.compute_mode == 3 ? "EXCLUSIVE_PROCESS"
                                                                  : "unknown");
    out += "\n";
  }
  return out;
}

#ifndef RTRACE_ERT_HAVE_CUDA
GpuRunResult run_gpu_ert(const GpuRunOptions&) {
  throw GpuUnavailable("this rtrace was built without CUDA (configure with -DRTRACE_ENABLE_CUDA=ON)");
}
std::vector<GpuDeviceInfo> list_gpus() {
  require_gpu();  // "no GPU found (...)" first: that is the more useful line
  throw GpuUnavailable("this rtrace was built without CUDA (configure with -DRTRACE_ENABLE_CUDA=ON)");
}
#endif

}  // namespace rtrace::ert
