// rtrace_hang_guard SECONDS COMMAND [ARGS...]
//
// Runs COMMAND (argv verbatim, no shell) and passes its exit status through.
// Still running after SECONDS: prints every process of its tree with every
// thread's stack (process_tree.hpp), kills the tree and exits 124. ctest's
// own TIMEOUT kills a hung test without a word of where it hung (issue 45: a
// tracer test waited 12 minutes for the CI's global limit); this guard, set
// as the test binaries' CROSSCOMPILING_EMULATOR, fires first and says.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "process_tree.hpp"

int main(int argc, char** argv) {
  char* end = nullptr;
  const double seconds = argc > 2 ? std::strtod(argv[1], &end) : 0;
  if (argc < 3 || !end || *end != '\0' || !(seconds > 0)) {
    std::fprintf(stderr, "usage: rtrace_hang_guard SECONDS COMMAND [ARGS...]\n");
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("rtrace_hang_guard: fork");
    return 2;
  }
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    std::perror("rtrace_hang_guard: exec");
    _exit(127);
  }
  bool hung = false;
  const std::string who = std::string("rtrace_hang_guard: `") + argv[2] + "`";
  const int status = rtrace::test::wait_or_end_hung(pid, seconds, who, &hung);
  if (status == -1) return 2;
  if (hung) return 124;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  // Died of a signal: the same death here, so ctest reports what happened.
  const int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  raise(sig);
  return 128 + sig;
}
