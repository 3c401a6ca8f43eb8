// What the counting pass counted, held against what the timed run ran
// (docs/analysis.md, "Counted code and the application's own work"):
//  * the application's own work apart from the runtimes' (the MPI library
//    and its transports, the OpenMP runtime): under the counting tool a
//    waiting rank or thread spins there, so those counts grow with the wait;
//  * whether the counted code is the timed code: libraries that pick their
//    kernels at run time (OpenBLAS by CPUID, glibc's ifuncs, MKL, FFTW's
//    planner) may pick others under the counting tool;
//  * the FLOPs by vector width against the widest the machine offers.
#pragma once

#include "rtrace/analysis/model.hpp"
#include "rtrace/analysis/profile.hpp"

#include <rtrace/store/records.hpp>

#include <map>
#include <string>
#include <vector>

namespace rtrace::analysis {

// One counted row's FLOPs by precision and width.
FlopMix flop_mix_of(const store::CountRow& row);

// "96% of FP64 FLOPs scalar or 128-bit; this CPU runs 512-bit": the dominant
// precision's FLOPs by vector width against the widest registers of the
// machine (`machine_vector_bits`, 0 unknown: the widths alone). `simulated`:
// counted by the counting tool, which cannot run 512-bit code (Valgrind
// hides AVX-512), said where the machine has it. "" without FLOPs.
std::string flop_mix_sentence(const FlopMix& mix, int machine_vector_bits, bool simulated);

// Code outside any module without FLOPs (the vDSO's clock reads of a
// polling runtime, trampolines): counted with the runtimes.
inline constexpr const char* kUnattributedCategory = "unattributed";

// Counts inside the runtimes (store::code_category "mpi", "openmp", "rtrace")
// and unattributed code of one point, summed over ranks and threads: kept out
// of the application's and every function's counts.
struct RuntimeCounts {
  Counts counts;
  double instructions = kNaN;
  std::map<std::string, double> category_instructions;  // "mpi" | "openmp" | "rtrace" | "unattributed" -> instructions
  std::map<std::string, double> function_instructions;  // runtime function -> instructions
  void add(const std::string& category, const std::string& function, const Counts& c, double instructions);
  bool any() const noexcept;
};

// The runtime's share of what was counted, in words: "58% of the counted
// instructions and 51% of the L1 bytes ran in the MPI library
// (opal_progress, mca_btl_vader_component_progress): ...". `app` and
// `app_instructions` are the application's own (runtime excluded). "" when
// the runtime's share of instructions and L1 bytes is below 0.5% each.
std::string runtime_sentence(const RuntimeCounts& rt, const Counts& app, double app_instructions);

// A counted function's identity (the counting run's view).
struct CountedCode {
  std::string module;           // ELF file name ("" unknown)
  double instructions = 0;
  double flops = 0;
};

// A function one run has and the other lacks (at one configuration): the
// timed run's samples hold `timed`, the counting run counted `counted`
// instead (both set: a pair, same module and name stem), or only one side.
struct CodeMismatch {
  std::string timed, timed_module;
  double timed_share = kNaN;      // of the timed run's samples of work (app and system code, all ranks and threads)
  std::string counted, counted_module;
  double counted_share = kNaN;    // of the application's counted instructions
  std::string sentence;           // what the report says
};

// A mismatch in words, its shares given as ranges (lo == hi: one value):
// "timed `k_PRESCOTT` 61% of samples, counted `k_HASWELL` 58% of counted
// instructions (libopenblas.so.0): the library picked other code under the
// counting tool (...)".
std::string code_mismatch_sentence(const CodeMismatch& m, double timed_lo, double timed_hi, double counted_lo,
                                   double counted_hi);

// Sampled code (profile.hpp SampledCode) against counted code, one
// configuration: every timed function with at least `min_share` of the work
// samples (and `min_samples` samples) that the counting run never counted,
// and every counted function with at least `min_share` of the application's
// counted instructions that the timed run never sampled though its share
// would have given it `min_samples` samples; paired by module and name stem
// where possible. Runtime code (MPI, OpenMP, the tracer) is no one's work,
// and code without a symbol ("module+0xOFFSET") has no name to compare:
// neither is compared. Empty when either side is empty.
std::vector<CodeMismatch> compare_code(const std::map<std::string, SampledCode>& timed, double timed_work_samples,
                                       const std::map<std::string, CountedCode>& counted,
                                       double counted_instructions, double min_share = 0.05,
                                       double min_samples = 10);

}  // namespace rtrace::analysis
