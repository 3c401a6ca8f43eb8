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

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  for (;;) {
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (got < 0) return 2;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "rtrace_hang_guard: `%s` still running after %g s; its processes and threads:\n", argv[2],
                   seconds);
      rtrace::test::dump_hung_tree(pid);
      for (pid_t p : rtrace::test::descendants_of(pid)) kill(p, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  // Died of a signal: the same death here, so ctest reports what happened.
  const int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  raise(sig);
  return 128 + sig;
}
