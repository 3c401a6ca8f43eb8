#include "pmu_events.hpp"

#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

namespace rtrace::tracer {
namespace {

constexpr double kLineBytes = 64;  // every x86 cache line: the refill events count lines

struct Term {
  const char* event;  // unqualified; "perf::..." names are generic and used as they are
  double factor;
};
using Recipe = std::vector<Term>;  // the quantity is the sum of its terms
struct QuantityRecipes {
  PmuQuantity quantity;
  std::vector<Recipe> alternatives;  // the first one whose events all encode wins
  bool expected;                     // its absence makes the counts partial
};
struct VendorTable {
  const char* vendor;
  std::vector<QuantityRecipes> quantities;
  std::vector<const char*> unseen;
};

const char* const kInstructions = "perf::PERF_COUNT_HW_INSTRUCTIONS";

// Intel, Broadwell and later (FP_ARITH_INST_RETIRED). The factors are the
// FLOPs of one instruction of that width (the PMU already counts an FMA twice).
const VendorTable& intel() {
  static const VendorTable t{
      "intel",
      {
          {PmuQuantity::Instructions, {{{"INST_RETIRED:ANY_P", 1}}, {{kInstructions, 1}}}, true},
          {PmuQuantity::Fp64Scalar, {{{"FP_ARITH_INST_RETIRED:SCALAR_DOUBLE", 1}}}, true},
          {PmuQuantity::Fp64V128, {{{"FP_ARITH_INST_RETIRED:128B_PACKED_DOUBLE", 2}}}, true},
          {PmuQuantity::Fp64V256, {{{"FP_ARITH_INST_RETIRED:256B_PACKED_DOUBLE", 4}}}, true},
          {PmuQuantity::Fp64V512, {{{"FP_ARITH_INST_RETIRED:512B_PACKED_DOUBLE", 8}}}, true},
          {PmuQuantity::Fp32Scalar, {{{"FP_ARITH_INST_RETIRED:SCALAR_SINGLE", 1}}}, true},
          {PmuQuantity::Fp32V128, {{{"FP_ARITH_INST_RETIRED:128B_PACKED_SINGLE", 4}}}, true},
          {PmuQuantity::Fp32V256, {{{"FP_ARITH_INST_RETIRED:256B_PACKED_SINGLE", 8}}}, true},
          {PmuQuantity::Fp32V512, {{{"FP_ARITH_INST_RETIRED:512B_PACKED_SINGLE", 16}}}, true},
          // FP16 arithmetic events exist from Sapphire Rapids on: not expected elsewhere.
          {PmuQuantity::Fp16Scalar, {{{"FP_ARITH_INST_RETIRED2:SCALAR_HALF", 1}}}, false},
          {PmuQuantity::Fp16V128, {{{"FP_ARITH_INST_RETIRED2:128B_PACKED_HALF", 8}}}, false},
          {PmuQuantity::Fp16V256, {{{"FP_ARITH_INST_RETIRED2:256B_PACKED_HALF", 16}}}, false},
          {PmuQuantity::Fp16V512, {{{"FP_ARITH_INST_RETIRED2:512B_PACKED_HALF", 32}}}, false},
          {PmuQuantity::L2Read, {{{"L1D:REPLACEMENT", kLineBytes}}}, true},
          {PmuQuantity::L3Read, {{{"L2_LINES_IN:ALL", kLineBytes}}}, true},
          {PmuQuantity::L3Write, {{{"L2_LINES_OUT:NON_SILENT", kLineBytes}}}, true},
          {PmuQuantity::DramRead, {{{"LONGEST_LAT_CACHE:MISS", kLineBytes}}}, true},
      },
      {"L1 bytes", "L1 write-backs", "DRAM writes"},
  };
  return t;
}

// AMD Zen 2, 3, 4 (libpfm4 names the unit masks differently per family).
const VendorTable& amd() {
  static const char* const kZen4Pf = ":L2_STREAM:L2_NEXT_LINE:L2_UP_DOWN:L2_BURST:L2_STRIDE:L1_STREAM:L1_STRIDE:L1_REGION";
  static const char* const kZen3Pf = ":L2_HW_PREFETCHER:L1_HW_PREFETCHER";
  static const std::string z4hit = std::string("L2_PREFETCH_HIT_L3") + kZen4Pf,
                           z4miss = std::string("L2_PREFETCH_MISS_L3") + kZen4Pf,
                           z3hit = std::string("L2_PREFETCH_HIT_L3") + kZen3Pf,
                           z3miss = std::string("L2_PREFETCH_MISS_L3") + kZen3Pf;
  static const char* const kL2Miss = "CORE_TO_L2_CACHEABLE_REQUEST_ACCESS_STATUS:LS_RD_BLK_C";
  static const VendorTable t{
      "amd",
      {
          {PmuQuantity::Instructions, {{{"RETIRED_INSTRUCTIONS", 1}}, {{kInstructions, 1}}}, true},
          {PmuQuantity::FlopsUnsplit, {{{"RETIRED_SSE_AVX_FLOPS:ANY", 1}}}, true},
          {PmuQuantity::L2Read,
           {{{"ANY_DATA_CACHE_FILLS_FROM_SYSTEM:LCL_L2:LOCAL_CCX:NEAR_CACHE_NEAR_FAR:DRAM_IO_NEAR:FAR_CACHE_NEAR_FAR:"
              "DRAM_IO_FAR:ALT_MEM_NEAR_FAR",
              kLineBytes}},
            {{"ANY_DATA_CACHE_FILLS_FROM_SYSTEM:LCL_L2:INT_CACHE:EXT_CACHE_LCL:MEM_IO_LCL:EXT_CACHE_RMT:MEM_IO_RMT",
              kLineBytes}},
            {{"DATA_CACHE_REFILLS_FROM_SYSTEM:MABRESP_LCL_L2:LS_MABRESP_LCL_CACHE:LS_MABRESP_LCL_DRAM:"
              "LS_MABRESP_RMT_CACHE:LS_MABRESP_RMT_DRAM",
              kLineBytes}}},
           true},
          {PmuQuantity::L3Read,
           {{{kL2Miss, kLineBytes}, {z4hit.c_str(), kLineBytes}, {z4miss.c_str(), kLineBytes}},
            {{kL2Miss, kLineBytes}, {z3hit.c_str(), kLineBytes}, {z3miss.c_str(), kLineBytes}},
            {{kL2Miss, kLineBytes}, {"L2_PREFETCH_HIT_L3:ANY", kLineBytes}, {"L2_PREFETCH_MISS_L3:ANY", kLineBytes}}},
           true},
          {PmuQuantity::DramRead,
           {{{"ANY_DATA_CACHE_FILLS_FROM_SYSTEM:DRAM_IO_NEAR:DRAM_IO_FAR", kLineBytes}, {z4miss.c_str(), kLineBytes}},
            {{"ANY_DATA_CACHE_FILLS_FROM_SYSTEM:MEM_IO_LCL:MEM_IO_RMT", kLineBytes}, {z3miss.c_str(), kLineBytes}},
            {{"DATA_CACHE_REFILLS_FROM_SYSTEM:LS_MABRESP_LCL_DRAM:LS_MABRESP_RMT_DRAM", kLineBytes},
             {"L2_PREFETCH_MISS_L3:ANY", kLineBytes}}},
           true},
      },
      {"FLOP precision and width", "L1 bytes", "write-backs"},
  };
  return t;
}

const VendorTable* table_for(const std::string& pmu) {
  if (pmu.rfind("amd64_fam", 0) == 0) return &amd();
  if (pmu.empty() || pmu == "perf" || pmu == "perf_raw") return nullptr;
  return &intel();  // libpfm4's Intel core PMUs: skl, icl, icx, spr, adl_glc, ...
}

std::string qualified(const std::string& pmu, const char* event) {
  const std::string e = event;
  return e.rfind("perf::", 0) == 0 ? e : pmu + "::" + e;
}

// "FP_ARITH_INST_RETIRED" of "skl::FP_ARITH_INST_RETIRED:SCALAR_DOUBLE".
std::string base_event(const std::string& name) {
  std::string s = name;
  if (auto at = s.find("::"); at != std::string::npos) s = s.substr(at + 2);
  if (auto at = s.find(':'); at != std::string::npos) s.resize(at);
  return s;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

}  // namespace

const char* quantity_words(PmuQuantity q) noexcept {
  switch (q) {
    case PmuQuantity::Instructions: return "instructions";
    case PmuQuantity::Fp64Scalar: return "FP64 scalar FLOPs";
    case PmuQuantity::Fp64V128: return "FP64 128-bit FLOPs";
    case PmuQuantity::Fp64V256: return "FP64 256-bit FLOPs";
    case PmuQuantity::Fp64V512: return "FP64 512-bit FLOPs";
    case PmuQuantity::Fp32Scalar: return "FP32 scalar FLOPs";
    case PmuQuantity::Fp32V128: return "FP32 128-bit FLOPs";
    case PmuQuantity::Fp32V256: return "FP32 256-bit FLOPs";
    case PmuQuantity::Fp32V512: return "FP32 512-bit FLOPs";
    case PmuQuantity::Fp16Scalar: return "FP16 scalar FLOPs";
    case PmuQuantity::Fp16V128: return "FP16 128-bit FLOPs";
    case PmuQuantity::Fp16V256: return "FP16 256-bit FLOPs";
    case PmuQuantity::Fp16V512: return "FP16 512-bit FLOPs";
    case PmuQuantity::FlopsUnsplit: return "FLOPs";
    case PmuQuantity::L2Read: return "L2 read bytes";
    case PmuQuantity::L3Read: return "L3 read bytes";
    case PmuQuantity::L3Write: return "L3 write bytes";
    case PmuQuantity::DramRead: return "DRAM read bytes";
  }
  return "?";
}

TableEncoder::TableEncoder(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string name, type, config, config1 = "0", config2 = "0";
    if (!(fields >> name)) continue;
    if (!(fields >> type >> config)) throw std::invalid_argument("event table line " + std::to_string(number) +
                                                                 ": expected `name type config [config1 [config2]]`");
    fields >> config1 >> config2;
    PerfEncoding e;
    try {
      e.type = static_cast<std::uint32_t>(std::stoul(type, nullptr, 16));
      e.config = std::stoull(config, nullptr, 16);
      e.config1 = std::stoull(config1, nullptr, 16);
      e.config2 = std::stoull(config2, nullptr, 16);
    } catch (const std::exception&) {
      throw std::invalid_argument("event table line " + std::to_string(number) + ": not a hex number");
    }
    table_[name] = e;
  }
}

bool TableEncoder::encode(const std::string& name, PerfEncoding& out) {
  auto it = table_.find(name);
  if (it == table_.end()) return false;
  out = it->second;
  return true;
}

std::string encoding_table(const std::vector<std::string>& names, EventEncoder& encoder) {
  std::ostringstream out;
  char buf[128];
  for (const auto& name : names) {
    PerfEncoding e;
    if (!encoder.encode(name, e)) {
      out << "# " << name << ": not encoded\n";
      continue;
    }
    std::snprintf(buf, sizeof buf, " %x %llx %llx %llx", e.type, static_cast<unsigned long long>(e.config),
                  static_cast<unsigned long long>(e.config1), static_cast<unsigned long long>(e.config2));
    out << name << buf << "\n";
  }
  return out.str();
}

bool PmuPlan::any_flops() const noexcept {
  for (int q = static_cast<int>(PmuQuantity::Fp64Scalar); q <= static_cast<int>(PmuQuantity::FlopsUnsplit); ++q)
    if (!terms[q].empty()) return true;
  return false;
}

bool PmuPlan::any_bytes() const noexcept {
  for (int q = static_cast<int>(PmuQuantity::L2Read); q < kPmuQuantities; ++q)
    if (!terms[q].empty()) return true;
  return false;
}

std::string PmuPlan::status() const {
  if (!any_flops() && !any_bytes()) return "unavailable";
  return missing.empty() ? "ok" : "partial";
}

std::string PmuPlan::source() const {
  // The FLOP and byte events (the instruction count is no source of FLOPs or bytes).
  std::set<std::size_t> used;
  for (int q = 0; q < kPmuQuantities; ++q)
    if (q != static_cast<int>(PmuQuantity::Instructions))
      for (const auto& t : terms[q]) used.insert(t.event);
  std::vector<std::string> bases;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (!used.count(i)) continue;
    std::string b = base_event(events[i].name);
    bool seen = false;
    for (const auto& x : bases) seen |= x == b;
    if (!seen) bases.push_back(b);
  }
  std::string out = "pmu:" + pmu;
  std::string list;
  constexpr std::size_t kMax = sizeof(store::CountInfoRow{}.source) - 1;
  for (const auto& b : bases) {
    std::string next = list + (list.empty() ? " " : ",") + b;
    if (out.size() + next.size() + 4 > kMax) {
      list += ",...";
      break;
    }
    list = next;
  }
  return out + list;
}

std::string PmuPlan::note() const {
  std::string out;
  if (!missing.empty()) out = "missing: " + join(missing, ", ");
  if (!unseen.empty()) out += (out.empty() ? "" : "; ") + std::string("not seen by the core PMU: ") + join(unseen, ", ");
  constexpr std::size_t kMax = sizeof(store::CountInfoRow{}.note) - 1;
  if (out.size() > kMax) out = out.substr(0, kMax - 3) + "...";
  return out;
}

void PmuPlan::drop_event(std::size_t event) {
  for (int q = 0; q < kPmuQuantities; ++q) {
    auto& ts = terms[q];
    bool uses = false;
    for (const auto& t : ts) uses |= t.event == event;
    if (!uses) continue;
    ts.clear();
    std::string words = quantity_words(static_cast<PmuQuantity>(q));
    bool listed = false;
    for (const auto& m : missing) listed |= m == words;
    if (!listed) missing.push_back(words);
  }
}

PmuPlan plan_events(const std::string& pmu, EventEncoder& encoder) {
  PmuPlan plan;
  plan.pmu = pmu;
  const VendorTable* table = table_for(pmu);
  if (!table) return plan;
  plan.vendor = table->vendor;
  for (const char* u : table->unseen) plan.unseen.emplace_back(u);
  std::map<std::string, std::size_t> index;  // event name -> PmuPlan::events
  for (const auto& qr : table->quantities) {
    bool found = false;
    for (const auto& recipe : qr.alternatives) {
      std::vector<std::pair<std::string, PerfEncoding>> encoded;
      for (const auto& term : recipe) {
        PerfEncoding e;
        std::string name = qualified(pmu, term.event);
        if (!encoder.encode(name, e)) break;
        encoded.emplace_back(std::move(name), e);
      }
      if (encoded.size() != recipe.size()) continue;
      auto& terms = plan.terms[static_cast<int>(qr.quantity)];
      for (std::size_t i = 0; i < recipe.size(); ++i) {
        auto [it, fresh] = index.emplace(encoded[i].first, plan.events.size());
        if (fresh) plan.events.push_back(PmuEvent{encoded[i].first, encoded[i].second});
        terms.push_back(PmuTerm{it->second, recipe[i].factor});
      }
      found = true;
      break;
    }
    if (!found && qr.expected) plan.missing.emplace_back(quantity_words(qr.quantity));
  }
  return plan;
}

std::vector<std::string> candidate_event_names(const std::string& pmu) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const VendorTable* t : {&intel(), &amd()})
    for (const auto& qr : t->quantities)
      for (const auto& recipe : qr.alternatives)
        for (const auto& term : recipe) {
          std::string name = qualified(pmu, term.event);
          if (seen.insert(name).second) out.push_back(name);
        }
  return out;
}

double scaled_count(std::uint64_t value, std::uint64_t enabled, std::uint64_t running) noexcept {
  if (running == 0) return enabled == 0 && value == 0 ? 0.0 : std::nan("");
  if (running >= enabled) return static_cast<double>(value);
  return static_cast<double>(value) * static_cast<double>(enabled) / static_cast<double>(running);
}

store::CountRow pmu_count_row(const PmuPlan& plan, const std::vector<double>& values, int thread) {
  const double nan = std::nan("");
  auto q = [&](PmuQuantity quantity) {
    const auto& ts = plan.terms[static_cast<int>(quantity)];
    if (ts.empty()) return nan;
    double sum = 0;
    for (const auto& t : ts) {
      if (t.event >= values.size() || !std::isfinite(values[t.event])) return nan;
      sum += values[t.event] * t.factor;
    }
    return sum;
  };
  store::CountRow r{};
  r.thread = thread;
  r.function_id = -1;  // the PMU counts whole threads: no per-function split
  r.module_id = -1;
  r.instructions = q(PmuQuantity::Instructions);
  r.flops_fp64_scalar = q(PmuQuantity::Fp64Scalar);
  r.flops_fp64_v128 = q(PmuQuantity::Fp64V128);
  r.flops_fp64_v256 = q(PmuQuantity::Fp64V256);
  r.flops_fp64_v512 = q(PmuQuantity::Fp64V512);
  r.flops_fp32_scalar = q(PmuQuantity::Fp32Scalar);
  r.flops_fp32_v128 = q(PmuQuantity::Fp32V128);
  r.flops_fp32_v256 = q(PmuQuantity::Fp32V256);
  r.flops_fp32_v512 = q(PmuQuantity::Fp32V512);
  r.flops_fp16_scalar = q(PmuQuantity::Fp16Scalar);
  r.flops_fp16_v128 = q(PmuQuantity::Fp16V128);
  r.flops_fp16_v256 = q(PmuQuantity::Fp16V256);
  r.flops_fp16_v512 = q(PmuQuantity::Fp16V512);
  r.flops_unsplit = q(PmuQuantity::FlopsUnsplit);
  r.bytes_l1_read = r.bytes_l1_write = nan;  // loads/stores of every width: no byte count in the PMU
  r.bytes_l2_read = q(PmuQuantity::L2Read);
  r.bytes_l2_write = nan;
  r.bytes_l3_read = q(PmuQuantity::L3Read);
  r.bytes_l3_write = q(PmuQuantity::L3Write);
  r.bytes_dram_read = q(PmuQuantity::DramRead);
  r.bytes_dram_write = nan;
  return r;
}

}  // namespace rtrace::tracer
