// A stand-in for `nvidia-cuda-mps-control` (and for the MPS clients of an
// `sms` sweep) on machines without a GPU. Test helper only: it lets the
// launcher's MPS daemon lifecycle run on CPU. It behaves like the real tool
// where the launcher depends on it:
//   nvidia-cuda-mps-control -d   daemonizes (fork, setsid, fork), writes
//                                $CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid,
//                                serves a control socket in that directory;
//   nvidia-cuda-mps-control      a control client: sends each stdin line
//                                (`quit`, `get_server_list`) to the daemon;
//                                "Cannot find MPS control daemon process", exit 1,
//                                when there is none.
// Every event goes to $FAKE_MPS_RECORD (one line each, O_APPEND), so tests
// can check how and when the daemon was started and stopped and which
// clients reached it.
// Servers, as the real daemon runs them: the first client starts one (a
// number standing for its pid), `get_server_list` prints it, `shutdown_server
// PID` stops it, the next client starts another. While one lives the daemon
// keeps $FAKE_MPS_SERVER_FILE: the fake libcuda refuses a context to a process
// that is not an MPS client then, in EXCLUSIVE_PROCESS compute mode
// (FAKE_CUDA_COMPUTE_MODE=3), as the real device does.
// Client roles (the daemon records each with its percentage):
//   argv[0] = rtrace-smid-probe     the %smid probe: prints "sms_achieved=N device_sms=M"
//                                   (N from the MPS percentage as the real device would
//                                   grant it, plus $FAKE_MPS_PROBE_OFFSET);
//   argv[1] = ert                   the ERT: copies $FAKE_MPS_ERT_TEMPLATE to the `-o` file;
//   argv[1] = --client [SECONDS]    an app: sleeps SECONDS, prints check=ok.
// A client that cannot reach the daemon exits 3 (the real driver would
// silently run without MPS: exactly what the tests must catch).
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void record(const std::string& line) {
  const std::string path = env("FAKE_MPS_RECORD");
  if (path.empty()) return;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string l = line + "\n";
  (void)!write(fd, l.data(), l.size());
  close(fd);
}

long ppid_of(long pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto rp = s.rfind(')');
  if (rp == std::string::npos) return -1;
  char state = 0;
  long ppid = -1;
  std::sscanf(s.c_str() + rp + 1, " %c %ld", &state, &ppid);
  return ppid;
}

std::string socket_path() { return env("CUDA_MPS_PIPE_DIRECTORY") + "/control"; }

// Sends one line, returns the reply; false when no daemon answers.
bool ask(const std::string& line, std::string& reply) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = socket_path();
  if (env("CUDA_MPS_PIPE_DIRECTORY").empty() || path.size() >= sizeof addr.sun_path) {
    close(fd);
    return false;
  }
  std::strcpy(addr.sun_path, path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return false;
  }
  const std::string msg = line + "\n";
  (void)!write(fd, msg.data(), msg.size());
  shutdown(fd, SHUT_WR);
  char buf[4096];
  ssize_t n;
  reply.clear();
  while ((n = read(fd, buf, sizeof buf)) > 0) reply.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return !reply.empty();
}

volatile sig_atomic_t g_term = 0;
void on_term(int) { g_term = 1; }

[[noreturn]] void serve(int listen_fd, int ready_fd) {
  const long me = getpid();
  const std::string dir = env("CUDA_MPS_PIPE_DIRECTORY");
  {
    std::ofstream pid(dir + "/nvidia-cuda-mps-control.pid");
    pid << me << "\n";
  }
  record("start daemon=" + std::to_string(me) + " ppid=" + std::to_string(getppid()) +
         " sid=" + std::to_string(getsid(0)) + " cvd=" + (env("CUDA_VISIBLE_DEVICES").empty() ? std::string("unset") : env("CUDA_VISIBLE_DEVICES")) +
         " pipe=" + dir);
  const char ok = 'y';
  (void)!write(ready_fd, &ok, 1);
  close(ready_fd);
  struct sigaction sa {};
  sa.sa_handler = on_term;
  sigaction(SIGTERM, &sa, nullptr);
  const bool ignore_quit = env("FAKE_MPS_IGNORE_QUIT") == "1";
  const std::string server_file = env("FAKE_MPS_SERVER_FILE");
  long server = 0, next_server = me * 10 + 1;  // a live server's "pid", 0: none
  auto set_server = [&](long pid) {
    server = pid;
    if (server_file.empty()) return;
    if (pid) std::ofstream(server_file) << pid << "\n";
    else unlink(server_file.c_str());
  };
  while (!g_term) {
    const int c = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;  // EINTR on SIGTERM
    ucred cred{};
    socklen_t len = sizeof cred;
    getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len);
    std::string line;
    char ch;
    while (read(c, &ch, 1) == 1 && ch != '\n') line += ch;
    const std::string who = " from=" + std::to_string(cred.pid) + " peer_ppid=" + std::to_string(ppid_of(cred.pid)) +
                            " daemon=" + std::to_string(me);
    std::string reply = "ok\n";
    bool quit = false;
    if (line == "quit") {
      record("quit" + who + (ignore_quit ? " ignored" : ""));
      quit = !ignore_quit;
    } else if (line == "get_server_list") {
      record("query get_server_list" + who);
      reply = server ? std::to_string(server) + "\n" : "\n";
    } else if (line.rfind("shutdown_server ", 0) == 0) {
      const long pid = std::atol(line.c_str() + 16);
      record("shutdown_server server=" + std::to_string(pid) + (pid == server ? "" : " unknown") + who);
      if (pid == server) set_server(0);
    } else if (line.rfind("client ", 0) == 0) {
      if (!server) {
        set_server(next_server++);
        record("server start server=" + std::to_string(server) + " daemon=" + std::to_string(me));
      }
      record(line + who);
    } else {
      record("unknown `" + line + "`" + who);
      reply = "unknown command\n";
    }
    (void)!write(c, reply.data(), reply.size());
    close(c);
    if (quit) {
      set_server(0);
      unlink(socket_path().c_str());
      unlink((dir + "/nvidia-cuda-mps-control.pid").c_str());
      record("exit daemon=" + std::to_string(me));
      _exit(0);
    }
  }
  record("sigterm daemon=" + std::to_string(me));
  set_server(0);
  unlink(socket_path().c_str());
  _exit(0);
}

int start_daemon() {
  const std::string dir = env("CUDA_MPS_PIPE_DIRECTORY");
  if (dir.empty()) {
    std::fprintf(stderr, "fake nvidia-cuda-mps-control: CUDA_MPS_PIPE_DIRECTORY is not set\n");
    return 1;
  }
  record("launch -d by=" + std::to_string(getppid()));
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket_path().c_str());
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
    std::fprintf(stderr, "fake nvidia-cuda-mps-control: cannot serve %s: %s\n", addr.sun_path, std::strerror(errno));
    return 1;
  }
  int ready[2];
  if (pipe(ready) != 0) return 1;
  const pid_t first = fork();
  if (first == 0) {
    setsid();
    const pid_t second = fork();
    if (second != 0) _exit(second > 0 ? 0 : 1);
    close(ready[0]);
    // A daemon: no terminal, no inherited output.
    const int devnull = open("/dev/null", O_RDWR);
    for (int i = 0; i < 3; ++i) dup2(devnull, i);
    if (chdir("/") != 0) _exit(1);
    serve(fd, ready[1]);
  }
  close(ready[1]);
  close(fd);
  waitpid(first, nullptr, 0);
  char ok = 0;
  return read(ready[0], &ok, 1) == 1 ? 0 : 1;
}

int control_client() {
  std::string line;
  int rc = 0;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::string reply;
    if (!ask(line, reply)) {
      std::printf("Cannot find MPS control daemon process\n");
      return 1;
    }
    std::fputs(reply.c_str(), stdout);
  }
  return rc;
}

// The MPS share as a Hopper-like device would grant it: the percentage of the
// SMs, rounded up to whole TPCs of 2.
int granted_sms(int pct, int device_sms) {
  int sms = static_cast<int>(std::ceil(pct * device_sms / 100.0));
  sms = (sms + 1) / 2 * 2;
  return sms > device_sms ? device_sms : sms;
}

int fake_device_sms() {
  const std::string spec = env("RTRACE_TEST_FAKE_GPU");
  const auto p = spec.find("sms=");
  return p == std::string::npos ? 0 : std::atoi(spec.c_str() + p + 4);
}

int as_client(const std::string& role, int argc, char** argv) {
  std::string args;
  for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
  const std::string pct = env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  std::string reply;
  const std::string cvd = env("CUDA_VISIBLE_DEVICES").empty() ? "unset" : env("CUDA_VISIBLE_DEVICES");
  if (!ask("client role=" + role + " pct=" + (pct.empty() ? "none" : pct) + " cvd=" + cvd + " args=[" + args + "]",
           reply)) {
    std::fprintf(stderr, "fake MPS client (%s): no MPS control daemon at %s\n", role.c_str(), socket_path().c_str());
    return 3;
  }
  if (role == "probe") {
    const int device = fake_device_sms();
    const int offset = std::atoi(env("FAKE_MPS_PROBE_OFFSET").c_str());
    const int got = granted_sms(pct.empty() ? 100 : std::atoi(pct.c_str()), device) + offset;
    std::printf("sms_achieved=%d device_sms=%d\n", got, device);
    return 0;
  }
  if (role == "ert") {
    std::string out;
    for (int i = 1; i + 1 < argc; ++i)
      if (std::string(argv[i]) == "-o") out = argv[i + 1];
    std::ifstream in(env("FAKE_MPS_ERT_TEMPLATE"), std::ios::binary);
    std::ofstream o(out, std::ios::binary);
    if (!in || !o) {
      std::fprintf(stderr, "fake ERT: cannot copy $FAKE_MPS_ERT_TEMPLATE to `%s`\n", out.c_str());
      return 1;
    }
    o << in.rdbuf();
    return o ? 0 : 1;
  }
  // An app: runs for a while (signal tests) in a region that declares its
  // work when rtrace's tracer is preloaded (so the sweep has counts to place
  // on a roofline and measures ceilings), then reports.
  using RegionFn = void (*)(const char*);
  using CountsFn = void (*)(const char*, double, double, double, double, double, double);
  auto begin = reinterpret_cast<RegionFn>(dlsym(RTLD_DEFAULT, "rtrace_region_begin"));
  auto end = reinterpret_cast<RegionFn>(dlsym(RTLD_DEFAULT, "rtrace_region_end"));
  auto counts = reinterpret_cast<CountsFn>(dlsym(RTLD_DEFAULT, "rtrace_region_counts"));
  if (begin) begin("fake_kernel");
  const double seconds = argc > 2 ? std::atof(argv[2]) : 0;
  if (seconds > 0) usleep(static_cast<useconds_t>(seconds * 1e6));
  if (counts) counts("fake_kernel", 1e6, 0, 0, 0, 0, 8e6);
  if (end) end("fake_kernel");
  std::printf("check=ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = argv[0];
  if (auto slash = self.rfind('/'); slash != std::string::npos) self = self.substr(slash + 1);
  if (self == "rtrace-smid-probe") return as_client("probe", argc, argv);
  const std::string first = argc > 1 ? argv[1] : "";
  if (first == "-d") return start_daemon();
  if (first == "ert") return as_client("ert", argc, argv);
  if (first == "--client") return as_client("app", argc, argv);
  if (first.empty()) return control_client();
  std::fprintf(stderr, "fake nvidia-cuda-mps-control: unknown option `%s`\n", first.c_str());
  return 1;
}
