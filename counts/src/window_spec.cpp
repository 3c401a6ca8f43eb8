#include "rtrace/counts/window_spec.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rtrace::counts {

namespace {

[[noreturn]] void fail(const std::string& text, const std::string& why) {
  throw WindowSpecError("--counts-window `" + text + "`: " + why);
}

long long whole_number(const std::string& text, const std::string& s, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || !end || *end || errno || v < 1) fail(text, std::string("expected a call number >= 1 as ") + what);
  return v;
}

double seconds(const std::string& text, const std::string& s, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || !end || *end || !std::isfinite(v) || v < 0 || v > 1e7)
    fail(text, std::string("expected seconds >= 0 as ") + what);
  return v;
}

// "A-B" or "A-" -> (A, B or ""), the dash required.
std::pair<std::string, std::string> range_parts(const std::string& text, const std::string& r) {
  const auto dash = r.find('-');
  if (dash == std::string::npos || dash == 0) fail(text, "expected a range N-M or N- after the ':'");
  return {r.substr(0, dash), r.substr(dash + 1)};
}

std::string number_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace

WindowSpec parse_window_spec(const std::string& text) {
  WindowSpec w;
  if (text.empty()) fail(text, "empty; expected mpi, whole, FUNC:N-M or time:A-B");
  if (text == "mpi") return w;
  if (text == "whole") {
    w.mpi = false;
    return w;
  }
  std::vector<std::string> items;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (items.size() > 2) fail(text, "at most one call range and one time range, joined by ','");
  for (const auto& item : items) {
    const auto colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      fail(text, "`" + item + "`: expected FUNC:N-M (calls N to M of FUNC) or time:A-B (seconds)");
    const std::string head = item.substr(0, colon);
    const auto [a, b] = range_parts(text, item.substr(colon + 1));
    if (head == "time") {
      if (w.from_s >= 0) fail(text, "two time ranges");
      w.from_s = seconds(text, a, "the start");
      w.to_s = b.empty() ? -1 : seconds(text, b, "the end");
      if (w.to_s >= 0 && w.to_s <= w.from_s) fail(text, "the time range ends before it starts");
    } else {
      if (!w.function.empty()) fail(text, "two call ranges");
      if (head.find_first_of(" \t\n") != std::string::npos) fail(text, "a function name has no spaces");
      w.function = head;
      w.first_call = whole_number(text, a, "the first call");
      w.last_call = b.empty() ? 0 : whole_number(text, b, "the last call");
      if (w.last_call > 0 && w.last_call < w.first_call)
        fail(text, "the last call (" + b + ") is before the first (" + a + ")");
    }
  }
  w.mpi = false;
  return w;
}

std::vector<std::string> window_tool_options(const WindowSpec& w) {
  std::vector<std::string> out;
  if (!w.user()) {
    if (!w.mpi) out.push_back("--mpi-window=no");
    return out;
  }
  if (!w.function.empty()) {
    out.push_back("--window-fn=" + w.function);
    out.push_back("--window-calls=" + std::to_string(w.first_call) + "-" +
                  (w.last_call > 0 ? std::to_string(w.last_call) : std::string()));
  }
  if (w.from_s >= 0)
    out.push_back("--window-ms=" + std::to_string(std::llround(w.from_s * 1000)) + "-" +
                  (w.to_s >= 0 ? std::to_string(std::llround(w.to_s * 1000)) : std::string()));
  return out;
}

std::string describe_window(const WindowSpec& w) {
  if (!w.user()) return w.mpi ? "MPI_Init..MPI_Finalize" : "the whole run";
  std::string out;
  if (!w.function.empty())
    out = w.last_call > 0 ? "calls " + std::to_string(w.first_call) + "-" + std::to_string(w.last_call) + " of " + w.function
                          : "calls from " + std::to_string(w.first_call) + " of " + w.function;
  if (w.from_s >= 0) {
    if (!out.empty()) out += " and ";
    out += w.to_s >= 0 ? number_text(w.from_s) + "-" + number_text(w.to_s) + " s of the counting run"
                       : "from " + number_text(w.from_s) + " s of the counting run";
  }
  return out;
}

}  // namespace rtrace::counts
