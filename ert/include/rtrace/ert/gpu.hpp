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
  // The SM limit comes from MPS (this process is an MPS client with
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE): the primary context, no green context;
  // sms_requested is the count MPS grants (from `rtrace run`).
  bool partition_by_mps = false;
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
  std::vector<std::string> warnings;  // notes for the report (e.g. little free memory)
  double seconds = 0;
};

// One device as the driver describes it (cuDeviceGetAttribute), for
// `rtrace ert --list-gpus`, tests/gpu/validate.sh and the ERT file.
struct GpuDeviceInfo {
  store::GpuRow row{};         // name, compute capability, SMs, L2, memory, clocks, bus, spec bandwidth
  int driver_version = 0;      // cuDriverGetVersion (13000 = CUDA 13.0)
  int sm_partition_min = -1;   // green-context granularity (minSmPartitionSize); -1: no green contexts
  int sm_partition_align = -1; // smCoscheduledAlignment
  int shared_per_sm = -1;      // bytes of shared memory per SM
  int compute_mode = -1;       // CU_DEVICE_ATTRIBUTE_COMPUTE_MODE (0 DEFAULT, 2 PROHIBITED, 3 EXCLUSIVE_PROCESS)
};

// Every CUDA device; throws GpuUnavailable without a driver or device.
std::vector<GpuDeviceInfo> list_gpus();

// One line per device: `gpu=0 name="NVIDIA H100 80GB HBM3" sms=132 cc=9.0 ...`
// (key=value, stable keys: validate.sh and the sbatch script parse them).
std::string format_gpu_list(const std::vector<GpuDeviceInfo>& gpus);

// Runs the GPU characterisation; throws GpuUnavailable / GpuError.
GpuRunResult run_gpu_ert(const GpuRunOptions& options);

// Snaps a requested SM count to what a green context can give: at least
// `min_sms`, a multiple of `alignment`, at most `total` (pure, tested).
int snap_sm_count(int requested, int total, int min_sms, int alignment);

}  // namespace rtrace::ert
