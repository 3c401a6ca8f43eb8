// Run-time dispatch in the counting run (docs/counts.md, "Run-time
// dispatch"): libraries pick their code from CPUID, and Valgrind shows the
// app another CPU than the machine's (an Intel Haswell-like one, no AVX-512),
// so the counting run may count other code than the timed run ran. The timed
// run's choices, as its tracer observed them (the ranks' `dispatch` tables),
// steer the counting run to the same code where Valgrind can run it; what
// cannot be steered is said.
#pragma once

#include "rtrace/counts/rank_counts.hpp"
#include "rtrace/store/records.hpp"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::counts {

class DispatchSourceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The dispatch rows of the timed run, by rank, from `path`: a directory of
// the tracer's trace files (rank-*.h5, ranks.h5), one trace file, or a run
// file (its point `point_id`; -1: the first point whose ranks have some).
// Throws DispatchSourceError naming the problem (no such file, not rtrace's).
std::map<std::int64_t, std::vector<store::DispatchRow>> read_timed_dispatch(const std::string& path,
                                                                            std::int64_t point_id = -1);

struct Steering {
  std::vector<std::string> env;   // NAME=VALUE in front of the counted app
  std::string steered;            // counts_info.steered
  std::string not_steered;        // counts_info.not_steered
  std::string timed_openblas_core;  // "" not observed
  bool observed = false;          // a timed observation was given
};

// The environment that makes the counting run choose as the timed run did.
// `timed`: by rank (rank 0's, or the first, is followed; ranks that differ
// are said); `env`: the counting run's environment (a variable the user set
// is the timed run's too, and is kept).
Steering plan_steering(const std::map<std::int64_t, std::vector<store::DispatchRow>>& timed,
                       const std::vector<std::string>& env);

// After the run, from what was counted: OpenBLAS kernels of another core than
// the timed one (or OpenBLAS counted with no timed observation), FFTW, whose
// plans differ run to run. Adds to `s.not_steered`.
void check_counted_dispatch(const std::map<std::int64_t, CountedRank>& ranks, Steering& s);

// Puts `s` into every rank's counts_info (steered, not_steered).
void record_steering(std::map<std::int64_t, CountedRank>& ranks, const Steering& s);

}  // namespace rtrace::counts
