// A misbehaving app for the launcher tests: each mode is one fault.
//   exit N | segv | hang PIDFILE | ignore-term PIDFILE | flood MIB | close-stdout |
//   sleep MS | env NAME... | args ARG... | fail CODE MESSAGE | annotated (a region
//   with FLOPs and bytes, through the preloaded tracer's rtrace_region_* when present) |
//   burn-tree CPU_S (a child and its parent each burn CPU_S seconds of CPU time; the parent reaps it)
#include <dlfcn.h>
#include <sys/wait.h>
#include <ctime>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

namespace {

void write_pids(const char* file, const std::string& pids) {
  std::string tmp = std::string(file) + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) std::exit(3);
  std::fputs(pids.c_str(), f);
  std::fclose(f);
  std::rename(tmp.c_str(), file);
}

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void burn_cpu(double seconds) {
  volatile double x = 1;
  const double start = process_cpu_s();
  while (process_cpu_s() - start < seconds)
    for (int i = 0; i < 100000; ++i) x = x * 1.0000001 + 1e-9;
}

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const std::string mode = argv[1];
  if (mode == "exit" && argc > 2) return std::atoi(argv[2]);
  if (mode == "segv") {
    std::printf("about to crash\n");
    std::fflush(stdout);
    std::signal(SIGSEGV, SIG_DFL);
    std::raise(SIGSEGV);
    return 0;
  }
  if ((mode == "hang" || mode == "ignore-term") && argc > 2) {
    if (mode == "ignore-term") std::signal(SIGTERM, SIG_IGN);
    std::string pids = std::to_string(getpid()) + "\n";
    // One child stays in the process group; one escapes it with setsid().
    pid_t a = fork();
    if (a == 0) sleep_forever();
    pid_t b = fork();
    if (b == 0) {
      setsid();
      sleep_forever();
    }
    pids += std::to_string(a) + "\n" + std::to_string(b) + "\n";
    write_pids(argv[2], pids);
    sleep_forever();
  }
  if (mode == "flood" && argc > 2) {
    static char block[1 << 20];
    std::memset(block, 'x', sizeof block);
    block[sizeof block - 1] = '\n';
    const long mib = std::atol(argv[2]);
    for (long i = 0; i < mib; ++i)
      if (std::fwrite(block, 1, sizeof block, stdout) != sizeof block) return 5;
    std::fflush(stdout);
    std::fprintf(stderr, "flood done\n");
    return 0;
  }
  if (mode == "close-stdout") {
    std::printf("early\n");
    std::fflush(stdout);
    close(1);
    usleep(200000);
    std::fprintf(stderr, "still here\n");
    return 0;
  }
  if (mode == "burn-tree" && argc > 2) {
    const double seconds = std::atof(argv[2]);
    const pid_t child = fork();
    if (child == 0) {
      burn_cpu(seconds);
      _exit(0);
    }
    burn_cpu(seconds);
    int status = 0;
    if (child > 0) waitpid(child, &status, 0);
    return 0;
  }
  if (mode == "sleep" && argc > 2) {
    usleep(static_cast<useconds_t>(std::atol(argv[2])) * 1000);
    std::printf("slept %s ms\n", argv[2]);
    return 0;
  }
  if (mode == "annotated") {
    // Looked up at run time: the tracer is LD_PRELOADed by rtrace, this app
    // does not link it (without the tracer the region is simply not recorded).
    using Mark = void (*)(const char*);
    using Counts = void (*)(const char*, double, double, double, double, double, double);
    auto begin = reinterpret_cast<Mark>(dlsym(RTLD_DEFAULT, "rtrace_region_begin"));
    auto end = reinterpret_cast<Mark>(dlsym(RTLD_DEFAULT, "rtrace_region_end"));
    auto counts = reinterpret_cast<Counts>(dlsym(RTLD_DEFAULT, "rtrace_region_counts"));
    if (begin && end && counts) {
      begin("work");
      counts("work", 2e6, 0, 0, 0, 0, 8e6);
      end("work");
    }
    std::printf("annotated: %s\n", begin ? "traced" : "no tracer");
    return 0;
  }
  if (mode == "args") {  // one argument per line, as received
    for (int i = 2; i < argc; ++i) std::printf("arg %s\n", argv[i]);
    return 0;
  }
  if (mode == "fail" && argc > 3) {  // the reason last on stderr, then a blank line
    std::fprintf(stderr, "reading input\n%s\n\n", argv[3]);
    return std::atoi(argv[2]);
  }
  if (mode == "env") {
    for (int i = 2; i < argc; ++i) {
      const char* v = std::getenv(argv[i]);
      std::printf("%s=%s\n", argv[i], v ? v : "(unset)");
    }
    return 0;
  }
  return 64;
}
