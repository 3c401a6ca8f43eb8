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
  // `why`: for a point that did not succeed, the app's last stderr line
  // (last_stderr_line), shown after the status.
  void end_point(const std::string& label, const std::string& status, double wall_s, const std::string& why = "");
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

// The line of an app's stderr tail that says why it failed
// (store::failure_reason: the last error-like line outside mpirun's notices).
std::string last_stderr_line(const std::string& stderr_tail);
// Why a point failed, from both tails (store::failure_reason): stderr's error
// line, else the last error-like line of stdout (LAMMPS writes its ERROR there).
std::string failure_line(const std::string& stderr_tail, const std::string& stdout_tail);

}  // namespace rtrace::launcher
