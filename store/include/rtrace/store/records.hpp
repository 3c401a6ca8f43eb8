// Row types of the rtrace run-file schema v1 (schemas/rtrace-schema.md).
//
// These structs ARE the schema's tables: a unit test checks that every layout
// here matches schemas/rtrace-v1.json field for field (name, type, unit).
// Numeric values that were not measured are NaN (f64) or -1 (integers):
// unavailable is recorded as unavailable, never guessed.
#pragma once

#include "rtrace/store/table.hpp"

#include <cstdint>
#include <limits>

namespace rtrace::store {

inline constexpr double kUnavailable = std::numeric_limits<double>::quiet_NaN();

// Status of a sweep point (stored as the string in SweepPointRow::status).
enum class PointStatus { Pending, Ok, Failed, Timeout, Signalled, LaunchError };
const char* to_string(PointStatus s) noexcept;          // "pending", "ok", "failed", "timeout", "signalled", "launch_error"
PointStatus point_status_from_string(const std::string& s);  // throws std::invalid_argument

// /sweep/axes: one row per sweep axis.
struct SweepAxisRow {
  std::int32_t index;
  char name[64];        // "threads", "ranks", "nodes", "sms", "env:N"
  char spec[256];       // the spec as typed: "1..64:x2"
  static const RowLayout& layout();
};

// /sweep/points: one row per planned point (repeats are separate points).
struct SweepPointRow {
  std::int64_t point_id;
  std::int32_t repeat;
  char label[256];            // "threads=2 env:N=1000"
  std::int32_t threads;       // -1 when the axis is not swept and nothing was set
  std::int32_t ranks;
  std::int32_t nodes;
  std::int32_t sms_requested;
  std::int32_t sms_achieved;  // -1 unknown
  char partition_method[16];  // "", "green_ctx", "mps"
  char status[16];            // PointStatus as string
  std::int32_t exit_code;     // -1 when signalled or not run
  std::int32_t signal;        // 0 when none
  double start_time;          // seconds since the Unix epoch; NaN if not started
  double end_time;
  double wall_s;
  std::uint8_t complete;      // 1 only after the point's group was committed whole
  // The SMs the partition mechanism grants for sms_requested (schema 1.6; -1
  // when no SM partition, and in older files): MPS per TPC, green contexts per
  // their alignment. sms_achieved is the %smid measurement, -1 when none ran.
  std::int32_t sms_granted = -1;
  static const RowLayout& layout();
};

// /points/<p>/ceilings and /ert/ceilings: one row per level or precision.
struct CeilingRow {
  char name[32];        // "L1d", "L2", "L3", "DRAM", "HBM", "FP64 FMA", "FP32 no-FMA", "FP16 half2", "TC FP16->FP32"
  char kind[16];        // "bandwidth" | "compute"
  char precision[8];    // "fp64" | "fp32" | "fp16" | "" (bandwidth)
  char variant[16];     // "fma" | "nofma" | "half2" | "mma" | "" (bandwidth)
  double value;         // the ceiling: median over repeats of the best sample
  double max;           // max over repeats
  double min;           // min over repeats
  std::int32_t repeats;
  char unit[16];        // "GB/s" or "GFLOP/s"
  std::int64_t level_bytes;  // capacity of the level per its topology (-1 DRAM / compute)
  // Physical consistency (schema 1.5): 1 when the ceiling failed ERT's checks
  // (bandwidth rising from L1 to DRAM, FLOPs above the theoretical peak, below
  // a smaller partition's) after bounded re-measurement; 0 when it passed or
  // was not checked; -1 in files written before 1.5. Reason in `unreliable_reason`.
  std::int32_t unreliable = 0;
  char unreliable_reason[320] = {};  // 160 before schema 1.8 (several reasons were cut)
  // The node the value comes from (schema 1.7): empty for a partition of one
  // node; in node_ceilings each node's own ceilings of its slice; in the
  // ceilings of a multi-node partition the slowest node, whose value times
  // the partition's nodes is the ceiling.
  char host[64] = {};
  // Where `value` comes from (schema 1.8): "measured" (this partition's ERT),
  // "reference" (the machine's reference: the best this partition measured
  // on this machine, on `reference_date`; used because the ERT's own
  // measurement, `measured`, was marked unreliable), "file" (a file the user
  // gave: --ert FILE). "" in older files: measured.
  char source[16] = {};
  double measured = 0;           // the ERT's own value (= value unless source is "reference"); NaN in older files
  char reference_date[16] = {};  // "2026-11-28": when the reference value was measured ("" otherwise)
  static const RowLayout& layout();
};

// /points/<p>/hosts (schema 1.7): the point's ranks grouped by the host they
// ran on, in the order of the point's placement (srun -w), then by name.
struct HostRow {
  char host[64];
  std::int32_t ranks;          // rank groups recorded on this host
  char rank_list[256];         // "0-3,8" (cut with "..." when longer)
  std::int32_t placed;         // 1: the point's srun placed ranks here; 0: found only in the data; -1: no placement
  char state[16];              // "ok" | "failed" (node unreachable after the point) | "missing" (placed, no rank data)
  static const RowLayout& layout();
};

// A ceiling's relative spread over its repeats ((max - min) / value; 0 when
// unknown), and the noise allowed between two ceilings: `floor` plus both
// spreads, at most `cap`. Shared by ERT's own checks and the launcher's
// checks across partitions, so both judge "beyond noise" alike.
double ceiling_relative_spread(const CeilingRow& c) noexcept;
double ceiling_noise_tolerance(const CeilingRow& a, const CeilingRow& b, double floor = 0.04, double cap = 0.5) noexcept;

// /ert/samples: every raw ERT measurement.
struct ErtSampleRow {
  char precision[8];
  char variant[8];
  std::int32_t flops_per_element;   // ERT's k (FLOPs per element per trial)
  std::int64_t working_set_bytes;   // total across all threads/blocks
  std::int64_t trials;
  std::int32_t threads;             // CPU threads or GPU SMs
  std::int32_t ranks;
  std::int32_t repeat;
  double seconds;
  double bytes;
  double flops;
  double gbytes_per_s;
  double gflops_per_s;
  static const RowLayout& layout();
};

// /machine/caches
struct CacheRow {
  char name[16];           // "L1d", "L2", "L3"
  std::int32_t depth;
  std::int64_t size_bytes; // one instance
  std::int32_t line_bytes;
  std::int32_t instances;  // how many such caches in the machine/partition
  std::int32_t shared_by;  // processing units sharing one instance
  static const RowLayout& layout();
};

// /machine/gpus
struct GpuRow {
  std::int32_t index;
  char name[64];
  char uuid[48];
  char chip[16];           // "GH100"
  std::int32_t cc_major;
  std::int32_t cc_minor;
  std::int32_t sm_count;
  std::int64_t l2_bytes;
  std::int64_t memory_bytes;
  double sm_clock_khz;
  double memory_clock_khz;
  std::int32_t memory_bus_bits;
  double spec_bandwidth_gbs;  // 2 * memory clock * bus width / 8
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/info: exactly one row.
struct RankInfoRow {
  std::int64_t rank;
  std::int64_t pid;
  char host[64];
  char tracer_mode[16];        // "none" | "cpu" | "cuda-trace" | "cuda-metrics"
  double start_time;           // Unix seconds
  double wall_s;
  double user_s;
  double system_s;
  std::int64_t max_rss_kib;
  std::int64_t voluntary_ctxsw;
  std::int64_t involuntary_ctxsw;
  std::int32_t exit_status;    // -1 unknown (rank died before the tracer could see it)
  std::uint8_t complete;       // 1 when the tracer flushed at a normal exit
  std::int64_t tracer_errors;
  std::int64_t dropped_records;
  std::uint8_t counters_available;  // CPU hardware counters
  std::uint8_t gpu_available;
  std::int32_t omp_threads;
  // The MPI window (schema 1.1): seconds from start_time to the end of
  // MPI_Init/MPI_Init_thread and to the start of MPI_Finalize. NaN when the
  // rank never called them (non-MPI process, rank that exited without
  // Finalize) and in files written before 1.1.
  double mpi_init_end = kUnavailable;
  double mpi_finalize_start = kUnavailable;
  // CUDA under CUPTI (schema 1.7): what the tracer could do for this process.
  // "" = the process never initialised CUDA under the tracer (or an older
  // file); "traced" (activity trace on, metrics not asked for), "metrics"
  // (trace and range-profiler metrics), "no-cupti", "trace-failed",
  // "metrics-refused" (the range profiler refused, e.g. not supported under
  // MPS), "metrics-denied" (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
  // "metrics-failed". gpu_status_detail is the one line that says why.
  char gpu_status[24] = {};
  char gpu_status_detail[200] = {};
  // Launches of a metrics run left without metrics because no profiled range
  // of the same kernel name matched them (CUDA graph nodes, a second context's
  // interleaving, the range buffer full), and ranges that matched no launch.
  std::int64_t metrics_unmatched_launches = -1;
  std::int64_t metrics_unmatched_ranges = -1;
  // The tracer's own work in this process (schema 1.8; NaN in older files and
  // where not measured), seconds: the MPI wrappers' bookkeeping (calls per
  // path x the cost of that path, measured in the process at the end), the
  // sampler's signal handler (its CPU time), the tracer's own code as the
  // samples saw it outside the MPI wrappers (region API, counters), and the
  // records built at the end (symbolisation; the file write after it is not
  // in it). tracer_outside_mpi_s: the part of the first three that lies
  // outside the MPI time the wrappers booked (it would count as the app's
  // useful time).
  double tracer_wrapper_s = kUnavailable;
  double tracer_sampler_s = kUnavailable;
  double tracer_code_s = kUnavailable;
  double tracer_exit_s = kUnavailable;
  double tracer_outside_mpi_s = kUnavailable;
  // The process's CPU time (user + system, all threads, seconds) at the MPI
  // window's ends (schema 1.9): at the return of MPI_Init(_thread) and at the
  // entry of MPI_Finalize. NaN where that end was not reached and in older
  // files. The CPU time of the window itself, without MPI's start-up and
  // teardown (MPI_Init took 0.08 s of CPU in a 0.6 s OpenMP run here).
  double cpu_at_mpi_init_end = kUnavailable;
  double cpu_at_mpi_finalize_start = kUnavailable;
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/regions: one row per annotated region (aggregated).
struct RegionRow {
  std::int64_t name_id;         // index into ./names
  std::int64_t calls;
  double time_s;                // inclusive wall time, summed over calls
  double flops_fp64;            // declared through rtrace_region_counts (NaN if never declared)
  double flops_fp32;
  double flops_fp16;
  double bytes_l1;
  double bytes_l2;
  double bytes_l3;
  double bytes_dram;
  double hw_instructions;       // hardware counters; NaN when unavailable
  double hw_cycles;
  double hw_fp64_ops;
  double hw_fp32_ops;
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/kernels: one row per CUDA kernel launch.
struct KernelRow {
  std::int64_t name_id;
  std::int64_t launch_index;    // per (name, rank) launch order: the trace<->metrics join key
  std::int64_t correlation_id;
  std::int32_t device;
  std::int32_t context;
  std::int32_t stream;
  std::int32_t grid_x, grid_y, grid_z;
  std::int32_t block_x, block_y, block_z;
  std::int32_t registers;
  std::int32_t shared_static;
  std::int32_t shared_dynamic;
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint8_t has_metrics;
  double metric_duration_ns;
  double sm_clock_hz;
  double flops_fp64;
  double flops_fp32;
  double flops_fp16;
  double tensor_ops;             // all tensor-core math ops (the sum of the five below where they exist)
  // Tensor-core math ops by source type (schema 1.8; NaN: not counted, e.g.
  // FP8 on a chip without it): each is judged against its own tensor ceiling.
  double tensor_ops_fp16;
  double tensor_ops_bf16;
  double tensor_ops_tf32;
  double tensor_ops_fp64;
  double tensor_ops_fp8;
  double bytes_l1;
  double bytes_l2;
  double bytes_dram_read;
  double bytes_dram_write;
  double warp_instructions;
  double thread_instructions;
  double global_ld_instructions;
  double global_st_instructions;
  double shared_ld_instructions;
  double shared_st_instructions;
  double global_transactions;
  double shared_transactions;
  // How the metric columns were obtained (schema 1.7): "" (no metrics),
  // "whole device" (the metrics run had the whole GPU: no SM partition),
  // "in-partition" (profiled inside the point's SM partition), "replayed
  // outside the partition" (CUPTI could not profile inside it: the same point
  // was run again on the whole device for the counts; times stay the
  // partitioned run's). kMetricsProvenance* below.
  char metrics_provenance[32] = {};
  static const RowLayout& layout();
};
inline constexpr const char* kMetricsWholeDevice = "whole device";
inline constexpr const char* kMetricsInPartition = "in-partition";
inline constexpr const char* kMetricsOutsidePartition = "replayed outside the partition";

// /points/<p>/ranks/<r>/memcpy: memcpy and memset activity.
struct MemcpyRow {
  char kind[16];               // "HtoD", "DtoH", "DtoD", "memset", ...
  std::int64_t bytes;
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::int32_t device;
  std::int32_t stream;
  std::int64_t correlation_id;
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/mpi: one row per MPI function used.
struct MpiRow {
  std::int64_t name_id;        // index into ./names ("MPI_Allreduce")
  std::int64_t calls;
  double time_s;
  std::int64_t bytes_sent;
  std::int64_t bytes_received;
  // How time_s was obtained (schema 1.8; "" and -1 in older files, whose
  // times were all measured per call): kTimedPerCall, kTimedPollingRuns (polls
  // timed as the intervals of their polling runs, one clock read per up to
  // 256 polls) or kTimedSubsampled (a function called at a high rate: one
  // call in about 16 timed, the others booked at their mean). run_calls: the
  // polls timed within runs; estimated_calls: calls whose time is such a mean.
  char time_method[16] = {};
  std::int64_t run_calls = -1;
  std::int64_t estimated_calls = -1;
  static const RowLayout& layout();
};
inline constexpr const char* kTimedPerCall = "per-call";
inline constexpr const char* kTimedPollingRuns = "polling-runs";
inline constexpr const char* kTimedSubsampled = "subsampled";

// /points/<p>/ranks/<r>/dispatch (schema 1.8): the code libraries chose at
// run time in this rank's process, as the tracer observed it (absent without
// the tracer, or when it observed nothing): what the counting pass steers its
// run to (docs/counts.md).
struct DispatchRow {
  char library[24];            // "openblas", "mkl", "glibc", "fftw"
  char item[24];               // openblas "core"; mkl "cbwr_branch"; glibc "hwcaps" (active CPU
                               // features) or a function ("memcpy"); fftw "loaded"
  char choice[128];            // "Prescott"; "AVX2"; "AVX,AVX2,ERMS,...";
                               // "__memmove_avx512_unaligned_erms"; the module's file name
  char detail[160];            // the library's own words: OpenBLAS's config, the module and
                               // offset of a resolved function, the library's path
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/sampling: one row, the statistical sampler's settings
// and totals (absent when the tracer did not sample).
struct SamplingRow {
  double rate_hz;              // requested samples per second of a thread's CPU time
  double period_s;             // CPU time one sample stands for (1 / rate)
  char clock[32];              // "thread-cputime" (POSIX timer) | "perf-task-clock" | "off"
  char unwinder[16];           // "libunwind"
  std::int32_t signal;         // the real-time signal used (0 when off)
  std::int32_t threads;        // threads that were sampled
  std::int64_t samples;        // samples taken (all threads)
  std::int64_t dropped;        // periods of CPU time no sample shows (not recorded; after a thread's last signal)
  std::int32_t max_depth;      // frames kept per stack (deeper stacks lose their outermost frames)
  char status[32];             // "ok" | "off" | "backed-off" | "unavailable"
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/callpaths: the sampled call-path tree of every thread.
// Row i has node_id i; a node's parent comes before it. Times are
// samples x period_s of ./sampling (CPU time of that thread).
struct CallPathRow {
  std::int64_t node_id;
  std::int64_t parent_id;          // -1 for the root of a thread's tree
  std::int32_t thread;             // 0 = the first sampled thread (main), then in creation order
  std::int64_t function_id;        // ./names: demangled function, or "module+0xOFFSET" without symbols
  std::int64_t module_id;          // ./names: module file name ("libmpi.so.40", the executable)
  std::int64_t file_id;            // ./names: source file; -1 without debug info
  std::int32_t line;               // most-sampled source line in this frame; -1 unknown
  std::int64_t offset;             // module offset of the function's start (or of the PC when unknown)
  char category[16];               // "app" | "mpi" | "openmp" | "system" | "rtrace"
  std::uint8_t inlined;            // 1 = an inlined frame (DWARF inline scope)
  std::int64_t self_samples;       // samples whose innermost frame is this node
  std::int64_t inclusive_samples;  // samples through this node
  static const RowLayout& layout();
};

// /points/<p>/machine_load (schema 1.7): one row, what the machine did during
// the point besides the app, measured by the launcher from outside the app:
// /proc/stat (the CPUs of rtrace's affinity, which the app inherits) before
// the fork and after the last process of the tree was
// reaped, minus the CPU time of the app's process tree (wait4 rusage of every
// process rtrace reaped: the app, mpirun/prted, their children) and of rtrace
// itself. Absent in older files and for points whose ranks ran outside the
// launcher's process tree (srun); status "unavailable" says why.
struct MachineLoadRow {
  char source[32];             // "proc-stat" (the launcher's node), "" when unavailable
  char status[16];             // "ok" | "unavailable"
  char note[160];              // why unavailable, or what the measurement cannot see
  double interval_s;           // wall time between the two /proc/stat readings
  std::int32_t cpus;           // logical CPUs measured: those rtrace (and so the app) may run on
  double busy_cpu_s;           // CPU time of everything on the node (user+nice+system+irq+softirq)
  double tree_cpu_s;           // the app's process tree plus rtrace itself (user+system)
  double other_cpu_s;          // busy_cpu_s - tree_cpu_s, at least 0: other processes and kernel threads
  double steal_s;              // CPU time the hypervisor gave to other guests
  double idle_s;               // idle + iowait
  double load_avg_start;       // 1-minute load average (/proc/loadavg) before the fork
  double load_avg_end;         // and after the tree was reaped
  static const RowLayout& layout();
};

// --- Counted operations (schema 1.7): the counting pass (`rtrace run --counts`,
// counts/) or the PMU. Counts live in the rank group of the point whose
// configuration they describe, next to the timed run's records: times come
// from the timed run, FLOPs and bytes from here.

// /points/<p>/ranks/<r>/counts_info: exactly one row per rank that has counts.
struct CountInfoRow {
  char source[96];             // "sim:rtrace-count 0.1.0 valgrind-3.19.0", "pmu:<pmu name>", "annotation"
  char status[16];             // "ok" | "unavailable" | "failed" | "partial" | "interrupted" (to be rerun by --resume)
  std::int32_t threads;        // threads seen by the counting run
  std::uint8_t serialised;     // 1: the counting tool ran the threads one at a time (Valgrind)
  double wall_s;               // wall time of the counting run of this rank (NaN unknown)
  std::int32_t exit_code;      // the counted process's exit code (-1 unknown)
  char note[160];              // why status is not "ok", or what the source cannot see
  // Since 1.8 (sim sources; empty/0 for other sources, ""/-1 in older files):
  char cache_geometry[32];     // where the simulated caches come from: "hwloc" (this host's), "hwloc-vm" (a
                               // virtual machine's: its L3 may be the host's), "given" (--geometry, $RTRACE_COUNTS_GEOMETRY)
  std::int32_t cache_threads;  // threads per rank the cache shares were planned for (0 unknown)
  std::uint8_t cache_threads_assumed;  // 1: not given (--threads, OMP_NUM_THREADS) but assumed: cores / ranks per node
  // Also since 1.8 (read as "" from older files):
  // the counted window, in words: "MPI_Init..MPI_Finalize", "the whole run
  // (no MPI_Init)", "calls 10-20 of timestep", "0-600 s of the counting run";
  // "" = the whole run (older files)
  char window[96];
  // Run-time dispatch the counting run was steered to, as the timed run chose
  // it: "OpenBLAS core Prescott (OPENBLAS_CORETYPE=Prescott); ..."; "" none
  char steered[256];
  // Dispatch that differs or may differ and was not steered, and why:
  // "glibc: timed AVX-512 string functions (memcpy __memmove_avx512_unaligned_erms),
  // Valgrind 3.19 has no AVX-512; FFTW: ..."; "" none known
  char not_steered[256];
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/count_levels: the memory hierarchy the counts were
// simulated for (sim sources), one row per cache level, under the point's
// partition: a private level is a cache per thread; a level that cores share
// is one cache for the rank's threads, holding the rank's part of an instance
// (its threads there out of all the workers there: all of it at 1 rank).
struct CountLevelRow {
  char name[16];               // "L1d", "L2", "L3"
  std::int64_t size_bytes;     // one simulated cache: a thread's (private), the rank's threads' (shared)
  std::int64_t full_size_bytes;  // one instance of the real cache
  std::int32_t line_bytes;
  std::int32_t associativity;  // ways (simulated)
  std::int32_t sharers;        // workers of the point sharing one instance
  // Since 1.8 (-1 in older files: every level was a cache per thread, size_bytes = full / sharers):
  std::int32_t threads_sharing;  // the rank's threads on one simulated cache; 0: private (one per thread)
  std::int32_t copies;           // simulated caches of a shared level for the rank's threads; 0: private
  static const RowLayout& layout();
};

// /points/<p>/ranks/<r>/counts: one row per (thread, function). Sums over the
// rows are the rank's (or a thread's) totals. Unavailable fields (a source
// that cannot see them) are NaN, never 0. FMA counts as 2 FLOPs. Bytes of a
// level are the traffic between that level and the one above it (closer to
// the core): L1 = every load and store of the core; L2/L3/DRAM read = lines
// filled into the level above (write-allocate fills included), write = dirty
// lines written back from the level above.
struct CountRow {
  std::int32_t thread;          // 0 = main thread, then in creation order; -1 = whole process (no thread split)
  std::int64_t function_id;     // ./names: demangled function or "module+0xOFFSET"; -1 = not attributed (whole thread)
  std::int64_t module_id;       // ./names: module file name; -1 unknown
  double instructions;          // instructions executed
  double flops_fp64_scalar;
  double flops_fp64_v128;
  double flops_fp64_v256;
  double flops_fp64_v512;
  double flops_fp32_scalar;
  double flops_fp32_v128;
  double flops_fp32_v256;
  double flops_fp32_v512;
  double flops_fp16_scalar;     // FP16 and BF16
  double flops_fp16_v128;
  double flops_fp16_v256;
  double flops_fp16_v512;
  double bytes_l1_read;         // loads
  double bytes_l1_write;        // stores
  double bytes_l2_read;
  double bytes_l2_write;
  double bytes_l3_read;
  double bytes_l3_write;
  double bytes_dram_read;
  double bytes_dram_write;
  // FLOPs the source counts without their precision and vector width (a PMU
  // that counts all FP operations together: AMD Zen's RETIRED_SSE_AVX_FLOPS),
  // in none of the flops_* fields above; NaN when the source splits them.
  double flops_unsplit = kUnavailable;
  // Schema 1.8: where in the counted window (counts_info.window) the row's
  // counts were made: "inside", "before" or "after" it; "" (older files,
  // PMU counts) = the whole run. Rows of a part counted without the cache
  // simulation (outside a user's window) have NaN bytes.
  char window[8] = "";
  static const RowLayout& layout();
};

}  // namespace rtrace::store
