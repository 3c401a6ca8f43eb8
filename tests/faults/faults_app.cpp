// The misbehaving application of the fault-injection tests (tests/faults).
// usage: faults_app MODE [ARG]
//   ok [MS]           sleep MS ms, print "ok N=$FAULTS_N", exit 0
//   exit CODE         exit with CODE
//   segv              die of a real SIGSEGV
//   hang              fork a child, both sleep forever (same process group)
//   hang-escape       like hang, but the child leaves the process group (setsid)
//   hang-noterm       ignore SIGTERM, then sleep forever (needs the SIGKILL grace)
//   flood BYTES       write BYTES to stdout (1 MiB writes), exit 0
//   close-stdout      close stdout and stderr at once, keep working 200 ms, exit 0
//   close-then-write  close stdout, then write 64 MiB to it (EBADF), exit 0
// Deliberately plain C++ with no rtrace libraries: the launcher sees it as any app.
#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void sleep_ms(long ms) { usleep(static_cast<useconds_t>(ms) * 1000); }

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // EPIPE/EBADF: the reader is gone; stop quietly
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: faults_app MODE [ARG]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const char* arg = argc > 2 ? argv[2] : "0";
  const char* n = std::getenv("FAULTS_N");
  if (mode == "ok") {
    sleep_ms(std::atol(arg));
    std::printf("ok N=%s\n", n ? n : "-");
    return 0;
  }
  if (mode == "exit") {
    std::printf("exiting with %s\n", arg);
    return std::atoi(arg);
  }
  if (mode == "segv") {
    std::printf("about to crash\n");
    std::fflush(stdout);
    signal(SIGSEGV, SIG_DFL);  // no sanitizer handler: a real signal death
    volatile int* p = nullptr;
    *p = 1;
    return 0;
  }
  if (mode == "hang" || mode == "hang-escape") {
    pid_t child = fork();
    if (child == 0) {
      if (mode == "hang-escape") setsid();
      sleep_forever();
    }
    std::printf("hanging, child %d\n", static_cast<int>(child));
    std::fflush(stdout);
    sleep_forever();
  }
  if (mode == "hang-noterm") {
    signal(SIGTERM, SIG_IGN);
    std::printf("hanging, SIGTERM ignored\n");
    std::fflush(stdout);
    sleep_forever();
  }
  if (mode == "flood") {
    signal(SIGPIPE, SIG_DFL);
    long long left = std::atoll(arg);
    std::vector<char> buf(1 << 20, 'x');
    for (std::size_t i = 99; i < buf.size(); i += 100) buf[i] = '\n';
    while (left > 0) {
      const std::size_t chunk = static_cast<std::size_t>(std::min<long long>(left, static_cast<long long>(buf.size())));
      write_all(1, buf.data(), chunk);
      left -= static_cast<long long>(chunk);
    }
    write_all(1, "\nflood done\n", 12);
    return 0;
  }
  if (mode == "close-stdout") {
    close(1);
    close(2);
    sleep_ms(200);
    return 0;
  }
  if (mode == "close-then-write") {
    close(1);
    std::vector<char> buf(1 << 20, 'y');
    for (int i = 0; i < 64; ++i) write_all(1, buf.data(), buf.size());
    std::fprintf(stderr, "wrote into a closed stdout\n");
    return 0;
  }
  std::fprintf(stderr, "faults_app: unknown mode '%s'\n", mode.c_str());
  return 2;
}
