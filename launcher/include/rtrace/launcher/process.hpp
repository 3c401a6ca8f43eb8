// Running one child process tree: fork + execve (argv verbatim, never a shell),
// its own process group, bounded capture of stdout/stderr, a timeout applied
// to the whole tree, and no orphans left behind.
#pragma once

#include "rtrace/launcher/machine_load.hpp"

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rtrace::launcher {

// Process-wide signal plumbing for the launcher. install() makes this process a
// child subreaper (orphaned grandchildren are reparented here, so a tree can be
// found and reaped even when members leave its process group), ignores SIGPIPE,
// and turns SIGINT/SIGTERM/SIGHUP/SIGCHLD into bytes on a self-pipe.
class SignalWatch {
 public:
  static void install();
  static int wake_fd() noexcept;          // readable after any watched signal
  static void drain() noexcept;           // empties the self-pipe
  static int interrupt_signal() noexcept; // first SIGINT/SIGTERM/SIGHUP seen, else 0
};

// Keeps the last `capacity` bytes of a stream plus the total byte count.
class OutputTail {
 public:
  explicit OutputTail(std::size_t capacity) : capacity_(capacity) {}
  void append(const char* data, std::size_t n);
  std::string str() const;
  std::int64_t total() const noexcept { return total_; }

 private:
  std::size_t capacity_;
  std::string buffer_;
  std::int64_t total_ = 0;
};

struct ProcessSpec {
  std::string path;                // executable to execve (already resolved)
  std::vector<std::string> argv;   // verbatim; argv[0] as the user typed it
  std::vector<std::string> env;    // NAME=VALUE, the whole environment
  double timeout_s = 0;            // 0: none
  double grace_s = 5;              // SIGTERM -> SIGKILL
  std::size_t tail_bytes = 64 * 1024;
  bool echo = false;               // copy the child's output to our stdout/stderr as it comes
  // Measure the machine's load besides the tree (/proc/stat around the run).
  // Off where the app's work runs outside this process tree (srun's ranks).
  bool measure_machine_load = true;
  std::string machine_load_off_reason;  // recorded when off
};

enum class ExitKind { Exited, Signalled, TimedOut, Interrupted, LaunchError };

struct ProcessResult {
  ExitKind kind = ExitKind::LaunchError;
  int exit_code = -1;         // when Exited
  int signal = 0;             // when Signalled (or the signal that ended a timed-out/interrupted child)
  std::string launch_error;   // when LaunchError
  pid_t pid = -1;             // the child (= its process group id)
  double start_time = 0, end_time = 0, wall_s = 0;  // Unix seconds / seconds
  // Resources of the whole tree: the child (and what it reaped) plus the orphans we reaped.
  double user_s = 0, system_s = 0;
  std::int64_t max_rss_kib = 0, voluntary_ctxsw = 0, involuntary_ctxsw = 0;
  int orphans_reaped = 0;     // descendants that outlived the child and were stopped here
  int leftover = 0;           // processes of the tree still alive at return (should be 0)
  std::string stdout_tail, stderr_tail;
  std::int64_t stdout_bytes = 0, stderr_bytes = 0;
  MachineLoad machine_load;   // the node's load during the run besides the tree
};

// Runs the process tree to completion. Never throws for child failures (they
// are in the result); throws std::system_error if pipes/fork fail.
ProcessResult run_process(const ProcessSpec& spec);

// Resolves an executable like execvp would (PATH search when `name` has no '/').
// Returns the path, or nullopt with `why` filled in.
std::optional<std::string> resolve_executable(const std::string& name, const std::string& path_env, std::string& why);

// Pids of every live descendant of `root` (found through /proc), nearest first.
std::vector<pid_t> descendants_of(pid_t root);
// Pids of live processes whose process group is `pgid`.
std::vector<pid_t> members_of_group(pid_t pgid);

}  // namespace rtrace::launcher
