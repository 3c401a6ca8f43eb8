// The machine's own history as a reference (issue 32).
//
// A measurement can be consistent within itself and still be half the
// machine: on a 2-vCPU VM, FP64 FMA came out 87.5 GFLOP/s in one quick run
// and 162-174 in the four around it (a host SMT sibling running someone
// else's FMAs for the whole 2-3 s), and every check passed. What tells is
// the machine's own history: per machine and partition, the best value of
// each ceiling that passed every check, with its date, in the cache
// (<cache>/ert/reference/). A new value below it beyond the noise tolerance
// of the two (ERT's rule: 4 % plus both repeats' relative spread, at most
// 50 %) is marked unreliable with the numbers and the date; any ceiling
// marked unreliable (for that or another reason) then takes the reference's
// value, and keeps its own as `measured` (CeilingRow::source "reference").
// Only reliable measured ceilings update the reference (a higher value
// replaces it: the machine was slower when the old one was measured).
#pragma once

#include "rtrace/store/records.hpp"
#include "rtrace/store/run_file.hpp"

#include <string>
#include <vector>

namespace rtrace::ert {

struct ReferenceCeiling {
  std::string name, kind, unit;
  double value = 0, min = 0, max = 0;  // the best measurement's median (compute: best), min, max
  int repeats = 0;
  std::string date;       // "2026-11-28" (UTC): when that measurement ran
  int measurements = 0;   // reliable measurements of this ceiling seen since the reference began
};

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

// The ceiling's row as the reference has it (for the noise tolerance).
store::CeilingRow reference_row(const ReferenceCeiling& r);

// Judges `rows` (the partition's checked ceilings) against `reference`:
// a row below its reference by more than store::ceiling_noise_tolerance of
// the two (floor, cap) is marked unreliable: "FP64 FMA 87.5 GFLOP/s, 0.51x
// the 172.0 measured on this machine on 2026-11-28: the machine was slower or
// busier now". Then every unreliable row with a reference takes the
// reference's value, min and max (source "reference", reference_date) and
// keeps its own in `measured`; every other row is source "measured" with
// measured = value. Returns one note per row that took the reference.
std::vector<std::string> judge_against_reference(std::vector<store::CeilingRow>& rows, const MachineReference& reference,
                                                 double tolerance_floor = 0.04, double tolerance_cap = 0.5);

// The reference after this measurement: every reliable measured row counts
// as a measurement of its ceiling and replaces the entry when it is higher
// (or new), dated `date`. Unreliable rows and rows taken from the reference
// leave it as it was.
MachineReference updated_reference(MachineReference reference, const std::vector<store::CeilingRow>& rows,
                                   const std::string& date);

// Today's date, UTC: "2026-11-28".
std::string utc_date_today();

}  // namespace rtrace::ert
