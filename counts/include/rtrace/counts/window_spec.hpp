// The counted window a user chooses (`--counts-window`, docs/counts.md): the
// calls N..M of a named function and/or a range of the counting run's clock;
// outside it the tool counts instructions and FLOPs only, which bounds the
// cost of counting a long run. Without one, the window is the MPI window
// (MPI_Init's return .. MPI_Finalize), or the whole run of an app without MPI.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::counts {

class WindowSpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct WindowSpec {
  bool mpi = true;                 // the MPI window (no user window); false: `whole`
  std::string function;            // "" none
  long long first_call = 0;        // 1-based
  long long last_call = 0;         // 0: to the end of the run
  double from_s = -1;              // -1 none
  double to_s = -1;                // -1: to the end of the run
  bool user() const { return !function.empty() || from_s >= 0; }
};

// "mpi" (default), "whole", "FUNC:N-M" / "FUNC:N-" (calls N to M of FUNC,
// counted from 1; the part after the last ':' is the range, so C++
// `ns::step:10-20` works), "time:A-B" / "time:A-" (seconds of the counting
// run, decimals allowed), or a call range and a time range joined by ','
// (the window is where both hold). Throws WindowSpecError with one line
// naming the problem.
WindowSpec parse_window_spec(const std::string& text);

// The tool's options for it (--window-fn, --window-calls, --window-ms,
// --mpi-window=no).
std::vector<std::string> window_tool_options(const WindowSpec& spec);

// "calls 10-20 of timestep", "calls from 10 of timestep", "0-600 s of the
// counting run", joined by " and "; "MPI_Init..MPI_Finalize" / "the whole run".
std::string describe_window(const WindowSpec& spec);

}  // namespace rtrace::counts
