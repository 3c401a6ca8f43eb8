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

namespace {
GpuInfo detect_real_gpu();
}

GpuInfo parse_fake_gpu(const std::string& spec) {
  GpuInfo g;
  g.found = true;
  g.fake = true;
  g.device_count = 1;
  g.name = "fake GPU";
  std::size_t begin = 0;
  while (begin <= spec.size()) {
    const auto comma = spec.find(',', begin);
    const std::string item = spec.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    begin = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("`" + item + "` is not KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "sms") {
      if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(value) < 1)
        throw std::invalid_argument("sms=`" + value + "` is not a positive SM count");
      g.sm_count = std::stoi(value);
    } else if (key == "name") {
      g.name = value;
    } else if (key == "cc") {
      const auto dot = value.find('.');
      if (dot == std::string::npos || dot == 0 || value.find_first_not_of("0123456789.") != std::string::npos)
        throw std::invalid_argument("cc=`" + value + "` is not MAJOR.MINOR");
      g.cc_major = std::stoi(value.substr(0, dot));
      g.cc_minor = std::stoi(value.substr(dot + 1));
    } else if (key == "ert") {
      g.fake_ert = value;
    } else if (key == "probe") {
      g.fake_probe = value;
    } else if (key == "cuda") {
      if (value != "0" && value != "1") throw std::invalid_argument("cuda=`" + value + "` is not 0 or 1");
      g.fake_cuda = value == "1";
    } else {
      throw std::invalid_argument("unknown key `" + key + "` (expected sms, name, cc, ert, probe, cuda)");
    }
  }
  if (g.sm_count < 1) throw std::invalid_argument("no sms=N");
  return g;
}

GpuInfo detect_gpu() {
  GpuInfo real = detect_real_gpu();
  const char* fake = std::getenv("RTRACE_TEST_FAKE_GPU");
  if (!fake) return real;
  if (real.found) {
    real.note = "RTRACE_TEST_FAKE_GPU is ignored: this machine has a real GPU";
    return real;
  }
  try {
    GpuInfo g = parse_fake_gpu(fake);
    g.note = "RTRACE_TEST_FAKE_GPU: no GPU here, running on a FAKE " + std::to_string(g.sm_count) +
             "-SM device (tests only: nothing in this file is a GPU measurement)";
    return g;
  } catch (const std::exception& e) {
    real.why_not += std::string("; RTRACE_TEST_FAKE_GPU=`") + fake + "` is not used: " + e.what();
    return real;
  }
}

namespace {
GpuInfo detect_real_gpu() {
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
  int major = -1, minor = -1;
  if (cu_attr(&major, 75, dev) == 0) info.cc_major = major;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  if (cu_attr(&minor, 76, dev) == 0) info.cc_minor = minor;  // ..._MINOR
  return info;
}
}  // namespace

SmsMerge merge_equal_sm_grants(const std::vector<std::int64_t>& requested, int device_sms) {
  SmsMerge m;
  std::vector<std::pair<int, std::int64_t>> first_by_grant;  // grant -> first request
  for (auto n : requested) {
    if (n < 1 || n > device_sms) {
      m.kept.push_back(n);
      continue;
    }
    const int grant = snap_sms_for_mps(static_cast<int>(n), device_sms).granted;
    auto it = std::find_if(first_by_grant.begin(), first_by_grant.end(), [&](const auto& g) { return g.first == grant; });
    if (it == first_by_grant.end()) {
      first_by_grant.emplace_back(grant, n);
      m.kept.push_back(n);
    } else {
      m.warnings.push_back("warning: sms=" + std::to_string(it->second) + " and sms=" + std::to_string(n) + " both get " +
                           std::to_string(grant) + " SMs under MPS: one point (sms=" + std::to_string(n) +
                           " dropped)");
    }
  }
  return m;
}

int mps_grant(int percentage, int device_sms, int granularity) {
  const int g = std::max(1, granularity);
  const int share = static_cast<int>((static_cast<long long>(percentage) * device_sms + 99) / 100);  // ceil
  return std::min(device_sms, (share + g - 1) / g * g);
}

SmPartition snap_sms_for_mps(int requested, int device_sms, int granularity) {
  SmPartition p;
  p.requested = requested;
  const int n = std::max(1, device_sms);
  const int g = std::max(1, granularity);
  const int target = std::min((std::max(1, requested) + g - 1) / g * g, n);
  // The percentage nearest the target's share (robust to +-1 SM of rounding
  // in the model), then nudged until the model grants exactly the target.
  int pct = std::clamp(static_cast<int>((200LL * target + n) / (2LL * n)), 1, 100);
  while (pct > 1 && mps_grant(pct, n, g) > target) --pct;
  while (pct < 100 && mps_grant(pct, n, g) < target) ++pct;
  p.thread_percentage = pct;
  p.granted = mps_grant(pct, n, g);
  return p;
}

}  // namespace rtrace::launcher
