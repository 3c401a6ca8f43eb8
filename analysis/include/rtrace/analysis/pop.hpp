// Diagnosis of unannotated applications: the MPI window, the POP efficiency
// model, per-call MPI statistics, named causes per scaling step and the
// repeat spread. Everything is computed from what the tracer records for every
// rank (wall, rusage, MPI call totals, the MPI_Init end and MPI_Finalize start),
// so it needs no annotation and no hardware counters.
//
// Model (POP Centre of Excellence; the same as Scalasca, Paraver's basic
// analysis and TALP), per point with n ranks:
//   window W_r   = MPI_Finalize start - MPI_Init end (whole wall without MPI)
//   useful U_r   = W_r - MPI time of rank r inside the window
//   load balance LB  = mean U / max U
//   communication efficiency CommE = max U / max W
//   parallel efficiency PE = LB x CommE = mean U / max W
// and across the points of a scaling group, against its first point:
//   computation scalability CS = (sum U_ref / work_ref) / (sum U / work)
//   global efficiency GE = PE x CS
// Work is constant in strong scaling and proportional to the concurrency in
// weak scaling. With threads (t >= 2 per rank anywhere in a group, or no MPI)
// a thread level joins: the useful thread time V_r of a rank is its CPU time
// less the sampled runtime waits (thread basis "sampled"), or its CPU time
// less its MPI time ("cpu-time"), at most t x U_r;
//   thread efficiency TE = sum V / (t x sum U),  PE = LB x CommE x TE,
//   CS = (sum V_ref / work_ref) / (sum V / work)
// and without MPI PE = TE = sum V / (t x wall). docs/analysis.md.
#pragma once

#include "rtrace/analysis/model.hpp"

#include <rtrace/store/run_file.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rtrace::analysis {

// What one rank recorded, reduced to what the diagnosis needs.
struct RankUsage {
  std::string host;                // where the rank ran (the tracer's hostname)
  // wall_s: the app's, less the tracer's own work where recorded (run-file
  // 1.8); recorded_wall_s as the tracer measured it.
  double wall_s = kNaN, recorded_wall_s = kNaN, user_s = kNaN, system_s = kNaN;
  double involuntary_ctxsw = kNaN, voluntary_ctxsw = kNaN;
  int omp_threads = -1;
  double init_end_s = kNaN;        // from the rank's start to the end of MPI_Init(_thread); NaN: not recorded
  double finalize_start_s = kNaN;  // from the rank's start to the start of MPI_Finalize; NaN: not recorded
  // The process's CPU time at those two moments (run-file 1.9; NaN: not
  // recorded, older files, a rank without Finalize).
  double cpu_at_init_end_s = kNaN, cpu_at_finalize_start_s = kNaN;
  // The CPU time of the MPI window: the thread bases count it, not MPI's
  // start-up and teardown (MPI_Init took 0.08 s of CPU of a 0.58 s OpenMP run
  // here, and counted as useful it read PE 0.84-0.88 for 0.8). NaN where the
  // two are not both recorded.
  double window_cpu_s() const noexcept;
  double mpi_s = 0;                // MPI time excluding Init/Init_thread/Finalize
  double init_s = 0, finalize_s = 0;
  // Hardware counters of the annotated regions (NaN when unavailable).
  double hw_instructions = kNaN, hw_cycles = kNaN, hw_time_s = kNaN;
  // Sampled call paths (empty when not sampled): samples of work (app code and
  // system code it called) and of waiting in a runtime (MPI, OpenMP, the
  // tracer), and the threads that ran app work (any sample of it: OpenMP
  // threads that were never given work have none).
  double samples_work = 0, samples_wait = 0;
  int working_threads = -1;        // -1: not sampled
  int sampled_threads = -1;        // threads with any sample (work or wait), -1: not sampled
  // Whole sampling periods of CPU time the samples do not show (the sampling
  // table's `dropped`: CPU time after a thread's last timer signal, which a
  // busy machine's time slicing makes long, and samples not recorded), and
  // the threads the sampler armed a timer for (the table's `threads`; -1: the
  // rank has no sampling row of a sampler that ran).
  double unsampled_periods = 0;
  int registered_threads = -1;
  // The samples can say which threads ran: they show nearly all the CPU time
  // (under kUnsampledPeriodsTolerated periods missed), or every thread with a
  // timer has samples.
  bool threads_seen() const noexcept;
  bool mpi_initialised = false;    // window fields set or an Init row present
  // rtrace's own work in this rank (run-file 1.8; NaN in older files): the
  // MPI wrappers' bookkeeping, the sampler's signal handler, the tracer's own
  // code the samples saw, the records built at the end; and the part of the
  // first three outside the MPI time the wrappers booked. The analysis takes
  // the first three out of the window (the part inside MPI time out of mpi_s
  // too), so the app's efficiencies are the app's: useful = window - MPI -
  // tracer_outside_mpi_s.
  double tracer_wrapper_s = kNaN, tracer_sampler_s = kNaN, tracer_code_s = kNaN, tracer_exit_s = kNaN;
  double tracer_outside_mpi_s = kNaN;
  double tracer_run_s() const noexcept;  // wrapper + sampler + code while the app ran; 0 when not recorded
  double samples_tracer = 0;       // samples in the tracer's own code (neither work nor wait) where recorded
  // The window of this rank (seconds), less the tracer's own work in it; the
  // whole (app's) wall when MPI is not used.
  double window_s() const noexcept;
  double startup_s() const noexcept;   // exec to the end of MPI_Init (0 without MPI)
  double teardown_s() const noexcept;  // start of MPI_Finalize to exit (0 without MPI)
};

// One MPI function at one point.
struct MpiCallStats {
  std::string name;
  // How its time was measured (run-file 1.8 mpi.time_method: per-call,
  // polling-runs, subsampled; "mixed" when ranks differ; "" in older files).
  std::string time_method;
  std::int64_t estimated_calls = 0;  // calls whose time is a mean, not measured
  std::int64_t calls = 0;
  double time_s = 0;               // summed over ranks
  double bytes = 0;                // sent + received, summed over ranks
  double rank_min_s = kNaN, rank_mean_s = kNaN, rank_max_s = kNaN;  // per-rank time (absent rank = 0)
};

// The node's load during the point besides the app, measured by the launcher
// from outside the app (run-file schema 1.7 `machine_load`; absent before).
struct MachineLoadUsage {
  bool measured = false;
  int cpus = 0;                     // logical CPUs of the node
  double interval_s = kNaN;         // the measured interval (the point's wall time)
  double other_cpu_s = kNaN;        // CPU time of other processes (node busy time - the app's tree)
  double steal_s = kNaN;            // hypervisor steal time
  double tree_cpu_s = kNaN;         // the app's process tree (mpirun, prted, ranks) + rtrace
  double load_average = kNaN;       // 1-minute load average, the larger of start and end
  std::string note;                 // why not measured
};
MachineLoadUsage machine_load_usage(const store::MachineLoadRow& row);

// The usage of one point (one repeat), per rank.
struct PointUsage {
  MachineLoadUsage machine_load;    // set by the reader when the point file has it
  std::vector<RankUsage> ranks;
  std::vector<MpiCallStats> calls;  // sorted by time, largest first; Init/Finalize included
  bool any_mpi_rows = false;        // a row other than Init/Finalize
  bool any_rows = false;            // any MPI row at all
  bool mpi_initialised = false;     // some rank initialised MPI (window fields or an Init row)
  // MPI initialised but the mpi table empty: the calls went around the C
  // interposition layer (e.g. Fortran bindings calling PMPI directly).
  bool calls_not_intercepted() const noexcept { return mpi_initialised && !any_rows; }
};
PointUsage point_usage(const std::vector<store::RankRecords>& ranks);

// point_usage one rank at a time: a point of 10^5 ranks keeps one RankUsage
// per rank and one running sum per MPI function, never the ranks' records.
class PointUsageBuilder {
 public:
  void add(const store::RankRecords& rank);
  PointUsage finish();

 private:
  struct CallFold {
    MpiCallStats stats;
    double rank_min = kNaN, rank_max = kNaN, rank_sum = 0;
    std::size_t ranks_with = 0;  // ranks that called it (the others count 0 s)
  };
  PointUsage out_;
  std::map<std::string, std::size_t> call_index_;
  std::vector<CallFold> calls_;
};

// The ranks of a point grouped by host: is one node slower than the others?
struct NodeUsage {
  std::string host;
  int ranks = 0;
  std::string rank_list;           // "0-3,8"
  double useful_mean_s = kNaN;     // per rank: the MPI window minus MPI time (the wall time without MPI)
  double useful_max_s = kNaN;
  double wall_max_s = kNaN;
};
struct NodeBalance {
  std::vector<NodeUsage> nodes;    // in order of each host's first rank
  // mean over hosts of their mean useful time / the largest one (1: balanced);
  // NaN with fewer than 2 hosts
  double balance = kNaN;
  std::string slowest;             // the host with the largest mean useful time
  double slowest_over_others = kNaN;  // its mean / the mean of the other hosts' means
};
NodeBalance node_balance(const PointUsage& usage, const std::vector<std::int64_t>& rank_ids);

// The POP metrics of one point. Cross-point factors (CS, GE) are filled by pop_scaling.
struct PopPoint {
  std::string basis;                // "mpi" (window and MPI time), "cpu-time" (threads), "" (unavailable)
  // The thread level's useful time (see the header): "sampled", "cpu-time", or
  // "" (no thread level: one thread per rank under MPI, or unavailable).
  std::string thread_basis;
  int workers = 0;                  // ranks x threads
  int threads = 1;                  // threads per rank
  double window_s = kNaN;           // max over ranks
  double wall_s = kNaN;             // max over ranks
  double startup_s = kNaN, teardown_s = kNaN;  // max over ranks
  double init_s = kNaN;             // longest MPI_Init(_thread) call over ranks
  double useful_sum_s = kNaN, useful_max_s = kNaN, useful_mean_s = kNaN;
  double mpi_share = kNaN;          // sum MPI in window / sum window
  double load_balance = kNaN, communication_efficiency = kNaN, parallel_efficiency = kNaN;
  double thread_efficiency = kNaN;  // sum V / (threads x sum U); NaN without a thread level
  double process_useful_sum_s = kNaN;                    // sum U over ranks (window - MPI); cpu-time: wall
  double thread_useful_cpu_s = kNaN;                     // sum V, CPU time less MPI time
  double thread_useful_sampled_s = kNaN;                 // sum V, CPU time less the sampled runtime waits
  double sampled_wait_share = kNaN;                      // sampled runtime waits / all samples
  int working_threads = -1;         // most threads of a rank that ran app work (sampled), -1 unknown
  int sampled_threads = -1;         // most threads of a rank with any sample, -1 unknown
  bool threads_seen = true;         // every rank's samples can say which threads ran (RankUsage::threads_seen)
  double sampled_coverage = kNaN;   // least over ranks: samples / (samples + unsampled periods); NaN: not sampled
  double vcsw_rate = kNaN;          // voluntary context switches per second of wall, mean over ranks
  double vcsw_per_cpu_s = kNaN;     // voluntary context switches per second of CPU time, over all ranks
  double computation_scalability = kNaN, global_efficiency = kNaN;
  double cpu_per_wall = kNaN;       // mean over ranks of (user+system)/wall
  double cpu_utilisation = kNaN;    // sum (user+system) / (sum wall x threads)
  double system_share = kNaN;       // system / (user+system), summed over ranks
  double cpu_s = kNaN;              // sum user+system
  double ivcsw_rate = kNaN;         // involuntary context switches per second of wall, mean over ranks
  // The node's load besides the app (launcher, from outside). taken_share: the
  // share of the point's cores that other processes and steal took:
  //   (max(0, other - (cpus - used) x interval) + steal x used / cpus) / (used x interval),
  // used = min(workers, cpus): other processes first fill the cores the point leaves idle.
  bool load_measured = false;
  double other_share = kNaN, steal_share = kNaN, taken_share = kNaN;
  double other_cpu_s = kNaN, load_average = kNaN;
  double taken_cpu_s = 0;           // the CPU time behind taken_share (core-seconds)
  int load_cpus = 0;
  // Hardware-counter factors of the annotated regions' time against the group's first point:
  // instruction x IPC x frequency scalability = the regions' computation scalability (exact).
  double hw_instructions = kNaN, hw_cycles = kNaN, hw_time_s = kNaN;  // summed over ranks
  double instruction_scalability = kNaN, ipc_scalability = kNaN, frequency_scalability = kNaN;
  // rtrace's own work, summed over ranks (run-file 1.8; NaN where not
  // recorded): its MPI wrappers, sampler handler, own code, the records at
  // the end, and their sum's share of the ranks' wall time. Taken out of the
  // window and the useful time: never the app's loss.
  double tracer_wrapper_s = kNaN, tracer_sampler_s = kNaN, tracer_code_s = kNaN, tracer_exit_s = kNaN;
  double tracer_s = kNaN, tracer_share = kNaN;
  bool mpi_initialised = false, mpi_calls_seen = false, window_measured = false;
};
PopPoint pop_point(const PointUsage& usage, int threads_per_rank);

// Sets PE, TE and the useful time behind CS for a thread basis ("" = none);
// pop_scaling applies one basis to a whole group.
void apply_thread_basis(PopPoint& p, const std::string& thread_basis);

// A configuration's repeats: the representative repeat (median window time)
// supplies all POP values, so the identities hold exactly; the spread is kept.
struct PopConfig {
  PopPoint pop;
  std::vector<MpiCallStats> calls;
  int representative = -1;          // index into the repeats
  double wall_spread = 0;           // (max - min) / median of the wall time over repeats
  int repeats = 0;
};
PopConfig combine_pop(const std::vector<PointUsage>& repeats, int threads_per_rank);

// A step c1 -> c2 of the whole application, decomposed:
//   e = (T1/T2) x (work2/work1) / r, T = the MPI window (mpi basis with the window
//     measured) or the wall time
//     = LB ratio x CommE ratio x TE ratio x CS step               (mpi basis; TE with threads)
//     = PE ratio x CS step                                         (cpu-time basis)
//   wall-clock e = e x startup factor (the window's share of the wall time).
// Each factor < 1 is a loss. Every factor that explains at least the ideal
// tolerance of the time names a cause, largest first; `machine-load` joins
// them on the launcher's evidence. A step is ideal only when every factor is
// within tolerance; factors out of tolerance that cancel are `offsetting`.
// Startup and teardown that grow with the concurrency are the cause `startup`.
struct StepCause {
  std::string cause;                // one of kAppCauses
  double factor = kNaN;             // extra time it explains (1/step factor; machine-load: up to)
  std::string evidence;             // in words
};
struct AppStep {
  int from = -1, to = -1;           // indices into AppSummary::points
  double c1 = kNaN, c2 = kNaN, ratio = kNaN;
  double speedup = kNaN;            // T1/T2 (MPI with a measured window: window times)
  double efficiency = kNaN;         // step efficiency (weak: T1/T2) = LB x CommE x CS factors
  double wall_efficiency = kNaN;    // the same on the wall clock = efficiency x startup factor
  double lb_factor = kNaN, comm_factor = kNaN, cs_factor = kNaN, startup_factor = kNaN, pe_factor = kNaN;
  double te_factor = kNaN;          // thread efficiency ratio (mpi basis with a thread level)
  double spread = 0;                // the larger repeat spread of the two points
  std::string diagnosis;            // ideal | superlinear | noise | loss | offsetting
  std::string cause;                // loss/offsetting: causes.front().cause
  std::vector<StepCause> causes;    // loss/offsetting: every large factor, largest first
  std::string explanation;          // the evidence in one sentence
};
inline constexpr const char* kAppCauses[] = {"imbalance",      "mpi",          "computation-scaling", "startup",
                                             "threads-unused", "lock-wait",    "spin-wait",           "oversubscription",
                                             "machine-load",   "serial-fraction", "slowdown"};

// What the sampled call paths say about a step (analyze.cpp from profile.cpp).
struct SampledStep {
  bool available = false;
  double serial_share = kNaN;       // of the step's lost function time: app functions of shape "constant: serial"
  std::string serial_function;      // the largest of them (short name)
};

// The share of the CPU time the samples must show at both points of a step
// before their shapes (serial functions, threads that waited) join its causes.
inline constexpr double kMinSampledCoverage = 0.8;

struct StepContext {
  int cores = 0;                    // cores the run may use (machine info), 0 unknown
  bool weak = false;
  std::string axis;
  SampledStep sampled;
};
AppStep classify_app_step(const PopPoint& a, const PopPoint& b, double c1, double c2, double t1, double t2,
                          double spread, const StepContext& ctx, const Thresholds& th);

// Cross-point factors against the first point of a group: CS and GE.
// work[i] is the relative amount of work (1 strong; concurrency ratio weak).
void pop_scaling(std::vector<PopPoint*>& points, const std::vector<double>& work);

// The per-call table of a configuration, merged into one row per function.
std::string mpi_call_sentence(const std::vector<MpiCallStats>& calls, double window_sum_s);

}  // namespace rtrace::analysis
