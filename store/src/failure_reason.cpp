#include "rtrace/store/failure_reason.hpp"

#include "rtrace/store/table.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace rtrace::store {
namespace {

bool is_rule(const std::string& l) {
  return l.size() >= 3 && l.find_first_not_of("-=*_ \t") == std::string::npos;
}

// Open MPI / PRRTE prefix their own notices with "[host:pid] " (e.g. "[vm:11647]
// 1 more process has sent help message help-mpi-api.txt / mpi-abort").
bool is_launcher_notice(const std::string& l) {
  if (l.size() < 5 || l[0] != '[') return false;
  const auto close = l.find(']');
  if (close == std::string::npos || close + 1 >= l.size() || l[close + 1] != ' ') return false;
  const auto colon = l.rfind(':', close);
  if (colon == std::string::npos || colon < 2 || colon + 1 >= close) return false;
  for (std::size_t i = colon + 1; i < close; ++i)
    if (!std::isdigit(static_cast<unsigned char>(l[i]))) return false;
  return true;
}

// "max error 1e-3" in a progress line is not a failure, "error: no file" is:
// "error" counts capitalised or followed by ':'; the other words rarely
// appear in normal output.
bool reads_like_error(const std::string& line) {
  for (const char* w : {"ERROR", "Error", "error:", "FATAL", "Fatal", "fatal"})
    if (line.find(w) != std::string::npos) return true;
  if (line.rfind("STOP", 0) == 0) return true;  // Fortran STOP n
  std::string l = line;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* w : {"abort", "exception", "failed", "failure", "cannot", "can't", "unable to", "not found",
                        "no such file", "permission denied", "invalid", "segmentation fault", "killed",
                        "terminate called", "assertion"})
    if (l.find(w) != std::string::npos) return true;
  return false;
}

std::string printable(std::string line) {
  for (auto& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return fit_words(line, 200);
}

// The lines of a tail that may say something, newest first.
std::vector<std::string> telling_lines(const std::string& tail) {
  std::vector<std::string> all;
  for (std::size_t begin = 0; begin < tail.size();) {
    std::size_t end = tail.find('\n', begin);
    if (end == std::string::npos) end = tail.size();
    all.push_back(tail.substr(begin, end - begin));
    begin = end + 1;
  }
  // Read from the end: a tail is cut at its start, so only the end's rules
  // pair up reliably. `kept` holds the lines that may say something, newest first.
  std::vector<std::string> kept;
  bool in_block = false;  // between two rules: an mpirun/prterun notice
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    std::string line = *it;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    line = line.substr(first);
    if (is_rule(line)) {
      in_block = !in_block;
      continue;
    }
    if (in_block || line.rfind("rtrace tracer[", 0) == 0 || is_launcher_notice(line)) continue;
    kept.push_back(std::move(line));
  }
  return kept;
}

// The newest error-like line, "" when none.
std::string last_error_line(const std::vector<std::string>& kept) {
  for (const auto& line : kept)
    if (reads_like_error(line)) return printable(line);
  return "";
}

}  // namespace

std::string failure_reason(const std::string& tail) {
  const auto kept = telling_lines(tail);
  const std::string error = last_error_line(kept);
  if (!error.empty()) return error;
  return kept.empty() ? "" : printable(kept.front());
}

std::string failure_reason(const std::string& stderr_tail, const std::string& stdout_tail) {
  const auto err = telling_lines(stderr_tail);
  if (std::string line = last_error_line(err); !line.empty()) return line;
  // Many codes (LAMMPS, Fortran codes) print their error on stdout and exit 1.
  if (std::string line = last_error_line(telling_lines(stdout_tail)); !line.empty()) return line;
  return err.empty() ? "" : printable(err.front());
}

}  // namespace rtrace::store
