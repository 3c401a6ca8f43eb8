// The roofline model of one kernel (or annotated region) at one sweep point.
//
// Everything here is pure arithmetic over already-aggregated numbers, so it is
// unit-tested without any file. Units: FLOPs and bytes are counts, times are
// seconds, performance is GFLOP/s (1e9 FLOP/s), bandwidth GB/s (1e9 B/s),
// arithmetic intensity FLOP/byte. Unavailable values are NaN, never guessed.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::analysis {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline bool available(double v) noexcept { return std::isfinite(v); }
// The sum of what is available: one side unavailable gives the other (a
// count missing at one rank does not erase the others').
inline double nan_add(double a, double b) noexcept {
  if (!available(a)) return b;
  if (!available(b)) return a;
  return a + b;
}

// `v` with `precision` significant digits (%g), or "n/a" when unavailable: the
// one number format of the report sentences.
std::string fmt(double v, int precision = 3);

// Bad or unusable input (missing file, not a run file, no complete points,
// bad option values). The CLI maps it to one line on stderr and exit 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Memory levels in canonical order, innermost first. The ceiling that belongs
// to a level is named per device: L1 is "L1d" (CPU) or "L1" (GPU), DRAM is
// "DRAM" (CPU) or "HBM" (GPU).
enum class MemLevel { L1 = 0, L2 = 1, L3 = 2, DRAM = 3 };
inline constexpr int kLevelCount = 4;
inline constexpr std::array<MemLevel, kLevelCount> kAllLevels{MemLevel::L1, MemLevel::L2, MemLevel::L3, MemLevel::DRAM};
const char* level_key(MemLevel level) noexcept;  // "L1", "L2", "L3", "DRAM"
// Maps a ceiling name to its level; false when the name is not a bandwidth level.
bool level_from_ceiling_name(const std::string& name, MemLevel& level) noexcept;

struct Ceiling {
  std::string name;       // "DRAM", "FP64 FMA", ...
  std::string kind;       // "bandwidth" | "compute"
  std::string precision;  // "fp64" | "fp32" | "fp16" | ""
  std::string variant;    // "fma" | "nofma" | "half2" | "mma" | ""
  std::string unit;       // "GB/s" | "GFLOP/s"
  double value = kNaN, min = kNaN, max = kNaN;
  // Not to be trusted: its measurement was marked (ERT's checks, the
  // launcher's, run-file schema 1.5) and nothing better replaced it.
  bool unreliable = false;
  std::string unreliable_reason;  // why it was marked (also when `marked` alone)
  std::string host;               // the node it comes from (schema 1.7): "" for one node; else the slowest
  // Where `value` comes from (run-file schema 1.8): "measured" (the point's
  // own ERT), "reference" (the machine's reference of `reference_date`: the
  // point's own measurement, `measured`, was marked and is not used) or
  // "file" (a file the user gave, --ert FILE). `source_file`: the file the
  // point's ceilings came from (the ERT cache entry or the user's file).
  std::string source = "measured";
  std::string source_file;
  std::string reference_date;
  double measured = kNaN;         // the point's own ERT value (= value unless source is "reference")
  bool marked = false;            // the measurement was marked unreliable (a reference may stand in)
  // (max - min) / value over the ERT repeats; 0 when unknown.
  double relative_spread() const noexcept;
};

// One point's own roofline (from that point's ERT partition).
class CeilingSet {
 public:
  CeilingSet() = default;
  explicit CeilingSet(std::vector<Ceiling> ceilings) : all_(std::move(ceilings)) {}
  const std::vector<Ceiling>& all() const noexcept { return all_; }
  bool empty() const noexcept { return all_.empty(); }
  // The bandwidth ceiling of a level, nullptr when that level was not measured.
  const Ceiling* bandwidth(MemLevel level) const noexcept;
  // The peak for a precision: the highest compute ceiling of that precision,
  // tensor ("mma") ceilings only when `tensor` (a kernel that used tensor cores).
  const Ceiling* peak(const std::string& precision, bool tensor = false) const noexcept;
  // The highest tensor-core ("mma") ceiling of a source precision ("fp16",
  // "fp64"); nullptr when none was measured (the ERT measures no BF16, TF32
  // or FP8 tensor ceiling: such kernels get no compute roof).
  const Ceiling* tensor_peak(const std::string& precision) const noexcept;
  // True when the ceiling called `name` is here and the ERT marked it unreliable.
  bool unreliable(const std::string& name) const noexcept;

 private:
  std::vector<Ceiling> all_;
};

// Tensor-core source types, in KernelRow's order (tensor_ops_fp16 ... _fp8).
inline constexpr int kTensorSourceCount = 5;
const char* tensor_source_key(int source) noexcept;  // "fp16", "bf16", "tf32", "fp64", "fp8"

// Operation counts of one kernel at one point, summed over ranks.
struct Counts {
  double flops_fp64 = kNaN, flops_fp32 = kNaN, flops_fp16 = kNaN;
  double tensor_ops = kNaN;                            // tensor-core math ops (GPU); FLOPs = 2 x this
  // tensor_ops by source type (run files >= 1.8; NaN: not counted).
  std::array<double, kTensorSourceCount> tensor_by_source{kNaN, kNaN, kNaN, kNaN, kNaN};
  // FLOPs whose precision the source cannot tell (AMD's PMU): in the total,
  // in no precision, so they select no compute ceiling.
  double flops_unsplit = kNaN;
  std::array<double, kLevelCount> bytes{kNaN, kNaN, kNaN, kNaN};

  double total_flops() const noexcept;                  // NaN when no precision was counted
  std::string dominant_precision() const;               // precision with most FLOPs ("" if none)
  bool uses_tensor() const noexcept { return available(tensor_ops) && tensor_ops > 0; }
  // The tensor source type with the most ops ("" when none was counted by type).
  std::string tensor_precision() const;
  bool any_bytes() const noexcept;
  // Adds b into this (NaN + x = x: a count present anywhere is present).
  void add(const Counts& b) noexcept;
  void scale(double f) noexcept;
};

// FLOPs by precision and vector width, as the counting pass splits them
// (CountRow::flops_<precision>_<width>): NaN where nothing was counted.
inline constexpr int kMixPrecisionCount = 3;   // fp64, fp32, fp16
inline constexpr const char* kMixPrecisions[kMixPrecisionCount] = {"fp64", "fp32", "fp16"};
inline constexpr int kWidthCount = 4;          // scalar, 128, 256, 512 bits
inline constexpr int kWidthBits[kWidthCount] = {0, 128, 256, 512};  // 0 = scalar
struct FlopMix {
  std::array<std::array<double, kWidthCount>, kMixPrecisionCount> flops{{{kNaN, kNaN, kNaN, kNaN},
                                                                         {kNaN, kNaN, kNaN, kNaN},
                                                                         {kNaN, kNaN, kNaN, kNaN}}};
  void add(const FlopMix& b) noexcept;
  double precision_total(int precision) const noexcept;  // NaN when none counted
  bool any() const noexcept;                              // some FLOP counted at some width
};

// GPU instruction counters of one kernel at one point (sums over ranks).
struct InstructionCounts {
  double warp_instructions = kNaN;
  double global_ldst_instructions = kNaN;
  double shared_ldst_instructions = kNaN;
  double global_transactions = kNaN;
  double shared_transactions = kNaN;
  double sm_clock_hz = kNaN;   // mean over launches with metrics
  bool available() const noexcept { return rtrace::analysis::available(warp_instructions); }
};

// One kernel at one configuration, aggregated over ranks and repeats.
struct KernelAtPoint {
  std::string name;
  std::string kind;            // "region" | "gpu-kernel" | "application" | "function" (the last two counted)
  Counts counts;               // summed over ranks (launches with metrics only, for GPU kernels)
  // Where the counts come from: "annotation" (rtrace_region_counts), "pmu:..."
  // (hardware counters), "sim:..." (the counting pass), "cupti"; "" when none.
  std::string counts_source;
  double counted_instructions = kNaN;  // counted instructions (counting pass / PMU), summed over ranks
  InstructionCounts instructions;
  double time_s = kNaN;        // slowest rank's total time (bulk synchronous), median over repeats
  double counts_time_s = kNaN; // slowest rank's time of the launches the counts cover
  double mean_rank_time_s = kNaN;  // mean over all ranks of the point (absent rank = 0)
  double imbalance = kNaN;     // max/mean - 1 over ranks
  double time_spread = 0;      // (max - min) / median of time_s over repeats
  int repeats = 1;
  std::int64_t calls = 0;      // calls or launches, summed over ranks
  int ranks_present = 0;
  double mean_launch_s = kNaN; // GPU: mean duration of one launch
  double mean_blocks = kNaN;   // GPU: mean grid size (blocks) per launch
  double metric_coverage = kNaN;  // GPU: fraction of launches with metrics
  // GPU: how the counts were obtained (KernelRow::metrics_provenance: "whole
  // device", "in-partition", "replayed outside the partition"; "mixed" when
  // ranks or launches differ; "" without counts).
  std::string metrics_provenance;
  // Counted kinds: FLOPs by precision and vector width (counted_work.hpp).
  FlopMix mix;
  // The counted application: the counts of the functions that do its FLOPs
  // (each at least kWorkFlopShare of them). A fall of AI that this code does
  // not share is traffic in code without FLOPs (start-up, the loader, exit
  // write-backs, halo copies), which every process repeats: no capacity loss.
  Counts work_counts;
  // Counted functions: why the counted code is not the code the timed run ran
  // here ("timed `k_PRESCOTT` 61% of samples, counted `k_HASWELL` ..."); such
  // a point has no rate and its steps no verdict. "" when they match.
  std::string code_note;
};

inline constexpr double kWorkFlopShare = 0.01;

// Counted code with fewer FLOPs than this per instruction does no floating
// point to speak of (an integer hash probe's 4 FLOPs in libgomp, issue 39):
// its work is its instructions, its intensity bytes per instruction.
inline constexpr double kFlopLessPerInstruction = 1e-3;
bool flop_less(const KernelAtPoint& k) noexcept;
// Bytes per counted instruction at each level (NaN where either is not counted):
// the intensity of code without FLOPs, inverted to read like traffic.
std::array<double, kLevelCount> bytes_per_instruction(const KernelAtPoint& k) noexcept;

// Joins two provenance words of one kernel ("" is no information).
inline std::string merge_provenance(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty() || a == b) return a;
  return "mixed";
}

// The model evaluated for one kernel at one point.
struct RooflineEval {
  double flops = kNaN;          // total FLOPs
  double gflops = kNaN;         // P = F / T
  std::array<double, kLevelCount> ai{kNaN, kNaN, kNaN, kNaN};          // F / B_L
  std::array<double, kLevelCount> level_bound{kNaN, kNaN, kNaN, kNaN}; // beta_L * AI_L, GFLOP/s
  std::string precision;        // precision whose peak applies
  std::string peak_name;        // "FP64 FMA"
  double peak_gflops = kNaN;    // Pi
  double bound_gflops = kNaN;   // R = min(Pi, min_L beta_L AI_L)
  double efficiency = kNaN;     // eta = P / R
  std::string binding;          // "compute", a level key ("DRAM"), or "" when unknown
  std::string binding_ceiling;  // the ceiling's own name ("HBM", "FP64 FMA")
  // Code without FLOPs to speak of (flop_less): no FLOP roofline; its steps
  // are judged by bytes per instruction.
  bool flop_less = false;
  bool counts_available() const noexcept { return !flop_less && available(flops) && flops > 0; }
  bool compute_bound() const noexcept { return binding == "compute"; }
};

RooflineEval evaluate(const KernelAtPoint& k, const CeilingSet& ceilings);

// Thresholds of the step classifier. Defaults are justified in docs/analysis.md.
struct Thresholds {
  double ideal_tolerance = 0.10;     // step efficiency S/r >= 1 - tol is ideal
  double superlinear_margin = 0.10;  // S/r > 1 + margin is superlinear
  double ai_drop = 0.20;             // tau: AI ratio < 1 - tau is a cache-capacity loss
  double ai_rise = 0.20;             // AI ratio > 1 + this counts as rising (superlinear evidence)
  double on_ceiling = 0.80;          // eta >= this: the kernel sits on its binding ceiling
  double cause_min = 0.05;           // a cause must explain >= 5% more time to be named
  double launch_floor_s = 10e-6;     // GPU launches shorter than this are launch-overhead bound
  double tail_efficiency = 0.80;     // last-wave fill below this is a tail effect
  double mpi_share_rise = 0.05;      // MPI share rising by 5 points of wall time is MPI evidence
  double load_share = 0.15;          // other processes + steal took >= 15% of a point's cores: machine-load
  double work_change = 0.10;         // counted FLOPs changing by more than this between strong-scaling points: work-changed
  double headline_share = 0.25;      // a cause must explain this share of a step's lost time to be its headline
  void validate() const;             // throws InputError naming the bad value
};

// Speedup decomposition of one step c1 -> c2:
//   ln S = ln(ceiling ratio) + ln(AI ratio) + ln(efficiency ratio)
// taken at the binding level of c2 (memory bound), or
//   ln S = ln(peak ratio) + ln(efficiency ratio)     (compute bound; AI ratio = 1).
// The efficiencies are relative to that same ceiling at both points, so the
// identity is exact even when c1 was bound elsewhere.
struct StepFactors {
  std::string basis;              // level key or "compute"; "" when counts are unavailable
  std::string basis_ceiling;      // the ceiling's name at c2
  double ceiling_ratio = kNaN;
  double ai_ratio = kNaN;
  double efficiency_ratio = kNaN;
};
StepFactors decompose(const RooflineEval& a, const RooflineEval& b, const CeilingSet& ca, const CeilingSet& cb);

// Evidence for the "other" causes, per point.
struct StepEvidence {
  double imbalance = kNaN;       // lambda of the kernel
  double mpi_share = kNaN;       // the application's MPI share of wall time
  double mean_launch_s = kNaN;
  double mean_blocks = kNaN;
  double sms = kNaN;             // SMs available (GPU points)
  // Share of the point's cores other processes (and steal) took, measured by
  // the launcher from outside the app (PopPoint::taken_share); NaN unmeasured
  // and for GPU kernels (their ceilings are the GPU's, not the cores').
  double machine_load = kNaN;
  // Bytes of each cache (by level: L1d, L2, L3) that one worker of the point
  // has to itself in the counting pass's simulation: a private cache whole,
  // a shared one over the workers sharing it (count_levels, run-file schema
  // 1.7+); NaN where unknown (no counting pass: PMU, annotations, GPUs). A
  // cache whose room per worker did not shrink cannot have run out of it.
  std::array<double, kLevelCount> cache_per_worker{kNaN, kNaN, kNaN, kNaN};
};

// work-changed and code-differs are no roofline verdict: the two points did
// not count the same work, or the counted code is not the timed code.
inline constexpr const char* kDiagnosisLabels[] = {"ideal",       "cache-capacity", "bandwidth-contention",
                                                   "compute-bound", "superlinear", "other",
                                                   "work-changed", "code-differs"};
// The last six come from the loss account (loss_account.hpp), which names
// the application's step by the cause that explains the most lost seconds.
inline constexpr const char* kCauseLabels[] = {"imbalance",       "mpi",        "serial-fraction", "launch-overhead",
                                               "tail-effect",     "slowdown",   "machine-load",    "work-grew",
                                               "runtime-wait",    "replicated-work", "contention", "computation-scaling",
                                               "off-cpu"};

struct StepDiagnosis {
  double concurrency_ratio = kNaN;  // r = c2 / c1
  double speedup = kNaN;            // S = P2/P1 (counts) or T1/T2 (time only)
  double step_efficiency = kNaN;    // S / r
  double karp_flatt = kNaN;         // (1/S - 1/r) / (1 - 1/r)
  StepFactors factors;
  std::string diagnosis;            // one of kDiagnosisLabels
  std::string level;                // cache-capacity: the level whose AI fell (ceiling name)
  // cache-capacity: the cache that no longer holds the working set, the level
  // above `level` (DRAM AI falls: "L3"; L3 AI falls: "L2"). Never from the
  // L1 AI: more loads and stores per FLOP is no capacity loss.
  std::string cache;
  std::string cause;                // other: one of kCauseLabels
  std::string explanation;          // the evidence in words
  // cache-capacity: the intensity ratio at `level` (c2 over c1, < 1), of
  // FLOPs per byte or, for code without FLOPs, instructions per byte
  // (`intensity` "instructions"); the loss account gives it its seconds.
  double capacity_ratio = kNaN;
  std::string intensity = "FLOPs";
  // The larger of the two points' measured machine load (StepEvidence), NaN
  // when neither was measured. At Thresholds::load_share or more the step is
  // never bandwidth-contention or compute-bound: other processes shared the
  // ceiling the app was measured against (issue 30).
  double machine_load = kNaN;
};

// Tail efficiency of a grid: the fill of its last wave, assuming one resident
// block per SM (the conservative case the counters let us check).
double tail_efficiency(double blocks, double sms) noexcept;

// The uncertainty of a step's ceiling ratio: the relative spreads of the
// basis ceiling at both points added (0 when unknown). A step whose loss is
// within it cannot be told from ceiling noise.
double ceiling_ratio_noise(const CeilingSet& c1set, const CeilingSet& c2set, const std::string& ceiling_name);
// The cache whose capacity a fall of AI at level `level_index` (0 = L1 ...
// 3 = DRAM) points to: the nearest level above it that the ceilings measure
// ("L3" above DRAM on a CPU, "L2" above HBM on a GPU); "" above L1 (no cache
// holds the working set there: registers are no cache).
std::string cache_above(int level_index, const CeilingSet& c1set, const CeilingSet& c2set);
// "the DRAM ceiling is unreliable (reason)" when that ceiling is unreliable at
// either point, else "".
std::string unreliable_ceiling_note(const CeilingSet& c1set, const CeilingSet& c2set, const std::string& ceiling_name);

StepDiagnosis classify_step(const KernelAtPoint& k1, const KernelAtPoint& k2, const RooflineEval& e1,
                            const RooflineEval& e2, const CeilingSet& c1set, const CeilingSet& c2set,
                            double c1, double c2, const StepEvidence& ev1, const StepEvidence& ev2,
                            const Thresholds& th);

// Steps of counted kernels (application, function) that get no roofline
// verdict, checked before classify_step: `code-differs` where either point's
// counted code is not its timed code (KernelAtPoint::code_note), and, in
// strong scaling, `work-changed` where the counted FLOPs differ by more than
// th.work_change ("the work itself changed (FLOPs 1.14e+09 -> 2.87e+09)"):
// their speedup is the time ratio, the one the scaling chart shows. Returns
// false (d untouched) for a step the roofline may judge.
bool unmatched_step(const KernelAtPoint& k1, const KernelAtPoint& k2, const RooflineEval& e1, const RooflineEval& e2,
                    double c1, double c2, bool weak, const Thresholds& th, StepDiagnosis& d);

// Karp-Flatt experimentally determined serial fraction for speedup S on p-fold concurrency.
double karp_flatt(double speedup, double p) noexcept;

// Performance portability (Pennycook et al.): harmonic mean of efficiencies,
// 0 if the kernel is unsupported (efficiency unavailable or 0) on any platform.
double performance_portability(const std::vector<double>& efficiencies) noexcept;

}  // namespace rtrace::analysis
