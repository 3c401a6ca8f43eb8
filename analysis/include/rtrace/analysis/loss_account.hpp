// The account of a step's lost time (issue 39): which causes explain how
// many of the seconds a step loses, computed once and rendered by every
// printer (text, HTML, JSON).
//
// A step c1 -> c2 of a scaling group loses L = T2 - T1/r (strong scaling,
// r = c2/c1) or L = T2 - T1 (weak). The sampled call paths split the loss
// over the functions on the critical path (each one's t2 - t1/r, gains kept
// apart), and each function's loss over the factors of its own step, in
// logarithms so the parts add up exactly (the log-mean weight of index
// decomposition):
//   ln(t2 / (t1 x ideal)) = ln(work ratio / work ideal)           work that grew
//                          + [cache-capacity: -ln(intensity ratio) at its level]
//                          | [bandwidth-contention or compute-bound: ln(r / ceiling ratio)]
//                          + the rest, named by the function's shape or cause.
// A function without counts gives its whole loss to its shape's cause
// (serial-fraction, mpi, ...). Time the samples do not hold (off-CPU waits)
// is a cause of its own. The step's headline is the cause that explains the
// most seconds, and only one that explains at least Thresholds::headline_share
// of the loss and more than the sampling uncertainty.
#pragma once

#include "rtrace/analysis/model.hpp"
#include "rtrace/analysis/pop.hpp"

#include <string>
#include <vector>

namespace rtrace::analysis {

struct AnalysisResult;
struct AppSummary;

// One cause's part of a loss.
struct CauseSeconds {
  std::string cause;                  // "cache-capacity", "serial-fraction", ...
  std::string where;                  // the cache or ceiling ("L3", "DRAM"); "" when none
  double seconds = 0;                 // > 0 lost, < 0 gained
  double share = kNaN;                // of the seconds lost (StepAccount::gross_lost_s)
  std::vector<std::string> functions; // where it is, most seconds first
  std::string label() const;          // "cache-capacity at L3", "serial-fraction"
};

struct FunctionAccount {
  std::string name;                   // short name
  double t1 = kNaN, t2 = kNaN;        // sampled time on the critical path at both points
  double lost_s = 0;                  // t2 - t1 x ideal (< 0: a gain)
  double uncertainty_s = 0;           // one standard deviation of lost_s from the sample counts
  std::string basis;                  // "roofline (FLOPs)", "roofline (instructions)", "samples"
  std::vector<CauseSeconds> causes;   // its loss split, largest first
};

struct StepAccount {
  int from = -1, to = -1;             // configuration indices
  double c1 = kNaN, c2 = kNaN;
  bool weak = false;
  double t1 = kNaN, t2 = kNaN;        // the application's times (MPI window or wall)
  double lost_s = kNaN;               // L
  double gained_s = 0;                // the functions' gains and less time off the CPU (negative seconds)
  double gross_lost_s = 0;            // the causes' lost seconds: lost_s - gained_s (the shares' whole)
  double unsampled_s = 0;             // L less the functions' net loss: > 0 off-cpu (a cause), < 0 a gain
  double uncertainty_s = 0;           // two standard deviations of the sampled part of L
  double spread_s = 0;                // the repeats' spread of T2 (0 with one sample per point)
  bool tentative = false;             // one sample per point: the cause may change on a rerun
  std::vector<FunctionAccount> functions;  // the functions that lose or gain, largest loss first
  std::vector<CauseSeconds> causes;        // over the functions, most seconds first
  std::string headline;                    // the cause that explains the most (label), "" when none qualifies
  int headline_index = -1;                 // into causes
  std::string why_no_headline;             // when headline is ""
  std::string sentence;                    // the account in words
};

// The accounts of a group's steps (sum.points in order); empty without samples.
std::vector<StepAccount> account_steps(const AnalysisResult& res, const AppSummary& sum);

// The counted application's verdict of a step from its account: where the
// account names a headline, the application's step says it (so the counted
// roofline, the POP summary's loss and the sampled functions agree).
void apply_account(StepDiagnosis& app_step, const StepAccount& account);
// The same for the whole-application step of the POP summary: its headline
// becomes the step's first cause, the POP factors stay as its evidence.
void apply_account(AppStep& step, const StepAccount& account);

}  // namespace rtrace::analysis
