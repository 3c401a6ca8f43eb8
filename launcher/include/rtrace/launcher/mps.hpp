// A private MPS control daemon for one sweep (docs/launcher.md, "GPU SM
// partitions"). Its lifecycle is the point of this class:
//  * started OUTSIDE rtrace's process tree: rtrace is a child subreaper and
//    stops every descendant after each point, so `nvidia-cuda-mps-control -d`
//    runs with the subreaper flag cleared and its daemon (double fork, setsid)
//    ends up under init, beyond the reach of the point cleanup;
//  * checked after start: the pid file it writes names a live process and a
//    `get_server_list` over the control client answers (a client that cannot
//    reach a daemon runs WITHOUT MPS, i.e. on all SMs, so "exit 0" proves nothing);
//  * stopped exactly once at the end with `echo quit | nvidia-cuda-mps-control`
//    (the documented way: execve, "quit" on a stdin pipe, same
//    CUDA_MPS_PIPE_DIRECTORY), by rtrace itself, or, when rtrace is SIGKILLed, by
//    a small keeper process (`rtrace-mps-keep`) that also lives outside the tree
//    and does the same when its pipe from rtrace ends without a "done" byte;
//  * private 0700 pipe and log directories per sweep, and a deadline on every
//    wait: a stale or hung daemon costs seconds, never blocks.
#pragma once

#include "rtrace/launcher/environment.hpp"

#include <sys/types.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::launcher {

struct SmPartition;

class MpsError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MpsTimeouts {
  double start_s = 30;   // `-d` to return
  double pid_file_s = 5; // then its pid file to name a live daemon
  double query_s = 10;   // one control-client command
  double stop_s = 10;    // `quit` to take the daemon down
  double kill_grace_s = 2;
};

// The device an `sms` sweep partitions: the first entry of the user's
// CUDA_VISIBLE_DEVICES (an index, a GPU-UUID or a MIG id), "0" when unset.
std::string first_visible_device(const std::string& cuda_visible_devices);

// MPS processes of this machine (control daemons and servers), from
// `proc_root` (/proc; tests pass a directory of their own): comm is cut at 15
// characters ("nvidia-cuda-mps"), argv[0] tells which one.
struct MpsProcess {
  long pid = 0;
  std::string name;  // "nvidia-cuda-mps-control" or "nvidia-cuda-mps-server"
  bool server() const noexcept { return name.find("server") != std::string::npos; }
};
std::vector<MpsProcess> find_mps_processes(const std::string& proc_root = "/proc");

// The longest path a sweep's MPS pipe directory may have: the daemon's
// sockets in it must fit a sockaddr_un (108 bytes with the NUL).
std::size_t max_mps_pipe_dir_length() noexcept;

// What stopping the MPS server(s) of rtrace's daemon gave.
struct MpsServerStop {
  bool ok = false;
  std::string report;  // one line for the point's log
};

class MpsDaemon {
 public:
  MpsDaemon() = default;
  explicit MpsDaemon(MpsTimeouts t) : timeouts_(t) {}
  MpsDaemon(const MpsDaemon&) = delete;
  MpsDaemon& operator=(const MpsDaemon&) = delete;
  ~MpsDaemon();

  // Starts and verifies the daemon; `base` is the environment it inherits.
  // Throws MpsError with one line of context when it cannot.
  void start(const Environment& base);
  // `echo quit | nvidia-cuda-mps-control`, then waits (bounded) for the daemon
  // to exit; SIGTERM/SIGKILL only when quit did not work. Idempotent.
  void stop() noexcept;
  // Stops the daemon's MPS server(s) (`get_server_list`, `shutdown_server
  // PID` each, until the list is empty; bounded): the daemon stays, and starts
  // a server again for its next client. Needed before a process that is not
  // an MPS client runs: in EXCLUSIVE_PROCESS compute mode (the mode MPS
  // recommends) such a process gets no context while a server lives.
  MpsServerStop stop_servers() const noexcept;

  bool running() const noexcept { return running_; }
  bool alive() const noexcept;  // the daemon process exists now
  pid_t pid() const noexcept { return daemon_pid_; }
  pid_t keeper_pid() const noexcept { return keeper_pid_; }
  const std::string& pipe_dir() const noexcept { return pipe_dir_; }
  const std::string& log_dir() const noexcept { return log_dir_; }
  // How stop() went: "quit", "quit failed (...); SIGTERM", ... ("" before stop()).
  const std::string& stop_report() const noexcept { return stop_report_; }

  // The MPS client environment of one partition: pipe/log directories,
  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_VISIBLE_DEVICES=0 (relative to
  // the daemon, which serves one device: daemon_device()).
  const std::string& daemon_device() const noexcept { return daemon_device_; }
  void apply(Environment& env, const SmPartition& part) const;
  void apply_percentage(Environment& env, int thread_percentage) const;

 private:
  void start_keeper();
  void release_keeper() noexcept;

  MpsTimeouts timeouts_;
  bool running_ = false;
  std::string control_, root_, pipe_dir_, log_dir_;
  std::string daemon_device_;  // the daemon's CUDA_VISIBLE_DEVICES
  std::vector<std::string> envp_;  // the daemon's and every control client's environment
  pid_t daemon_pid_ = -1;
  int daemon_pidfd_ = -1;
  pid_t keeper_pid_ = -1;
  int keeper_fd_ = -1;
  std::string stop_report_;
};

}  // namespace rtrace::launcher
