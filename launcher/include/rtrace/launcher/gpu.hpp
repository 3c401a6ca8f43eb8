// GPU discovery (through dlopen("libcuda.so.1"), never -lcuda) and SM
// partitioning of unmodified CUDA apps with a private MPS control daemon.
#pragma once

#include "rtrace/launcher/environment.hpp"

#include <string>

namespace rtrace::launcher {

struct GpuInfo {
  bool found = false;
  std::string why_not;   // "libcuda.so.1 not loadable: ..." when !found
  int device_count = 0;
  int sm_count = 0;      // of device 0 (the one the app sees first)
  std::string name;
};
GpuInfo detect_gpu();

// MPS hands out SMs per TPC (2 SMs on Volta..Hopper), so requests are snapped up
// to an even count, capped at the device.
struct SmPartition {
  int requested = 0;
  int achieved = 0;        // the snapped count MPS will grant (see docs/launcher.md for verification)
  int thread_percentage = 0;
};
SmPartition snap_sms_for_mps(int requested, int device_sms, int granularity = 2);

// A private MPS control daemon: its pipe/log directories are fresh 0700
// directories, so it serves only this sweep; started with `-d`, stopped with
// `quit` on its control pipe. Throws std::runtime_error with context on failure.
class MpsDaemon {
 public:
  MpsDaemon() = default;
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;
  ~MpsDaemon();
  void start(const Environment& base);
  void stop() noexcept;
  bool running() const noexcept { return running_; }
  // Adds CUDA_MPS_PIPE_DIRECTORY/LOG_DIRECTORY and the thread percentage for one point.
  void apply(Environment& app_env, const SmPartition& part) const;

 private:
  bool running_ = false;
  std::string root_, pipe_dir_, log_dir_, control_;
  Environment base_;
};

}  // namespace rtrace::launcher
