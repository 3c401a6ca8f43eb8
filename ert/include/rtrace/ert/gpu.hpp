// The GPU side of `rtrace ert`: CUDA kernels on exactly N SMs (green contexts).
//
// The driver is reached only through dlopen("libcuda.so.1") +
// cuGetProcAddress, so rtrace starts on machines without a GPU and reports
// "no GPU found" instead of failing to load.
#pragma once

#include "rtrace/ert/levels.hpp"
#include "rtrace/ert/sweep.hpp"
#include "rtrace/store/records.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rtrace::ert {

// No usable GPU: what() is the reason, e.g. "no GPU found (libcuda.so.1 not loadable)".
class GpuUnavailable : public std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The GPU exists but a CUDA call failed; what() names the call and the error.
class GpuError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool gpu_support_built() noexcept;

// Throws GpuUnavailable unless libcuda.so.1 loads, cuInit succeeds and at
// least one device exists.
void require_gpu();

struct GpuRunOptions {
  int device = 0;
  int sms_requested = 0;
  bool quick = false;
  std::vector<Precision> precisions{Precision::FP64, Precision::FP32, Precision::FP16};
  bool tensor_cores = true;
};

struct GpuRunResult {
  std::vector<Sample> samples;
  std::vector<MemoryLevel> levels;  // L1, L2, HBM from the device properties
  int sms_requested = 0;
  int sms_achieved = -1;            // verified with the %smid probe
  int sms_granted = -1;             // what the green context reports
  store::GpuRow gpu{};
  std::vector<std::pair<std::string, std::string>> text_attributes;
  std::vector<std::pair<std::string, double>> number_attributes;
  double seconds = 0;
};

// Runs the GPU characterisation; throws GpuUnavailable / GpuError.
GpuRunResult run_gpu_ert(const GpuRunOptions& options);

// Snaps a requested SM count to what a green context can give: at least
// `min_sms`, a multiple of `alignment`, at most `total` (pure, tested).
int snap_sm_count(int requested, int total, int min_sms, int alignment);

}  // namespace rtrace::ert
