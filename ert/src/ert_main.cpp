// `rtrace ert`: measure the empirical roofline of one partition (N threads,
// N ranks or N SMs) and write it as an ERT file, roofline.json and a table.
#include "cli/subcommands.hpp"

#include "rtrace/ert/ceilings.hpp"
#include "rtrace/ert/consistency.hpp"
#include "rtrace/ert/cpu_kernels.hpp"
#include "rtrace/ert/cpu_runner.hpp"
#include "rtrace/ert/gpu.hpp"
#include "rtrace/ert/rank_group.hpp"
#include "rtrace/ert/reference.hpp"
#include "rtrace/ert/report.hpp"
#include "rtrace/store/run_file.hpp"

#include <boost/program_options.hpp>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace po = boost::program_options;

namespace rtrace::ert {
namespace {

constexpr int kExitUsage = 2;
constexpr int kExitFailure = 1;

// A usage problem: one line on stderr, exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  int threads = 0;  // 0 = all allowed CPUs
  int ranks = 0;    // 0 = the MPI world size (1 without MPI)
  int sms = 0;      // > 0: GPU run
  bool mps = false; // the SMs are limited from outside, by MPS
  bool quick = false;
  bool quiet = false;
  std::string output, json;
  std::vector<Precision> precisions;
  bool tensor_cores = true;
  bool list_gpus = false;
  bool per_node = false;  // each node measures its own ranks; the file keeps every node's ceilings
  bool use_reference = true;  // judge against, and update, the machine's reference (reference.hpp)
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::string join_command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

double read_cpu_mhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double sum = 0;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("cpu MHz", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        sum += std::atof(line.c_str() + colon + 1);
        ++n;
      }
    }
  }
  return n ? sum / n : std::nan("");
}

// Seconds since this process started (exec): what loading the binary and
// its libraries took before main, on the first run after idle too (NaN
// when /proc is not readable). /proc/self/stat field 22 is the start time in
// clock ticks since boot.
double seconds_since_process_start() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  std::getline(in, stat);
  const auto close = stat.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return std::nan("");
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) {
      timespec now{};
      clock_gettime(CLOCK_BOOTTIME, &now);
      const double ticks = double(sysconf(_SC_CLK_TCK));
      return double(now.tv_sec) + 1e-9 * double(now.tv_nsec) - std::atof(field.c_str()) / ticks;
    }
  return std::nan("");
}

double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024.0;
  return 0;
}

void print_help(const po::options_description& desc) {
  std::cout << "usage: rtrace ert [--threads N] [--ranks N] [--sms N] [--quick] [-o FILE] [--json FILE]\n"
               "       rtrace ert --list-gpus\n\n"
               "Measures the empirical roofline (bandwidth per memory level, FLOP peaks per precision)\n"
               "of one partition: N CPU threads (pinned), N MPI ranks (run under mpirun), or N SMs of a GPU.\n\n"
            << desc
            << "\nKernels (ERT 1.1.0): per element `beta = beta*A[i] + alpha` F/2 times (F = 1..1024 FLOPs),\n"
               "2*sizeof(T) bytes per element and trial. Ceilings: bandwidth the median over repeats, FLOPs the\n"
               "median of the high-F runs of all repeats (spread over the run; min/max kept). A ceiling below the best this machine and partition\n"
               "measured before (the machine's reference, in the rtrace cache) is marked unreliable and the reference\n"
               "used; --no-reference measures without it.\n"
               "\nDurations, measured (bench/ert_speed.sh and bench/ert_trust.sh measure them on your node):\n"
               "  2-core AMD EPYC VM (2026-11-25, the ERT given most of the CPUs): 2 threads quick 0.7-1.7 s,\n"
               "  full 4.9 s; 2 ranks x 1 thread (mpirun --bind-to none, its ~0.5 s start included) quick\n"
               "  1.4 s, full 5.5 s. The same VM at load average 9-16 without that: quick 20-25 s.\n"
               "  A busy node costs redone runs (preempted threads) and re-measurements of the\n"
               "  inconsistent levels; the result says so (runs_preempted, unreliable ceilings).\n";
}

Options parse(int argc, char** argv, bool& help) {
  Options o;
  std::string precision;
  po::options_description desc("options");
  desc.add_options()                                                                   //
      ("help,h", "show this help")                                                     //
      ("threads,t", po::value<int>(&o.threads), "CPU threads per rank (default: all allowed cores)")  //
      ("ranks,r", po::value<int>(&o.ranks), "MPI ranks (start under mpirun -np N)")   //
      ("sms", po::value<int>(&o.sms), "measure a GPU partition of N SMs (green context)")  //
      ("mps", po::bool_switch(&o.mps),
       "with --sms N: run as an MPS client (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, set by `rtrace run`) on the N SMs "
       "MPS grants, instead of a green context")  //
      ("quick,q", po::bool_switch(&o.quick), "reduced sweep, for sweeps and tests (durations below)")  //
      ("output,o", po::value<std::string>(&o.output), "write the ERT file (HDF5)")    //
      ("json", po::value<std::string>(&o.json), "write ERT-1.1.0-style roofline.json")  //
      ("precision", po::value<std::string>(&precision),
       "comma list: fp64,fp32 (CPU); fp64,fp32,fp16,tc (GPU); default: all")           //
      ("quiet", po::bool_switch(&o.quiet), "no table on stdout")  //
      ("no-reference", "neither judge the ceilings against the machine's reference (the best this machine and "
                       "partition measured before, kept in the rtrace cache: $RTRACE_CACHE_DIR, $XDG_CACHE_HOME/rtrace "
                       "or ~/.cache/rtrace) nor update it")  //
      ("per-node", po::bool_switch(&o.per_node),
       "ranks on several nodes: each node measures its own ranks (its slice), all nodes at once; /ert/node_ceilings "
       "keeps every node's ceilings, /ert/ceilings is the slowest node's times the nodes")  //
      ("list-gpus", po::bool_switch(&o.list_gpus),
       "list the CUDA devices (name, SMs, clocks, memory, compute capability, L2, spec bandwidth) and exit");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    print_help(desc);
    help = true;
    return o;
  }
  o.use_reference = vm.count("no-reference") == 0;
  if (vm.count("threads") && o.threads < 1)
    throw UsageError("--threads must be at least 1 (got " + std::to_string(o.threads) + ")");
  if (vm.count("ranks") && o.ranks < 1)
    throw UsageError("--ranks must be at least 1 (got " + std::to_string(o.ranks) + ")");
  if (vm.count("sms") && o.sms < 1) throw UsageError("--sms must be at least 1 (got " + std::to_string(o.sms) + ")");
  if (o.mps && o.sms < 1) throw UsageError("--mps needs --sms N (the SM count MPS grants)");
  if (o.mps && !std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"))
    throw UsageError("--mps: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is not set (`rtrace run --sweep sms=...` sets it)");
  if (o.per_node && o.sms > 0) throw UsageError("--per-node measures CPU ranks; it cannot be combined with --sms");
  if (o.sms > 0 && (vm.count("threads") || vm.count("ranks")))
    throw UsageError("--sms measures a GPU partition; it cannot be combined with --threads or --ranks");
  if (!precision.empty()) {
    o.tensor_cores = false;
    for (const std::string& p : split(precision, ',')) {
      if (p == "tc") {
        o.tensor_cores = true;
        continue;
      }
      try {
        o.precisions.push_back(precision_from_string(p));
      } catch (const std::invalid_argument&) {
        throw UsageError("--precision: unknown precision `" + p + "` (expected fp64, fp32, fp16 or tc)");
      }
    }
    if (o.sms == 0) {
      for (Precision p : o.precisions)
        if (p == Precision::FP16) throw UsageError("--precision fp16 needs a GPU (--sms N); the CPU kernels are fp64 and fp32");
      if (o.tensor_cores) throw UsageError("--precision tc needs a GPU (--sms N)");
    }
  } else {
    o.precisions = o.sms > 0 ? std::vector<Precision>{Precision::FP64, Precision::FP32, Precision::FP16}
                             : std::vector<Precision>{Precision::FP64, Precision::FP32};
  }
  return o;
}

// Writes the requested outputs and prints the table (rank 0 only).
void emit(const Options& o, const ErtReport& report) {
  if (!o.output.empty()) write_ert_file(o.output, report);
  if (!o.json.empty()) write_text_file(o.json, roofline_json(report).dump(2) + "\n");
  if (!o.quiet) {
    std::cout << format_summary(report);
    if (!o.output.empty()) std::cout << "  wrote " << o.output << "\n";
    if (!o.json.empty()) std::cout << "  wrote " << o.json << "\n";
    std::cout.flush();
  }
}

int run_gpu(const Options& o, const std::string& command_line) {
  require_gpu();  // GpuUnavailable -> "no GPU found (...)"
  if (!o.output.empty()) check_output_writable(o.output, "output file");
  if (!o.json.empty()) check_output_writable(o.json, "JSON file");
  GpuRunOptions g;
  g.sms_requested = o.sms;
  g.partition_by_mps = o.mps;
  g.quick = o.quick;
  g.precisions = o.precisions;
  g.tensor_cores = o.tensor_cores;
  GpuRunResult r = run_gpu_ert(g);

  ErtReport report;
  report.device = "gpu";
  report.threads = 0;
  report.ranks = 1;
  report.sms_requested = r.sms_requested;
  report.sms_achieved = r.sms_achieved;
  report.quick = o.quick;
  report.command_line = command_line;
  report.machine = store::describe_this_machine();
  if (report.machine.gpus.empty()) report.machine.gpus.push_back(r.gpu);
  report.samples = std::move(r.samples);
  PlateauOptions popt;
  popt.min_points = o.quick ? 2 : 3;
  report.analysis = derive_ceilings(report.samples, r.levels, popt);
  report.wall_seconds = r.seconds;
  report.text_attributes = r.text_attributes;
  report.number_attributes = r.number_attributes;
  report.number_attributes.emplace_back("sms_granted", double(r.sms_granted));
  for (const std::string& w : r.warnings) report.analysis.notes.push_back("warning: " + w);
  emit(o, report);
  return 0;
}

int run_cpu(Options o, int& argc, char**& argv, const std::string& command_line) {
  // Ranks: only under an MPI launcher (mpirun/srun start the processes).
  std::unique_ptr<RankGroup> group;
  const bool under_mpi = launched_by_mpi();
  if (o.ranks > 1 && !under_mpi)
    throw UsageError("--ranks " + std::to_string(o.ranks) + " needs an MPI launch: run `mpirun -np " +
                     std::to_string(o.ranks) + " --bind-to none rtrace ert --ranks " + std::to_string(o.ranks) +
                     " ...`");
  if (under_mpi && mpi_available()) group = make_mpi_rank_group(argc, argv);
  else if (o.ranks > 1) throw UsageError("--ranks needs MPI support, and this rtrace was built without MPI");
  else group = make_single_rank_group();
  const bool world_root = group->rank() == 0;

  // Every rank must agree on errors before any collective call.
  std::string error;
  int error_code = 0;
  try {
    if (o.ranks > 0 && o.ranks != group->size())
      throw UsageError("--ranks " + std::to_string(o.ranks) + " but the MPI launch started " +
                       std::to_string(group->size()) + " processes");
    if (world_root && !o.output.empty()) check_output_writable(o.output, "output file");
    if (world_root && !o.json.empty()) check_output_writable(o.json, "JSON file");
  } catch (const UsageError& e) {
    error = e.what();
    error_code = kExitUsage;
  } catch (const OutputError& e) {
    error = e.what();
    error_code = kExitUsage;
  }
  if (group->any(error_code != 0)) {
    if (world_root && !error.empty()) std::fprintf(stderr, "rtrace ert: %s\n", error.c_str());
    return error_code ? error_code : kExitUsage;
  }
  const int world_ranks = group->size();
  // --per-node: the ranks of each node measure as a world of their own (all
  // nodes at once), and the nodes' results meet on world rank 0 at the end.
  const int nodes_of_world = o.per_node ? group->node_count() : 1;
  std::unique_ptr<RankGroup> node;
  if (o.per_node) node = group->node_group();
  RankGroup& measuring = node ? *node : *group;
  const bool root = measuring.rank() == 0;
  const int ranks = measuring.size();

  const auto started = std::chrono::steady_clock::now();
  const double before_main_s = seconds_since_process_start();
  const std::vector<int> cpus = allowed_cpus();
  const int threads = o.threads > 0 ? o.threads : int(cpus.size());
  const char* bind_env = std::getenv("OMP_PROC_BIND");
  const bool openmp_binds = bind_env && std::string(bind_env) != "false" && std::string(bind_env) != "FALSE";
  if (root && !openmp_binds && threads > int(cpus.size()))
    std::fprintf(stderr, "rtrace ert: warning: %d threads on %zu allowed CPUs: threads share cores, ceilings will be low\n",
                 threads, cpus.size());

  store::MachineInfo machine = store::describe_this_machine();
  // The partition: threads x ranks processing units (one node assumed for
  // cache capacities; on several nodes each node's caches add up the same way).
  const int pus = threads * ranks;
  // In a VM the host's caches may be larger than the guest's (levels.hpp).
  const bool virtual_machine = running_in_virtual_machine();
  std::vector<MemoryLevel> levels = memory_levels(machine.caches, pus, virtual_machine);

  CpuPlanInputs in;
  in.threads = threads;
  in.ranks = ranks;
  in.quick = o.quick;
  in.precisions = o.precisions;
  for (const auto& c : machine.caches)
    if (store::get_str(c.name) == "L1d") in.l1_bytes_per_thread = double(c.size_bytes) / std::max(c.shared_by, 1);
  in.llc_capacity_bytes = levels.size() >= 2 ? levels[levels.size() - 2].capacity_bytes : 32.0 * 1048576;
  in.dram_start_bytes = level_range(levels, levels.size() - 1).low;
  // At most half the available memory for the working set of all ranks.
  in.max_working_set_bytes = 0.5 * available_memory_bytes();
  // The one-worker reference of the plausibility checks (consistency.hpp):
  // thread 0 of rank 0 alone, near the end of the plan (before the last
  // group of FLOP repeats).
  std::vector<MemoryLevel> one_worker_levels = memory_levels(machine.caches, 1, virtual_machine);
  std::vector<Measurement> one_worker_plan;
  if (pus > 1)
    one_worker_plan = make_one_worker_plan(
        o.precisions, one_worker_working_sets(one_worker_levels, in.max_working_set_bytes),
        flop_elements_per_worker(in, Precision::FP64, kernel_block_elements(Precision::FP64)),
        flop_elements_per_worker(in, Precision::FP32, kernel_block_elements(Precision::FP32)),
        kernel_block_elements(Precision::FP64));
  const std::vector<Measurement> plan = make_cpu_plan(in, kernel_block_elements(Precision::FP64),
                                                      kernel_block_elements(Precision::FP32), one_worker_plan);

  const double mhz_before = read_cpu_mhz();
  const TrialPolicy policy = default_policy(o.quick);
  const bool debug = std::getenv("RTRACE_ERT_DEBUG") != nullptr;
  auto phase = [&](const char* what) {  // where the time goes (RTRACE_ERT_DEBUG)
    if (debug && root)
      std::fprintf(stderr, "ert phase: %s at %.3f s\n", what,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  };
  auto since_start = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  if (debug && root && std::isfinite(before_main_s))
    std::fprintf(stderr, "ert phase: process started %.3f s before\n", before_main_s);
  phase("plan ready");
  const double plan_ready_s = since_start();
  // In a VM the sweep finds where DRAM's range starts (sweep.hpp DramSearch).
  DramSearch dram_search;
  dram_search.earliest_bytes = dram_search_earliest_bytes(levels, virtual_machine);
  dram_search.latest_bytes = in.dram_start_bytes;
  if (levels.size() >= 2) {
    const LevelRange llc = level_range(levels, levels.size() - 2);
    dram_search.llc_low_bytes = llc.low;
    dram_search.llc_high_bytes = llc.high;
  }
  dram_search.points = o.quick ? 2 : 4;
  dram_search.block_elements = std::int64_t(kernel_block_elements(Precision::FP64));
  CpuRunResult run = run_cpu_plan(plan, policy, threads, measuring, dram_search);
  std::string dram_range_basis;
  if (run.dram_start_found_bytes > 0) {
    start_dram_range_at(levels, run.dram_start_found_bytes);
    start_dram_range_at(one_worker_levels, run.dram_start_found_bytes);
    char text[256];
    std::snprintf(text, sizeof text,
                  "measured: the bandwidth stopped falling from %.0f MiB on, at most %.2fx the last cache's %.1f GB/s "
                  "(a guest does not see its host's caches)",
                  run.dram_start_found_bytes / 1048576.0, dram_search.below_llc, run.llc_gbytes_per_s);
    dram_range_basis = text;
  } else {
    char text[256];
    std::snprintf(text, sizeof text, "%.0fx the last cache's capacity%s",
                  levels.size() >= 2 && levels[levels.size() - 2].capacity_bytes > 0
                      ? in.dram_start_bytes / levels[levels.size() - 2].capacity_bytes
                      : 4.0,
                  dram_search.earliest_bytes > 0 ? " (in a VM: no flat bandwidth below the LLC's found before it)" : "");
    dram_range_basis = text;
  }
  if (debug && root) {
    std::fprintf(stderr, "ert phase: buffers ready at %.3f s\n", plan_ready_s + run.setup_seconds);
    std::fprintf(stderr, "ert phase: clock steady at %.3f s (%.2f GHz%s)\n",
                 plan_ready_s + run.setup_seconds + run.clock.seconds, run.clock.ghz,
                 run.clock.steady ? "" : ", never steady");
    std::fprintf(stderr, "ert phase: first-touching memory during the sweep took %.3f s; DRAM's range: %s\n",
                 run.first_touch_seconds, dram_range_basis.c_str());
  }
  phase("sweep done");
  // Physical consistency: every rank holds the same samples, so every rank
  // takes the same re-measure decisions (the re-measurement is collective).
  ConsistencyLimits limits;
  const int nodes = std::max(1, (ranks + measuring.local_size() - 1) / std::max(1, measuring.local_size()));
  const int cores = machine.cores > 0 ? std::min(pus, machine.cores * nodes) : pus;
  const double ghz = peak_clock_ghz(mhz_before, limits.peak_basis);
  limits.peak_basis = std::to_string(cores) + " cores x " + std::to_string(cpu_kernel_vector_bytes() * 8) +
                      "-bit SIMD x 2 FMA pipes x " + limits.peak_basis;
  limits.fp64_peak_gflops = theoretical_cpu_peak_gflops(Precision::FP64, cores, cpu_kernel_vector_bytes(), ghz);
  limits.fp32_peak_gflops = theoretical_cpu_peak_gflops(Precision::FP32, cores, cpu_kernel_vector_bytes(), ghz);
  // Every rank reads its own node's table; rank 0's counts for all nodes.
  const double node_dram_gbs = measuring.allgather(smbios_memory_peak_gbs_of_this_node(limits.dram_peak_basis))[0];
  limits.dram_peak_gbs = node_dram_gbs * nodes;
  if (nodes > 1 && node_dram_gbs > 0) limits.dram_peak_basis = std::to_string(nodes) + " nodes x " + limits.dram_peak_basis;
  limits.workers = pus;
  limits.one_worker_levels = one_worker_levels;
  RetryPolicy retry;
  retry.max_remeasures = o.quick ? 1 : 2;
  if (machine_was_busy(run.runs, run.runs_redone))
    retry.busy = std::to_string(run.runs_redone) + " of " + std::to_string(run.runs) + " runs redone";
  PlateauOptions popt;
  popt.min_points = o.quick ? 2 : 3;
  auto remeasure = [&](const RemeasureRequest& request) {
    // Only the violating levels' working sets (the DRAM-sized ones are most
    // of a sweep's time), with the reference's of the same series; the
    // working set as the samples count it.
    phase(request.series == Series::Bandwidth ? "re-measuring bandwidth" : "re-measuring FLOPs");
    std::vector<Measurement> subset;
    for (const Measurement& m : run.measured) {
      Sample as_sample;
      as_sample.series = m.series;
      as_sample.working_set_bytes = measurement_working_set_bytes(m, threads, ranks);
      if (request.covers(as_sample)) subset.push_back(m);
    }
    CpuRunResult again = run_cpu_plan(subset, policy, threads, measuring);
    run.runs += again.runs;
    run.runs_redone += again.runs_redone;
    run.runs_skewed += again.runs_skewed;
    run.kept_disturbed += again.kept_disturbed;
    return std::move(again.samples);
  };
  auto pause = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };
  CheckedCeilings checked = derive_checked_ceilings(run.samples, levels, popt, limits, retry, remeasure, pause);
  phase("checked");
  const double mhz_after = read_cpu_mhz();
  if (!root && !o.per_node) return 0;

  ErtReport report;
  report.device = "cpu";
  report.threads = threads;
  report.ranks = ranks;
  report.quick = o.quick;
  report.command_line = command_line;
  report.machine = std::move(machine);
  report.samples = std::move(run.samples);
  report.analysis = std::move(checked.analysis);
  mark_if_disturbed(report.analysis, run.runs, run.runs_redone);
  // The machine's own history (issue 32): a whole run that was slower than
  // this machine has shown it can be is marked, and every marked ceiling
  // takes the reference. One node's partitions only (a --per-node run keeps
  // every node's own ceilings).
  std::string reference_file;
  if (o.use_reference && !o.per_node) {
    const ReferenceKey key = reference_key(report.machine, threads, ranks,
                                           std::string(cpu_kernel_isa()) + " x" +
                                               std::to_string(kernel_block_elements(Precision::FP64)));
    reference_file = reference_path(store::cache_dir(std::getenv("RTRACE_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                                                     std::getenv("HOME")),
                                    key);
    std::string problem;
    MachineReference reference = read_reference(reference_file, problem);
    if (!problem.empty()) report.analysis.notes.push_back("warning: " + problem);
    // A reference above what the hardware can do (a shared cache written by
    // someone else, an older rtrace) would stand in for every measurement.
    auto bound = [&](const ReferenceCeiling& r) {
      if (r.kind == "compute" && r.name.rfind("FP64", 0) == 0) return limits.fp64_peak_gflops;
      if (r.kind == "compute" && r.name.rfind("FP32", 0) == 0) return limits.fp32_peak_gflops;
      if (r.name == "DRAM") return limits.dram_peak_gbs;
      return 0.0;
    };
    for (auto it = reference.ceilings.begin(); it != reference.ceilings.end();) {
      const double peak = bound(*it);
      if (peak > 0 && it->best.value > peak * 1.02) {
        report.analysis.notes.push_back("warning: the machine's reference " + it->name + " " +
                                        std::to_string(int(it->best.value)) + " " + it->unit +
                                        " is above the theoretical peak " + std::to_string(int(peak)) + ": not used");
        it = reference.ceilings.erase(it);
      } else {
        ++it;
      }
    }
    for (std::string& n : judge_against_reference(report.analysis.ceilings, reference, limits.tolerance_floor,
                                                  limits.tolerance_cap))
      report.analysis.notes.push_back(std::move(n));
    MachineReference updated = updated_reference(reference, report.analysis.ceilings, utc_date_today());
    updated.machine = key.identity;
    if (const std::string failed = write_reference(reference_file, updated); !failed.empty())
      report.analysis.notes.push_back("warning: the machine's reference was not updated: " + failed);
  } else {
    for (auto& c : report.analysis.ceilings) {
      store::set_str(c.source, "measured");
      c.measured = c.value;
    }
  }
  report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::string pinning;
  for (std::size_t i = 0; i < run.thread_cpus.size(); ++i) pinning += (i ? "," : "") + std::to_string(run.thread_cpus[i]);
  std::string rank_pinning;
  for (std::size_t i = 0; i < run.rank_cpus.size(); ++i) rank_pinning += (i ? "," : "") + std::to_string(run.rank_cpus[i]);
  report.text_attributes = {{"isa", cpu_kernel_isa()},
                            {"fma_hardware", cpu_kernel_has_fma() ? "yes" : "no"},
                            {"thread_cpus", pinning},
                            {"rank_cpus", rank_pinning},
                            {"rank_group", measuring.description()},
                            {"kernel", "ERT 1.1.0 beta = beta*A[i] + alpha; register-blocked x" +
                                           std::to_string(kernel_block_elements(Precision::FP64)) + " fp64"}};
  report.number_attributes = {{"cpu_mhz_start", mhz_before},
                              {"cpu_mhz_end", mhz_after},
                              {"vector_bytes", double(cpu_kernel_vector_bytes())},
                              {"runs", double(run.runs)},
                              {"runs_preempted", double(run.runs_redone)},
                              {"runs_skewed", double(run.runs_skewed)},
                              {"runs_kept_disturbed", double(run.kept_disturbed)},
                              {"remeasured_series", double(checked.remeasured)},
                              {"startup_seconds", std::isfinite(before_main_s) ? before_main_s + plan_ready_s : std::nan("")},
                              {"buffer_setup_seconds", run.setup_seconds},
                              {"first_touch_seconds", run.first_touch_seconds},
                              {"dram_range_start_bytes", level_range(levels, levels.size() - 1).low},
                              {"clock_calibration_seconds", run.clock.seconds},
                              {"clock_ghz_measured", run.clock.ghz > 0 ? run.clock.ghz : std::nan("")},
                              {"fp64_peak_theoretical", limits.fp64_peak_gflops},
                              {"fp32_peak_theoretical", limits.fp32_peak_gflops},
                              {"dram_peak_theoretical", limits.dram_peak_gbs > 0 ? limits.dram_peak_gbs : std::nan("")}};
  report.text_attributes.emplace_back("peak_basis", limits.peak_basis);
  report.text_attributes.emplace_back("reference_file", reference_file);
  report.text_attributes.emplace_back("dram_peak_basis", limits.dram_peak_basis);
  report.text_attributes.emplace_back("dram_range_basis", dram_range_basis);
  report.one_worker = std::move(checked.one_worker);
  if (o.per_node) {
    // Every node's ceilings (its host in each row) to world rank 0.
    std::string blob;
    if (root) {
      for (auto row : report.analysis.ceilings) {
        store::set_str(row.host, store::hostname());
        blob.append(reinterpret_cast<const char*>(&row), sizeof row);
      }
    }
    const std::vector<std::string> blobs = group->gather_from_node_leaders(blob);
    if (!world_root) return 0;
    for (const std::string& b : blobs)
      for (std::size_t off = 0; off + sizeof(store::CeilingRow) <= b.size(); off += sizeof(store::CeilingRow)) {
        store::CeilingRow row;
        std::memcpy(&row, b.data() + off, sizeof row);
        report.node_ceilings.push_back(row);
      }
    report.analysis.ceilings = slowest_node_ceilings(report.node_ceilings, nodes_of_world);
    report.ranks = world_ranks;
    report.number_attributes.emplace_back("nodes", double(nodes_of_world));
  }
  emit(o, report);
  return 0;
}

}  // namespace
}  // namespace rtrace::ert

namespace rtrace::cli {

int ert_main(int argc, char** argv) {
  using namespace rtrace::ert;
  const std::string command_line = join_command_line(argc, argv);
  try {
    bool help = false;
    Options o = parse(argc, argv, help);
    if (help) return 0;
    if (o.list_gpus) {
      try {
        std::fputs(format_gpu_list(list_gpus()).c_str(), stdout);
        return 0;
      } catch (const GpuUnavailable& e) {
        std::fprintf(stderr, "rtrace ert: %s\n", e.what());
        return kExitFailure;
      }
    }
    if (o.sms > 0) {
      try {
        return run_gpu(o, command_line);
      } catch (const GpuUnavailable& e) {
        std::fprintf(stderr, "rtrace ert: --sms needs an NVIDIA GPU: %s\n", e.what());
        return kExitUsage;
      }
    }
    return run_cpu(o, argc, argv, command_line);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rtrace ert: %s\n", e.what());
    return kExitUsage;
  } catch (const OutputError& e) {
    std::fprintf(stderr, "rtrace ert: %s\n", e.what());
    return kExitUsage;
  } catch (const GpuError& e) {
    std::fprintf(stderr, "rtrace ert: GPU error: %s\n", e.what());
    return kExitFailure;
  } catch (const CpuRunError& e) {
    std::fprintf(stderr, "rtrace ert: %s\n", e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtrace ert: %s\n", e.what());
    return kExitFailure;
  }
}

}  // namespace rtrace::cli
