// The machine's own history as a reference (issue 32).
//
// A measurement can be consistent within itself and still be half the
// machine: on a 2-vCPU VM, FP64 FMA came out 87.5 GFLOP/s in one quick run
// and 162-174 in the four around it (a host SMT sibling running someone
// else's FMAs for the whole 2-3 s), and every check passed. What tells is
// the machine's own history: per machine and partition, each ceiling's best
// value that passed every check with its date, its runner-up (the second
// best) and its last 16 reliable values, in the cache (<cache>/ert/reference/).
// A new value is judged against the standing reference (the runner-up once
// there is one, else the best: one run's overshoot is not the machine) and
// marked unreliable, with the numbers and the date, when it is below it by
// more than the tolerance: the larger of the noise within the two runs
// (ERT's rule: 4 % plus both repeats' relative spread) and the noise between
// runs that the machine has shown (how far its recent reliable values fell
// below the standing value: this VM's clock moves between 4.1 and 4.4 GHz
// from run to run, so its FP64 FMA reads 262-275 with each run's repeats
// agreeing to 1 %; values more than 25 % below it are another state of the
// machine, not noise), at most 50 %; while only one run stands behind the
// reference (no runner-up yet), at least kUnconfirmedTolerance. Any ceiling
// marked unreliable (for that or another reason) then takes the standing
// value and keeps its own as `measured` (CeilingRow::source "reference").
// Only reliable measured ceilings update the reference (a higher value
// replaces the best, which becomes the runner-up).
#pragma once

#include "rtrace/store/records.hpp"
#include "rtrace/store/run_file.hpp"

#include <string>
#include <vector>

namespace rtrace::ert {

// One reliable measurement of a ceiling, as the reference keeps it.
struct ReferenceValue {
  double value = 0, min = 0, max = 0;  // its median (compute: best), min, max; value 0: none
  int repeats = 0;
  std::string date;  // "2026-11-28" (UTC): when it ran
};

struct ReferenceCeiling {
  std::string name, kind, unit;
  ReferenceValue best;        // the highest reliable measurement: the record
  ReferenceValue runner_up;   // the second highest (value 0: none yet)
  int measurements = 0;       // reliable measurements of this ceiling seen since the reference began
  std::vector<double> recent; // the last kRecentValues reliable values, oldest first
  static constexpr std::size_t kRecentValues = 16;
  // What new values are judged against and what stands in for a marked one:
  // the runner-up once there is one, else the best. One run's overshoot is
  // not the machine: this VM's L2 read 971 GB/s in one quick run among
  // 772-808 in twelve, and as the best it marked two normal runs and stood in
  // for them. The best stays the record (and the candidate: a second run as
  // fast makes it the runner-up).
  const ReferenceValue& standing() const;
  bool confirmed() const { return runner_up.value > 0; }  // a second reliable run stands behind it
};

// A value more than this share below the standing one is another state of
// the machine, not its noise: a host SMT sibling running someone else's FMAs
// (FP64 FMA 0.51x), the host's slow DRAM state of this VM (two workers
// 57-65 GB/s against 99-118, states that last 3 s to minutes).
constexpr double kOtherStateShortfall = 0.25;
// How far below the standing value this machine's recent reliable values
// went (1 - lowest / standing, at least 0): the run-to-run noise it has shown.
// Values of another state (below 1 - kOtherStateShortfall of it) are not
// noise and do not count: before the fast DRAM state was first seen, three
// slow-state runs were reliable, and as noise they made the tolerance 44 %,
// so a later slow state was believed. 0 until kMinRecentForSpread values
// count: two runs are no spread.
constexpr std::size_t kMinRecentForSpread = 3;
// A reference that one run set may be that run's overshoot (this VM's L2:
// 971 GB/s in one quick run, 772-808 in twelve: 0.80x), and a marked value
// never enters to confirm or replace it: until a second reliable run stands
// behind it, only another state (a value below 0.75x of it) is marked (a
// whole run at half speed still is).
constexpr double kUnconfirmedTolerance = kOtherStateShortfall;
// `counted`, when given: how many recent values counted.
double observed_spread(const ReferenceCeiling& c, std::size_t* counted = nullptr);

struct MachineReference {
  std::string machine;    // what it is kept for, in words (host, CPU, topology, partition, kernels)
  std::vector<ReferenceCeiling> ceilings;
  const ReferenceCeiling* find(const std::string& name) const;
};

// What a reference is kept for: this machine (host, CPU model, cores, PUs and
// caches as hwloc sees them), the partition (threads x ranks, named as the
// launcher names it: "t2", "r2t1") and the kernels (rtrace version, their
// ISA), as the ERT cache keys its files by host, partition and version.
struct ReferenceKey {
  std::string host, partition, version;
  std::string identity;  // the rest, in words; its hash names the file
  // <host>-<partition>-<version>-<8 hex digits of identity's FNV-1a>.json
  std::string file_name() const;
};
ReferenceKey reference_key(const store::MachineInfo& machine, int threads, int ranks, const std::string& kernels);
// <cache_dir>/ert/reference/<key.file_name()>
std::string reference_path(const std::string& cache_dir, const ReferenceKey& key);

// Reads a reference file. A missing file is an empty reference (no problem);
// one that cannot be parsed is an empty reference and `problem` says why
// (the next reliable measurement replaces it).
MachineReference read_reference(const std::string& path, std::string& problem);
// Writes it atomically (temp file + rename, directories created). Returns
// "" or what went wrong: a reference that cannot be written never fails the
// measurement.
std::string write_reference(const std::string& path, const MachineReference& reference);

// The ceiling's standing value as a row (for the noise tolerance).
store::CeilingRow reference_row(const ReferenceCeiling& r);

// Judges `rows` (the partition's checked ceilings) against `reference`:
// a row below its entry's standing() value by more than the larger of
// store::ceiling_noise_tolerance of the two (floor, cap) and the entry's
// observed_spread (at most cap; without a runner-up at least
// kUnconfirmedTolerance) is marked unreliable: "FP64 FMA 87.5 GFLOP/s, 0.51x
// the 172.0 measured on this machine on 2026-11-28 (tolerance 6 %: 4 % + the
// two runs' spreads): the machine was slower or busier now". Then every
// unreliable row with a reference takes the standing value, min and max
// (source "reference", reference_date) and keeps its own in `measured`;
// every other row is source "measured" with measured = value. Returns one
// note per row that took the reference.
std::vector<std::string> judge_against_reference(std::vector<store::CeilingRow>& rows, const MachineReference& reference,
                                                 double tolerance_floor = 0.04, double tolerance_cap = 0.5);

// The reference after this measurement: every reliable measured row counts
// as a measurement of its ceiling (kept in `recent`); a higher one (or a new
// one) becomes the best, dated `date`, and the best it replaces the
// runner-up; a lower one above the runner-up becomes the runner-up.
// Unreliable rows and rows taken from the reference leave it as it was.
MachineReference updated_reference(MachineReference reference, const std::vector<store::CeilingRow>& rows,
                                   const std::string& date);

// Today's date, UTC: "2026-11-28".
std::string utc_date_today();

}  // namespace rtrace::ert
