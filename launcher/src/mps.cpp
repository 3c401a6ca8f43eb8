// The private MPS control daemon of a sweep. See mps.hpp for the lifecycle and
// docs/launcher.md for why each step is there.
#include "rtrace/launcher/mps.hpp"

#include "rtrace/launcher/gpu.hpp"
#include "rtrace/launcher/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace rtrace::launcher {

namespace {

constexpr char kPidFile[] = "nvidia-cuda-mps-control.pid";
constexpr char kDoneByte = 'q';

double mono_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void sleep_ms(int ms) {
  struct timespec t {ms / 1000, (ms % 1000) * 1000L * 1000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {
  }
}

int pidfd_open_or_none(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) {
    fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    return static_cast<int>(fd);
  }
#endif
  (void)pid;
  return -1;
}

// The daemon exists: through its pidfd when we have one (no pid reuse), else
// kill(0) plus "not a zombie" (a zombie under init is dead for our purposes).
bool process_alive(pid_t pid, int pidfd) noexcept {
  if (pid <= 0) return false;
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    return poll(&p, 1, 0) == 0;  // readable once the process has exited
  }
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = 0;
  const char* rp = std::strrchr(buf, ')');
  return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

void send_signal(pid_t pid, int pidfd, int sig) noexcept {
#ifdef SYS_pidfd_send_signal
  if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0) return;
#endif
  if (pidfd < 0 && pid > 0) kill(pid, sig);
}

// Clears PR_SET_CHILD_SUBREAPER for its lifetime, so that what a child
// daemonizes is reparented to init (or an enclosing subreaper), not to us.
class SubreaperOff {
 public:
  SubreaperOff() {
    (void)prctl(PR_GET_CHILD_SUBREAPER, &was_, 0, 0, 0);
    (void)prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  }
  ~SubreaperOff() { (void)prctl(PR_SET_CHILD_SUBREAPER, was_, 0, 0, 0); }
  SubreaperOff(const SubreaperOff&) = delete;
  SubreaperOff& operator=(const SubreaperOff&) = delete;

 private:
  int was_ = 0;
};

// In a child after fork (async-signal-safe only): default signals, none blocked.
void reset_signals_in_child() noexcept {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT}) sigaction(sig, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

struct ControlRun {
  bool exited = false;
  int exit_code = -1;
  bool timed_out = false;
  std::string output;
  std::string launch_error;
  std::string describe() const {
    if (!launch_error.empty()) return launch_error;
    if (timed_out) return "no answer (timed out)";
    std::string tail = output;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
    if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
    return (exited ? "exit " + std::to_string(exit_code) : std::string("killed by a signal")) +
           (tail.empty() ? "" : ": " + tail);
  }
};

// One nvidia-cuda-mps-control invocation: argv to execve (no shell),
// `stdin_text` on a pipe, stdout+stderr into `out_file` (a file, not a pipe:
// a daemon that keeps its inherited descriptors must not make us wait for
// EOF), killed at the deadline.
ControlRun run_control(const std::string& exe, const std::vector<std::string>& args, const std::vector<std::string>& env,
                       const std::string& stdin_text, const std::string& out_file, double timeout_s) {
  ControlRun r;
  std::vector<char*> argv, envp;
  std::vector<std::string> a{"nvidia-cuda-mps-control"};
  a.insert(a.end(), args.begin(), args.end());
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (const auto& s : env) envp.push_back(const_cast<char*>(s.c_str()));
  envp.push_back(nullptr);
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    r.launch_error = std::string("pipe2: ") + std::strerror(errno);
    return r;
  }
  const int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    r.launch_error = "cannot create " + out_file + ": " + std::strerror(errno);
    close(in[0]);
    close(in[1]);
    return r;
  }
  int exec_status[2];
  if (pipe2(exec_status, O_CLOEXEC) != 0) exec_status[0] = exec_status[1] = -1;
  const pid_t pid = fork();
  if (pid == 0) {
    reset_signals_in_child();
    setpgid(0, 0);  // a terminal's ^C is rtrace's to handle, not the daemon's
    dup2(in[0], 0);
    dup2(out, 1);
    dup2(out, 2);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
#endif
    execve(exe.c_str(), argv.data(), envp.data());
    const int e = errno;
    if (exec_status[1] >= 0) (void)!write(exec_status[1], &e, sizeof e);
    _exit(127);
  }
  close(in[0]);
  close(out);
  if (exec_status[1] >= 0) close(exec_status[1]);
  if (pid < 0) {
    r.launch_error = std::string("fork: ") + std::strerror(errno);
    close(in[1]);
    if (exec_status[0] >= 0) close(exec_status[0]);
    return r;
  }
  // A short command never fills the pipe buffer: this write cannot block.
  if (!stdin_text.empty()) (void)!write(in[1], stdin_text.data(), stdin_text.size());
  close(in[1]);
  const double deadline = mono_now() + timeout_s;
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (mono_now() >= deadline) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    sleep_ms(10);
  }
  if (exec_status[0] >= 0) {
    int e = 0;
    if (read(exec_status[0], &e, sizeof e) == static_cast<ssize_t>(sizeof e))
      r.launch_error = "cannot execute `" + exe + "`: " + std::strerror(e);
    close(exec_status[0]);
  }
  if (!r.timed_out && WIFEXITED(status)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  }
  std::ifstream f(out_file);
  std::stringstream ss;
  ss << f.rdbuf();
  r.output = ss.str();
  if (r.output.size() > 4096) r.output = r.output.substr(r.output.size() - 4096);
  return r;
}

// ------------------------------------------------------------------ keeper
// Runs in a process forked from rtrace (possibly multithreaded): only raw
// system calls, everything it needs prepared before the fork.
struct KeeperPlan {
  const char* control;
  char* const* argv;
  char* const* envp;
  pid_t daemon_pid;
  int daemon_pidfd;
  const char* root;  // removed at the end
  int stop_ms, grace_ms;
};

struct LinuxDirent64 {
  std::uint64_t d_ino;
  std::int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// Removes the contents of `dirfd` (at most `depth` levels), raw calls only.
void remove_contents(int dirfd, int depth) noexcept {
  alignas(8) char buf[4096];
  for (int round = 0; round < 4; ++round) {  // getdents after unlinks: re-read until empty
    bool any = false;
    (void)lseek(dirfd, 0, SEEK_SET);
    for (;;) {
      const long n = syscall(SYS_getdents64, dirfd, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
        off += d->d_reclen;
        if (d->d_name[0] == '.' && (d->d_name[1] == 0 || (d->d_name[1] == '.' && d->d_name[2] == 0))) continue;
        if (unlinkat(dirfd, d->d_name, 0) == 0) {
          any = true;
          continue;
        }
        if (depth > 0) {
          const int sub = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0) {
            remove_contents(sub, depth - 1);
            close(sub);
          }
          if (unlinkat(dirfd, d->d_name, AT_REMOVEDIR) == 0) any = true;
        }
      }
    }
    if (!any) return;
  }
}

bool keeper_alive(const KeeperPlan& p) noexcept { return process_alive(p.daemon_pid, p.daemon_pidfd); }

void keeper_wait_gone(const KeeperPlan& p, int ms) noexcept {
  for (int waited = 0; waited < ms && keeper_alive(p); waited += 20) sleep_ms(20);
}

[[noreturn]] void keeper_main(int watch, const KeeperPlan& plan) {
  KeeperPlan p = plan;
  (void)prctl(PR_SET_NAME, "rtrace-mps-keep", 0, 0, 0);
  setsid();  // no terminal signals: rtrace handles ^C and then says "done"
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &sa, nullptr);
  sa.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Holds nothing of rtrace's (no output file, no app pipe): /dev/null as
  // 0-2, the watched pipe as 3, the daemon's pidfd as 4, nothing else.
  const int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  int watch_fd = fcntl(watch, F_DUPFD_CLOEXEC, 10);
  int pidfd = p.daemon_pidfd >= 0 ? fcntl(p.daemon_pidfd, F_DUPFD_CLOEXEC, 10) : -1;
  if (devnull >= 0)
    for (int fd = 0; fd < 3; ++fd) dup2(devnull, fd);
  dup3(watch_fd, 3, O_CLOEXEC);
  watch_fd = 3;
  if (pidfd >= 0) {
    dup3(pidfd, 4, O_CLOEXEC);
    pidfd = 4;
  }
  p.daemon_pidfd = pidfd;
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 5U, ~0U, 0) != 0)
#endif
    for (int fd = 5; fd < 65536; ++fd) close(fd);
  char byte = 0;
  ssize_t got;
  do got = read(watch_fd, &byte, 1);
  while (got < 0 && errno == EINTR);
  if (got == 1 && byte == kDoneByte) _exit(0);
  // rtrace is gone: `echo quit | nvidia-cuda-mps-control`, then make sure.
  if (keeper_alive(p)) {
    int in[2];
    if (pipe(in) == 0) {
      const pid_t c = fork();
      if (c == 0) {
        dup2(in[0], 0);
        close(in[0]);
        close(in[1]);
        execve(p.control, p.argv, p.envp);
        _exit(127);
      }
      close(in[0]);
      if (c > 0) (void)!write(in[1], "quit\n", 5);
      close(in[1]);
      if (c > 0) {
        int waited = 0;
        while (waitpid(c, nullptr, WNOHANG) == 0 && waited < p.stop_ms) {
          sleep_ms(20);
          waited += 20;
        }
        if (waited >= p.stop_ms) {
          kill(c, SIGKILL);
          waitpid(c, nullptr, 0);
        }
      }
    }
    keeper_wait_gone(p, p.stop_ms);
    if (keeper_alive(p)) {
      send_signal(p.daemon_pid, p.daemon_pidfd, SIGTERM);
      keeper_wait_gone(p, p.grace_ms);
      if (keeper_alive(p)) send_signal(p.daemon_pid, p.daemon_pidfd, SIGKILL);
    }
  }
  const int root = open(p.root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root >= 0) {
    remove_contents(root, 3);
    close(root);
    rmdir(p.root);
  }
  _exit(0);
}

}  // namespace

MpsDaemon::~MpsDaemon() { stop(); }

void MpsDaemon::start(const Environment& base) {
  if (running_) return;
  SignalWatch::install();  // the SIGCHLD self-pipe and the subreaper flag we clear below
  std::string why;
  const auto control = resolve_executable("nvidia-cuda-mps-control", base.get("PATH"), why);
  if (!control) throw MpsError("MPS control daemon not available: " + why);
  control_ = *control;
  std::string tmpl = (fs::temp_directory_path() / "rtrace-mps-XXXXXX").string();
  // The daemon's sockets live in <tmpl>/pipe: a path past sockaddr_un's 108
  // bytes makes it fail obscurely, or not listen at all. Refused up front.
  if (tmpl.size() + std::strlen("/pipe") > max_mps_pipe_dir_length())
    throw MpsError("the MPS pipe directory would be " + std::to_string(tmpl.size() + std::strlen("/pipe")) +
                   " bytes long (under " + fs::temp_directory_path().string() + "), over the " +
                   std::to_string(max_mps_pipe_dir_length()) +
                   " its Unix sockets allow: set TMPDIR to a shorter directory (e.g. TMPDIR=/tmp)");
  if (!mkdtemp(tmpl.data())) throw MpsError(std::string("cannot create the MPS directory: ") + std::strerror(errno));
  root_ = tmpl;  // mkdtemp makes it 0700: the daemon serves only us, and no stale pipe is ever reused
  pipe_dir_ = root_ + "/pipe";
  log_dir_ = root_ + "/log";
  if (mkdir(pipe_dir_.c_str(), 0700) != 0 || mkdir(log_dir_.c_str(), 0700) != 0) {
    const std::string e = std::strerror(errno);
    std::error_code ec;
    fs::remove_all(root_, ec);
    throw MpsError("cannot create the MPS pipe/log directories under " + root_ + ": " + e);
  }
  Environment env = base;
  env.set("CUDA_MPS_PIPE_DIRECTORY", pipe_dir_);
  env.set("CUDA_MPS_LOG_DIRECTORY", log_dir_);
  env.unset("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");  // the daemon's default stays 100
  // Set deliberately, never inherited as it happens to be: the daemon serves
  // exactly the device the sweep partitions (the first the user's
  // CUDA_VISIBLE_DEVICES names, else device 0), and its clients address it as
  // device 0, their CUDA_VISIBLE_DEVICES being relative to the daemon's (apply()).
  daemon_device_ = first_visible_device(base.get("CUDA_VISIBLE_DEVICES"));
  env.set("CUDA_VISIBLE_DEVICES", daemon_device_);
  envp_ = env.to_envp();
  auto fail = [&](const std::string& what) {
    // Whatever did start is taken down before we report.
    running_ = true;
    stop();
    stop_report_.clear();
    return MpsError(what);
  };

  ControlRun started;
  {
    SubreaperOff off;  // the daemon's double fork must not land under rtrace
    started = run_control(control_, {"-d"}, envp_, "", root_ + "/start.out", timeouts_.start_s);
  }
  if (!started.launch_error.empty() || !started.exited || started.exit_code != 0)
    throw fail("`" + control_ + " -d` failed (" + started.describe() + ")");

  // Alive: the pid file names a live process...
  const std::string pid_file = pipe_dir_ + "/" + kPidFile;
  const double deadline = mono_now() + timeouts_.pid_file_s;
  while (daemon_pid_ <= 0 && mono_now() < deadline) {
    std::ifstream f(pid_file);
    long v = 0;
    if (f >> v && v > 0 && process_alive(static_cast<pid_t>(v), -1)) daemon_pid_ = static_cast<pid_t>(v);
    else sleep_ms(20);
  }
  if (daemon_pid_ <= 0)
    throw fail("`" + control_ + " -d` returned, but no live daemon wrote " + pid_file + " within " +
               std::to_string(static_cast<int>(timeouts_.pid_file_s)) + " s");
  daemon_pidfd_ = pidfd_open_or_none(daemon_pid_);
  running_ = true;
  start_keeper();
  // ...and reachable: a control client gets an answer from it.
  const auto q = run_control(control_, {}, envp_, "get_server_list\n", root_ + "/query.out", timeouts_.query_s);
  if (!q.launch_error.empty() || !q.exited || q.exit_code != 0)
    throw fail("the MPS control daemon (pid " + std::to_string(daemon_pid_) + ") does not answer on " + pipe_dir_ +
               " (`get_server_list`: " + q.describe() + ")");
  if (!alive()) throw fail("the MPS control daemon (pid " + std::to_string(daemon_pid_) + ") exited right after start");
}

void MpsDaemon::start_keeper() {
  // Everything the keeper touches is built now (the forked copy of these
  // locals is its memory): it runs raw system calls only.
  std::vector<std::string> argv_storage{"nvidia-cuda-mps-control"};
  std::vector<std::string> env_storage = envp_;
  std::vector<char*> argv, envp;
  for (auto& s : argv_storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  KeeperPlan plan{control_.c_str(), argv.data(), envp.data(), daemon_pid_, daemon_pidfd_, root_.c_str(),
                  static_cast<int>(timeouts_.stop_s * 1000), static_cast<int>(timeouts_.kill_grace_s * 1000)};
  int watch[2], report[2];
  if (pipe2(watch, O_CLOEXEC) != 0) return;  // no keeper: a SIGKILLed rtrace would leave the daemon
  if (pipe2(report, O_CLOEXEC) != 0) {
    close(watch[0]);
    close(watch[1]);
    return;
  }
  // The keeper must outlive rtrace and survive its point cleanup, so it is
  // not our descendant either: double fork with the subreaper flag cleared.
  SubreaperOff off;
  const pid_t mid = fork();
  if (mid == 0) {
    close(watch[1]);
    close(report[0]);
    const pid_t k = fork();
    if (k == 0) {
      close(report[1]);
      keeper_main(watch[0], plan);
    }
    (void)!write(report[1], &k, sizeof k);
    _exit(0);
  }
  close(watch[0]);
  close(report[1]);
  if (mid > 0) {
    while (waitpid(mid, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_t k = -1;
    if (read(report[0], &k, sizeof k) == static_cast<ssize_t>(sizeof k) && k > 0) {
      keeper_pid_ = k;
      keeper_fd_ = watch[1];
      watch[1] = -1;
    }
  }
  close(report[0]);
  if (watch[1] >= 0) close(watch[1]);
}

void MpsDaemon::release_keeper() noexcept {
  if (keeper_fd_ < 0) return;
  (void)!write(keeper_fd_, &kDoneByte, 1);
  close(keeper_fd_);
  keeper_fd_ = -1;
}

bool MpsDaemon::alive() const noexcept { return process_alive(daemon_pid_, daemon_pidfd_); }

void MpsDaemon::stop() noexcept {
  if (!running_) return;
  running_ = false;
  try {
    if (daemon_pid_ > 0 && alive()) {
      const auto q = run_control(control_, {}, envp_, "quit\n", root_ + "/quit.out", timeouts_.stop_s);
      const double deadline = mono_now() + timeouts_.stop_s;
      while (alive() && mono_now() < deadline) sleep_ms(20);
      const bool quit_ok = q.launch_error.empty() && q.exited && q.exit_code == 0;
      if (!alive()) {
        stop_report_ = quit_ok ? "quit" : "quit (" + q.describe() + ")";
      } else {
        send_signal(daemon_pid_, daemon_pidfd_, SIGTERM);
        const double grace = mono_now() + timeouts_.kill_grace_s;
        while (alive() && mono_now() < grace) sleep_ms(20);
        if (alive()) send_signal(daemon_pid_, daemon_pidfd_, SIGKILL);
        stop_report_ = "quit did not stop the daemon (" + q.describe() + "); " + (alive() ? "SIGKILL" : "SIGTERM");
      }
    } else if (daemon_pid_ > 0) {
      stop_report_ = "the daemon had already exited";
    }
  } catch (...) {
  }
  release_keeper();
  if (daemon_pidfd_ >= 0) close(daemon_pidfd_);
  daemon_pidfd_ = -1;
  std::error_code ec;
  if (!root_.empty()) fs::remove_all(root_, ec);
}

MpsServerStop MpsDaemon::stop_servers() const noexcept {
  MpsServerStop out;
  try {
    if (!running_) {
      out.ok = true;
      out.report = "no MPS daemon of rtrace's running";
      return out;
    }
    auto servers = [&](std::string& why) {
      std::vector<long> pids;
      const auto q = run_control(control_, {}, envp_, "get_server_list\n", root_ + "/servers.out", timeouts_.query_s);
      if (!q.launch_error.empty() || !q.exited || q.exit_code != 0) {
        why = "`get_server_list`: " + q.describe();
        return pids;
      }
      std::istringstream in(q.output);
      for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
        if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) pids.push_back(std::stol(line));
      }
      return pids;
    };
    std::string why;
    const std::vector<long> running = servers(why);
    if (!why.empty()) {
      out.report = "rtrace's MPS daemon did not list its servers (" + why + ")";
      return out;
    }
    if (running.empty()) {
      out.ok = true;
      out.report = "no MPS server of rtrace's daemon was running for the run outside the partition";
      return out;
    }
    std::string names;
    for (long pid : running) {
      names += (names.empty() ? "" : ", ") + std::to_string(pid);
      run_control(control_, {}, envp_, "shutdown_server " + std::to_string(pid) + "\n", root_ + "/shutdown.out",
                  timeouts_.query_s);
    }
    const double deadline = mono_now() + timeouts_.stop_s;
    std::vector<long> left = running;
    while (!left.empty() && mono_now() < deadline) {
      sleep_ms(50);
      left = servers(why);
      if (!why.empty()) break;
    }
    out.ok = left.empty() && why.empty();
    out.report = out.ok ? "rtrace's MPS server (pid " + names +
                              ") stopped for the run outside the partition (a non-MPS process gets no context beside "
                              "it in EXCLUSIVE_PROCESS compute mode); the daemon starts one again for the next point"
                        : "rtrace's MPS server (pid " + names + ") did not stop within " +
                              std::to_string(static_cast<int>(timeouts_.stop_s)) + " s" +
                              (why.empty() ? std::string() : " (" + why + ")");
  } catch (...) {
    out.ok = false;
    out.report = "stopping rtrace's MPS server failed";
  }
  return out;
}

void MpsDaemon::apply(Environment& env, const SmPartition& part) const {
  apply_percentage(env, part.thread_percentage);
}

void MpsDaemon::apply_percentage(Environment& env, int thread_percentage) const {
  env.set("CUDA_MPS_PIPE_DIRECTORY", pipe_dir_);
  env.set("CUDA_MPS_LOG_DIRECTORY", log_dir_);
  env.set("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(thread_percentage));
  env.set("CUDA_VISIBLE_DEVICES", "0");  // the daemon's one device (start())
}

std::size_t max_mps_pipe_dir_length() noexcept {
  // sun_path holds 108 bytes with the NUL; 20 are kept for '/' and the names
  // of the daemon's sockets in its pipe directory ("control" and others).
  constexpr std::size_t kSocketName = 20;
  return sizeof(sockaddr_un::sun_path) - 1 - kSocketName;
}

std::vector<MpsProcess> find_mps_processes(const std::string& proc_root) {
  std::vector<MpsProcess> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc_root, ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    if (!std::getline(comm, name) || name.rfind("nvidia-cuda-mps", 0) != 0) continue;
    std::ifstream cmdline(entry.path() / "cmdline", std::ios::binary);
    std::string argv0;
    std::getline(cmdline, argv0, '\0');
    if (const auto slash = argv0.rfind('/'); slash != std::string::npos) argv0 = argv0.substr(slash + 1);
    MpsProcess p;
    p.pid = std::stol(pid);
    p.name = argv0.rfind("nvidia-cuda-mps", 0) == 0 ? argv0 : name;
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const MpsProcess& a, const MpsProcess& b) { return a.pid < b.pid; });
  return out;
}

std::string first_visible_device(const std::string& cuda_visible_devices) {
  std::string first = cuda_visible_devices.substr(0, cuda_visible_devices.find(','));
  while (!first.empty() && first.front() == ' ') first.erase(first.begin());
  while (!first.empty() && first.back() == ' ') first.pop_back();
  return first.empty() ? "0" : first;
}

}  // namespace rtrace::launcher
