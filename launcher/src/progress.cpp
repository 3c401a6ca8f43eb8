#include "rtrace/launcher/progress.hpp"

#include <rtrace/store/failure_reason.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace rtrace::launcher {

std::string format_duration(double s) {
  if (!(s >= 0) || std::isinf(s)) return "--:--";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  return buf;
}

Progress::Mode Progress::detect(bool quiet) {
  if (quiet) return Mode::Quiet;
  return isatty(STDERR_FILENO) ? Mode::Terminal : Mode::Lines;
}

Progress::Progress(Mode mode, int total, int already)
    : mode_(mode), total_(total), done_before_(already), start_(std::chrono::steady_clock::now()) {}

std::string Progress::eta() const {
  if (ran_ == 0) return "--:--";
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const int left = total_ - done_before_ - ran_;
  return format_duration(elapsed / ran_ * left);
}

void Progress::begin_point(int ordinal, const std::string& label, const std::string& what) {
  if (mode_ != Mode::Terminal) return;  // plain logs report a point when it ends
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(stderr, "\r\033[K[%d/%d] %s%s%s  elapsed %s  ETA %s", ordinal, total_, label.c_str(),
               what.empty() ? "" : "  ", what.c_str(), format_duration(elapsed).c_str(), eta().c_str());
  std::fflush(stderr);
  line_open_ = true;
}

void Progress::end_point(const std::string& label, const std::string& status, double wall_s, const std::string& why) {
  ++ran_;
  const int ordinal = done_before_ + ran_;
  const std::string detail = (status != "ok" && !why.empty()) ? ": " + why : std::string();
  if (mode_ == Mode::Lines) {
    std::fprintf(stderr, "rtrace: [%d/%d] %s: %s (%.2f s)%s\n", ordinal, total_, label.c_str(), status.c_str(), wall_s,
                 detail.c_str());
  } else if (mode_ == Mode::Terminal && status != "ok") {
    // Failures stay visible; successes are overwritten by the next point.
    std::fprintf(stderr, "\r\033[K[%d/%d] %s: %s (%.2f s)%s\n", ordinal, total_, label.c_str(), status.c_str(), wall_s,
                 detail.c_str());
    line_open_ = false;
  }
}

std::string last_stderr_line(const std::string& tail) { return store::failure_reason(tail); }
std::string failure_line(const std::string& stderr_tail, const std::string& stdout_tail) {
  return store::failure_reason(stderr_tail, stdout_tail);
}

void Progress::note(const std::string& line) {
  if (mode_ == Mode::Quiet) return;
  if (line_open_) std::fprintf(stderr, "\r\033[K");
  line_open_ = false;
  std::fprintf(stderr, "rtrace: %s\n", line.c_str());
}

void Progress::finish() {
  if (mode_ == Mode::Terminal && line_open_) std::fprintf(stderr, "\r\033[K");
  line_open_ = false;
}

}  // namespace rtrace::launcher
