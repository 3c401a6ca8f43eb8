#include "rtrace/launcher/gpu.hpp"

#include "rtrace/launcher/process.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace rtrace::launcher {

const char* compute_mode_name(int mode) noexcept {
  switch (mode) {
    case kComputeModeDefault: return "DEFAULT";
    case kComputeModeProhibited: return "PROHIBITED";
    case kComputeModeExclusiveProcess: return "EXCLUSIVE_PROCESS";
    default: return "unknown";
  }
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
    } else if (key == "mode") {
      if (value != "0" && value != "2" && value != "3")
        throw std::invalid_argument("mode=`" + value + "` is not a compute mode (0, 2 or 3)");
      g.compute_mode = std::stoi(value);
    } else {
      throw std::invalid_argument("unknown key `" + key + "` (expected sms, name, cc, ert, probe, cuda, mode)");
    }
  }
  if (g.sm_count < 1) throw std::invalid_argument("no sms=N");
  return g;
}

GpuInfo detect_gpu() {
  GpuInfo real = detect_gpu_with("libcuda.so.1");
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

// In the child (rtrace has no threads when it asks): the facts as
// "key=value" lines on `fd`, then its private directory removed and _exit.
[[noreturn]] void answer(int fd, const std::string& text, const char* private_dir) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (private_dir) rmdir(private_dir);
  _exit(0);
}

[[noreturn]] void probe_driver(const std::string& libcuda, int fd) {
  // Never an MPS client: no share, and a pipe directory where no daemon is.
  unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  char dir[] = "/tmp/rtrace-gpu-probe-XXXXXX";
  const bool private_dir = mkdtemp(dir) != nullptr;
  setenv("CUDA_MPS_PIPE_DIRECTORY", private_dir ? dir : "/nonexistent/rtrace-no-mps", 1);
  setenv("CUDA_MPS_LOG_DIRECTORY", private_dir ? dir : "/nonexistent/rtrace-no-mps", 1);
  const char* remove_at_end = private_dir ? dir : nullptr;
  void* lib = dlopen(libcuda.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    answer(fd, std::string("why=no GPU found (") + libcuda + " not loadable: " + (e ? e : "unknown") + ")\n", remove_at_end);
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
  if (!cu_init || !cu_count || !cu_get || !cu_attr)
    answer(fd, "why=no GPU found (" + libcuda + " lacks the driver API entry points)\n", remove_at_end);
  if (int rc = cu_init(0); rc != 0) answer(fd, "why=no GPU found (cuInit failed with CUDA error " + std::to_string(rc) + ")\n",
                                            remove_at_end);
  int n = 0;
  if (cu_count(&n) != 0 || n <= 0) answer(fd, "why=no GPU found (the driver reports no CUDA device)\n", remove_at_end);
  int dev = 0;
  cu_get(&dev, 0);
  int sms = 0, major = -1, minor = -1, mode = -1;
  constexpr int kMultiprocessorCount = 16, kComputeMode = 20, kCcMajor = 75, kCcMinor = 76;  // CU_DEVICE_ATTRIBUTE_*
  cu_attr(&sms, kMultiprocessorCount, dev);
  if (cu_attr(&major, kCcMajor, dev) != 0) major = -1;
  if (cu_attr(&minor, kCcMinor, dev) != 0) minor = -1;
  if (cu_attr(&mode, kComputeMode, dev) != 0) mode = -1;
  char name[256] = {};
  if (cu_name) cu_name(name, sizeof name, dev);
  for (char& c : name)
    if (c == '\n') c = ' ';
  answer(fd, "found=1\ncount=" + std::to_string(n) + "\nsms=" + std::to_string(sms) + "\nmajor=" + std::to_string(major) +
       "\nminor=" + std::to_string(minor) + "\nmode=" + std::to_string(mode) + "\nname=" + name + "\n",
         remove_at_end);
}

}  // namespace

GpuInfo detect_gpu_with(const std::string& libcuda, double timeout_s) {
  GpuInfo info;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    info.why_not = std::string("no GPU found (pipe2: ") + std::strerror(errno) + ")";
    return info;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    probe_driver(libcuda, fds[1]);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    info.why_not = std::string("no GPU found (fork: ") + std::strerror(errno) + ")";
    return info;
  }
  // The answer, bounded in time: a hung driver costs timeout_s, never the sweep.
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[512];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    info.why_not = "no GPU found (the driver did not answer within " + std::to_string(static_cast<int>(timeout_s)) + " s)";
    return info;
  }
  std::map<std::string, std::string> kv;
  std::size_t begin = 0;
  while (begin < text.size()) {
    const auto nl = text.find('\n', begin);
    const std::string line = text.substr(begin, nl == std::string::npos ? std::string::npos : nl - begin);
    begin = nl == std::string::npos ? text.size() : nl + 1;
    if (const auto eq = line.find('='); eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  if (kv["found"] != "1") {
    info.why_not = kv.count("why") ? kv["why"]
                                   : "no GPU found (the driver probe ended without an answer: " +
                                         std::string(WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                                         : "exit " + std::to_string(WEXITSTATUS(status))) +
                                         ")";
    return info;
  }
  auto number = [&](const char* key) {
    try {
      return std::stoi(kv[key]);
    } catch (...) {
      return -1;
    }
  };
  info.found = true;
  info.device_count = number("count");
  info.sm_count = number("sms");
  info.name = kv["name"];
  info.cc_major = number("major");
  info.cc_minor = number("minor");
  info.compute_mode = number("mode");
  return info;
}

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
