#include "rtrace/launcher/gpu.hpp"

#include "rtrace/launcher/process.hpp"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace rtrace::launcher {

GpuInfo detect_gpu() {
  GpuInfo info;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    info.why_not = std::string("no GPU found (libcuda.so.1 not loadable: ") + (e ? e : "unknown") + ")";
    return info;
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  using GetFn = int (*)(int*, int);
  using AttrFn = int (*)(int*, int, int);
  using NameFn = int (*)(char*, int, int);
  auto cu_init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto cu_count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  auto cu_get = reinterpret_cast<GetFn>(dlsym(lib, "cuDeviceGet"));
  auto cu_attr = reinterpret_cast<AttrFn>(dlsym(lib, "cuDeviceGetAttribute"));
  auto cu_name = reinterpret_cast<NameFn>(dlsym(lib, "cuDeviceGetName"));
  if (!cu_init || !cu_count || !cu_get || !cu_attr) {
    info.why_not = "no GPU found (libcuda.so.1 lacks the driver API entry points)";
    return info;  // the library stays loaded: unloading a driver is never worth it
  }
  if (int rc = cu_init(0); rc != 0) {
    info.why_not = "no GPU found (cuInit failed with CUDA error " + std::to_string(rc) + ")";
    return info;
  }
  int n = 0;
  if (cu_count(&n) != 0 || n <= 0) {
    info.why_not = "no GPU found (the driver reports no CUDA device)";
    return info;
  }
  int dev = 0;
  cu_get(&dev, 0);
  int sms = 0;
  constexpr int kMultiprocessorCount = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
  cu_attr(&sms, kMultiprocessorCount, dev);
  char name[256] = {};
  if (cu_name) cu_name(name, sizeof name, dev);
  info.found = true;
  info.device_count = n;
  info.sm_count = sms;
  info.name = name;
  return info;
}

SmPartition snap_sms_for_mps(int requested, int device_sms, int granularity) {
  SmPartition p;
  p.requested = requested;
  int g = std::max(1, granularity);
  int snapped = (requested + g - 1) / g * g;
  snapped = std::min(snapped, device_sms);
  p.achieved = snapped;
  // The percentage that yields `snapped` SMs: MPS rounds the SM share up per TPC.
  p.thread_percentage = std::clamp((snapped * 100 + device_sms - 1) / std::max(1, device_sms), 1, 100);
  return p;
}

MpsDaemon::~MpsDaemon() { stop(); }

void MpsDaemon::start(const Environment& base) {
  std::string why;
  const auto control = resolve_executable("nvidia-cuda-mps-control", base.get("PATH"), why);
  if (!control) throw std::runtime_error("sms axis: MPS control daemon not available: " + why);
  control_ = *control;
  std::string tmpl = (std::filesystem::temp_directory_path() / "rtrace-mps-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error(std::string("sms axis: cannot create the MPS directory: ") + std::strerror(errno));
  root_ = tmpl;  // mkdtemp makes it 0700: the daemon serves only us
  pipe_dir_ = root_ + "/pipe";
  log_dir_ = root_ + "/log";
  mkdir(pipe_dir_.c_str(), 0700);
  mkdir(log_dir_.c_str(), 0700);
  base_ = base;
  base_.set("CUDA_MPS_PIPE_DIRECTORY", pipe_dir_);
  base_.set("CUDA_MPS_LOG_DIRECTORY", log_dir_);
  ProcessSpec spec;
  spec.path = control_;
  spec.argv = {"nvidia-cuda-mps-control", "-d"};
  spec.env = base_.to_envp();
  spec.timeout_s = 30;
  const auto r = run_process(spec);
  if (r.kind != ExitKind::Exited || r.exit_code != 0)
    throw std::runtime_error("sms axis: `nvidia-cuda-mps-control -d` failed: " + r.stderr_tail + r.launch_error);
  running_ = true;
}

void MpsDaemon::stop() noexcept {
  if (!running_) return;
  running_ = false;
  try {
    // `echo quit | nvidia-cuda-mps-control`, without a shell: write the command to its control pipe.
    const std::string fifo = pipe_dir_ + "/control";
    if (FILE* f = std::fopen(fifo.c_str(), "w")) {
      std::fputs("quit\n", f);
      std::fclose(f);
    }
    for (int i = 0; i < 50 && std::filesystem::exists(fifo); ++i) usleep(100000);
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  } catch (...) {
  }
}

void MpsDaemon::apply(Environment& app_env, const SmPartition& part) const {
  app_env.set("CUDA_MPS_PIPE_DIRECTORY", pipe_dir_);
  app_env.set("CUDA_MPS_LOG_DIRECTORY", log_dir_);
  app_env.set("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(part.thread_percentage));
}

}  // namespace rtrace::launcher
