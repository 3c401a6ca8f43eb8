// Child process trees: spawn, capture, timeout, stop, reap. See process.hpp.
#include "rtrace/launcher/process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <system_error>

namespace rtrace::launcher {

// ------------------------------------------------------------------ signals
namespace {

int g_wake_pipe[2] = {-1, -1};
volatile sig_atomic_t g_interrupt = 0;

void on_signal(int sig) {
  const int saved = errno;
  if (sig != SIGCHLD && g_interrupt == 0) g_interrupt = sig;
  const char byte = static_cast<char>(sig);
  if (g_wake_pipe[1] >= 0) (void)!write(g_wake_pipe[1], &byte, 1);
  errno = saved;
}

[[noreturn]] void throw_errno(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
double mono_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

void SignalWatch::install() {
  if (g_wake_pipe[0] >= 0) return;
  if (pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw_errno("pipe2");
  // Orphans of the app tree are reparented to us, so we can find and reap them.
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a closed echo target must not kill rtrace
}

int SignalWatch::wake_fd() noexcept { return g_wake_pipe[0]; }

void SignalWatch::drain() noexcept {
  char buf[64];
  while (g_wake_pipe[0] >= 0 && read(g_wake_pipe[0], buf, sizeof buf) > 0) {
  }
}

int SignalWatch::interrupt_signal() noexcept { return g_interrupt; }

// ------------------------------------------------------------------ output tail
void OutputTail::append(const char* data, std::size_t n) {
  total_ += static_cast<std::int64_t>(n);
  if (capacity_ == 0) return;
  if (n >= capacity_) {
    buffer_.assign(data + (n - capacity_), capacity_);
    return;
  }
  buffer_.append(data, n);
  // Trim lazily (at twice the capacity) so appends stay amortized O(n).
  if (buffer_.size() > 2 * capacity_) buffer_.erase(0, buffer_.size() - capacity_);
}

std::string OutputTail::str() const {
  return buffer_.size() > capacity_ ? buffer_.substr(buffer_.size() - capacity_) : buffer_;
}

// ------------------------------------------------------------------ /proc
namespace {

struct ProcEntry {
  pid_t pid, ppid, pgrp;
  char state;
};

std::vector<ProcEntry> scan_proc() {
  std::vector<ProcEntry> out;
  DIR* dir = opendir("/proc");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300];
    std::snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) continue;
    buf[n] = 0;
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parens, so parse after the last ')'.
    char* rp = std::strrchr(buf, ')');
    if (!rp) continue;
    ProcEntry p{};
    p.pid = static_cast<pid_t>(std::atol(buf));
    int ppid = 0, pgrp = 0;
    char state = 0;
    if (std::sscanf(rp + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) continue;
    p.ppid = ppid;
    p.pgrp = pgrp;
    p.state = state;
    out.push_back(p);
  }
  closedir(dir);
  return out;
}

bool is_live(const ProcEntry& p) { return p.state != 'Z' && p.state != 'X'; }

}  // namespace

std::vector<pid_t> descendants_of(pid_t root) {
  const auto procs = scan_proc();
  std::multimap<pid_t, const ProcEntry*> children;
  for (const auto& p : procs) children.emplace(p.ppid, &p);
  std::vector<pid_t> out;
  std::vector<pid_t> frontier{root};
  std::set<pid_t> seen{root};
  while (!frontier.empty()) {
    std::vector<pid_t> next;
    for (pid_t parent : frontier) {
      auto [b, e] = children.equal_range(parent);
      for (auto it = b; it != e; ++it) {
        const ProcEntry* c = it->second;
        if (!seen.insert(c->pid).second) continue;
        if (is_live(*c)) out.push_back(c->pid);
        next.push_back(c->pid);
      }
    }
    frontier.swap(next);
  }
  return out;
}

std::vector<pid_t> members_of_group(pid_t pgid) {
  std::vector<pid_t> out;
  for (const auto& p : scan_proc())
    if (p.pgrp == pgid && is_live(p)) out.push_back(p.pid);
  return out;
}

// ------------------------------------------------------------------ executable lookup
std::optional<std::string> resolve_executable(const std::string& name, const std::string& path_env, std::string& why) {
  auto check = [&](const std::string& p, bool report) -> bool {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) {
      if (report) why = "`" + p + "`: " + std::strerror(errno);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      if (report) why = "`" + p + "` is a directory";
      return false;
    }
    if (access(p.c_str(), X_OK) != 0) {
      if (report) why = "`" + p + "` is not executable (" + std::strerror(errno) + ")";
      return false;
    }
    return true;
  };
  if (name.empty()) {
    why = "empty program name";
    return std::nullopt;
  }
  if (name.find('/') != std::string::npos) {
    if (check(name, true)) return name;
    return std::nullopt;
  }
  const std::string path = path_env.empty() ? "/usr/local/bin:/usr/bin:/bin" : path_env;
  std::size_t begin = 0;
  std::string first_denied;
  while (begin <= path.size()) {
    auto colon = path.find(':', begin);
    std::string dir = path.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
      if (first_denied.empty()) first_denied = candidate;
    }
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  why = first_denied.empty() ? "`" + name + "` was not found in PATH"
                             : "`" + first_denied + "` is not executable (Permission denied)";
  return std::nullopt;
}

// ------------------------------------------------------------------ keeper
// PR_SET_PDEATHSIG takes the app's main process down when rtrace is SIGKILLed,
// but not what the app started (its children, mpirun's ranks): they would run
// on, orphaned, holding the allocation. A keeper process outlives rtrace just
// long enough to stop them. It blocks reading a pipe whose only write end
// rtrace holds: EOF without the "done" byte means rtrace died, so it kills the
// app's process group and every process whose environment carries the tree's
// token (ranks that mpirun put in groups of their own), then exits.
// The keeper is forked from a possibly multithreaded process, so it only
// makes raw system calls: no allocation, no stdio, no locks.
namespace {

constexpr char kDoneByte = 'q';
constexpr char kTreeTokenVar[] = "RTRACE_TREE_TOKEN";

struct LinuxDirent64 {
  std::uint64_t d_ino;
  std::int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[1];
};

// True when /proc/<pid>/environ contains `needle` (which ends with its NUL).
bool environ_contains(const char* pid, const char* needle, std::size_t needle_len) {
  char path[64] = "/proc/";
  std::size_t n = 6;
  for (const char* c = pid; *c && n < sizeof path - 9; ++c) path[n++] = *c;
  std::memcpy(path + n, "/environ", 9);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // Scans in chunks; the last needle_len - 1 bytes carry over so a match
  // straddling two reads is still found.
  char buf[8192];
  std::size_t have = 0;
  bool found = false;
  while (!found) {
    ssize_t got = read(fd, buf + have, sizeof buf - have);
    if (got <= 0) break;
    have += static_cast<std::size_t>(got);
    found = memmem(buf, have, needle, needle_len) != nullptr;
    if (have >= needle_len) {
      const std::size_t keep = needle_len - 1;
      std::memmove(buf, buf + have - keep, keep);
      have = keep;
    }
  }
  close(fd);
  return found;
}

// Kills the group and every process carrying the token; repeats while it
// finds some, since a dying tree may still fork.
void keeper_kill_tree(pid_t pgid, const char* needle, std::size_t needle_len) {
  const pid_t self = getpid();
  for (int pass = 0; pass < 5; ++pass) {
    int hits = kill(-pgid, SIGKILL) == 0 ? 1 : 0;
    const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return;
    alignas(8) char buf[16384];
    for (;;) {
      const long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
      if (n <= 0) break;
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
        off += d->d_reclen;
        if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
        long pid = 0;
        for (const char* c = d->d_name; *c >= '0' && *c <= '9'; ++c) pid = pid * 10 + (*c - '0');
        if (pid == self) continue;
        if (environ_contains(d->d_name, needle, needle_len) && kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++hits;
      }
    }
    close(dir);
    if (hits == 0) return;
    struct timespec pause {0, 20 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

// In a child after fork (async-signal-safe): `sigs` go to `handler` (SIG_DFL,
// SIG_IGN) instead of rtrace's handlers, and no signal stays blocked.
void set_signals_after_fork(void (*handler)(int), std::initializer_list<int> sigs) noexcept {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  for (int sig : sigs) sigaction(sig, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] void keeper_main(int watch_fd, pid_t pgid, const char* needle, std::size_t needle_len) {
  (void)prctl(PR_SET_NAME, "rtrace-keeper", 0, 0, 0);
  // Holds nothing of rtrace's: no pipe of the app, no output file, no terminal.
  for (int fd = 0; fd < watch_fd; ++fd) close(fd);
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(watch_fd) + 1, ~0U, 0) != 0)
#endif
    for (int fd = watch_fd + 1; fd < 65536; ++fd) close(fd);
  // A Ctrl-C on the terminal reaches rtrace's whole group: rtrace handles it
  // and then says "done"; the keeper must not die first.
  set_signals_after_fork(SIG_IGN, {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE});
  char byte = 0;
  ssize_t got;
  do got = read(watch_fd, &byte, 1);
  while (got < 0 && errno == EINTR);
  if (got == 1 && byte == kDoneByte) _exit(0);
  keeper_kill_tree(pgid, needle, needle_len);
  _exit(0);
}

// Owns the keeper from rtrace's side.
class Keeper {
 public:
  // `needle` is "RTRACE_TREE_TOKEN=<token>" plus its NUL, already in the app's environment.
  Keeper(pid_t pgid, const std::string& needle) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;  // no keeper: PDEATHSIG still covers the main process
    const pid_t pid = fork();
    if (pid == 0) keeper_main(fds[0], pgid, needle.c_str(), needle.size() + 1);
    close(fds[0]);
    if (pid < 0) {
      close(fds[1]);
      return;
    }
    pid_ = pid;
    write_fd_ = fds[1];
  }
  ~Keeper() { release(); }
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;

  pid_t pid() const noexcept { return pid_; }
  // Reaped by someone else (the tree reaper's wait4(-1)).
  void mark_reaped() noexcept { reaped_ = true; }
  // rtrace finished the point itself: the keeper leaves without killing.
  void release() noexcept {
    if (write_fd_ >= 0) {
      (void)!write(write_fd_, &kDoneByte, 1);
      close(write_fd_);
      write_fd_ = -1;
    }
    if (pid_ > 0 && !reaped_) {
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      reaped_ = true;
    }
  }

 private:
  pid_t pid_ = -1;
  int write_fd_ = -1;
  bool reaped_ = false;
};

std::string new_tree_token() {
  static unsigned counter = 0;
  const auto ns = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::to_string(getpid()) + "." + std::to_string(++counter) + "." + std::to_string(ns);
}

}  // namespace

// ------------------------------------------------------------------ running
namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    close_r();
    close_w();
  }
  void close_r() {
    if (r >= 0) close(r);
    r = -1;
  }
  void close_w() {
    if (w >= 0) close(w);
    w = -1;
  }
};

void write_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, data, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    data += k;
    n -= static_cast<std::size_t>(k);
  }
}

struct Stream {
  int fd;
  OutputTail tail;
  int echo_fd;
  bool open() const { return fd >= 0; }
  // Reads what is available now; closes on EOF or error.
  void pump() {
    char buf[65536];
    for (int i = 0; i < 16 && fd >= 0; ++i) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n > 0) {
        tail.append(buf, static_cast<std::size_t>(n));
        if (echo_fd >= 0) write_all(echo_fd, buf, static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      close(fd);  // EOF (the app closed it, maybe early) or error
      fd = -1;
    }
  }
};

class TreeReaper {
 public:
  // `keeper`: our keeper process, a child but not part of the app's tree.
  TreeReaper(pid_t pgid, Keeper* keeper) : pgid_(pgid), keeper_(keeper) {}

  std::vector<pid_t> live() const {
    // Fast path: every member of the tree is our descendant (we are a subreaper),
    // so with no child left at all, and no process in the group, nothing is alive.
    siginfo_t info{};
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD && kill(-pgid_, 0) < 0 &&
        errno == ESRCH)
      return {};
    std::set<pid_t> all;
    for (pid_t p : members_of_group(pgid_)) all.insert(p);
    for (pid_t p : descendants_of(getpid())) all.insert(p);
    if (keeper_) all.erase(keeper_->pid());
    return {all.begin(), all.end()};
  }
  void signal_all(int sig) const {
    kill(-pgid_, sig);
    for (pid_t p : live()) kill(p, sig);
  }
  // Reaps every child that has exited (orphans reparented to us included).
  void reap(ProcessResult& r, pid_t main_pid, bool& main_reaped, int& main_status) {
    while (true) {
      int status = 0;
      struct rusage ru {};
      pid_t p = wait4(-1, &status, WNOHANG, &ru);
      if (p <= 0) break;
      if (keeper_ && p == keeper_->pid()) {
        keeper_->mark_reaped();
        continue;
      }
      add_usage(r, ru);
      if (p == main_pid) {
        main_reaped = true;
        main_status = status;
      } else {
        ++r.orphans_reaped;
      }
    }
  }
  static void add_usage(ProcessResult& r, const struct rusage& ru) {
    r.user_s += static_cast<double>(ru.ru_utime.tv_sec) + ru.ru_utime.tv_usec * 1e-6;
    r.system_s += static_cast<double>(ru.ru_stime.tv_sec) + ru.ru_stime.tv_usec * 1e-6;
    r.max_rss_kib = std::max<std::int64_t>(r.max_rss_kib, ru.ru_maxrss);
    r.voluntary_ctxsw += ru.ru_nvcsw;
    r.involuntary_ctxsw += ru.ru_nivcsw;
  }

 private:
  pid_t pgid_;
  Keeper* keeper_;
};

void poll_streams(Stream& out, Stream& err, int timeout_ms) {
  pollfd fds[3];
  nfds_t n = 0;
  int out_i = -1, err_i = -1;
  if (out.open()) { fds[n] = {out.fd, POLLIN, 0}; out_i = static_cast<int>(n++); }
  if (err.open()) { fds[n] = {err.fd, POLLIN, 0}; err_i = static_cast<int>(n++); }
  fds[n++] = {SignalWatch::wake_fd(), POLLIN, 0};
  int rc = poll(fds, n, timeout_ms);
  if (rc <= 0) return;
  if (out_i >= 0 && fds[out_i].revents) out.pump();
  if (err_i >= 0 && fds[err_i].revents) err.pump();
  if (fds[n - 1].revents) SignalWatch::drain();
}

int ms_until(double t) {
  double d = (t - mono_now()) * 1000.0;
  if (d <= 0) return 0;
  return d > 1000 ? 1000 : static_cast<int>(d) + 1;
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  SignalWatch::install();
  ProcessResult r;
  // Everything the child needs is built before fork: it only calls async-signal-safe functions.
  std::vector<char*> argv, envp;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Marks every process of this app tree (see Keeper), replacing the mark of
  // an enclosing rtrace.
  const std::string token_prefix = std::string(kTreeTokenVar) + "=";
  const std::string token = token_prefix + new_tree_token();
  for (const auto& e : spec.env)
    if (e.compare(0, token_prefix.size(), token_prefix) != 0) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(const_cast<char*>(token.c_str()));
  envp.push_back(nullptr);

  Pipe out, err, exec_status;
  int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  MachineLoadProbe load_probe;
  if (spec.measure_machine_load) load_probe.start();
  r.start_time = unix_now();
  const double t0 = mono_now();
  const pid_t rtrace_pid = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    if (devnull >= 0) close(devnull);
    throw_errno("fork");
  }
  if (pid == 0) {
    setpgid(0, 0);
    // If rtrace itself is SIGKILLed, take the app (or mpirun, whose daemons
    // then stop the ranks) down with it instead of leaving it orphaned.
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != rtrace_pid) _exit(127);  // rtrace died before the prctl
    set_signals_after_fork(SIG_DFL, {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE});
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out.w, 1);
    dup2(err.w, 2);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);  // no stray fds into the app
#endif
    execve(spec.path.c_str(), argv.data(), envp.data());
    int e = errno;
    (void)!write(exec_status.w, &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with an early kill(-pid)
  if (devnull >= 0) close(devnull);
  r.pid = pid;
  out.close_w();
  err.close_w();
  exec_status.close_w();
  int exec_errno = 0;
  ssize_t got;
  do got = read(exec_status.r, &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  const bool exec_failed = got == static_cast<ssize_t>(sizeof exec_errno);

  Stream sout{out.r, OutputTail(spec.tail_bytes), spec.echo ? 1 : -1};
  Stream serr{err.r, OutputTail(spec.tail_bytes), spec.echo ? 2 : -1};
  out.r = err.r = -1;  // owned by the streams now
  fcntl(sout.fd, F_SETFL, O_NONBLOCK);
  fcntl(serr.fd, F_SETFL, O_NONBLOCK);

  Keeper keeper(pid, token);
  TreeReaper tree(pid, &keeper);
  bool main_reaped = false;
  int main_status = 0;
  enum class Stop { None, Timeout, Interrupt } stop = Stop::None;
  bool killed = false;
  const double deadline = spec.timeout_s > 0 ? t0 + spec.timeout_s : 0;
  double kill_at = 0;

  auto begin_stop = [&](Stop why) {
    stop = why;
    tree.signal_all(SIGTERM);
    kill_at = mono_now() + spec.grace_s;
  };

  while (!main_reaped) {
    if (stop == Stop::None) {
      if (SignalWatch::interrupt_signal() != 0) begin_stop(Stop::Interrupt);
      else if (deadline > 0 && mono_now() >= deadline) begin_stop(Stop::Timeout);
    } else if (!killed && mono_now() >= kill_at) {
      tree.signal_all(SIGKILL);
      killed = true;
    }
    int wait_ms = 1000;
    if (stop == Stop::None && deadline > 0) wait_ms = ms_until(deadline);
    if (stop != Stop::None && !killed) wait_ms = std::min(wait_ms, ms_until(kill_at));
    if (stop != Stop::None && killed) wait_ms = 20;
    tree.reap(r, pid, main_reaped, main_status);
    if (main_reaped) break;
    poll_streams(sout, serr, wait_ms);
    tree.reap(r, pid, main_reaped, main_status);
  }
  r.end_time = unix_now();
  r.wall_s = mono_now() - t0;

  // The child is gone; whatever of its tree is left (background jobs, ranks that
  // escaped the group) is stopped now: SIGTERM, a short grace, then SIGKILL.
  {
    bool termed = false, hard = killed;
    const double cleanup_deadline = mono_now() + std::min(spec.grace_s, 2.0);
    const double give_up = mono_now() + std::min(spec.grace_s, 2.0) + 5.0;
    while (true) {
      tree.reap(r, pid, main_reaped, main_status);
      const auto live = tree.live();
      if (live.empty()) break;
      if (mono_now() >= give_up) {
        r.leftover = static_cast<int>(live.size());
        break;
      }
      if (!termed && !hard) {
        tree.signal_all(SIGTERM);
        termed = true;
      } else if (!hard && mono_now() >= cleanup_deadline) {
        tree.signal_all(SIGKILL);
        hard = true;
      } else if (hard) {
        tree.signal_all(SIGKILL);
      }
      poll_streams(sout, serr, 20);
    }
  }
  // Every writer is gone: read the pipes to their end (bounded, in case a stranger holds one).
  const double drain_until = mono_now() + 2.0;
  while ((sout.open() || serr.open()) && mono_now() < drain_until) poll_streams(sout, serr, 50);
  if (sout.open()) close(sout.fd);
  if (serr.open()) close(serr.fd);
  keeper.release();
  // Every process of the tree has been reaped: its CPU time is complete.
  if (spec.measure_machine_load) r.machine_load = load_probe.finish(r.user_s + r.system_s);
  else r.machine_load.note = spec.machine_load_off_reason.empty() ? "not measured" : spec.machine_load_off_reason;

  r.stdout_tail = sout.tail.str();
  r.stderr_tail = serr.tail.str();
  r.stdout_bytes = sout.tail.total();
  r.stderr_bytes = serr.tail.total();

  if (WIFEXITED(main_status)) r.exit_code = WEXITSTATUS(main_status);
  if (WIFSIGNALED(main_status)) r.signal = WTERMSIG(main_status);
  if (exec_failed) {
    r.kind = ExitKind::LaunchError;
    r.exit_code = -1;
    r.launch_error = "cannot execute `" + spec.path + "`: " + std::strerror(exec_errno);
  } else if (stop == Stop::Interrupt) {
    r.kind = ExitKind::Interrupted;
  } else if (stop == Stop::Timeout) {
    r.kind = ExitKind::TimedOut;
  } else if (WIFSIGNALED(main_status)) {
    r.kind = ExitKind::Signalled;
  } else {
    r.kind = ExitKind::Exited;
  }
  return r;
}

}  // namespace rtrace::launcher
