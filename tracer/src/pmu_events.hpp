// FLOPs and bytes per memory level from the CPU's own events, named through
// libpfm4 (never raw codes): which events measure what on Intel and AMD, and
// the arithmetic from counter values to a count row (run-file schema 1.7
// `counts`). Pure: the selection and the arithmetic are tested against
// recorded event tables (tests/tracer/pmu_tables/), without a PMU.
//
// Intel (Broadwell and later): FP_ARITH_INST_RETIRED.{SCALAR,128B,256B,
// 512B}_{DOUBLE,SINGLE} x lanes (the PMU counts an FMA instruction twice),
// FP_ARITH_INST_RETIRED2.*_HALF where present (Sapphire Rapids); L1D.REPLACEMENT
// (lines filled into L1 = L2 bytes), L2_LINES_IN.ALL (lines filled into L2 =
// L3 bytes), L2_LINES_OUT.NON_SILENT (dirty L2 lines written back = L3
// write bytes), LONGEST_LAT_CACHE.MISS (core requests missing L3 = DRAM
// read bytes), x 64 bytes a line.
// AMD Zen 2/3/4: RETIRED_SSE_AVX_FLOPS.ANY (FLOPs, MAC = 2, no precision or
// width split: `flops_unsplit`); L1 data-cache fills from anywhere (L2
// bytes); L2 demand misses plus L2 prefetches that went to L3 or beyond (L3
// bytes); L1 fills from DRAM plus L2 prefetches missing L3 (DRAM read bytes).
// Never visible to the core PMU: L1 load/store bytes, DRAM write-backs (the
// memory controller's uncore counters count the whole socket, not a process).
#pragma once

#include "rtrace/store/records.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rtrace::tracer {

enum class PmuQuantity {
  Instructions,
  Fp64Scalar, Fp64V128, Fp64V256, Fp64V512,
  Fp32Scalar, Fp32V128, Fp32V256, Fp32V512,
  Fp16Scalar, Fp16V128, Fp16V256, Fp16V512,
  FlopsUnsplit,
  L2Read, L3Read, L3Write, DramRead,
};
inline constexpr int kPmuQuantities = static_cast<int>(PmuQuantity::DramRead) + 1;
// Short words for notes: "FP64 256-bit FLOPs", "L3 read bytes".
const char* quantity_words(PmuQuantity q) noexcept;

// What perf_event_open needs for one event.
struct PerfEncoding {
  std::uint32_t type = 0;
  std::uint64_t config = 0, config1 = 0, config2 = 0;
  bool operator==(const PerfEncoding& o) const noexcept {
    return type == o.type && config == o.config && config1 == o.config1 && config2 == o.config2;
  }
};

// Event name -> encoding: libpfm4 on a live system (libpfm.hpp), a recorded
// table in tests.
class EventEncoder {
 public:
  virtual ~EventEncoder() = default;
  // `name` is qualified ("skl::L1D:REPLACEMENT", "perf::PERF_COUNT_HW_INSTRUCTIONS").
  virtual bool encode(const std::string& name, PerfEncoding& out) = 0;
};

// A recorded table: one line per event libpfm4 encodes, "name type config
// config1 config2" (numbers in hex), '#' starts a comment. Names not listed
// do not encode.
class TableEncoder final : public EventEncoder {
 public:
  // Throws std::invalid_argument naming the bad line.
  explicit TableEncoder(const std::string& text);
  bool encode(const std::string& name, PerfEncoding& out) override;
  const std::map<std::string, PerfEncoding>& entries() const noexcept { return table_; }

 private:
  std::map<std::string, PerfEncoding> table_;
};
// The table text for `names` as `encoder` encodes them (the fixtures' format).
std::string encoding_table(const std::vector<std::string>& names, EventEncoder& encoder);

struct PmuEvent {
  std::string name;      // qualified
  PerfEncoding encoding;
};
struct PmuTerm {
  std::size_t event;     // index into PmuPlan::events
  double factor;         // FLOPs per count (lanes), bytes per count (64), 1
};

// The events to open on one PMU and what each quantity is made of.
struct PmuPlan {
  std::string pmu;       // libpfm4's name of the core PMU: "skl", "icl", "amd64_fam19h_zen4"
  std::string vendor;    // "intel" | "amd" | "" (a PMU this table does not know)
  std::vector<PmuEvent> events;                              // each opened once
  std::array<std::vector<PmuTerm>, kPmuQuantities> terms{};  // empty: the quantity is not counted
  std::vector<std::string> missing;  // expected on this vendor's PMUs, but not counted here
  std::vector<std::string> unseen;   // what this vendor's core PMU never sees

  bool counts(PmuQuantity q) const noexcept { return !terms[static_cast<int>(q)].empty(); }
  bool any_flops() const noexcept;
  bool any_bytes() const noexcept;
  // "ok": everything this vendor's PMU gives is counted; "partial": some of it
  // (a FLOP or byte event missing); "unavailable": no FLOP and no byte event.
  std::string status() const;
  // "pmu:skl FP_ARITH_INST_RETIRED,L1D,..." (event names without unit masks; fits CountInfoRow::source).
  std::string source() const;
  // What is missing and what the PMU cannot see (fits CountInfoRow::note).
  std::string note() const;
  // An event that failed to open: every quantity using it is no longer counted.
  void drop_event(std::size_t event);
};

// The plan for `pmu` (libpfm4's name of the core PMU): per quantity the
// first recipe whose events all encode.
PmuPlan plan_events(const std::string& pmu, EventEncoder& encoder);
// Every event name the recipes may use on `pmu`, qualified (for recording tables).
std::vector<std::string> candidate_event_names(const std::string& pmu);

// A perf reading scaled for multiplexing: value x enabled / running; NaN when
// the event never ran while enabled (no count is not a zero count).
double scaled_count(std::uint64_t value, std::uint64_t enabled, std::uint64_t running) noexcept;

// One count row (function_id -1) for `thread` (-1: the whole process) from the
// scaled value of every planned event (NaN = not read). Quantities the plan
// does not count are NaN; a quantity with any NaN term is NaN.
store::CountRow pmu_count_row(const PmuPlan& plan, const std::vector<double>& values, int thread);

}  // namespace rtrace::tracer
