// The rtrace run file: layout, metadata and the crash-safe commit protocol.
//
// Layout (schema v1, see schemas/rtrace-schema.md):
//   /                      root attributes (schema_name, schema_version, ...)
//   /run                   metadata of the sweep (attributes + app_argv, environment)
//   /machine               host topology: attributes + caches, gpus tables
//   /sweep/axes            SweepAxisRow table
//   /sweep/points          SweepPointRow table, one row per planned point
//   /points/pNNNNNN        one group per committed point:
//       ceilings           CeilingRow table (that partition's roofline)
//       ert_samples        ErtSampleRow table (optional: raw ERT samples)
//       stdout, stderr     captured output tails (scalar strings)
//       ranks/rNNNNNN      per rank: info, names, regions, kernels, memcpy, mpi, log
//                          (+ sampling, callpaths when the tracer sampled)
//   /ert                   (ert files) ceilings + samples
//   /analysis              (optional) written by `rtrace analyze --write`
//
// Two layouts of a run (schema 1.6 and later write the first):
//  * point files: the run file is an index (everything above except the
//    point groups) with root attribute points_dir, e.g. "run.h5.d"; each
//    /points/pNNNNNN is an external link to "run.h5.d/pNNNNNN[-k].h5:/points/pNNNNNN",
//    a small rtrace file (file_kind "point") holding that one point. HDF5
//    follows the link, so readers see the same paths in both layouts.
//  * single file (schema 1.0-1.5, `rtrace pack`): the point groups are inside.
//
// Crash safety: every change to a file is a Transaction. It copies the
// file to a sibling temp file, applies the change there, flushes and fsyncs
// it, then rename()s it over the original. A writer killed at any moment
// therefore leaves either the old or the new file, both valid; a stale temp
// file is removed by the next writer. A point is complete iff its row in
// /sweep/points says complete=1, which is written in the same transaction
// as its group (single file) or its link (point files). A point file is
// written whole (temp + fsync + rename) before the index transaction that
// links it, so the commit costs the point plus the index, never the run;
// a point file that no index links (a writer killed between the two) is
// removed by the next writer.
#pragma once

#include "rtrace/store/file.hpp"
#include "rtrace/store/records.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rtrace::store {

inline constexpr const char* kSchemaName = "rtrace";
const char* schema_version() noexcept;   // "1.0.0"
int schema_major() noexcept;             // 1
const char* rtrace_version() noexcept;   // project version, e.g. "0.1.0"
// The ERT method: raised whenever ERT's kernels or the way it derives a
// ceiling change, so that a cached ERT result or a machine's reference
// measured the old way is neither reused nor compared with (issue 32: the
// unrolled bandwidth kernel and the plateau's upper median moved L1d and L2 by 5-15 %
// on the same machine; 3: FLOP ceilings the median of the high-F runs, not the
// best run, 5-15 % lower where the host's clock jumps, and DRAM's range found
// by the sweep in a VM). "3".
const char* ert_method() noexcept;
// The version the ERT cache and the machines' references are kept under:
// rtrace_version() + "-ert" + ert_method(), e.g. "0.1.0-ert3".
std::string ert_cache_version();

std::string iso8601_utc_now();
std::string hostname();
// rtrace's per-user cache (the ERT cache, the machines' ceiling references):
// $RTRACE_CACHE_DIR, else $XDG_CACHE_HOME/rtrace, else $HOME/.cache/rtrace,
// else <tmp>/rtrace-cache; the three values as the environment has them
// (empty or null: unset).
std::string cache_dir(const char* rtrace_cache_dir, const char* xdg_cache_home, const char* home);

// Writes schema_name, schema_version, rtrace_version, created, command_line,
// hostname and file_kind ("run", "ert", "trace") on the root group.
void write_root_attributes(Group& root, const std::string& file_kind, const std::string& command_line);
// Throws FormatError when the file is not an rtrace file or its major version
// is not supported by this build (minor/patch differences are accepted).
void check_schema(const File& file);

struct RunMetadata {
  std::string command_line;                 // rtrace's argv, for display
  std::vector<std::string> app_argv;        // verbatim
  std::string sweep_spec;                   // human form of the plan
  std::string options_json;                 // every option as JSON
  std::vector<std::pair<std::string, std::string>> environment;  // recorded variables (deny-list applied)
  std::string launcher;                     // "none" | "mpirun" | "srun"
  std::string slurm_job_id, slurm_nodelist, slurm_task_layout;
};
void write_run_metadata(Group& root, const RunMetadata& meta);
RunMetadata read_run_metadata(const Group& root);

struct MachineInfo {
  std::string hostname;
  std::string cpu_model;
  std::string os;
  std::int32_t sockets = 0, cores = 0, pus = 0;
  std::int64_t memory_bytes = 0;
  // The widest SIMD registers of the CPU in bits (schema 1.8, from its flags:
  // 512 AVX-512F, 256 AVX, 128 SSE2 or NEON); 0 unknown (older files).
  std::int32_t vector_bits = 0;
  std::vector<CacheRow> caches;
  std::vector<GpuRow> gpus;
};
// Reads this host's topology with hwloc (caches), /proc/meminfo and sysconf.
MachineInfo describe_this_machine();
void write_machine(Group& root, const MachineInfo& m);
MachineInfo read_machine(const Group& root);

std::string point_group_name(std::int64_t point_id);  // "p000003"
std::string rank_group_name(std::int64_t rank);       // "r000000"

// Everything the tracer records for one rank.
struct RankRecords {
  RankInfoRow info{};
  std::vector<std::string> names;   // name_id -> string for regions/kernels/mpi
  std::vector<RegionRow> regions;
  std::vector<KernelRow> kernels;
  std::vector<MemcpyRow> memcpy;
  std::vector<MpiRow> mpi;
  std::vector<std::string> log;     // "warning: ..." lines, tracer errors and drops
  // Statistical sampling (schema 1.x additions; empty when not sampled).
  std::vector<SamplingRow> sampling;     // zero or one row
  std::vector<CallPathRow> callpaths;    // names in `names`
  // Counted operations (schema 1.7; empty when no counting pass or PMU counts
  // reached this rank): one info row, the simulated levels, the counts.
  std::vector<CountInfoRow> counts_info;  // zero or one row
  std::vector<CountLevelRow> count_levels;
  std::vector<CountRow> counts;           // names in `names`
  // Run-time dispatch choices the tracer observed (schema 1.8; empty: none).
  std::vector<DispatchRow> dispatch;
  // Which writer produced this rank's group (attribute `writer` of the rank
  // group, schema 1.4): "mpi-io" (parallel HDF5 ranks.h5), "gather" (ranks.h5
  // gathered to rank 0, written serially), "per-rank" (the process's own
  // rank-<r>-<pid>.h5), "launcher" (rusage of the tree, no tracer). Empty when
  // a 1.0 file does not say.
  std::string writer;
};
void write_rank(Group& ranks_group, const RankRecords& records);  // creates ranks_group/rNNNNNN
RankRecords read_rank(const Group& rank_group);
// Puts the count tables of `counted` (counts_info, count_levels, counts) into
// an existing rank group, replacing any it has, and interns the function and
// module names its counts rows use into the group's `names` (the ids in the
// written rows are the group's). The counting pass's rows join the timed
// run's records of the same rank this way.
void attach_counts(Group& rank_group, const RankRecords& counted);
// Which tables read_rank_parts reads (the rest stay empty): a reader of
// 10^5 ranks opens only what it uses (each table is an HDF5 dataset).
enum RankPart : unsigned {
  kRankInfo = 1u << 0,       // info (always read) and the writer attribute
  kRankNames = 1u << 1,
  kRankRegions = 1u << 2,
  kRankKernels = 1u << 3,
  kRankMemcpy = 1u << 4,
  kRankMpi = 1u << 5,
  kRankLog = 1u << 6,
  kRankSampling = 1u << 7,   // sampling and callpaths, when present
  kRankCounts = 1u << 8,     // counts_info, count_levels, counts, when present
  // kernels only of a rank that can have them: not of a rank whose tracer ran
  // in cpu mode (or none) without a GPU, which never records a launch
  kRankGpuKernels = 1u << 9,
  kRankDispatch = 1u << 10,  // dispatch, when present
  kRankAll = ~0u,
};
RankRecords read_rank_parts(const Group& rank_group, unsigned parts);

struct CapturedOutput {
  std::string stdout_tail, stderr_tail;
  std::int64_t stdout_bytes = 0, stderr_bytes = 0;  // totals seen, before truncation
};
// The ranks of a point grouped by host (/points/<p>/hosts, schema 1.7), from
// the rank groups' info rows: `placed` (the hosts srun placed the point on,
// in order; empty when the point had no placement) come first, then other
// hosts by name; a host in `failed` (unreachable after the point) has state
// "failed", a placed host without rank data "missing".
std::vector<HostRow> hosts_of_ranks(const Group& ranks_group, const std::vector<std::string>& placed,
                                    const std::vector<std::string>& failed);
// "0-3,8" for {0,1,2,3,8}; at most `max_chars` characters (the rest "...").
std::string rank_ranges(std::vector<std::int64_t> ranks, std::size_t max_chars = 255);

void write_output(Group& point, const CapturedOutput& out);
CapturedOutput read_output(const Group& point);

// Creates or replaces `path` whole: `make` writes a sibling temp file (its
// path is the argument), which is then fsynced and renamed over `path`. If
// make throws, `path` is untouched and the temp file removed.
void write_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& make);

// Atomic update of a file: copy -> modify -> fsync -> rename. See above.
// `fn` gets the temp copy opened read-write. If fn throws, the original is
// untouched and the exception propagates.
void transaction(const std::string& path, const std::function<void(File&)>& fn);

// The directory of a run's point files: "<file name>.d" next to it.
std::string default_points_dir(const std::string& run_path);

class RunFile {
 public:
  // Creates a new run file with metadata, machine, axes and the plan (all
  // points pending). Refuses to clobber an existing file unless overwrite
  // (which also empties its points directory). points_dir: the name of the
  // directory of point files, next to `path` (default: default_points_dir of
  // path); "" writes the single-file layout of schema 1.0-1.5.
  static RunFile create(const std::string& path, const RunMetadata& meta, const MachineInfo& machine,
                        const std::vector<SweepAxisRow>& axes, const std::vector<SweepPointRow>& plan,
                        bool overwrite = false, std::optional<std::string> points_dir = std::nullopt);
  // Opens an existing run file for appending (resume, merge): checks the
  // schema, and removes point files and temp files that a killed writer
  // left in its points directory (the one writer of a run is whoever opens it).
  static RunFile open(const std::string& path);

  const std::string& path() const noexcept { return path_; }
  // "" for the single-file layout.
  const std::string& points_dir() const noexcept { return points_dir_; }
  // The plan as stored now (re-read after each commit).
  const std::vector<SweepPointRow>& points() const noexcept { return points_; }

  // Commits one point atomically: `fill` populates the fresh /points/pNNNNNN
  // group (ceilings, output, ranks); then the point's row is replaced by `row`
  // (row.complete is set to 1 unless the row says status pending).
  void commit_point(SweepPointRow row, const std::function<void(Group& point)>& fill);

  // Commits several points as one change: for each row (as given, complete
  // flag included) `make(i, points, name)` creates the group `name` under
  // `points` (in that point's new file, or in the run file itself in the
  // single-file layout). Either every point and row is committed or none.
  void commit_points(const std::vector<SweepPointRow>& rows,
                     const std::function<void(std::size_t i, Group& points, const std::string& name)>& make);

 private:
  std::string path_;
  std::string points_dir_;
  std::string command_line_;
  std::vector<SweepPointRow> points_;
  void reload();
  std::size_t row_index(std::int64_t point_id) const;
};

// `rtrace pack`: writes `out` (refusing an existing file) as one
// self-contained single-file run holding every point of `run`; O(total bytes).
void pack_run(const std::string& run, const std::string& out);

// Reading helpers (read-only access).
std::vector<SweepPointRow> read_points(const File& f);
std::vector<SweepAxisRow> read_axes(const File& f);
std::vector<CeilingRow> read_ceilings(const Group& point_or_ert);

}  // namespace rtrace::store
