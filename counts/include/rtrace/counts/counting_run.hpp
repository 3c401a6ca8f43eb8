// One counting run: a command (the app, or mpirun/srun starting it) with the
// Valgrind tool put in front of the app, its raw files turned into the count
// tables and written as a trace file (/ranks/rNNNNNN, file_kind "trace").
#pragma once

#include "rtrace/counts/geometry.hpp"
#include "rtrace/counts/rank_counts.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::counts {

class SetupError : public std::runtime_error {   // cannot run at all: one line, exit 2
 public:
  using std::runtime_error::runtime_error;
};

struct ToolPaths {
  std::string valgrind;      // the valgrind launcher
  std::string lib_dir;       // VALGRIND_LIB: the tool + links to Valgrind's own files
  std::string env;           // /usr/bin/env, which sets VALGRIND_LIB in front of valgrind
};
// Finds valgrind (PATH, or $RTRACE_VALGRIND) and the tool directory
// ($RTRACE_VALGRIND_LIB, else <dir of rtrace>/../lib/rtrace-valgrind or
// <..>/<libdir>/rtrace-valgrind). Throws SetupError naming what is missing.
ToolPaths find_tool(const std::string& path_env);

struct CountingSpec {
  std::vector<std::string> command;    // verbatim; command[app_index] is the app
  std::size_t app_index = 0;
  std::vector<std::string> env;        // NAME=VALUE: the command's whole environment
  // NAME=VALUE set for the app by the `env` in front of valgrind, so that
  // ranks on other nodes get them too (mpirun passes no environment there).
  std::vector<std::string> app_env;
  std::vector<std::string> tool_options;  // geometry (tool_options()), extra options
  std::string raw_dir;                 // where the tool writes (created, must be empty)
  int expected_ranks = 1;
  double timeout_s = 0;                // 0: none
  double timed_run_s = 0;              // the timed run's wall time: progress shows the slowdown
  bool progress = true;                // progress lines on stderr every `progress_every_s`
  std::string banner;                  // printed (with progress) once the command is known to start
  double progress_every_s = 10;
};

struct CountingResult {
  RunOutcome outcome;
  std::map<std::int64_t, CountedRank> ranks;
  std::vector<std::string> problems;   // raw files that could not be read, unsupported instructions
  std::string unsupported;             // the one line for an undecodable instruction, "" none
};

// The command with the tool in front of the app:
//   command[0..app_index) env VALGRIND_LIB=DIR <app_env> valgrind --tool=rtrace-count
//   --trace-children=yes -q --vgdb=no --log-file=RAW/valgrind-%p.log --out-dir=RAW
//   <tool options> command[app_index..]
std::vector<std::string> instrumented_command(const CountingSpec& spec, const ToolPaths& tool);

// Runs it (its own process group; SIGINT/SIGTERM are passed on), then reads
// the raw files. Throws SetupError when the command cannot be started.
CountingResult run_counting(const CountingSpec& spec, const ToolPaths& tool);

// The last line of each Valgrind log in `raw_dir` (valgrind-PID.log, its
// "==PID== " prefix cut), by pid; logs with nothing in them are left out.
std::map<int, std::string> valgrind_last_lines(const std::string& raw_dir);

// Adds Valgrind's last word to the note (and log) of each rank that is not
// ok: its own process's log, or, for a rank with no counts, a log of a
// process that wrote none (the one that could not write its counts).
void fold_valgrind_logs(std::map<std::int64_t, CountedRank>& ranks, const std::map<int, std::string>& last_lines);

// Writes the ranks as a trace file (temp + rename). `command_line`: recorded.
void write_counts_file(const std::string& path, const std::map<std::int64_t, CountedRank>& ranks,
                       const std::string& command_line);

// The names symbolised by rtrace's symboliser (tracer/src/symbolize.cpp).
FunctionNamer symbolizer_namer();

}  // namespace rtrace::counts
