// How one sweep point is launched: the partition it runs on, the command line
// (direct, mpirun or srun) and the app's environment.
#pragma once

#include "rtrace/launcher/environment.hpp"
#include "rtrace/launcher/gpu.hpp"
#include "rtrace/launcher/mps.hpp"
#include "rtrace/launcher/options.hpp"
#include "rtrace/launcher/sweep.hpp"

#include <string>
#include <vector>

namespace rtrace::launcher {

// The hardware slice a point runs on; ceilings are measured per partition.
struct Partition {
  int threads = 1;  // per rank
  int ranks = 1;
  int nodes = 0;    // 0: not set
  int ranks_per_node = 0;  // srun --ntasks-per-node; 0: not set (ranks spread by srun)
  int sms = 0;      // 0: no SM limit; else the SMs GRANTED (requests are snapped)
  std::string sm_method;  // "mps" when sms > 0
  int sm_percentage = 0;  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE under MPS
  // "t4", "r2t1", "n2r4t1", "sm32mps": the ERT cache key (docs/architecture.md).
  std::string name() const;
  bool operator<(const Partition& o) const;
};

enum class LaunchKind { Direct, Mpirun, Srun };
const char* to_string(LaunchKind k) noexcept;  // "none", "mpirun", "srun"

// Per-sweep facts the point commands depend on (found once, before anything runs).
struct LaunchSetup {
  int cores = 1;                  // online CPUs here
  bool in_slurm = false;          // SLURM_JOB_ID set
  // The allocation's nodes (SLURM_JOB_NODELIST expanded), in order: a point
  // of the nodes axis runs on the first `nodes` of them (srun -w), so its
  // ranks, its ERT and a failure check all name the same nodes.
  std::vector<std::string> nodelist;
  int tasks_per_node = 0;         // the allocation's tasks per node (0 unknown)
  int cpus_per_task = 0;          // SLURM_CPUS_PER_TASK (0: not set, Slurm gives each task 1 CPU)
  bool root = false;              // mpirun needs OMPI_ALLOW_RUN_AS_ROOT*
  std::string app_path;           // resolved APP
  std::string mpirun_path, srun_path;
  std::string tracer_mode;        // "none", "cpu", "cuda-trace", "cuda-metrics"
  // sms points: a second run under cuda-metrics for the kernels' counts
  // (inside the partition when CUPTI allows it, else outside: metrics_pass.hpp).
  bool metrics_pass = false;
  bool metrics_required = false;  // --tracer cuda-metrics: a point without counts fails
  std::string tracer_lib;         // librtrace_tracer.so when tracer_mode != none
  std::string counts_mode = "none";  // "sim", "pmu" (RTRACE_COUNTS=pmu in the app's environment) or "none"
  Environment base;               // rtrace's environment
  GpuInfo gpu;
  const MpsDaemon* mps = nullptr; // when the sms axis runs under MPS
};

// Decides the launcher for a point; throws UsageError when a point cannot run
// with the chosen launcher (e.g. ranks=4 with --launcher none).
LaunchKind choose_launch(const SweepPoint& p, const SweepPlan& plan, const RunOptions& o, const LaunchSetup& s);

// The partition of a point: unswept threads come from OMP_NUM_THREADS (--env or
// environment) or the cores available per rank.
Partition partition_of(const SweepPoint& p, const RunOptions& o, const LaunchSetup& s);

struct PointCommand {
  LaunchKind launch = LaunchKind::Direct;
  std::string path;                     // executable to run (app, mpirun or srun)
  std::vector<std::string> argv;
  Environment env;                      // the whole environment of `path`
  std::vector<std::string> app_env;     // NAME=VALUE that rtrace set for the app (for display)
  Partition partition;
  SmPartition sms;                      // when the sms axis is swept
};

// srun's placement of a partition's ranks: "-n R [-N N [--ntasks-per-node=K]
// [-w first N nodes of the allocation]]". Throws UsageError when the
// allocation has fewer nodes than the partition needs.
std::vector<std::string> srun_placement(const Partition& part, const LaunchSetup& s);
// The nodes a partition runs on (first `nodes` of the allocation); empty when
// the partition has no nodes or the allocation's list is unknown.
std::vector<std::string> partition_hosts(const Partition& part, const LaunchSetup& s);

// Builds the command for one point. `trace_dir` is the point's scratch directory.
PointCommand build_point_command(const SweepPoint& p, const SweepPlan& plan, const RunOptions& o,
                                 const LaunchSetup& s, const std::string& trace_dir);

}  // namespace rtrace::launcher
