#include "rtrace/analysis/dataset.hpp"

#include "rtrace/analysis/profile.hpp"

#include <rtrace/store/code_category.hpp>
#include <rtrace/store/failure_reason.hpp>
#include <rtrace/store/file.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <unordered_map>

namespace rtrace::analysis {
namespace {

double median(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !available(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Per (rank, kernel) running sums.
struct RankKernel {
  KernelAtPoint k;            // counts + instruction sums
  double time_s = 0;
  double counts_time_s = 0;
  std::int64_t launches = 0, metric_launches = 0;
  double blocks = 0, clock_sum = 0;
  std::int64_t clock_n = 0;
};

void add_metrics(RankKernel& acc, const store::KernelRow& m) {
  Counts c;
  c.flops_fp64 = m.flops_fp64;
  c.flops_fp32 = m.flops_fp32;
  c.flops_fp16 = m.flops_fp16;
  c.tensor_ops = m.tensor_ops;
  c.tensor_by_source = {m.tensor_ops_fp16, m.tensor_ops_bf16, m.tensor_ops_tf32, m.tensor_ops_fp64, m.tensor_ops_fp8};
  c.bytes[0] = m.bytes_l1;
  c.bytes[1] = m.bytes_l2;
  c.bytes[3] = nan_add(m.bytes_dram_read, m.bytes_dram_write);
  acc.k.counts.add(c);
  auto& in = acc.k.instructions;
  in.warp_instructions = nan_add(in.warp_instructions, m.warp_instructions);
  in.global_ldst_instructions =
      nan_add(in.global_ldst_instructions, nan_add(m.global_ld_instructions, m.global_st_instructions));
  in.shared_ldst_instructions =
      nan_add(in.shared_ldst_instructions, nan_add(m.shared_ld_instructions, m.shared_st_instructions));
  in.global_transactions = nan_add(in.global_transactions, m.global_transactions);
  in.shared_transactions = nan_add(in.shared_transactions, m.shared_transactions);
  if (available(m.sm_clock_hz) && m.sm_clock_hz > 0) { acc.clock_sum += m.sm_clock_hz; ++acc.clock_n; }
  acc.k.metrics_provenance = merge_provenance(acc.k.metrics_provenance, store::get_str(m.metrics_provenance));
}

double launch_seconds(const store::KernelRow* trace, const store::KernelRow* metrics) {
  if (trace && trace->end_ns > trace->start_ns) return 1e-9 * static_cast<double>(trace->end_ns - trace->start_ns);
  if (metrics && metrics->end_ns > metrics->start_ns)
    return 1e-9 * static_cast<double>(metrics->end_ns - metrics->start_ns);
  if (metrics && available(metrics->metric_duration_ns)) return 1e-9 * metrics->metric_duration_ns;
  return kNaN;
}

// One counted row in the analysis' terms: FLOPs per precision over all vector
// widths; bytes per level = lines read (filled) plus, where the source counts
// them, lines written back. A level whose reads are unavailable is
// unavailable: its write-backs alone would understate it.
Counts counts_of_row(const store::CountRow& r) {
  Counts c;
  auto sum = [](std::initializer_list<double> v) {
    double t = kNaN;
    for (double x : v) t = nan_add(t, x);
    return t;
  };
  c.flops_fp64 = sum({r.flops_fp64_scalar, r.flops_fp64_v128, r.flops_fp64_v256, r.flops_fp64_v512});
  c.flops_fp32 = sum({r.flops_fp32_scalar, r.flops_fp32_v128, r.flops_fp32_v256, r.flops_fp32_v512});
  c.flops_fp16 = sum({r.flops_fp16_scalar, r.flops_fp16_v128, r.flops_fp16_v256, r.flops_fp16_v512});
  c.flops_unsplit = r.flops_unsplit;
  const double reads[kLevelCount] = {r.bytes_l1_read, r.bytes_l2_read, r.bytes_l3_read, r.bytes_dram_read};
  const double writes[kLevelCount] = {r.bytes_l1_write, r.bytes_l2_write, r.bytes_l3_write, r.bytes_dram_write};
  for (int i = 0; i < kLevelCount; ++i) c.bytes[i] = available(reads[i]) ? nan_add(reads[i], writes[i]) : kNaN;
  return c;
}

// The counting tool's name for code outside every mapped module (rank_counts.cpp).
const char* const kUnknownModule = "[unknown]";

int status_rank(const std::string& status) {
  if (status == "ok") return 0;
  if (status == "partial") return 1;
  if (status == "unavailable") return 2;
  return 3;  // "failed" or anything unknown
}

// The app's error line of a committed point ("" when it has none or it cannot be read).
std::string point_reason(const store::Group& root, const store::SweepPointRow& row) {
  try {
    if (root.exists("points") && root.open_group("points").exists(store::point_group_name(row.point_id))) {
      const auto out = store::read_output(root.open_group("points").open_group(store::point_group_name(row.point_id)));
      return store::failure_reason(out.stderr_tail, out.stdout_tail);
    }
  } catch (const store::Error&) {
    // The output is a courtesy: a point without a readable one still has its status.
  }
  return "";
}

// Why a planned point cannot be used, in one clause: "point 2 (ranks=2): failed, exit 1: <its error line>".
std::string point_problem(const store::Group& root, const store::SweepPointRow& row) {
  std::string status = store::get_str(row.status);
  std::string out = "point " + std::to_string(row.point_id) + " (" + store::get_str(row.label) + "): ";
  if (status == "pending" || status.empty()) return out + "not run";
  if (!row.complete && status == "ok") out += "not committed";
  else out += status;
  if (row.signal > 0) out += ", signal " + std::to_string(row.signal);
  else if (row.exit_code >= 0 && status != "ok") out += ", exit " + std::to_string(row.exit_code);
  const std::string why = point_reason(root, row);
  if (!why.empty()) out += ": " + why;
  return out;
}

// Cores of the machine and whether the sweep was zipped (for oversubscription and weak scaling).
void read_run_context(const store::Group& root, RunData& run) {
  try {
    store::MachineInfo m = store::read_machine(root);
    run.cores = m.pus > 0 ? m.pus : m.cores;  // logical CPUs: what the scheduler time-slices
    run.vector_bits = m.vector_bits;
  } catch (const store::Error&) {
    run.cores = 0;
  }
  try {
    store::RunMetadata meta = store::read_run_metadata(root);
    if (!meta.options_json.empty()) {
      auto j = nlohmann::json::parse(meta.options_json, nullptr, false);
      if (j.is_object() && j.contains("zip") && j["zip"].is_boolean()) run.zip = j["zip"].get<bool>();
    }
  } catch (const store::Error&) {
    run.zip = false;
  }
}

// Whether a counted row lies in the counted window: "inside", or "" (a file
// before schema 1.8, PMU counts: the whole run).
bool row_inside_window(const store::CountRow& row) {
  const std::string w = store::get_str(row.window);
  return w.empty() || w == "inside";
}

// The count tables of a point's ranks, one rank at a time: one
// "application" kernel (every row of every rank whose counts are usable) and
// one "function" kernel per counted function (raw names), untimed. Memory
// follows the counted functions, not the ranks.
class CountsFold {
 public:
  CountsFold() {
    app_.name = kApplicationKind;
    app_.kind = kApplicationKind;
  }
  void add(const store::RankRecords& rec, PointCounts& pc) {
    const int r = rank_index_++;
    if (rec.counts_info.empty()) return;
    const auto& info = rec.counts_info.front();
    const std::string status = store::get_str(info.status);
    pc.present = true;
    if (status_rank(status) > worst_) {
      worst_ = status_rank(status);
      pc.status = status;
    }
    if (pc.source.empty()) pc.source = store::get_str(info.source);
    if (pc.note.empty()) pc.note = store::get_str(info.note);
    if (pc.window.empty()) pc.window = store::get_str(info.window);
    // A user's window: "calls 10-20 of timestep", "0-600 s of the counting run".
    pc.user_window |= pc.window.rfind("calls ", 0) == 0 || pc.window.find(" of the counting run") != std::string::npos;
    if (pc.steered.empty()) pc.steered = store::get_str(info.steered);
    if (pc.not_steered.empty()) pc.not_steered = store::get_str(info.not_steered);
    pc.serialised |= info.serialised != 0;
    if (status != "ok" && status != "partial") return;
    pc.usable = true;
    ++pc.ranks_counted;
    if (pc.levels.empty()) pc.levels = rec.count_levels;
    if (pc.cache_geometry.empty()) pc.cache_geometry = store::get_str(info.cache_geometry);
    ++app_.ranks_present;
    auto name_of = [&](std::int64_t id) -> std::string {
      if (id < 0) return "";
      return id < static_cast<std::int64_t>(rec.names.size()) ? rec.names[static_cast<std::size_t>(id)]
                                                              : "name#" + std::to_string(id);
    };
    // Rows counted without the cache simulation: outside a user's window.
    bool light_rows = false;
    for (const auto& row : rec.counts) light_rows |= std::isnan(row.bytes_l1_read) && !row_inside_window(row);
    pc.user_window |= light_rows;
    for (const auto& row : rec.counts) {
      const Counts c = counts_of_row(row);
      const std::string name = name_of(row.function_id), module = name_of(row.module_id);
      // The application: the counted window, the one the POP summary times
      // (MPI_Init's return .. MPI_Finalize); rows of older files are the whole run.
      const bool inside = row_inside_window(row);
      // The runtimes' code (a waiting rank spinning in MPI's progress engine,
      // a thread in the OpenMP runtime's barrier) is counted apart, in the
      // same window; so is code outside any module that does no floating-point
      // work (the vDSO a polling runtime reads its clock from: no module says whose it is).
      std::string category = store::code_category(module, name);
      if (module == kUnknownModule && !(c.total_flops() > 0)) category = kUnattributedCategory;
      if (store::is_runtime_category(category) || category == kUnattributedCategory) {
        if (inside) pc.runtime.add(category, name, c, row.instructions);
        continue;
      }
      if (inside) {
        app_.counts.add(c);
        app_.mix.add(flop_mix_of(row));
        app_.counted_instructions = nan_add(app_.counted_instructions, row.instructions);
      }
      if (row.function_id < 0) continue;  // not attributed to a function
      // A function's counts pair with its sampled time, which covers the whole
      // run; outside a user's window there are no bytes to pair.
      if (light_rows && !inside) continue;
      const FlopMix mix = flop_mix_of(row);
      // The counting tool's own accounting rows (bracketed names, e.g. the
      // dirty lines written back at exit) are the program's, no function's.
      if (!name.empty() && name.front() == '[') continue;
      CountedCode& code = pc.code[name];
      if (code.module.empty() && module.size() && module.front() != '[') code.module = module;
      if (available(row.instructions)) code.instructions += row.instructions;
      if (available(c.total_flops())) code.flops += c.total_flops();
      KernelAtPoint& f = functions_[name];
      f.counts.add(c);
      f.mix.add(mix);
      f.counted_instructions = nan_add(f.counted_instructions, row.instructions);
      auto [it, fresh] = last_rank_.emplace(name, r);
      if (fresh || it->second != r) {
        ++f.ranks_present;
        it->second = r;
      }
    }
  }
  void finish(PointAggregate& out) {
    const PointCounts& pc = out.counts;
    if (!pc.usable) return;
    app_.counts_source = pc.source;
    // The code that does the application's FLOPs: the functions holding at
    // least 1% of them. Start-up, the loader, exit write-backs and copies
    // without FLOPs stay out: each process repeats them.
    const double flops = app_.counts.total_flops();
    if (available(flops) && flops > 0)
      for (const auto& [name, f] : functions_)
        if (f.counts.total_flops() >= kWorkFlopShare * flops) app_.work_counts.add(f.counts);
    out.kernels.push_back(std::move(app_));
    for (auto& [name, f] : functions_) {
      f.name = name;
      f.kind = kFunctionKind;
      f.counts_source = pc.source;
      out.kernels.push_back(std::move(f));
    }
  }

 private:
  KernelAtPoint app_;
  std::map<std::string, KernelAtPoint> functions_;
  std::map<std::string, int> last_rank_;  // function -> last rank index counted (ranks_present)
  int worst_ = -1;
  int rank_index_ = 0;
};

Counts declared_sum(const std::vector<KernelAtPoint>& kernels, bool& any) {
  Counts sum;
  any = false;
  for (const auto& k : kernels)
    if (k.kind == "region" && k.counts_source == "annotation") {
      sum.add(k.counts);
      any = true;
    }
  return sum;
}

// Declared against counted, each quantity both sides have: the differences above 10%.
void compare_counts(const Counts& declared, const Counts& counted, const std::string& kernel,
                    const std::string& function, const std::string& source, std::vector<CountsCheck>& out) {
  auto check = [&](const char* quantity, double d, double c) {
    if (!available(d) || !available(c) || !(c > 0)) return;
    const double diff = d / c - 1;
    if (std::fabs(diff) <= kCountsDisagreement) return;
    out.push_back(CountsCheck{kernel, function, quantity, d, c, diff, source});
  };
  check("FLOPs", declared.total_flops(), counted.total_flops());
  const char* names[kLevelCount] = {"L1 bytes", "L2 bytes", "L3 bytes", "DRAM bytes"};
  for (int i = 0; i < kLevelCount; ++i) check(names[i], declared.bytes[i], counted.bytes[i]);
}

// A function's name without its parameters and without the OpenMP region
// mark: "triad (OpenMP region 1)" and "triad(long)" are both "triad".
std::string base_function_name(const std::string& name) {
  std::string s = short_function_name(name);
  if (auto at = s.find(" (OpenMP region"); at != std::string::npos) s.resize(at);
  return s;
}

// Declared annotations win: a counted function named like a declared region
// (its OpenMP regions included) leaves the kernels after the two are compared;
// the whole application is compared with the sum of the declared regions.
void reconcile_declared_and_counted(Configuration& c) {
  const KernelAtPoint* app = c.find(kApplicationKind, kApplicationKind);
  if (!app) return;
  const std::string source = app->counts_source;
  bool any = false;
  const Counts regions = declared_sum(c.kernels, any);
  if (any) compare_counts(regions, app->counts, "application", "", source, c.counts_checks);
  std::vector<bool> drop(c.kernels.size(), false);
  for (const auto& k : c.kernels) {
    if (k.kind != "region" || k.counts_source != "annotation") continue;
    Counts counted;
    std::string names;
    for (std::size_t i = 0; i < c.kernels.size(); ++i) {
      const auto& f = c.kernels[i];
      if (f.kind != kFunctionKind || base_function_name(f.name) != k.name) continue;
      counted.add(f.counts);
      names += (names.empty() ? "" : ", ") + f.name;
      drop[i] = true;
    }
    if (!names.empty()) compare_counts(k.counts, counted, k.name, names, source, c.counts_checks);
  }
  std::vector<KernelAtPoint> kept;
  for (std::size_t i = 0; i < c.kernels.size(); ++i)
    if (!drop[i]) kept.push_back(std::move(c.kernels[i]));
  c.kernels = std::move(kept);
}

// The sampled time of a counted function in one repeat: its own samples and
// those of code inlined into it (a host function's name, as the counting
// pass attributes code to function symbols).
double sampled_time_of(const std::map<std::string, double>& sampled, const std::string& function) {
  auto it = sampled.find(function);
  return it == sampled.end() ? kNaN : it->second;
}

}  // namespace

bool is_concurrency_axis(const std::string& axis) noexcept {
  for (const char* a : kConcurrencyAxes)
    if (axis == a) return true;
  return false;
}

// Per kernel over the ranks folded so far.
struct KernelFold {
  KernelAtPoint k;                // name, kind, ranks_present, counts, instruction sums, counts_source
  double tmax = 0, tsum = 0, cmax = 0, clock_sum = 0, blocks = 0;
  std::int64_t clock_n = 0, launches = 0, metric_launches = 0;
};

struct RankFolder::State {
  std::unordered_map<std::string, std::size_t> index;  // "kind\x1fname" -> folds
  std::vector<KernelFold> folds;
  PointUsageBuilder usage;
  CountsFold counts;
  PointCounts point_counts;
  std::map<std::string, double> sampled;  // host function -> wall-clock time, the slowest rank's so far
  std::map<std::string, SampledCode> sampled_code;
  double sampled_work = 0;
  std::vector<std::int64_t> rank_ids;
  double wall_max = kNaN;
  bool any_mpi = false, counters = false, gpu = false;
  std::size_t nranks = 0;
  std::vector<std::string> warnings;
  std::size_t warnings_dropped = 0;
};

namespace {
constexpr std::size_t kMaxRankWarnings = 20;  // then "... and N more" (10^5 ranks would print 10^5 lines)
}

RankFolder::RankFolder() : s_(std::make_unique<State>()) {}
RankFolder::~RankFolder() = default;

void RankFolder::add(const store::RankRecords& rec) {
  State& st = *s_;
  ++st.nranks;
  st.rank_ids.push_back(rec.info.rank);
  // This rank's sums per kernel first (a kernel has one row per launch).
  std::unordered_map<std::string, RankKernel> mine;
  auto slot = [&](const std::string& kind, const std::string& name) -> RankKernel& {
    auto [it, fresh] = mine.try_emplace(kind + '\x1f' + name);
    if (fresh) {
      it->second.k.name = name;
      it->second.k.kind = kind;
    }
    return it->second;
  };
  auto name_of = [&](std::int64_t id) -> std::string {
    if (id >= 0 && static_cast<std::size_t>(id) < rec.names.size()) return rec.names[static_cast<std::size_t>(id)];
    return "name#" + std::to_string(id);
  };
  if (available(rec.info.wall_s))
    st.wall_max = available(st.wall_max) ? std::max(st.wall_max, rec.info.wall_s) : rec.info.wall_s;
  st.counters |= rec.info.counters_available != 0;
  st.gpu |= rec.info.gpu_available != 0 || !rec.kernels.empty();
  auto warn = [&](std::string w) {
    if (st.warnings.size() < kMaxRankWarnings) st.warnings.push_back(std::move(w));
    else ++st.warnings_dropped;
  };
  if (rec.info.complete == 0) warn("rank " + std::to_string(rec.info.rank) + " did not flush at a normal exit");
  if (rec.info.dropped_records > 0)
    warn("rank " + std::to_string(rec.info.rank) + " dropped " + std::to_string(rec.info.dropped_records) + " records");
  for (const auto& m : rec.mpi)
    if (available(m.time_s)) st.any_mpi = true;

  // Regions: declared counts win; hardware FP counters fill in when nothing was declared.
  for (const auto& row : rec.regions) {
    RankKernel& acc = slot("region", name_of(row.name_id));
    Counts c;
    c.flops_fp64 = row.flops_fp64;
    c.flops_fp32 = row.flops_fp32;
    c.flops_fp16 = row.flops_fp16;
    if (!available(c.flops_fp64) && !available(c.flops_fp32) && !available(c.flops_fp16)) {
      c.flops_fp64 = row.hw_fp64_ops;
      c.flops_fp32 = row.hw_fp32_ops;
    }
    c.bytes = {row.bytes_l1, row.bytes_l2, row.bytes_l3, row.bytes_dram};
    if (acc.k.counts_source.empty()) {
      if (available(row.flops_fp64) || available(row.flops_fp32) || available(row.flops_fp16) ||
          available(row.bytes_l1) || available(row.bytes_l2) || available(row.bytes_l3) || available(row.bytes_dram))
        acc.k.counts_source = "annotation";
      else if (available(c.flops_fp64) || available(c.flops_fp32))
        acc.k.counts_source = "pmu:perf_event (region counters)";
    }
    acc.k.counts.add(c);
    if (available(row.time_s)) { acc.time_s += row.time_s; acc.counts_time_s += row.time_s; }
    acc.launches += row.calls;
  }

  // Kernels: join trace-only rows with metric rows by (name, per-name launch order).
  if (!rec.kernels.empty()) {
    struct Pair { const store::KernelRow* trace = nullptr; const store::KernelRow* metrics = nullptr; };
    std::unordered_map<std::uint64_t, Pair> launches;
    launches.reserve(rec.kernels.size());
    std::unordered_map<std::int64_t, std::int64_t> next_unknown;  // rows without a launch index
    for (const auto& row : rec.kernels) {
      std::int64_t li = row.launch_index;
      if (li < 0) li = (std::int64_t{1} << 40) + next_unknown[row.name_id]++;
      std::uint64_t key = (static_cast<std::uint64_t>(row.name_id) << 42) ^ static_cast<std::uint64_t>(li);
      Pair& p = launches[key];
      if (row.has_metrics) {
        if (!p.metrics) p.metrics = &row;
        if (!p.trace && row.end_ns > row.start_ns) p.trace = &row;
      } else if (!p.trace || p.trace->has_metrics) {
        p.trace = &row;
      }
    }
    // A count joins its launch only with the same grid and block sizes (with
    // another SM count a library may launch the same kernel split otherwise:
    // issue 31); the launcher already leaves such counts out, older files may hold them.
    std::int64_t other_shape = 0;
    for (auto& [key, p] : launches) {
      if (!p.trace || !p.metrics || p.trace == p.metrics) continue;
      const store::KernelRow& t = *p.trace;
      const store::KernelRow& m = *p.metrics;
      if (t.grid_x != m.grid_x || t.grid_y != m.grid_y || t.grid_z != m.grid_z || t.block_x != m.block_x ||
          t.block_y != m.block_y || t.block_z != m.block_z) {
        p.metrics = nullptr;
        ++other_shape;
      }
    }
    if (other_shape > 0)
      warn("rank " + std::to_string(rec.info.rank) + ": " + std::to_string(other_shape) +
           " kernel launch(es) without counts: the metrics run launched them with other grid or block sizes");
    // Per-name kernel slots, resolved once per name id.
    std::unordered_map<std::int64_t, RankKernel*> by_name;
    for (const auto& [key, p] : launches) {
      const store::KernelRow* any = p.trace ? p.trace : p.metrics;
      auto it = by_name.find(any->name_id);
      if (it == by_name.end()) it = by_name.emplace(any->name_id, &slot("gpu-kernel", name_of(any->name_id))).first;
      RankKernel& acc = *it->second;
      double secs = launch_seconds(p.trace, p.metrics);
      ++acc.launches;
      if (available(secs)) acc.time_s += secs;
      acc.blocks += static_cast<double>(any->grid_x) * any->grid_y * any->grid_z;
      if (p.metrics) {
        acc.k.counts_source = "cupti";
        ++acc.metric_launches;
        add_metrics(acc, *p.metrics);
        if (available(secs)) acc.counts_time_s += secs;
      }
    }
  }

  // Fold this rank's kernels into the point's.
  for (auto& [key, rk] : mine) {
    if (rk.launches == 0 && rk.time_s == 0) continue;
    auto it = st.index.find(key);
    if (it == st.index.end()) {
      it = st.index.emplace(key, st.folds.size()).first;
      st.folds.emplace_back();
      st.folds.back().k.name = rk.k.name;
      st.folds.back().k.kind = rk.k.kind;
    }
    KernelFold& f = st.folds[it->second];
    ++f.k.ranks_present;
    f.k.counts.add(rk.k.counts);
    if (f.k.counts_source.empty()) f.k.counts_source = rk.k.counts_source;
    f.k.metrics_provenance = merge_provenance(f.k.metrics_provenance, rk.k.metrics_provenance);
    auto& a = f.k.instructions;
    const auto& b = rk.k.instructions;
    a.warp_instructions = nan_add(a.warp_instructions, b.warp_instructions);
    a.global_ldst_instructions = nan_add(a.global_ldst_instructions, b.global_ldst_instructions);
    a.shared_ldst_instructions = nan_add(a.shared_ldst_instructions, b.shared_ldst_instructions);
    a.global_transactions = nan_add(a.global_transactions, b.global_transactions);
    a.shared_transactions = nan_add(a.shared_transactions, b.shared_transactions);
    f.tmax = std::max(f.tmax, rk.time_s);
    f.cmax = std::max(f.cmax, rk.counts_time_s);
    f.tsum += rk.time_s;
    f.launches += rk.launches;
    f.metric_launches += rk.metric_launches;
    f.blocks += rk.blocks;
    f.clock_sum += rk.clock_sum;
    f.clock_n += rk.clock_n;
  }
  st.counts.add(rec, st.point_counts);
  if (!rec.sampling.empty()) {
    // A function's time on this rank: its share of the critical thread's
    // samples times the rank's wall time. Samples measure the thread's CPU
    // time, which falls below the wall time when the thread is descheduled
    // (a busy node, more ranks than cores): the counts' rate must divide by
    // the time the work took, as the application's does.
    HostFunctionTimes h = sampled_host_function_times_of(rec);
    const double period = rec.sampling[0].period_s;
    const double cpu = h.samples * period;
    const double to_wall = available(rec.info.wall_s) && rec.info.wall_s > 0 && cpu > 0 ? rec.info.wall_s / cpu : 1.0;
    for (const auto& [fn, seconds] : h.seconds) {
      double& t = st.sampled[fn];
      t = std::max(t, seconds * to_wall);  // the slowest rank, as for regions
    }
    RankSampledCode code = sampled_code_of(rec);
    st.sampled_work += code.work;
    for (auto& [fn, c] : code.functions) {
      SampledCode& into = st.sampled_code[fn];
      if (into.module.empty()) {
        into.module = c.module;
        into.category = c.category;
      }
      into.samples += c.samples;
    }
  }
  st.usage.add(rec);
}

PointAggregate RankFolder::finish() {
  State& st = *s_;
  PointAggregate out;
  out.ranks_found = static_cast<int>(st.nranks);
  out.counters_available = st.counters;
  out.gpu = st.gpu;
  out.rank_warnings = std::move(st.warnings);
  if (st.warnings_dropped > 0)
    out.rank_warnings.push_back("... and " + std::to_string(st.warnings_dropped) + " more rank warnings");
  out.counts = std::move(st.point_counts);
  st.counts.finish(out);
  out.sampled_time_s = std::move(st.sampled);
  out.sampled_code = std::move(st.sampled_code);
  out.sampled_work = st.sampled_work;
  if (available(st.wall_max)) out.app_time_s = st.wall_max;
  // MPI share inside the MPI window, Init/Finalize excluded (pop.hpp).
  out.usage = st.usage.finish();
  out.hosts = node_balance(out.usage, st.rank_ids);
  if (st.any_mpi || out.usage.mpi_initialised) out.mpi_share = pop_point(out.usage, 1).mpi_share;

  const double nranks = static_cast<double>(st.nranks);
  out.kernels.reserve(out.kernels.size() + st.folds.size());
  for (auto& f : st.folds) {
    KernelAtPoint k = std::move(f.k);
    k.calls = f.launches;
    k.time_s = f.tmax;
    k.counts_time_s = f.cmax > 0 ? f.cmax : kNaN;
    k.mean_rank_time_s = nranks > 0 ? f.tsum / nranks : kNaN;
    k.imbalance = k.mean_rank_time_s > 0 ? f.tmax / k.mean_rank_time_s - 1 : kNaN;
    if (f.clock_n) k.instructions.sm_clock_hz = f.clock_sum / static_cast<double>(f.clock_n);
    if (k.kind == "gpu-kernel" && f.launches > 0) {
      k.mean_launch_s = f.tsum / static_cast<double>(f.launches);
      k.mean_blocks = f.blocks / static_cast<double>(f.launches);
      k.metric_coverage = static_cast<double>(f.metric_launches) / static_cast<double>(f.launches);
    }
    out.kernels.push_back(std::move(k));
  }
  std::sort(out.kernels.begin(), out.kernels.end(), [](const KernelAtPoint& a, const KernelAtPoint& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
  });
  s_ = std::make_unique<State>();
  return out;
}

PointAggregate aggregate_ranks(const std::vector<store::RankRecords>& ranks) {
  RankFolder folder;
  for (const auto& r : ranks) folder.add(r);
  return folder.finish();
}

double Configuration::sms() const noexcept {
  // The %smid measurement; without one, the grant (older files: the request).
  if (sms_achieved > 0) return sms_achieved;
  if (sms_granted > 0) return sms_granted;
  if (sms_requested > 0) return sms_requested;
  return kNaN;
}

double Configuration::concurrency(const std::string& axis) const noexcept {
  int v = -1;
  if (axis == "threads") v = threads;
  else if (axis == "ranks") v = ranks;
  else if (axis == "nodes") v = nodes;
  else if (axis == "sms") return sms();
  return v > 0 ? v : kNaN;
}

double Configuration::timed_app_time_s() const noexcept {
  const PopPoint& p = pop.pop;
  if (p.basis == "mpi" && p.window_measured && available(p.window_s)) return p.window_s;
  return app_time_s;
}

const KernelAtPoint* Configuration::find(const std::string& kind, const std::string& name) const noexcept {
  auto it = std::lower_bound(kernels.begin(), kernels.end(), std::make_pair(kind, name),
                             [](const KernelAtPoint& k, const std::pair<std::string, std::string>& key) {
                               return k.kind != key.first ? k.kind < key.first : k.name < key.second;
                             });
  if (it != kernels.end() && it->kind == kind && it->name == name) return &*it;
  return nullptr;
}

namespace {

// The counted code against the code the timed runs' samples hold (all
// repeats of the configuration): the hot functions one side has and the
// other lacks.
std::vector<CodeMismatch> code_mismatches(const std::vector<PointAggregate>& points, const PointAggregate& counted) {
  std::map<std::string, SampledCode> timed;
  double work = 0;
  for (const auto& p : points) {
    work += p.sampled_work;
    for (const auto& [fn, code] : p.sampled_code) {
      SampledCode& into = timed[fn];
      if (into.module.empty()) {
        into.module = code.module;
        into.category = code.category;
      }
      into.samples += code.samples;
    }
  }
  const KernelAtPoint* app = nullptr;
  for (const auto& k : counted.kernels)
    if (k.kind == kApplicationKind) app = &k;
  if (!app) return {};
  return compare_code(timed, work, counted.counts.code, app->counted_instructions);
}

// The counting pass ran once per configuration: its repeat's counts serve
// every repeat. Times come from the timed runs: the application's is the
// summary's (MPI window or wall), a function's its sampled time (median over
// the repeats that were sampled; unavailable without samples).
void add_counted_kernels(Configuration& c, const std::vector<PointAggregate>& points) {
  const PointAggregate* counted = nullptr;
  for (const auto& p : points)
    if (p.counts.usable) {
      counted = &p;
      break;
    }
  if (!counted) {
    for (const auto& p : points)
      if (p.counts.present) {
        c.counts = p.counts;  // unavailable or failed: kept for the report's note
        break;
      }
    return;
  }
  c.counts = counted->counts;
  c.code_mismatches = code_mismatches(points, *counted);
  const PopPoint& pop = c.pop.pop;
  // A window the user chose was not timed: intensities, no rates.
  const bool untimed_window = c.counts.user_window;
  for (const auto& k0 : counted->kernels) {
    if (!is_counted_kind(k0.kind)) continue;
    KernelAtPoint k = k0;
    for (const auto& m : c.code_mismatches)
      if (k.kind == kFunctionKind && m.counted == k.name) k.code_note = m.sentence;
    if (k.kind == kApplicationKind) {
      k.time_s = k.counts_time_s = c.timed_app_time_s();
      k.time_spread = c.app_time_spread;
      k.repeats = std::max(1, c.repeats());
      // Rank imbalance of the useful time (MPI apps): the serial-fraction and
      // imbalance evidence of the step classifier.
      if (pop.basis == "mpi" && available(pop.useful_max_s) && available(pop.useful_mean_s) && pop.useful_max_s > 0) {
        k.imbalance = pop.useful_max_s / pop.useful_mean_s - 1;
        k.mean_rank_time_s = k.time_s * pop.useful_mean_s / pop.useful_max_s;
      } else {
        k.mean_rank_time_s = k.time_s;
      }
    } else {
      std::vector<double> times;
      for (const auto& p : points) {
        const double t = sampled_time_of(p.sampled_time_s, k.name);
        if (available(t) && t > 0) times.push_back(t);
      }
      k.repeats = std::max<int>(1, static_cast<int>(times.size()));
      k.time_s = k.counts_time_s = k.mean_rank_time_s = median(times);
      if (times.size() > 1 && k.time_s > 0) {
        auto [lo, hi] = std::minmax_element(times.begin(), times.end());
        k.time_spread = (*hi - *lo) / k.time_s;
      }
    }
    if (untimed_window) k.time_s = k.counts_time_s = k.mean_rank_time_s = kNaN;
    c.kernels.push_back(std::move(k));
  }
}

}  // namespace

Configuration combine_repeats(const std::vector<store::SweepPointRow>& rows, const std::vector<PointAggregate>& points,
                              const CeilingSet& ceilings) {
  Configuration c;
  const auto& first = rows.front();
  c.label = store::get_str(first.label);
  c.threads = first.threads;
  c.ranks = first.ranks;
  c.nodes = first.nodes;
  c.sms_requested = first.sms_requested;
  c.sms_achieved = first.sms_achieved;
  c.sms_granted = first.sms_granted;
  c.ceilings = ceilings;
  for (const auto& r : rows) c.point_ids.push_back(r.point_id);
  std::vector<double> app, mpi;
  for (const auto& p : points) {
    app.push_back(p.app_time_s);
    mpi.push_back(p.mpi_share);
    c.gpu |= p.gpu;
    c.counters_available |= p.counters_available;
    c.ranks_found = std::max(c.ranks_found, p.ranks_found);
  }
  c.app_time_s = median(app);
  if (available(c.app_time_s) && c.app_time_s > 0) {
    auto [lo, hi] = std::minmax_element(app.begin(), app.end());
    c.app_time_spread = (*hi - *lo) / c.app_time_s;
  }
  c.mpi_share = median(mpi);
  for (const auto& p : points) c.sampled_work += p.sampled_work;
  {
    std::vector<PointUsage> usages;
    for (const auto& p : points) usages.push_back(p.usage);
    c.pop = combine_pop(usages, c.threads);
    if (!points.empty())
      c.hosts = points[c.pop.representative >= 0 && c.pop.representative < static_cast<int>(points.size())
                           ? static_cast<std::size_t>(c.pop.representative)
                           : 0]
                    .hosts;
  }
  {
    std::istringstream in(c.label);
    std::string token;
    while (in >> token) {
      auto eq = token.find('=');
      if (eq != std::string::npos) c.tokens.emplace_back(token.substr(0, eq), token.substr(eq + 1));
    }
  }
  if (ceilings.bandwidth(MemLevel::DRAM) && ceilings.bandwidth(MemLevel::DRAM)->name == "HBM") c.gpu = true;

  // Union of kernels over repeats; every field the median over the repeats that have it.
  std::map<std::pair<std::string, std::string>, std::vector<const KernelAtPoint*>> by_key;
  for (const auto& p : points)
    for (const auto& k : p.kernels)
      if (!is_counted_kind(k.kind)) by_key[{k.kind, k.name}].push_back(&k);
  for (const auto& entry : by_key) {
    const auto& reps = entry.second;  // a named reference: lambdas below capture it (clang 14)
    KernelAtPoint k = *reps.front();
    k.repeats = static_cast<int>(reps.size());
    for (const auto* r : reps) k.metrics_provenance = merge_provenance(k.metrics_provenance, r->metrics_provenance);
    if (reps.size() > 1) {
      auto med = [&](auto field) {
        std::vector<double> v;
        for (const auto* r : reps) v.push_back(field(*r));
        return median(std::move(v));
      };
      k.time_s = med([](const KernelAtPoint& x) { return x.time_s; });
      k.counts_time_s = med([](const KernelAtPoint& x) { return x.counts_time_s; });
      k.mean_rank_time_s = med([](const KernelAtPoint& x) { return x.mean_rank_time_s; });
      k.imbalance = med([](const KernelAtPoint& x) { return x.imbalance; });
      k.mean_launch_s = med([](const KernelAtPoint& x) { return x.mean_launch_s; });
      k.mean_blocks = med([](const KernelAtPoint& x) { return x.mean_blocks; });
      k.counts.flops_fp64 = med([](const KernelAtPoint& x) { return x.counts.flops_fp64; });
      k.counts.flops_fp32 = med([](const KernelAtPoint& x) { return x.counts.flops_fp32; });
      k.counts.flops_fp16 = med([](const KernelAtPoint& x) { return x.counts.flops_fp16; });
      k.counts.tensor_ops = med([](const KernelAtPoint& x) { return x.counts.tensor_ops; });
      for (int i = 0; i < kTensorSourceCount; ++i)
        k.counts.tensor_by_source[i] = med([i](const KernelAtPoint& x) { return x.counts.tensor_by_source[i]; });
      k.counts.flops_unsplit = med([](const KernelAtPoint& x) { return x.counts.flops_unsplit; });
      for (int i = 0; i < kLevelCount; ++i)
        k.counts.bytes[i] = med([i](const KernelAtPoint& x) { return x.counts.bytes[i]; });
      k.instructions.warp_instructions = med([](const KernelAtPoint& x) { return x.instructions.warp_instructions; });
      k.instructions.global_ldst_instructions =
          med([](const KernelAtPoint& x) { return x.instructions.global_ldst_instructions; });
      k.instructions.shared_ldst_instructions =
          med([](const KernelAtPoint& x) { return x.instructions.shared_ldst_instructions; });
      k.instructions.global_transactions =
          med([](const KernelAtPoint& x) { return x.instructions.global_transactions; });
      k.instructions.shared_transactions =
          med([](const KernelAtPoint& x) { return x.instructions.shared_transactions; });
      double lo = reps.front()->time_s, hi = lo;
      for (const auto* r : reps) { lo = std::min(lo, r->time_s); hi = std::max(hi, r->time_s); }
      k.time_spread = k.time_s > 0 ? (hi - lo) / k.time_s : 0;
    }
    c.kernels.push_back(std::move(k));
  }
  add_counted_kernels(c, points);
  std::sort(c.kernels.begin(), c.kernels.end(), [](const KernelAtPoint& a, const KernelAtPoint& b) {
    return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
  });
  reconcile_declared_and_counted(c);
  return c;
}

void select_counted_functions(std::vector<Configuration>& configs, int max_functions, double min_share) {
  std::map<std::string, double> score;
  for (const auto& c : configs) {
    const KernelAtPoint* app = c.find(kApplicationKind, kApplicationKind);
    if (!app) continue;
    const bool by_instructions = available(app->counted_instructions) && app->counted_instructions > 0;
    const double app_flops = app->counts.total_flops();
    for (const auto& f : c.kernels) {
      if (f.kind != kFunctionKind) continue;
      const double flops = f.counts.total_flops();
      // No FLOPs and no instructions with bytes: nothing to judge. Code
      // without FLOPs is judged by its bytes per instruction (issue 39).
      const bool instruction_intensity =
          available(f.counted_instructions) && f.counted_instructions > 0 && f.counts.any_bytes();
      if (!(available(flops) && flops > 0) && !instruction_intensity) continue;
      // Counted work (instructions, else FLOPs) or sampled time, whichever
      // share is larger: a memory-bound loop takes time with few instructions.
      double share = kNaN;
      if (by_instructions && available(f.counted_instructions)) share = f.counted_instructions / app->counted_instructions;
      else if (available(app_flops) && app_flops > 0) share = flops / app_flops;
      if (available(f.time_s) && available(app->time_s) && app->time_s > 0)
        share = std::max(available(share) ? share : 0.0, f.time_s / app->time_s);
      if (!available(share)) continue;
      double& s = score[f.name];
      s = std::max(s, share);
    }
  }
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [name, s] : score)
    if (s >= min_share) ranked.emplace_back(s, name);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  if (static_cast<int>(ranked.size()) > max_functions) ranked.resize(static_cast<std::size_t>(max_functions));
  // Display names: the short name, or the full one where two kept functions share it.
  std::map<std::string, int> uses;
  for (const auto& [s, name] : ranked) ++uses[short_function_name(name)];
  std::map<std::string, std::string> display;
  for (const auto& [s, name] : ranked)
    display[name] = uses[short_function_name(name)] > 1 ? name : short_function_name(name);
  for (auto& c : configs) {
    std::vector<KernelAtPoint> kept;
    for (auto& k : c.kernels) {
      if (k.kind == kFunctionKind) {
        auto it = display.find(k.name);
        if (it == display.end()) continue;
        k.name = it->second;
      }
      kept.push_back(std::move(k));
    }
    std::sort(kept.begin(), kept.end(), [](const KernelAtPoint& a, const KernelAtPoint& b) {
      return a.kind != b.kind ? a.kind < b.kind : a.name < b.name;
    });
    c.kernels = std::move(kept);
  }
}

CeilingSet to_ceiling_set(const std::vector<store::CeilingRow>& rows, const std::string& source_file) {
  std::vector<Ceiling> out;
  for (const auto& r : rows) {
    Ceiling c;
    c.name = store::get_str(r.name);
    c.kind = store::get_str(r.kind);
    c.precision = store::get_str(r.precision);
    c.variant = store::get_str(r.variant);
    c.unit = store::get_str(r.unit);
    c.value = r.value;
    c.min = r.min;
    c.max = r.max;
    c.marked = r.unreliable > 0;  // -1: written before the checks existed
    c.unreliable_reason = store::get_str(r.unreliable_reason);
    c.host = store::get_str(r.host);
    if (!store::get_str(r.source).empty()) c.source = store::get_str(r.source);  // "" before schema 1.8: measured
    c.source_file = source_file;
    c.reference_date = store::get_str(r.reference_date);
    c.measured = c.source == "reference" ? r.measured : c.source == "measured" ? r.value : kNaN;
    // A marked measurement the machine's reference stands in for is not used:
    // the reference passed every check when it was measured.
    c.unreliable = c.marked && c.source != "reference";
    out.push_back(std::move(c));
  }
  return CeilingSet(std::move(out));
}

RunData load_run(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw InputError(path + ": no such file");
  if (S_ISDIR(st.st_mode)) throw InputError(path + ": is a directory, expected an rtrace run file");
  if (!store::File::is_hdf5(path)) throw InputError(path + ": not an HDF5 file (expected an rtrace run file)");
  RunData run;
  run.path = path;
  try {
    store::File file = store::File::open(path);
    store::check_schema(file);
    const auto& root = file.root();
    if (root.has_attr("file_kind") && root.attr_string("file_kind") != "run")
      throw InputError(path + ": file_kind is '" + root.attr_string("file_kind") + "', expected a run file");
    if (!root.exists("sweep")) throw InputError(path + ": no /sweep group: not a run file");
    for (const auto& a : store::read_axes(file)) run.axes.push_back(store::get_str(a.name));
    auto plan = store::read_points(file);
    run.points_planned = static_cast<int>(plan.size());

    // Group usable points by label, in plan order.
    std::vector<std::string> order;
    std::map<std::string, std::vector<store::SweepPointRow>> by_label;
    int skipped_incomplete = 0;
    for (const auto& row : plan) {
      std::string status = store::get_str(row.status);
      std::string label = store::get_str(row.label);
      if (!row.complete) {
        ++skipped_incomplete;
        run.point_problems.push_back(point_problem(root, row));
        continue;
      }
      if (status != "ok") {
        // The reason is the app's own error line (issue 25: it was stored but printed nowhere).
        const std::string problem = point_problem(root, row);
        run.warnings.push_back(problem + " (left out)");
        run.point_problems.push_back(problem);
        run.failed_points.push_back({row.point_id, label, status, row.exit_code, row.signal, point_reason(root, row)});
        continue;
      }
      if (!by_label.count(label)) order.push_back(label);
      by_label[label].push_back(row);
    }
    if (skipped_incomplete)
      run.warnings.push_back(std::to_string(skipped_incomplete) + " of " + std::to_string(plan.size()) +
                             " planned points are not complete: left out");
    if (order.empty()) {
      std::string why;
      for (std::size_t i = 0; i < run.point_problems.size() && i < 8; ++i) why += "; " + run.point_problems[i];
      if (run.point_problems.size() > 8) why += "; ... " + std::to_string(run.point_problems.size() - 8) + " more";
      throw InputError(path + ": no complete points with status ok (" + std::to_string(plan.size()) +
                       " planned, none usable" + why + ")");
    }
    read_run_context(root, run);
    if (!root.exists("points")) throw InputError(path + ": complete points listed but no /points group");
    store::Group points_group = root.open_group("points");

    for (const auto& label : order) {
      const auto& rows = by_label[label];
      std::vector<PointAggregate> aggs;
      CeilingSet ceilings;
      std::vector<Ceiling> node_ceilings;
      for (const auto& row : rows) {
        std::string pname = store::point_group_name(row.point_id);
        if (!points_group.exists(pname))
          throw InputError(path + ": point " + std::to_string(row.point_id) + " is marked complete but /points/" +
                           pname + " is missing");
        store::Group pg = points_group.open_group(pname);
        const std::string ceilings_file = pg.has_attr("ceilings_source") ? pg.attr_string("ceilings_source") : "";
        if (ceilings.empty() && pg.exists("ceilings"))
          ceilings = to_ceiling_set(store::read_ceilings(pg), ceilings_file);
        if (node_ceilings.empty() && pg.exists("node_ceilings"))
          node_ceilings = to_ceiling_set(pg.read_table<store::CeilingRow>("node_ceilings"), ceilings_file).all();
        // One rank at a time, only the tables the aggregates use.
        RankFolder folder;
        if (pg.exists("ranks")) {
          store::Group rg = pg.open_group("ranks");
          for (const auto& child : rg.children())
            folder.add(store::read_rank_parts(rg.open_group(child),
                                              store::kRankInfo | store::kRankNames | store::kRankRegions |
                                                  store::kRankGpuKernels | store::kRankMpi | store::kRankSampling |
                                                  store::kRankCounts));
        }
        PointAggregate agg = folder.finish();
        agg.point_id = row.point_id;
        if (pg.exists("machine_load")) {  // schema >= 1.7: the launcher's view of the node
          const auto load = pg.read_table<store::MachineLoadRow>("machine_load");
          if (load.size() == 1) agg.usage.machine_load = machine_load_usage(load.front());
        }
        if (agg.ranks_found == 0) run.warnings.push_back("point " + std::to_string(row.point_id) + " has no rank data");
        for (auto& w : agg.rank_warnings) run.warnings.push_back("point " + std::to_string(row.point_id) + ": " + w);
        aggs.push_back(std::move(agg));
        ++run.points_used;
      }
      if (ceilings.empty())
        run.warnings.push_back("configuration '" + label + "' has no ceilings: roofline bounds unavailable");
      run.configs.push_back(combine_repeats(rows, aggs, ceilings));
      run.configs.back().node_ceilings = std::move(node_ceilings);
    }
    select_counted_functions(run.configs);
  } catch (const store::FormatError& e) {
    throw InputError(path + ": not an rtrace run file (" + e.detail() + ")");
  } catch (const store::Error& e) {
    throw InputError(path + ": unreadable run file: " + e.what());
  }
  return run;
}

}  // namespace rtrace::analysis
