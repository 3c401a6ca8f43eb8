// GPU discovery (through dlopen("libcuda.so.1"), never -lcuda) and SM
// partitioning of unmodified CUDA apps with a private MPS control daemon.
#pragma once

#include "rtrace/launcher/environment.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rtrace::launcher {

// CU_DEVICE_ATTRIBUTE_COMPUTE_MODE values (cuda.h's CUcomputemode).
inline constexpr int kComputeModeDefault = 0;
inline constexpr int kComputeModeProhibited = 2;
inline constexpr int kComputeModeExclusiveProcess = 3;
const char* compute_mode_name(int mode) noexcept;  // "DEFAULT", "PROHIBITED", "EXCLUSIVE_PROCESS", "unknown"

struct GpuInfo {
  bool found = false;
  std::string why_not;   // "libcuda.so.1 not loadable: ..." when !found
  int device_count = 0;
  int sm_count = 0;      // of device 0 (the one the app sees first), never an MPS client's share
  std::string name;
  int cc_major = -1, cc_minor = -1;
  int compute_mode = -1; // kComputeMode*; -1 unknown
  // The test seam (RTRACE_TEST_FAKE_GPU, see detect_gpu): a device description
  // taken from the environment on a machine WITHOUT a GPU, so that an `sms`
  // sweep's MPS lifecycle runs on CPU in tests. Never a measurement.
  bool fake = false;
  std::string fake_ert;    // program run instead of `rtrace ert` for sms partitions
  std::string fake_probe;  // program run instead of rtrace-smid-probe
  bool fake_cuda = false;  // cuda=1: the apps under test bring a (fake) CUDA driver, so
                           // --tracer auto may choose the CUDA tracers as on a real GPU
  std::string note;        // e.g. why RTRACE_TEST_FAKE_GPU was ignored
};
// Device 0 through the driver. Only when the driver finds no GPU and
// RTRACE_TEST_FAKE_GPU="sms=N[,name=S][,cc=M.m][,ert=PATH][,probe=PATH][,cuda=1][,mode=M]"
// is set, that fake device is returned instead (fake=true; rtrace prints a
// warning and records it in every point's log; mode is the compute mode's
// number). A real GPU always wins over the variable.
GpuInfo detect_gpu();
// The driver is asked in a child process (bounded in time) whose environment
// makes it no MPS client: no CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, and an empty
// private CUDA_MPS_PIPE_DIRECTORY, so neither a daemon of the user's nor a
// system-wide one is reached (an MPS client sees its share of the SMs as the
// device's count) and rtrace itself never holds the driver. `libcuda`: the
// library to load (tests load the fake one).
GpuInfo detect_gpu_with(const std::string& libcuda, double timeout_s = 60);
// Parses an RTRACE_TEST_FAKE_GPU value; throws std::invalid_argument with the reason.
GpuInfo parse_fake_gpu(const std::string& spec);

// MPS hands out SMs per TPC (2 SMs on Volta..Hopper) from a whole-number
// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE. The model (verified per point by the
// %smid probe, never trusted): percentage p grants min(N, ceil(p*N/100)
// rounded up to whole TPCs). A request is snapped up to a whole TPC; p is the
// percentage closest to that share, adjusted until the model grants exactly it.
struct SmPartition {
  int requested = 0;
  int granted = 0;         // what MPS grants at thread_percentage under the model above
  int thread_percentage = 0;
};
// SMs the model grants at percentage `p` on an `device_sms`-SM device.
int mps_grant(int percentage, int device_sms, int granularity = 2);
SmPartition snap_sms_for_mps(int requested, int device_sms, int granularity = 2);

// Requests of one sms axis that MPS grants the same SMs would measure the same
// partition twice: the first request per grant is kept, the others dropped
// with a warning each ("sms=15 and sms=16 both get 16 SMs under MPS: ...").
// Requests above the device are kept (check_setup refuses them).
struct SmsMerge {
  std::vector<std::int64_t> kept;
  std::vector<std::string> warnings;
};
SmsMerge merge_equal_sm_grants(const std::vector<std::int64_t>& requested, int device_sms);

}  // namespace rtrace::launcher
