// A test's process tree, and what it was doing when it hung: shared by the
// tests that run apps (traced_app.hpp) and by the ctest hang guard
// (hang_guard.cpp), which wraps every tracer, launcher and counts test.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
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

}  // namespace rtrace::test
