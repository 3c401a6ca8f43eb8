// The sweep: plan -> run file -> one committed point after another.
#pragma once

#include "rtrace/launcher/options.hpp"

#include <string>
#include <vector>

namespace rtrace::launcher {

inline constexpr int kExitAllOk = 0;
inline constexpr int kExitSomeFailed = 1;
inline constexpr int kExitCannotStart = 2;

// Runs (or, with --dry-run, prints) the sweep. Returns the process exit status:
// 0 every point ok, 1 some point did not succeed, 2 could not start (or could
// not write the file), 128+signal when interrupted. Throws UsageError and
// SweepSpecError for bad input found before anything runs.
int run_sweep(RunOptions opts, const std::vector<std::string>& rtrace_argv);

}  // namespace rtrace::launcher
