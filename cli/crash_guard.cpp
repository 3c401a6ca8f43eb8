#include "crash_guard.hpp"

#include "rtrace/store/file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

namespace rtrace::cli {

namespace {

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  const int saved = errno;
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
  errno = saved;
}

// What the child reported through store::report_file_events_to: the file it
// opened last, the temp files it created, and the directories it created
// (a new run's points directory: removed when the temp files were all it held).
class FileEvents {
 public:
  void feed(const char* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (data[i] != '\n') {
        if (partial_.size() < 8192) partial_.push_back(data[i]);
        continue;
      }
      if (partial_.size() > 2 && partial_[0] == 'o') last_opened_ = partial_.substr(2);
      if (partial_.size() > 2 && partial_[0] == 't') temps_.insert(partial_.substr(2));
      if (partial_.size() > 2 && partial_[0] == 'd') dirs_.insert(partial_.substr(2));
      partial_.clear();
    }
  }
  const std::string& last_opened() const { return last_opened_; }
  const std::set<std::string>& temps() const { return temps_; }
  const std::set<std::string>& dirs() const { return dirs_; }

 private:
  std::string partial_, last_opened_;
  std::set<std::string> temps_, dirs_;
};

bool is_stop_signal(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGPIPE || sig == SIGQUIT; }

}  // namespace

int run_crash_guarded(const char* name, int (*command)(int, char**), int argc, char** argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return command(argc, argv);  // unguarded rather than not at all
  std::fflush(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return command(argc, argv);
  }
  if (pid == 0) {
    close(fds[0]);
    // A SIGKILLed rtrace must not leave its reader running on.
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(128 + SIGKILL);
    store::report_file_events_to(fds[1]);
    return command(argc, argv);  // returns through main(): normal exit, buffers flushed
  }
  close(fds[1]);
  g_child = pid;
  struct sigaction fwd {}, ign {}, old_term {}, old_hup {}, old_int {}, old_quit {};
  fwd.sa_handler = forward_signal;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  sigaction(SIGTERM, &fwd, &old_term);
  sigaction(SIGHUP, &fwd, &old_hup);
  sigaction(SIGINT, &ign, &old_int);
  sigaction(SIGQUIT, &ign, &old_quit);

  FileEvents events;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0) {
      events.feed(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF: the child exited (nothing else holds the write end: CLOEXEC)
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);

  // The child's commit protocol never replaces an output with a partial one;
  // only its temp files are left to clean. A failing child normally removed
  // them itself; one that ended some other way (a sanitizer's exit inside
  // libhdf5, _exit in a library) did not.
  const auto remove_leftovers = [&events] {
    for (const auto& t : events.temps()) (void)unlink(t.c_str());
    for (const auto& d : events.dirs()) (void)rmdir(d.c_str());  // only when empty
  };
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) != 0) remove_leftovers();
    return WEXITSTATUS(status);
  }
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (is_stop_signal(sig)) return 128 + sig;
  remove_leftovers();
  const std::string what = sig ? strsignal(sig) : "abnormal end";
  if (events.last_opened().empty())
    std::fprintf(stderr, "%s: crashed (%s) before reading any file\n", name, what.c_str());
  else
    std::fprintf(stderr,
                 "%s: crashed (%s) while reading `%s` (the last file opened): the HDF5 library does not survive some "
                 "damaged files; `rtrace validate` checks it\n",
                 name, what.c_str(), events.last_opened().c_str());
  return 2;
}

}  // namespace rtrace::cli
