// Raw files of one counting run -> the store's count tables, per rank.
#pragma once

#include "rtrace/counts/raw_file.hpp"

#include "rtrace/store/run_file.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace rtrace::counts {

// The function holding ELF address `vaddr` of module `path`: its name and
// the module's file name, as the sampled call paths name them.
struct FunctionName {
  std::string function;
  std::string module;
};
using FunctionNamer = std::function<FunctionName(const std::string& path, std::uint64_t vaddr)>;

// How the counting run as a whole ended (the command rtrace counts ran).
struct RunOutcome {
  enum class Kind { Exited, Signalled, TimedOut, Interrupted, LaunchError } kind = Kind::Exited;
  int exit_code = 0;
  int signal = 0;
  double wall_s = 0;
  double timeout_s = 0;
  std::string launch_error;
};

struct CountedRank {
  std::int64_t rank = 0;
  store::CountInfoRow info{};
  std::vector<store::CountLevelRow> levels;
  std::vector<store::CountRow> counts;   // function_id/module_id index `names`
  std::vector<std::string> names;
  std::vector<std::string> log;          // per-process details (which files, forked children, ...)
  std::int64_t pid = -1;                 // the rank's own process
};

// One entry per rank seen in `processes` (a process without a rank variable
// is rank 0) and per rank 0..expected_ranks-1 (those without a file get
// status "failed"). A rank's processes (forked or exec'd children share its
// rank variable) are summed, their threads numbered after the parent's.
// `unfinished`: temp files of processes that died while writing theirs.
std::map<std::int64_t, CountedRank> build_rank_counts(const std::vector<RawProcess>& processes, int expected_ranks,
                                                      const RunOutcome& outcome, const FunctionNamer& namer,
                                                      const std::vector<std::string>& unfinished = {});

// The counted window in words ("MPI_Init..MPI_Finalize", "calls 10-20 of
// timestep", "the whole run (no MPI_Init)"); "" when the tool recorded none.
std::string window_description(const RawWindow& w);
// What went wrong with a user's window ("... never opened: timestep was
// called 7 time(s)", "... ran to the end of the run"); "" nothing.
std::string window_problem(const RawWindow& w);

// The one-line reason a counting run could not count, for the user (AVX-512,
// another undecodable instruction); "" when none.
std::string unsupported_instruction_line(const RawProcess& p);
// The same, short enough for the counts_info note.
std::string unsupported_instruction_note(const RawProcess& p);

}  // namespace rtrace::counts
