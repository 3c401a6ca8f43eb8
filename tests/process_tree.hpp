// A test's process tree, and what it was doing when it hung: shared by the
// tests that run apps (traced_app.hpp) and by the ctest hang guard
// (hang_guard.cpp), which wraps every tracer, launcher and counts test.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace rtrace::test {

// Every process below `root` (its children, theirs, ...), from /proc.
inline std::vector<pid_t> descendants_of(pid_t root) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid) children[static_cast<pid_t>(ppid)].push_back(static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out, todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    for (pid_t c : children[p]) {
      out.push_back(c);
      todo.push_back(c);
    }
  }
  return out;
}

// A hung test app: its process tree and, where gdb is installed, every
// thread's stack, on stderr (ctest --output-on-failure shows them).
inline void dump_hung_tree(pid_t root) {
  std::vector<pid_t> tree{root};
  for (pid_t p : descendants_of(root)) tree.push_back(p);
  std::string pids;
  for (pid_t p : tree) pids += (pids.empty() ? "" : ",") + std::to_string(p);
  std::fflush(nullptr);
  (void)std::system(("ps -o pid,ppid,stat,etimes,args -p " + pids + " >&2").c_str());
  // 20 s a process and at most 12 of them: the dump must end well before
  // ctest's own timeout of the test.
  if (tree.size() > 12) tree.resize(12);
  for (pid_t p : tree)
    (void)std::system(("command -v gdb >/dev/null && timeout 20 gdb -p " + std::to_string(p) +
                       " -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(#|Thread)' | sed 's/^/[" +
                       std::to_string(p) + "] /' >&2")
                          .c_str());
}

// Waits for the child `pid` and returns its wait status (-1 when it cannot be
// waited for). Still running after `timeout_s`: says so on stderr as `who`,
// shows its tree (dump_hung_tree) and kills it with all its descendants
// (SIGKILL: the status says so), and sets *hung.
inline int wait_or_end_hung(pid_t pid, double timeout_s, const std::string& who, bool* hung = nullptr) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  bool killed = false;
  for (pid_t got; (got = waitpid(pid, &status, WNOHANG)) != pid;) {
    if (got < 0 && errno != EINTR) return -1;
    if (!killed && std::chrono::steady_clock::now() > end) {
      std::fprintf(stderr, "%s: still running after %g s; its processes and threads:\n", who.c_str(), timeout_s);
      dump_hung_tree(pid);
      for (pid_t p : descendants_of(pid)) kill(p, SIGKILL);
      kill(pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (hung) *hung = killed;
  return status;
}

}  // namespace rtrace::test
