// The fixture of the launcher's CPU tests of `sms` sweeps: the real rtrace
// binary, a fake nvidia-cuda-mps-control first on PATH (it daemonizes like the
// real one and records every start, client and quit, with the peer's pid,
// percentage and CUDA_VISIBLE_DEVICES), and the RTRACE_TEST_FAKE_GPU seam for
// the device. A fake never proves a GPU run. Used by mps_daemon_test.cpp and
// sms_roofline_test.cpp.
//
// The test process is deliberately NOT a child subreaper (no run_process
// here): what rtrace daemonizes must end up outside rtrace's tree on its own.
#pragma once

#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

namespace rtrace::test {

namespace fs = std::filesystem;

const std::string kRtrace = RTRACE_BINARY_DIR "/bin/rtrace";
const std::string kFake = RTRACE_FAKE_MPS_CONTROL;
const std::string kTracerLib = RTRACE_BINARY_DIR "/lib/librtrace_tracer.so";

inline double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// "key=value" fields of one record line.
inline std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> f;
  std::istringstream in(line);
  std::string w;
  while (in >> w)
    if (auto eq = w.find('='); eq != std::string::npos) f[w.substr(0, eq)] = w.substr(eq + 1);
  return f;
}

inline bool alive(long pid) {
  if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) != 0) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && s[rp + 2] != 'Z' && s[rp + 2] != 'X';
}

class FakeMpsSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    // Short: the fake daemon's socket path (in here) must fit a sockaddr_un (108 bytes).
    static int serial = 0;
    dir_ = fs::temp_directory_path() / ("rtrace-mps-" + std::to_string(getpid()) + "-" + std::to_string(++serial));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    // The %smid probe stand-in is the fake under the probe's name.
    fs::create_symlink(kFake, dir_ / "rtrace-smid-probe");
    template_ = ert_template();
  }
  void TearDown() override {
    if (!HasFailure() && !std::getenv("KEEP")) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A real (CPU) ERT file, copied by the fake ERT: made once per test process
  // (ctest runs each case in a process of its own) and removed when it exits.
  static std::string ert_template() {
    struct Template {
      std::string path;
      ~Template() {
        std::error_code ec;
        if (!path.empty()) fs::remove(path, ec);
      }
    };
    static Template made;
    if (!made.path.empty()) return made.path;
    const std::string out = (fs::temp_directory_path() / ("rtrace-mps-ert-" + std::to_string(getpid()) + ".h5")).string();
    fs::remove(out);
    const pid_t pid = fork();
    if (pid == 0) {
      execl(kRtrace.c_str(), "rtrace", "ert", "--threads", "1", "--quick", "--quiet", "-o", out.c_str(), nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) made.path = out;
    return made.path;
  }

  std::vector<std::string> environment(const std::vector<std::string>& extra) const {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.rfind("PATH=", 0) == 0 || kv.rfind("TMPDIR=", 0) == 0 || kv.rfind("RTRACE_", 0) == 0 ||
          kv.rfind("CUDA_MPS_", 0) == 0 || kv.rfind("FAKE_MPS_", 0) == 0)
        continue;
      env.push_back(kv);
    }
    const char* path_env = std::getenv("PATH");
    env.push_back("PATH=" + fs::path(kFake).parent_path().string() + ":" + (path_env ? path_env : "/usr/bin:/bin"));
    env.push_back("TMPDIR=" + path("tmp"));
    env.push_back("RTRACE_CACHE_DIR=" + path("cache"));
    env.push_back("RTRACE_TEST_FAKE_GPU=sms=132,name=Fake H100,cc=9.0,ert=" + kFake + ",probe=" + path("rtrace-smid-probe"));
    env.push_back("FAKE_MPS_RECORD=" + path("record.txt"));
    env.push_back("FAKE_MPS_SERVER_FILE=" + path("mps-server"));  // a live server of the fake daemon
    env.push_back("RTRACE_TEST_PROC_ROOT=" + path("proc"));  // no foreign MPS process unless a test adds one
    env.push_back("FAKE_MPS_ERT_TEMPLATE=" + template_);
    for (const auto& kv : extra) {  // an extra NAME=VALUE replaces the default
      const std::string name = kv.substr(0, kv.find('=') + 1);
      env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name, 0) == 0; }),
                env.end());
      env.push_back(kv);
    }
    return env;
  }

  pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> argv{"rtrace"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto envs = environment(extra_env);
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : envs) e.push_back(s.data());
    e.push_back(nullptr);
    const std::string err = path("rtrace.err");
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 2);
      dup2(fd, 1);
      execve(kRtrace.c_str(), a.data(), e.data());
      _exit(127);
    }
    return pid;
  }

  // Exit status (128+signal when killed); -1 when it did not end in time.
  int wait_for(pid_t pid, double timeout_s) {
    const double deadline = now_s() + timeout_s;
    int status = 0;
    while (now_s() < deadline) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }

  std::vector<std::string> record() const {
    std::ifstream in(path("record.txt"));
    std::vector<std::string> lines;
    std::string l;
    while (std::getline(in, l)) lines.push_back(l);
    return lines;
  }
  std::vector<std::string> lines_starting(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& l : record())
      if (l.rfind(prefix, 0) == 0) out.push_back(l);
    return out;
  }
  bool wait_until(const std::function<bool()>& cond, double timeout_s) const {
    const double deadline = now_s() + timeout_s;
    while (now_s() < deadline) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return cond();
  }
  std::string err_text() const {
    std::ifstream in(path("rtrace.err"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool mps_dirs_left() const {
    for (const auto& e : fs::directory_iterator(dir_ / "tmp"))
      if (e.path().filename().string().rfind("rtrace-mps-", 0) == 0) return true;
    return false;
  }
  // The daemon: started once, by rtrace, and not rtrace's child after its double fork.
  long check_one_start(pid_t rtrace_pid) const {
    const auto launches = lines_starting("launch -d");
    const auto starts = lines_starting("start daemon=");
    EXPECT_EQ(launches.size(), 1u) << err_text();
    EXPECT_EQ(starts.size(), 1u) << err_text();
    if (starts.size() != 1 || launches.size() != 1) return -1;
    EXPECT_EQ(fields(launches[0])["by"], std::to_string(rtrace_pid));
    const auto f = fields(starts[0]);
    EXPECT_NE(f.at("ppid"), std::to_string(rtrace_pid)) << "the daemon was reparented to rtrace: " << starts[0];
    EXPECT_EQ(lines_starting("query get_server_list").size(), 1u) << "reachability not checked after start";
    return std::stol(f.at("daemon"));
  }

  fs::path dir_;
  std::string template_;
};

}  // namespace rtrace::test
