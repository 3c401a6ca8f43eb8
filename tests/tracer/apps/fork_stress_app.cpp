// Test app for the tracer's fork safety (issue 45): OpenMP threads that keep
// working (and being sampled) while one of them forks, or while all of them
// run helper commands, the way real codes call system() and popen().
//   fork_stress_app fork ROUNDS     thread 0 of a busy parallel region forks
//                                   ROUNDS children; each child forks a
//                                   grandchild; both work a little and exit()
//   fork_stress_app system ROUNDS   every thread runs ROUNDS system("<this app> helper")
//   fork_stress_app popen ROUNDS    every thread reads ROUNDS popen("<this app> helper")
//   fork_stress_app helper          a little work, prints "ok", exits 0 (traced too)
// Exits 0 when every child, command and pipe ended as expected.
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

__attribute__((noinline)) double busy_work(long iterations) {
  volatile double acc = 1;
  for (long i = 0; i < iterations; ++i) acc = acc * 0.999999 + static_cast<double>(i & 7) * 1e-9;
  return acc;
}

// A forked process's life: a little work (so it has samples to symbolise),
// optionally a child of its own, then exit() through every exit handler.
[[noreturn]] void child_life(int depth) {
  busy_work(200000);
  if (depth < 2) {
    const pid_t pid = fork();
    if (pid == 0) child_life(depth + 1);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) std::exit(3);
  }
  std::exit(0);
}

int fork_rounds(int rounds) {
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
#pragma omp parallel
  {
    if (omp_get_thread_num() == 0) {
      for (int r = 0; r < rounds; ++r) {
        busy_work(20000);
        const pid_t pid = fork();
        if (pid == 0) child_life(1);
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          std::fprintf(stderr, "round %d: child failed (status 0x%x)\n", r, status);
          ++failures;
        }
      }
      done.store(true);
    } else {
      while (!done.load()) busy_work(5000);
    }
  }
  return failures.load();
}

int command_rounds(bool use_popen, int rounds) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  const std::string command = std::string("'") + self + "' helper";
  std::atomic<int> failures{0};
#pragma omp parallel
  for (int r = 0; r < rounds; ++r) {
    busy_work(20000);
    if (use_popen) {
      FILE* p = popen(command.c_str(), "r");
      char line[16] = {};
      const bool read_ok = p && std::fgets(line, sizeof line, p) && std::strcmp(line, "ok\n") == 0;
      const int status = p ? pclose(p) : -1;
      if (!read_ok || status != 0) ++failures;
    } else if (std::system(command.c_str()) != 0) {
      ++failures;
    }
  }
  return failures.load();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "helper") {
    busy_work(100000);
    std::printf("ok\n");
    return 0;
  }
  if (argc != 3) {
    std::fprintf(stderr, "usage: fork_stress_app fork|system|popen ROUNDS | helper\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int rounds = std::atoi(argv[2]);
  int failures = 0;
  if (mode == "fork") failures = fork_rounds(rounds);
  else if (mode == "system") failures = command_rounds(false, rounds);
  else if (mode == "popen") failures = command_rounds(true, rounds);
  else return 2;
  std::printf("%s: %d rounds, %d failed\n", mode.c_str(), rounds, failures);
  return failures == 0 ? 0 : 1;
}
