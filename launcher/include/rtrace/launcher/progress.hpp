// Sweep progress: one updating line on a terminal, plain log lines otherwise.
#pragma once

#include <chrono>
#include <string>

namespace rtrace::launcher {

class Progress {
 public:
  enum class Mode { Quiet, Lines, Terminal };
  static Mode detect(bool quiet);  // Terminal when stderr is a TTY

  Progress(Mode mode, int total_points, int already_complete);
  void begin_point(int ordinal, const std::string& label, const std::string& what = "");
  void end_point(const std::string& label, const std::string& status, double wall_s);
  void note(const std::string& line);  // a message that must not be overwritten
  void finish();

 private:
  std::string eta() const;
  Mode mode_;
  int total_, done_before_, ran_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool line_open_ = false;
};

std::string format_duration(double seconds);  // "1:02:03", "02:03"

}  // namespace rtrace::launcher
