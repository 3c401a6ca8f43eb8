// Trajectories, step diagnoses and the whole-application summary of one run.
#pragma once

#include "rtrace/analysis/dataset.hpp"
#include "rtrace/analysis/loss_account.hpp"
#include "rtrace/analysis/model.hpp"
#include "rtrace/analysis/pop.hpp"
#include "rtrace/analysis/profile.hpp"

#include <string>
#include <vector>

namespace rtrace::analysis {

struct AnalyzeOptions {
  std::string axis;        // "" = auto: the first swept concurrency axis that varies
  std::string scaling = "auto";  // strong | weak | auto (weak: a zipped axis grows with the concurrency)
  Thresholds thresholds;
};

// One kernel (or region) across all configurations.
struct KernelSeries {
  std::string name, kind;
  double total_time_s = 0;        // summed over configurations
  double time_share = 0;          // of all kernels' time, over all configurations
  std::vector<int> at;            // per configuration: index into config.kernels, -1 when absent
  std::vector<RooflineEval> eval; // per configuration (default when absent)
  bool counts_available = false;  // at any configuration
  // Counted kinds: what the report says about its counts instead of (or
  // besides) a rate: the counted code is not the timed code, or it has no
  // sampled time ("" when neither), and its FLOPs by vector width
  // (counted_work.hpp flop_mix_sentence, at its last configuration with FLOPs).
  std::string counts_note;
  std::string mix_sentence;
  bool gpu() const noexcept { return kind == "gpu-kernel"; }
};

// What the counting pass counted at one configuration besides the rooflines
// (counted_work.hpp): the runtimes' share and the application's FLOP mix.
struct CountedWork {
  int config = -1;
  double runtime_instruction_share = kNaN;  // of all counted instructions (application + runtimes)
  double runtime_l1_share = kNaN;           // of all counted L1 bytes
  double runtime_flop_share = kNaN;         // of all counted FLOPs
  std::string runtime_sentence;             // "" when the runtimes hold under 0.5%
  std::string mix_sentence;                 // the application's FLOPs by vector width
};

struct TrajectoryStep {
  int from = -1, to = -1;   // configuration indices
  double c1 = kNaN, c2 = kNaN;
  StepDiagnosis d;
};

// The ordered points of one kernel along the axis, other axes fixed.
struct Trajectory {
  int kernel = -1;          // index into AnalysisResult::kernels
  std::string fixed;        // the other axes' values ("env:N=1000"), "" when none
  std::vector<int> configs; // ordered by concurrency
  std::vector<TrajectoryStep> steps;
};

struct AppPoint {
  int config = -1;
  double concurrency = kNaN, time_s = kNaN, speedup = kNaN, efficiency = kNaN, karp_flatt = kNaN;
  double mpi_share = kNaN;
  PopPoint pop;             // POP efficiencies (CS and GE against the group's first point)
  double spread = 0;        // wall-time spread of the repeats, (max - min) / median; 0 with one sample
  int repeats = 1;
};
struct LostTime {
  int kernel = -1;
  double lost_s = 0;        // time beyond ideal scaling from the group's first point, at its last point
  double share = 0;         // of all kernels' lost time
};
// Whole-application strong scaling for one group of fixed other axes.
struct AppSummary {
  std::string fixed;
  std::vector<AppPoint> points;
  double final_efficiency = kNaN;
  int breaks_after = -1;    // index into points: the last point before the first non-ideal step
  std::vector<LostTime> lost;
  std::vector<AppStep> steps;          // whole-application steps with their named cause
  bool weak = false;                   // weak scaling: work grows with the concurrency
  std::vector<std::string> grows_with; // weak: the axes that grow with the concurrency
  std::vector<std::string> sentences;  // the diagnosis in words
  // Each step's lost time over functions and causes (loss_account.hpp); empty without samples.
  std::vector<StepAccount> accounts;
  std::string weak_found;              // weak scaling found from the counted work: the evidence ("" otherwise)
};

// Instruction roofline of a GPU kernel at one configuration.
struct InstructionPoint {
  int kernel = -1, config = -1;
  double warp_gips = kNaN;          // warp instructions / s / 1e9
  double peak_gips = kNaN;          // SMs * 4 schedulers * SM clock
  double ii_global = kNaN;          // global LDST instructions per global transaction
  double ii_shared = kNaN;          // shared LDST instructions per shared transaction
  double ii_l1 = kNaN;              // warp instructions per L1 (global) transaction
  double gtxn_l1 = kNaN, gtxn_l2 = kNaN, gtxn_dram = kNaN;  // bandwidth ceilings in GTXN/s (32-byte transactions)
};

// A ceiling a configuration's roofline used (a kernel's peak, or a level's
// bandwidth that bounds a kernel with counts there), with where it comes
// from and whether it was marked (Ceiling::source, marked): the report's
// "ceilings used", in text, JSON and HTML.
struct CeilingUsed {
  int config = -1;
  Ceiling ceiling;
};
std::vector<CeilingUsed> ceilings_used(const std::vector<Configuration>& configs,
                                       const std::vector<KernelSeries>& kernels);

struct AnalysisResult {
  RunData run;
  std::string axis;                  // "" when no concurrency axis varies
  Thresholds thresholds;
  std::vector<KernelSeries> kernels; // sorted by time share, largest first
  std::vector<Trajectory> trajectories;
  std::vector<AppSummary> summaries;
  std::vector<InstructionPoint> instruction;
  std::vector<std::string> warnings;
  std::vector<std::string> hints;    // how to get a better answer (e.g. --repeat 3)
  // Declared and counted values that differ by more than 10% (dataset.hpp
  // CountsCheck), one sentence per kernel and quantity.
  std::vector<std::string> counts_notes;
  int declared_disagreements = 0;    // of counts_notes, those where a declaration and a count disagree
  // Per configuration with usable counts; and, for the text and HTML, the
  // counted work in sentences, each once with the configurations it holds
  // at: the FLOP mix, the runtimes' share, and every function whose counted
  // code is not its timed code.
  std::vector<CountedWork> counted_work;
  std::vector<std::string> counted_work_notes;
  int vector_bits = 0;               // the machine's widest SIMD registers (0 unknown)
  std::string scaling = "strong";    // strong | weak (as applied)
  bool counts_available = false;     // any kernel has operation counts
  bool mpi = false;                  // some configuration initialised MPI
  ProfileResult profile;             // sampled call paths (profile.cpp); available=false without samples
  std::vector<CeilingUsed> ceilings_used;  // by configuration, in each one's ceiling order
};

AnalysisResult analyze(RunData run, const AnalyzeOptions& options);

// Fills sum.points[].pop's cross-point factors, sum.steps (with their causes)
// and sum.breaks_after (the last point before the first step that loses time).
// With a profile, the samples' shapes join the evidence (serial-fraction).
void summarise_steps(AppSummary& sum, const std::string& axis, int cores, const Thresholds& th,
                     const ProfileResult* profile = nullptr);
// The steps in words: where scaling breaks and why, superlinear and noise steps.
std::vector<std::string> step_sentences(const AppSummary& sum, const std::string& axis, const Thresholds& th);
// A step's causes joined: "computation-scaling + imbalance" (its cause when it has no list).
std::string cause_names(const AppStep& st);

// The "fixed" key of a configuration along an axis: its label without that axis' token.
std::string fixed_key(const Configuration& c, const std::string& axis);

// Performance portability across platforms (one run file each).
struct PortabilityEntry {
  std::string name, kind;
  std::vector<double> efficiency;    // per file: architectural efficiency at the file's largest configuration
  double phi = 0;
  std::string note;                  // why 0, when it is
};
struct PortabilityResult {
  std::vector<std::string> files;
  std::vector<std::string> platforms;   // configuration label used per file
  std::vector<PortabilityEntry> kernels;
  std::vector<std::string> missing;     // kernels not present in every file
};
PortabilityResult portability(const std::vector<AnalysisResult>& runs);

}  // namespace rtrace::analysis
