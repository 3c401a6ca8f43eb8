// Roofline ceilings per partition: measured once with `rtrace ert` and cached
// per host, partition and rtrace version (docs/architecture.md), or imported
// from an existing ert/run file.
#pragma once

#include "rtrace/launcher/options.hpp"
#include "rtrace/launcher/point_command.hpp"
#include "rtrace/store/records.hpp"

#include <map>
#include <string>
#include <vector>

namespace rtrace::launcher {

struct PartitionCeilings {
  std::vector<store::CeilingRow> rows;
  std::vector<store::CeilingRow> node_rows;  // a multi-node partition: every node's own (host set)
  std::string source;   // the file they came from ("" when none)
  std::string error;    // why there are none (ERT failed, file unreadable...)
  bool interrupted = false;
};

// $RTRACE_CACHE_DIR, else $XDG_CACHE_HOME/rtrace, else ~/.cache/rtrace.
std::string cache_dir(const Environment& env);
// <cache>/ert/<host>-<partition>-<version>[-quick].h5; a partition on several
// nodes is keyed by its nodes (`hosts`): <first>+<hash of the list>.
std::string ert_cache_file(const Environment& env, const Partition& p, bool quick,
                           const std::vector<std::string>& hosts = {});

class CeilingProvider {
 public:
  // `launch` (may be null: no MPI launch) says how to start a multi-rank ERT.
  CeilingProvider(const RunOptions& o, const Environment& env, bool verbose, const LaunchSetup* launch = nullptr);
  // Ceilings for a partition; runs ERT (and caches it) on first use. Never throws
  // for ERT failures: they come back in `error` and the point runs without ceilings.
  const PartitionCeilings& get(const Partition& p);
  // True when get(p) would run ERT now (for progress messages).
  bool needs_measurement(const Partition& p) const;

 private:
  PartitionCeilings measure(const Partition& p);
  PartitionCeilings run_ert(const Partition& p, bool quick, const std::string& out);
  // Reasons this partition's rows are implausible against a smaller
  // partition's: those measured in this run, and the cached one-worker
  // partition's (t1) when this run has not measured it.
  std::vector<std::string> check_against_smaller(const Partition& p, std::vector<store::CeilingRow>& rows) const;
  PartitionCeilings import_file(const Partition& p) const;
  std::vector<std::string> hosts_of(const Partition& p) const;  // the nodes it runs on (empty: one node)

  const RunOptions& opts_;
  Environment env_;
  const LaunchSetup* launch_;
  bool verbose_;
  std::map<Partition, PartitionCeilings> memo_;
};

// Reads ceilings from an ert file (/ert) or a run file (a point of the same
// partition, else the first point with ceilings). Throws store errors.
// The command that measures partition `p`: `rtrace ert ...`, under mpirun or srun
// when it has several ranks (ERT's ranks must be started by an MPI launcher).
std::vector<std::string> ert_command(const std::string& self, const Partition& p, bool quick, const std::string& out,
                                     const RunOptions& o, const LaunchSetup* launch, std::string& path, Environment& env);

// Physical consistency across partitions: `a` is a smaller partition of the
// same kind as `b` (fewer threads/ranks on as many nodes, or fewer SMs).
bool smaller_partition_of_same_kind(const Partition& a, const Partition& b);
// The workers of a partition: threads x ranks, or its SMs.
int partition_workers(const Partition& p);
// For each ceiling of `larger` against the same (reliable) ceiling of
// `smaller`: "NAME value unit below value on the smaller partition X" when it
// is lower, "NAME value unit above R x value on the smaller partition X" when
// it is more than `worker_ratio` (= its workers / the smaller's) times
// higher, beyond the noise tolerance of the two (their repeats' spread:
// store::ceiling_noise_tolerance, the rule ERT uses too).
std::vector<std::string> compare_with_smaller_partition(std::vector<store::CeilingRow>& larger,
                                                        const std::vector<store::CeilingRow>& smaller,
                                                        const std::string& smaller_name, double worker_ratio);
// Sets unreliable=1 and appends the reasons that start with a row's name.
void mark_unreliable(std::vector<store::CeilingRow>& rows, const std::vector<std::string>& reasons);
// The reasons of the unreliable rows ("" when all are reliable) and their names.
std::string unreliable_summary(const std::vector<store::CeilingRow>& rows);
std::vector<std::string> unreliable_names(const std::vector<store::CeilingRow>& rows);

std::vector<store::CeilingRow> read_ceilings_from(const std::string& path, const Partition& p, std::string& detail,
                                                  std::vector<store::CeilingRow>* node_rows = nullptr);
// /ert/sms_achieved of an ERT file (the SMs its %smid probe saw); -1 when absent.
int ert_sms_achieved(const std::string& path);

}  // namespace rtrace::launcher
