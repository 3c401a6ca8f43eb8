#include "rtrace/analysis/pop.hpp"
#include "mpi_names.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace rtrace::analysis {
namespace {

std::string pct(double v) { return fmt(100 * v, 3) + "%"; }


// Blocked threads switch voluntarily on every wait: a lock handed back and
// forth in 2 ms units gives about 500 per second of the process's CPU time
// (235 on the 2-core VM at load average 10, where a thread often finds the
// lock free after a preemption); an OpenMP app that sleeps between a few
// long parallel regions, about 1.
constexpr double kBlockingSwitchesPerCpuSecond = 50;
// On a point where other processes took the cores, a thread that waits at a
// barrier for a partner the scheduler took off the CPU blocks too: the stream
// known-answer app (100 parallel regions, no lock) under two busy loops gave
// 31-67 switches per CPU second (named lock-wait in a CI run), the lock app
// beside it 422-432 (235 at load average 10, above). Blocking is named there
// only above this rate, about midway (geometric) between the two.
constexpr double kBlockingSwitchesPerCpuSecondUnderLoad = 120;
// CPU time the samples may miss before they cannot say which threads ran: the
// tail after each thread's last sample is under a period on a quiet machine.
constexpr double kUnsampledPeriodsTolerated = 3;
// Threads that all ran app code wait for each other (imbalance) when less than
// this share of the step's sampled lost time is in serial functions.
constexpr double kThreadWaitMaxSerialShare = 0.2;
// The machine-load factor ("up to Nx") never claims more than this share of the cores.
constexpr double kMaxTakenShare = 0.9;
// Below this much taken CPU time (core-seconds) the share is a few clock ticks of /proc/stat.
constexpr double kMinTakenCpuS = 0.05;

// Per thread of a rank: samples of work (app code, and system code it called)
// and of waiting in a runtime (MPI, OpenMP, the tracer). System code counts
// for the category of its first non-system caller, as in the profile. Where
// the rank recorded the tracer's own cost (`tracer_apart`), the tracer's code
// is neither: its time is taken out as a whole. With `window_only`, samples
// under MPI_Init(_thread) or MPI_Finalize are none of them: the CPU time they
// are a share of is then the MPI window's (RankUsage::window_cpu_s). Samples
// of app code before MPI_Init or after MPI_Finalize still count (rare, and
// not told apart by the call path).
struct ThreadSamples { double work = 0, wait = 0, tracer = 0; };
std::map<int, ThreadSamples> sampled_threads(const store::RankRecords& rec, bool tracer_apart, bool window_only) {
  std::map<int, ThreadSamples> out;
  const auto& rows = rec.callpaths;
  std::vector<char> outside(window_only ? rows.size() : 0, 0);  // under MPI_Init/Finalize; parents come first
  for (std::size_t i = 0; i < outside.size(); ++i) {
    const std::int64_t f = rows[i].function_id, parent = rows[i].parent_id;
    outside[i] = (f >= 0 && static_cast<std::size_t>(f) < rec.names.size() && starts_or_ends_mpi(rec.names[f])) ||
                 (parent >= 0 && static_cast<std::size_t>(parent) < i && outside[static_cast<std::size_t>(parent)]);
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].self_samples <= 0 || (window_only && outside[i])) continue;
    std::string cat = store::get_str(rows[i].category);
    for (std::int64_t n = rows[i].parent_id; cat == "system" && n >= 0 && static_cast<std::size_t>(n) < i;
         n = rows[static_cast<std::size_t>(n)].parent_id)
      cat = store::get_str(rows[static_cast<std::size_t>(n)].category);
    auto& t = out[rows[i].thread];
    if (cat == "app" || cat == "system") t.work += static_cast<double>(rows[i].self_samples);
    else if (cat == "rtrace" && tracer_apart) t.tracer += static_cast<double>(rows[i].self_samples);
    else t.wait += static_cast<double>(rows[i].self_samples);
  }
  return out;
}

double median_of(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !available(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

bool RankUsage::threads_seen() const noexcept {
  return unsampled_periods < kUnsampledPeriodsTolerated || registered_threads < 0 ||
         sampled_threads >= registered_threads;
}

MachineLoadUsage machine_load_usage(const store::MachineLoadRow& row) {
  MachineLoadUsage m;
  m.note = store::get_str(row.note);
  m.load_average = std::max(available(row.load_avg_start) ? row.load_avg_start : 0.0,
                            available(row.load_avg_end) ? row.load_avg_end : 0.0);
  if (!available(row.load_avg_start) && !available(row.load_avg_end)) m.load_average = kNaN;
  if (store::get_str(row.status) != "ok" || row.cpus <= 0 || !available(row.interval_s) || row.interval_s <= 0 ||
      !available(row.other_cpu_s))
    return m;
  m.measured = true;
  m.cpus = row.cpus;
  m.interval_s = row.interval_s;
  m.other_cpu_s = row.other_cpu_s;
  m.steal_s = available(row.steal_s) ? row.steal_s : 0;
  m.tree_cpu_s = row.tree_cpu_s;
  return m;
}

double RankUsage::tracer_run_s() const noexcept {
  double s = 0;
  for (double v : {tracer_wrapper_s, tracer_sampler_s, tracer_code_s})
    if (available(v) && v > 0) s += v;
  return s;
}

double RankUsage::window_s() const noexcept {
  if (!available(wall_s)) return kNaN;
  if (!mpi_initialised) return wall_s;  // already the app's own
  const double start = available(init_end_s) ? init_end_s : 0;
  const double end = available(finalize_start_s) ? finalize_start_s - tracer_run_s() : wall_s;
  return end > start ? end - start : kNaN;
}
double RankUsage::window_cpu_s() const noexcept {
  if (!mpi_initialised || !available(cpu_at_init_end_s) || !available(cpu_at_finalize_start_s)) return kNaN;
  const double d = cpu_at_finalize_start_s - cpu_at_init_end_s;
  return d >= 0 ? d : kNaN;
}
double RankUsage::startup_s() const noexcept {
  return mpi_initialised && available(init_end_s) ? init_end_s : 0;
}
double RankUsage::teardown_s() const noexcept {
  // wall_s is the app's (less the tracer's work), finalize_start_s as recorded.
  return mpi_initialised && available(finalize_start_s) && available(wall_s)
             ? std::max(0.0, wall_s + tracer_run_s() - finalize_start_s)
             : 0;
}

PointUsage point_usage(const std::vector<store::RankRecords>& ranks) {
  PointUsageBuilder b;
  for (const auto& r : ranks) b.add(r);
  return b.finish();
}

void PointUsageBuilder::add(const store::RankRecords& rec) {
  RankUsage u;
  u.host = store::get_str(rec.info.host);
  u.wall_s = rec.info.wall_s;
  u.user_s = rec.info.user_s;
  u.system_s = rec.info.system_s;
  u.involuntary_ctxsw = rec.info.involuntary_ctxsw >= 0 ? static_cast<double>(rec.info.involuntary_ctxsw) : kNaN;
  u.voluntary_ctxsw = rec.info.voluntary_ctxsw >= 0 ? static_cast<double>(rec.info.voluntary_ctxsw) : kNaN;
  u.omp_threads = rec.info.omp_threads;
  // NaN when absent: MPI not initialised, or a file from before the tracer recorded the window.
  u.init_end_s = rec.info.mpi_init_end;
  u.finalize_start_s = rec.info.mpi_finalize_start;
  u.cpu_at_init_end_s = rec.info.cpu_at_mpi_init_end;
  u.cpu_at_finalize_start_s = rec.info.cpu_at_mpi_finalize_start;
  if (available(u.init_end_s)) u.mpi_initialised = true;
  u.tracer_wrapper_s = rec.info.tracer_wrapper_s;
  u.tracer_sampler_s = rec.info.tracer_sampler_s;
  u.tracer_code_s = rec.info.tracer_code_s;
  u.tracer_exit_s = rec.info.tracer_exit_s;
  u.tracer_outside_mpi_s = rec.info.tracer_outside_mpi_s;
  const bool tracer_recorded = available(u.tracer_outside_mpi_s);
  // The app's wall time: less the tracer's own work (the share of it is
  // against the wall time as recorded).
  u.recorded_wall_s = u.wall_s;
  if (available(u.wall_s)) {
    const double own = u.tracer_run_s() + (available(u.tracer_exit_s) && u.tracer_exit_s > 0 ? u.tracer_exit_s : 0);
    if (own > 0 && own < u.wall_s) u.wall_s -= own;
  }
  std::map<std::size_t, double> mine;  // this rank's time per call (a name may have several rows)
  for (const auto& m : rec.mpi) {
    std::string name = (m.name_id >= 0 && static_cast<std::size_t>(m.name_id) < rec.names.size())
                           ? rec.names[static_cast<std::size_t>(m.name_id)]
                           : "MPI#" + std::to_string(m.name_id);
    double t = available(m.time_s) ? m.time_s : 0;
    const MpiBoundary boundary = mpi_boundary(name);
    if (boundary == MpiBoundary::Init) { u.init_s += t; u.mpi_initialised = true; }
    else if (boundary == MpiBoundary::Finalize) u.finalize_s += t;
    else { u.mpi_s += t; out_.any_mpi_rows = true; u.mpi_initialised = true; }
    auto it = call_index_.find(name);
    if (it == call_index_.end()) {
      it = call_index_.emplace(name, calls_.size()).first;
      calls_.emplace_back();
      calls_.back().stats.name = name;
    }
    MpiCallStats& st = calls_[it->second].stats;
    const std::string method = store::get_str(m.time_method);
    if (!method.empty()) st.time_method = st.time_method.empty() || st.time_method == method ? method : "mixed";
    if (m.estimated_calls > 0) st.estimated_calls += m.estimated_calls;
    st.calls += m.calls;
    st.time_s += t;
    st.bytes += static_cast<double>(std::max<std::int64_t>(0, m.bytes_sent) + std::max<std::int64_t>(0, m.bytes_received));
    mine[it->second] += t;
  }
  for (const auto& [i, t] : mine) {
    CallFold& c = calls_[i];
    c.rank_min = available(c.rank_min) ? std::min(c.rank_min, t) : t;
    c.rank_max = available(c.rank_max) ? std::max(c.rank_max, t) : t;
    c.rank_sum += t;
    ++c.ranks_with;
  }
  // The wrappers' own work inside the MPI time they booked is the tracer's, not MPI's.
  if (tracer_recorded)
    u.mpi_s = std::max(0.0, u.mpi_s - std::max(0.0, u.tracer_run_s() - u.tracer_outside_mpi_s));
  if (!rec.callpaths.empty()) {
    const auto threads = sampled_threads(rec, tracer_recorded, available(u.window_cpu_s()));
    for (const auto& [tid, t] : threads) {
      u.samples_work += t.work;
      u.samples_wait += t.wait;
      u.samples_tracer += t.tracer;
    }
    u.working_threads = 0;
    u.sampled_threads = static_cast<int>(threads.size());
    for (const auto& [tid, t] : threads)
      if (t.work >= 1) ++u.working_threads;  // OpenMP threads that were never used have no app samples
  }
  if (!rec.sampling.empty() && rec.sampling[0].period_s > 0) {
    u.unsampled_periods = static_cast<double>(std::max<std::int64_t>(rec.sampling[0].dropped, 0));
    u.registered_threads = rec.sampling[0].threads;
  }
  for (const auto& row : rec.regions) {
    if (!available(row.hw_instructions) || !available(row.hw_cycles) || !available(row.time_s)) continue;
    u.hw_instructions = (available(u.hw_instructions) ? u.hw_instructions : 0) + row.hw_instructions;
    u.hw_cycles = (available(u.hw_cycles) ? u.hw_cycles : 0) + row.hw_cycles;
    u.hw_time_s = (available(u.hw_time_s) ? u.hw_time_s : 0) + row.time_s;
  }
  out_.any_rows |= !rec.mpi.empty();
  out_.mpi_initialised |= u.mpi_initialised;
  out_.ranks.push_back(std::move(u));
}

PointUsage PointUsageBuilder::finish() {
  const std::size_t nranks = out_.ranks.size();
  for (auto& c : calls_) {
    // A rank without the call spent 0 s in it.
    const bool all = c.ranks_with == nranks;
    c.stats.rank_min_s = all ? c.rank_min : std::min(0.0, c.rank_min);
    c.stats.rank_max_s = all ? c.rank_max : std::max(0.0, c.rank_max);
    c.stats.rank_mean_s = nranks ? c.rank_sum / static_cast<double>(nranks) : kNaN;
    out_.calls.push_back(std::move(c.stats));
  }
  std::stable_sort(out_.calls.begin(), out_.calls.end(),
                   [](const MpiCallStats& a, const MpiCallStats& b) { return a.time_s > b.time_s; });
  calls_.clear();
  call_index_.clear();
  return std::move(out_);
}

NodeBalance node_balance(const PointUsage& usage, const std::vector<std::int64_t>& rank_ids) {
  NodeBalance b;
  std::map<std::string, std::size_t> index;
  std::vector<std::vector<std::int64_t>> ids;
  std::vector<double> useful_sum;
  std::vector<int> useful_n;
  for (std::size_t i = 0; i < usage.ranks.size(); ++i) {
    const RankUsage& r = usage.ranks[i];
    auto it = index.find(r.host);
    if (it == index.end()) {
      it = index.emplace(r.host, b.nodes.size()).first;
      b.nodes.emplace_back();
      b.nodes.back().host = r.host;
      ids.emplace_back();
      useful_sum.push_back(0);
      useful_n.push_back(0);
    }
    NodeUsage& n = b.nodes[it->second];
    ++n.ranks;
    ids[it->second].push_back(i < rank_ids.size() ? rank_ids[i] : static_cast<std::int64_t>(i));
    if (available(r.wall_s)) n.wall_max_s = available(n.wall_max_s) ? std::max(n.wall_max_s, r.wall_s) : r.wall_s;
    const double w = r.window_s();
    if (available(w)) {
      const double useful = std::max(0.0, w - r.mpi_s);
      useful_sum[it->second] += useful;
      ++useful_n[it->second];
      n.useful_max_s = available(n.useful_max_s) ? std::max(n.useful_max_s, useful) : useful;
    }
  }
  for (std::size_t h = 0; h < b.nodes.size(); ++h) {
    b.nodes[h].rank_list = store::rank_ranges(ids[h], 64);
    if (useful_n[h] > 0) b.nodes[h].useful_mean_s = useful_sum[h] / useful_n[h];
  }
  if (b.nodes.size() < 2) return b;
  double sum = 0, worst = -1;
  std::size_t slowest = 0;
  for (std::size_t h = 0; h < b.nodes.size(); ++h) {
    const double m = b.nodes[h].useful_mean_s;
    if (!available(m)) return b;
    sum += m;
    if (m > worst) { worst = m; slowest = h; }
  }
  const double mean = sum / static_cast<double>(b.nodes.size());
  if (!(worst > 0)) return b;
  b.balance = mean / worst;
  b.slowest = b.nodes[slowest].host;
  const double others = (sum - worst) / static_cast<double>(b.nodes.size() - 1);
  if (others > 0) b.slowest_over_others = worst / others;
  return b;
}

PopPoint pop_point(const PointUsage& usage, int threads_per_rank) {
  PopPoint p;
  const int nranks = static_cast<int>(usage.ranks.size());
  if (nranks == 0) return p;
  int threads = threads_per_rank > 0 ? threads_per_rank : 1;
  bool mpi = false, window_measured = true;
  for (const auto& r : usage.ranks) {
    mpi |= r.mpi_initialised;
    if (r.mpi_initialised && !available(r.init_end_s)) window_measured = false;
    if (threads_per_rank <= 0 && r.omp_threads > 0) threads = std::max(threads, r.omp_threads);
  }
  p.mpi_initialised = mpi;
  p.mpi_calls_seen = usage.any_mpi_rows;
  p.window_measured = mpi && window_measured;
  p.workers = nranks * threads;
  p.threads = threads;
  double wall_max = 0, window_max = 0, startup_max = 0, teardown_max = 0, init_max = 0;
  double useful_sum = 0, useful_max = 0, mpi_sum = 0, window_sum = 0, wall_sum = 0;
  double cpu_sum = 0, sys_sum = 0, cpu_per_wall_sum = 0, ivcsw_rate_sum = 0, vcsw_rate_sum = 0, vcsw_sum = 0;
  int cpu_n = 0, ivcsw_n = 0, vcsw_n = 0;
  // The thread level's useful time per rank (see pop.hpp), both candidates.
  double v_cpu = 0, v_sampled = 0, samples_wait = 0, samples_all = 0;
  bool v_cpu_ok = true, v_sampled_ok = true;
  bool ok = true;
  for (const auto& r : usage.ranks) {
    double w = r.window_s();
    if (!available(w) || !available(r.wall_s) || r.wall_s <= 0) { ok = false; continue; }
    double useful = std::max(0.0, w - r.mpi_s);
    wall_max = std::max(wall_max, r.wall_s);
    wall_sum += r.wall_s;
    window_max = std::max(window_max, w);
    window_sum += w;
    startup_max = std::max(startup_max, r.startup_s());
    init_max = std::max(init_max, r.init_s);
    teardown_max = std::max(teardown_max, r.teardown_s());
    useful_sum += useful;
    useful_max = std::max(useful_max, useful);
    mpi_sum += std::min(r.mpi_s, w);
    if (available(r.user_s) && available(r.system_s)) {
      double cpu = r.user_s + r.system_s;
      cpu_sum += cpu;
      sys_sum += r.system_s;
      cpu_per_wall_sum += cpu / r.wall_s;
      ++cpu_n;
    }
    if (available(r.involuntary_ctxsw)) { ivcsw_rate_sum += r.involuntary_ctxsw / r.wall_s; ++ivcsw_n; }
    if (available(r.voluntary_ctxsw)) {
      vcsw_rate_sum += r.voluntary_ctxsw / r.wall_s;
      vcsw_sum += r.voluntary_ctxsw;
      ++vcsw_n;
    }
    // At most every thread busy for the whole useful time (the whole wall without MPI).
    const double cap = threads * (r.mpi_initialised ? useful : r.wall_s);
    if (available(r.user_s) && available(r.system_s)) {
      // The app's own CPU time: the MPI window's where recorded (run-file
      // 1.9), else the whole process's (its MPI_Init and MPI_Finalize then
      // taken out by their wall time below).
      const double window_cpu = r.window_cpu_s();
      const double cpu =
          std::max(0.0, (available(window_cpu) ? window_cpu : r.user_s + r.system_s) - r.tracer_run_s());
      // CPU time less the MPI calls' (Open MPI polls: an MPI second is a CPU second of the calling thread).
      const double outside_mpi = !r.mpi_initialised     ? cpu
                                 : available(window_cpu) ? cpu - r.mpi_s
                                                         : cpu - r.init_s - r.mpi_s - r.finalize_s;
      v_cpu += std::clamp(outside_mpi, 0.0, cap);
      const double samples = r.samples_work + r.samples_wait;
      // 20 samples (0.08 s at 250 Hz) at least, or the share is mostly noise.
      if (samples >= 20) {
        v_sampled += std::clamp(cpu * r.samples_work / samples, 0.0, cap);
        samples_wait += r.samples_wait;
        samples_all += samples;
      } else {
        v_sampled_ok = false;
      }
    } else {
      v_cpu_ok = v_sampled_ok = false;
    }
    if (r.working_threads >= 0) p.working_threads = std::max(p.working_threads, r.working_threads);
    if (r.sampled_threads >= 0) p.sampled_threads = std::max(p.sampled_threads, r.sampled_threads);
    p.threads_seen = p.threads_seen && r.threads_seen();
    if (r.registered_threads >= 0) {  // a rank whose timers fired for nothing has coverage 0, not none
      const double all = r.samples_work + r.samples_wait + r.unsampled_periods;
      const double coverage = all > 0 ? (r.samples_work + r.samples_wait) / all : kNaN;
      if (available(coverage))
        p.sampled_coverage = available(p.sampled_coverage) ? std::min(p.sampled_coverage, coverage) : coverage;
    }
  }
  // rtrace's own work, over the ranks that recorded it.
  double tw = 0, ts = 0, tc = 0, te = 0, twall = 0;
  bool traced = false;
  for (const auto& r : usage.ranks) {
    if (!available(r.tracer_outside_mpi_s) && !available(r.tracer_exit_s)) continue;
    traced = true;
    auto add = [](double& sum, double v) { if (available(v) && v > 0) sum += v; };
    add(tw, r.tracer_wrapper_s);
    add(ts, r.tracer_sampler_s);
    add(tc, r.tracer_code_s);
    add(te, r.tracer_exit_s);
    add(twall, r.recorded_wall_s);
  }
  if (traced) {
    p.tracer_wrapper_s = tw;
    p.tracer_sampler_s = ts;
    p.tracer_code_s = tc;
    p.tracer_exit_s = te;
    p.tracer_s = tw + ts + tc + te;
    if (twall > 0) p.tracer_share = p.tracer_s / twall;
  }
  if (!ok || wall_max <= 0) return p;
  p.wall_s = wall_max;
  p.window_s = window_max;
  p.startup_s = startup_max;
  p.teardown_s = teardown_max;
  if (mpi) p.init_s = init_max;
  if (cpu_n == nranks) {
    p.cpu_s = cpu_sum;
    p.cpu_per_wall = cpu_per_wall_sum / nranks;
    p.cpu_utilisation = cpu_sum / (wall_sum * threads);
    p.system_share = cpu_sum > 0 ? sys_sum / cpu_sum : kNaN;
  }
  if (ivcsw_n) p.ivcsw_rate = ivcsw_rate_sum / ivcsw_n;
  if (vcsw_n) p.vcsw_rate = vcsw_rate_sum / vcsw_n;
  if (vcsw_n == nranks && cpu_n == nranks && cpu_sum > 0) p.vcsw_per_cpu_s = vcsw_sum / cpu_sum;
  if (v_cpu_ok) p.thread_useful_cpu_s = v_cpu;
  if (v_sampled_ok) {
    p.thread_useful_sampled_s = v_sampled;
    p.sampled_wait_share = samples_all > 0 ? samples_wait / samples_all : kNaN;
  }
  // The node's load besides the app (launcher, from outside).
  if (const auto& m = usage.machine_load; m.measured) {
    const int used = std::min(p.workers, m.cpus);
    const double capacity = used * m.interval_s;
    // Other processes first fill the cores this point leaves idle; what is left took the point's cores.
    const double excess = std::max(0.0, m.other_cpu_s - (m.cpus - used) * m.interval_s);
    p.load_measured = true;
    p.load_cpus = m.cpus;
    p.other_cpu_s = m.other_cpu_s;
    p.other_share = capacity > 0 ? excess / capacity : kNaN;
    p.steal_share = m.cpus > 0 ? m.steal_s / (m.cpus * m.interval_s) : kNaN;
    p.taken_share = std::min(1.0, p.other_share + p.steal_share);
    p.taken_cpu_s = excess + m.steal_s * used / m.cpus;
  }
  p.load_average = usage.machine_load.load_average;
  bool counters = true;
  double ins = 0, cyc = 0, hwt = 0;
  for (const auto& r : usage.ranks) {
    if (!available(r.hw_instructions)) { counters = false; break; }
    ins += r.hw_instructions;
    cyc += r.hw_cycles;
    hwt += r.hw_time_s;
  }
  if (counters && ins > 0 && cyc > 0 && hwt > 0) {
    p.hw_instructions = ins;
    p.hw_cycles = cyc;
    p.hw_time_s = hwt;
  }
  if (mpi) {
    // Wall-clock useful time per rank (process level).
    p.basis = "mpi";
    p.process_useful_sum_s = useful_sum;
    p.useful_max_s = useful_max;
    p.useful_mean_s = useful_sum / nranks;
    p.mpi_share = window_sum > 0 && !usage.calls_not_intercepted() ? mpi_sum / window_sum : kNaN;
    if (useful_max > 0) p.load_balance = p.useful_mean_s / useful_max;
    if (window_max > 0) p.communication_efficiency = useful_max / window_max;
  } else if (available(p.cpu_s)) {
    // No MPI: one process; the thread level is all there is.
    p.basis = "cpu-time";
    p.process_useful_sum_s = wall_max;
  }
  // Alone, a point takes the sampled basis when it has one; pop_scaling makes a group agree.
  const bool thread_level = p.basis == "cpu-time" || (p.basis == "mpi" && threads >= 2);
  apply_thread_basis(p, !thread_level                             ? ""
                        : available(p.thread_useful_sampled_s) ? "sampled"
                        : available(p.thread_useful_cpu_s)     ? "cpu-time"
                                                               : "");
  return p;
}

void apply_thread_basis(PopPoint& p, const std::string& thread_basis) {
  const double v = thread_basis == "sampled"    ? p.thread_useful_sampled_s
                   : thread_basis == "cpu-time" ? p.thread_useful_cpu_s
                                                : kNaN;
  p.thread_basis = available(v) ? thread_basis : "";
  p.thread_efficiency = kNaN;
  if (p.basis == "mpi") {
    if (available(v) && p.process_useful_sum_s > 0) {
      p.thread_efficiency = v / (p.threads * p.process_useful_sum_s);
      p.useful_sum_s = v;
      p.parallel_efficiency = p.load_balance * p.communication_efficiency * p.thread_efficiency;
    } else {
      // One thread per rank (or no CPU time): every rank is t workers busy for its useful time.
      p.useful_sum_s = p.process_useful_sum_s * p.threads;
      p.parallel_efficiency = p.load_balance * p.communication_efficiency;
    }
  } else if (p.basis == "cpu-time") {
    const double useful = available(v) ? v : p.cpu_s;
    p.useful_sum_s = useful;
    p.parallel_efficiency = p.workers > 0 && p.wall_s > 0 ? useful / (p.workers * p.wall_s) : kNaN;
    p.thread_efficiency = p.parallel_efficiency;
  }
}

PopConfig combine_pop(const std::vector<PointUsage>& repeats, int threads_per_rank) {
  PopConfig c;
  c.repeats = static_cast<int>(repeats.size());
  std::vector<PopPoint> pts;
  std::vector<double> walls;
  for (const auto& u : repeats) {
    pts.push_back(pop_point(u, threads_per_rank));
    walls.push_back(pts.back().wall_s);
  }
  // The representative repeat: the one whose wall time is the (lower) median.
  std::vector<int> order;
  for (int i = 0; i < c.repeats; ++i)
    if (available(walls[i])) order.push_back(i);
  if (order.empty()) {
    if (!pts.empty()) { c.pop = pts.front(); c.representative = 0; c.calls = repeats.front().calls; }
    return c;
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return walls[a] < walls[b]; });
  c.representative = order[(order.size() - 1) / 2];
  c.pop = pts[c.representative];
  c.calls = repeats[c.representative].calls;
  double med = median_of(walls);
  if (order.size() > 1 && med > 0) c.wall_spread = (walls[order.back()] - walls[order.front()]) / med;
  return c;
}

void pop_scaling(std::vector<PopPoint*>& points, const std::vector<double>& work) {
  if (points.empty()) return;
  // One thread basis for the whole group, so that CS compares like with like:
  // a thread level when any point runs >= 2 threads per rank (always without
  // MPI); sampled when every point was sampled, else CPU time.
  bool thread_level = false, all_sampled = true, all_cpu = true;
  for (const PopPoint* p : points) {
    thread_level |= p->basis == "cpu-time" || p->threads >= 2;
    all_sampled &= available(p->thread_useful_sampled_s);
    all_cpu &= available(p->thread_useful_cpu_s);
  }
  const std::string basis = !thread_level ? "" : all_sampled ? "sampled" : all_cpu ? "cpu-time" : "";
  for (PopPoint* p : points) apply_thread_basis(*p, basis);
  const PopPoint& ref = *points.front();
  for (std::size_t i = 0; i < points.size(); ++i) {
    PopPoint& p = *points[i];
    if (available(ref.useful_sum_s) && available(p.useful_sum_s) && p.useful_sum_s > 0 && work[i] > 0 &&
        work[0] > 0 && p.basis == ref.basis && p.thread_basis == ref.thread_basis)
      p.computation_scalability = (ref.useful_sum_s / work[0]) / (p.useful_sum_s / work[i]);
    p.global_efficiency = p.parallel_efficiency * p.computation_scalability;
    if (available(ref.hw_instructions) && available(p.hw_instructions) && work[i] > 0 && work[0] > 0) {
      p.instruction_scalability = (ref.hw_instructions / work[0]) / (p.hw_instructions / work[i]);
      p.ipc_scalability = (p.hw_instructions / p.hw_cycles) / (ref.hw_instructions / ref.hw_cycles);
      p.frequency_scalability = (p.hw_cycles / p.hw_time_s) / (ref.hw_cycles / ref.hw_time_s);
    }
  }
}

namespace {

// The share of the point's cores others took, bounded so that a correction stays finite.
double taken(const PopPoint& p) { return available(p.taken_share) ? std::min(p.taken_share, kMaxTakenShare) : 0.0; }

bool loaded(const PopPoint& p, const Thresholds& th) {
  // A share of the cores and a few clock ticks at least: /proc/stat counts whole ticks.
  return p.load_measured && available(p.taken_share) && p.taken_share >= th.load_share &&
         p.taken_cpu_s >= kMinTakenCpuS;
}

std::string load_words(const PopPoint& p, double c, const std::string& axis) {
  std::ostringstream os;
  os << "at " << axis << "=" << fmt(c, 6) << " other processes took " << pct(p.other_share) << " of the "
     << std::min(p.workers, p.load_cpus) << (std::min(p.workers, p.load_cpus) == 1 ? " core" : " cores")
     << " the point used";
  if (available(p.steal_share) && p.steal_share >= 0.005) os << ", steal " << pct(p.steal_share);
  if (available(p.load_average)) os << ", load average " << fmt(p.load_average, 2);
  return os.str();
}

}  // namespace

AppStep classify_app_step(const PopPoint& a, const PopPoint& b, double c1, double c2, double t1, double t2,
                          double spread, const StepContext& ctx, const Thresholds& th) {
  AppStep s;
  s.c1 = c1;
  s.c2 = c2;
  s.ratio = c1 > 0 ? c2 / c1 : kNaN;
  s.spread = spread;
  // MPI apps are timed on their window (startup and teardown are reported on
  // their own line); the wall clock gives the wall efficiency.
  const bool windowed = a.basis == "mpi" && b.basis == "mpi" && a.window_measured && b.window_measured &&
                        a.window_s > 0 && b.window_s > 0;
  const double wall_speedup = t2 > 0 ? t1 / t2 : kNaN;
  s.wall_efficiency = ctx.weak ? wall_speedup : wall_speedup / s.ratio;
  if (windowed) {
    t1 = a.window_s;
    t2 = b.window_s;
  }
  s.speedup = t2 > 0 ? t1 / t2 : kNaN;
  s.efficiency = ctx.weak ? s.speedup : s.speedup / s.ratio;
  if (!available(s.efficiency)) {
    s.diagnosis = "loss";
    s.cause = "slowdown";
    s.causes.push_back({s.cause, kNaN, "no wall time recorded at one of the points"});
    s.explanation = "no wall time recorded at one of the points";
    return s;
  }
  const bool same_basis = !a.basis.empty() && a.basis == b.basis && a.thread_basis == b.thread_basis;
  const bool thread_level = same_basis && !b.thread_basis.empty();
  if (same_basis) {
    s.pe_factor = b.parallel_efficiency / a.parallel_efficiency;
    s.cs_factor = b.computation_scalability / a.computation_scalability;
    if (a.basis == "mpi") {
      s.lb_factor = b.load_balance / a.load_balance;
      s.comm_factor = b.communication_efficiency / a.communication_efficiency;
      if (thread_level) s.te_factor = b.thread_efficiency / a.thread_efficiency;
      s.startup_factor = s.wall_efficiency / s.efficiency;  // (W2/T2)/(W1/T1): outside the window
    } else {
      s.startup_factor = 1;
    }
  }
  const double gain = s.efficiency;
  const std::string eff_words = (ctx.weak ? "weak-scaling efficiency " : "step efficiency ") + pct(gain) +
                                (windowed ? " (MPI window " : " (time ") + fmt(t1) + " s -> " + fmt(t2) + " s on " +
                                fmt(s.ratio) + "x " + ctx.axis + ")";
  // The machine's load, measured from outside the app (launcher). It is named
  // besides the app's own causes, never instead of them: how much of a factor
  // measured on the wall clock (CS of useful wall time, CPU over wall time)
  // the load took cannot be told apart without per-thread run-queue times.
  const bool load1 = loaded(a, th), load2 = loaded(b, th);
  const std::string load_evidence =
      (load1 ? load_words(a, c1, ctx.axis) : "") + (load1 && load2 ? "; " : "") + (load2 ? load_words(b, c2, ctx.axis) : "");
  auto machine_load_cause = [&]() {
    const double share = std::max(load1 ? taken(a) : 0.0, load2 ? taken(b) : 0.0);
    return StepCause{"machine-load", 1 / (1 - share),
                     load_evidence + " (measured outside the app: /proc/stat less the app's process tree): up to " +
                         fmt(1 / (1 - share)) + "x of the time may be the machine's, inside the factors measured " +
                         "on the wall clock; rerun on an idle or exclusive node"};
  };
  // Named among the step's causes, largest factor first.
  auto add_machine_load = [&]() {
    const StepCause m = machine_load_cause();
    auto at = std::find_if(s.causes.begin(), s.causes.end(), [&](const StepCause& c) { return c.factor < m.factor; });
    s.causes.insert(at, m);
  };
  // Startup/teardown that grow with the concurrency (by more than cause_min of
  // the wall time) are a scaling loss of their own; a fixed cost is not.
  const double outside1 = a.wall_s - a.window_s, outside2 = b.wall_s - b.window_s;
  if (windowed && outside2 - outside1 > th.cause_min * b.wall_s && s.wall_efficiency < 1 - th.ideal_tolerance &&
      gain >= 1 - th.ideal_tolerance) {
    s.diagnosis = "loss";
    s.cause = "startup";
    s.explanation = eff_words + ", but startup and teardown outside the window grow " + fmt(outside1) + " s -> " +
                    fmt(outside2) + " s, so the wall-clock efficiency is " + pct(s.wall_efficiency);
    s.causes.push_back({s.cause, s.wall_efficiency > 0 ? 1 / s.wall_efficiency : kNaN, s.explanation});
    if (load1 || load2) {
      add_machine_load();
      s.cause = s.causes.front().cause;
      s.explanation += "; machine-load: " + machine_load_cause().evidence;
    }
    return s;
  }
  // A change within the repeats' own spread is not evidence of anything.
  if (spread > 0 && std::fabs(std::log(gain)) <= std::log(1 + spread) &&
      (gain < 1 - th.ideal_tolerance || gain > 1 + th.superlinear_margin)) {
    s.diagnosis = "noise";
    s.explanation = eff_words + " lies within the repeats' spread of " + pct(spread);
    return s;
  }


  // The POP factors of the step, each a candidate cause.
  struct Factor {
    std::string name;      // the POP factor
    double value = kNaN;   // its step ratio
    std::string cause;
    std::string words;
  };
  std::vector<Factor> factors;
  auto add = [&](const std::string& name, double value, const std::string& cause, const std::string& words) {
    if (available(value) && value > 0) factors.push_back({name, value, cause, words});
  };
  // Spinning is a change across the step: an app whose own work already ran in the kernel at the
  // first point (syscall-heavy timing, I/O) is not spinning because the share is still high.
  const bool spinning = available(b.system_share) && b.system_share >= 0.3 &&
                        (!available(a.system_share) || b.system_share >= a.system_share + 0.1);
  // The thread level's loss in words: who waits, judged from the samples, the switches and CPU/wall.
  auto thread_cause = [&](std::string& words) -> std::string {
    // Per CPU second, not per wall second: on a busy machine a lock changes hands less often per
    // wall second, but about as often per second the threads run.
    const double vcsw_after = b.vcsw_per_cpu_s, vcsw_before = a.vcsw_per_cpu_s;
    const double cpu_per_wall = b.cpu_per_wall;
    const std::string basis_words = b.thread_basis == "sampled"
                                        ? "useful thread time = CPU time less the sampled runtime waits"
                                        : "useful thread time = CPU time less MPI time";
    const std::string te_words = (a.basis == "mpi" ? "thread efficiency " : "parallel efficiency ") +
                                 fmt(a.basis == "mpi" ? a.thread_efficiency : a.parallel_efficiency, 3) + " -> " +
                                 fmt(a.basis == "mpi" ? b.thread_efficiency : b.parallel_efficiency, 3) + " (" +
                                 basis_words;
    // Which threads ran is read from the samples only where they show (nearly) all the CPU
    // time: on a busy machine the kernel may deliver no timer signal to a thread that worked
    // for 50 ms (its time then is in `dropped`, counted by the tracer at the thread's end).
    if (b.threads >= 2 && b.threads_seen && b.working_threads == 1 && b.sampled_threads == 1) {
      words = te_words + "): only one thread per rank ran at " + fmt(c2, 6) + " " + ctx.axis +
              " (sampled): the app ignores its threads or never starts a parallel region";
      return "threads-unused";
    }
    // Threads that burn CPU while they wait in a runtime (an active wait policy): the samples say so.
    const bool runtime_spin = b.thread_basis == "sampled" && available(b.sampled_wait_share) &&
                              b.sampled_wait_share >= 0.2 &&
                              (!available(a.sampled_wait_share) || b.sampled_wait_share >= a.sampled_wait_share + 0.1) &&
                              available(cpu_per_wall) && cpu_per_wall > 1.25;
    const std::string spin_words = " (" + pct(b.sampled_wait_share) + " of the samples spin or wait in the "
                                   "OpenMP/MPI runtime, CPU/wall " + fmt(cpu_per_wall) + ")";
    // Threads that block and wake: work under a lock also looks constant-time in the
    // samples (it is serialised), so the switches, the more specific evidence, come first.
    const double blocking_rate = load2 ? kBlockingSwitchesPerCpuSecondUnderLoad : kBlockingSwitchesPerCpuSecond;
    if (b.threads >= 2 && available(vcsw_after) && vcsw_after >= blocking_rate &&
        (!available(vcsw_before) || vcsw_after >= 4 * vcsw_before)) {
      words = te_words + "): " + fmt(vcsw_after) + " voluntary context switches per second of CPU time" +
              (available(vcsw_before) ? " (was " + fmt(vcsw_before) + ")" : "") +
              ": threads block and wake again and again (a lock, a critical section, a condition variable, "
              "or short serial gaps between parallel regions)";
      return "lock-wait";
    }
    if (ctx.sampled.available && available(ctx.sampled.serial_share) && ctx.sampled.serial_share >= 0.5) {
      words = te_words + "): " + pct(ctx.sampled.serial_share) + " of the sampled lost time is in functions " +
              "whose time stays constant (serial), the largest `" + ctx.sampled.serial_function + "`" +
              (runtime_spin ? "; the waiting threads spin" + spin_words : "");
      return "serial-fraction";
    }
    if (runtime_spin) {
      words = te_words + "): threads burn CPU waiting" + spin_words +
              ": uneven work per thread or a serial part, with an active wait policy";
      return "spin-wait";
    }
    if (b.threads >= 2 && b.threads_seen && b.working_threads == 1) {
      words = te_words + "): only one thread per rank ran app code at " + fmt(c2, 6) + " " + ctx.axis +
              " (sampled): the added threads got no work and only waited in the runtime";
      return "threads-unused";
    }
    // Every thread ran app code (sampled), and under a fifth of the lost time is in serial
    // functions (the rest in functions several threads run, or in the runtime's waits): the
    // threads wait for each other. A mix (the demo: 46% in serial set-up code, the rest a
    // bandwidth-bound loop's contention) stays with the serial reading below. Before the
    // CPU/wall reading, which cannot tell waiting threads from unused ones (and in the MPI
    // basis spans MPI_Init's sleeps too).
    if (b.threads >= 2 && b.working_threads >= 2 && ctx.sampled.available && available(ctx.sampled.serial_share) &&
        ctx.sampled.serial_share < kThreadWaitMaxSerialShare) {
      words = te_words + "): " + pct(1 - ctx.sampled.serial_share) +
              " of the sampled lost time is in functions that several threads run, or in the runtime's waits" +
              (available(b.sampled_wait_share) && b.sampled_wait_share >= 0.01
                   ? " (" + pct(b.sampled_wait_share) + " of the samples wait in the OpenMP/MPI runtime)"
                   : "") +
              ", not in serial code: the threads wait for each other (uneven work per thread, or threads slowed "
              "unevenly by a shared resource such as memory bandwidth)";
      return "imbalance";
    }
    // CPU/wall on a busy machine is the other processes' share as much as the app's.
    if (b.threads >= 2 && !load2 && available(cpu_per_wall) && cpu_per_wall <= 1.25) {
      words = te_words + "): CPU/wall per rank is " + fmt(b.cpu_per_wall) + " at " + fmt(c2, 6) + " " + ctx.axis +
              ": the added threads mostly wait (never given work, or blocked)";
      return "threads-unused";
    }
    words = te_words + "): part of the run uses fewer threads" +
            (available(b.sampled_wait_share) && b.sampled_wait_share >= 0.05
                 ? " (" + pct(b.sampled_wait_share) + " of the samples wait in the OpenMP/MPI runtime)"
                 : "") +
            (ctx.sampled.available && available(ctx.sampled.serial_share) && ctx.sampled.serial_share > 0 &&
                     !ctx.sampled.serial_function.empty()
                 ? "; " + pct(ctx.sampled.serial_share) + " of the sampled lost time is in functions whose time " +
                       "stays constant on one thread, the largest `" + ctx.sampled.serial_function + "`"
                 : "");
    return "serial-fraction";
  };
  if (same_basis && a.basis == "mpi") {
    add("load balance", s.lb_factor, "imbalance",
        "load balance " + fmt(a.load_balance, 3) + " -> " + fmt(b.load_balance, 3) + " (useful time per rank: max " +
            fmt(b.useful_max_s) + " s, mean " + fmt(b.useful_mean_s) + " s)");
    add("communication efficiency", s.comm_factor, "mpi",
        "communication efficiency " + fmt(a.communication_efficiency, 3) + " -> " +
            fmt(b.communication_efficiency, 3) + " (MPI share of the window " + pct(a.mpi_share) + " -> " +
            pct(b.mpi_share) + ")");
    if (thread_level) {
      std::string words;
      const std::string cause = thread_cause(words);
      add("thread efficiency", s.te_factor, cause, words);
    }
  } else if (same_basis) {  // cpu-time basis: threads without MPI
    std::string words;
    const std::string cause = thread_cause(words);
    add("parallel efficiency", s.pe_factor, cause, words);
  }
  if (same_basis) {
    // CPU time for the same work that grows far more than cache effects do: threads burn it waiting.
    // Only where runtime waits count as useful time (thread basis cpu-time): the sampled basis
    // takes them out, so there a CS loss is the app's own code (replicated work, bandwidth).
    const bool far_above = thread_level && b.thread_basis == "cpu-time" && available(s.cs_factor) &&
                           s.cs_factor < 1 / 1.5;
    const std::string cs_cause = (spinning || far_above) ? "spin-wait" : "computation-scaling";
    const std::string what = thread_level ? "CPU time" : "useful time";
    add("computation scalability", s.cs_factor, cs_cause,
        cs_cause == "spin-wait"
            ? what + " per unit of work grows " + fmt(1 / s.cs_factor) + "x (" + pct(b.system_share) +
                  " system time, CPU/wall " + fmt(b.cpu_per_wall) + "): threads burn CPU waiting"
            : what + " per unit of work grows " + fmt(1 / s.cs_factor) + "x (computation scalability " +
                  fmt(a.computation_scalability, 3) + " -> " + fmt(b.computation_scalability, 3) +
                  "): replicated work, cache or memory-bandwidth effects");
  }
  // Out of tolerance: a loss that explains at least the tolerance of the time,
  // or a gain beyond the superlinear margin.
  std::vector<const Factor*> losses, gains;
  for (const auto& f : factors) {
    if (f.value <= 1 - th.ideal_tolerance) losses.push_back(&f);
    else if (f.value > 1 + th.superlinear_margin) gains.push_back(&f);
  }
  std::sort(losses.begin(), losses.end(), [](const Factor* x, const Factor* y) { return x->value < y->value; });

  std::ostringstream why;
  auto factor_list = [&](const std::vector<const Factor*>& list) {
    std::string out;
    for (const Factor* f : list) out += (out.empty() ? "" : ", ") + f->name + " " + fmt(f->value, 3);
    return out;
  };

  if (gain > 1 + th.superlinear_margin && losses.empty()) {
    s.diagnosis = "superlinear";
    s.explanation = eff_words + ": faster than ideal";
    if (spread <= 0) s.explanation += "; a single sample per point cannot rule out a disturbed baseline";
    if (load1 || load2) s.explanation += "; measured on a busy machine (" + load_evidence + ")";
    return s;
  }
  if (gain >= 1 - th.ideal_tolerance && losses.empty()) {
    // No factor loses: ideal, a gain beyond tolerance named (nothing to offset it but factors within
    // tolerance). It was "offsetting" with the Karp-Flatt fallback as its cause: a stream app at 109%
    // (computation scalability 1.11) read "serial fraction -0.089 explains 0.911x".
    s.diagnosis = "ideal";
    s.explanation = eff_words;
    if (!gains.empty()) s.explanation += "; no factor loses, " + factor_list(gains) + " gain";
    if (load1 || load2) s.explanation += "; measured on a busy machine (" + load_evidence + ")";
    return s;
  }
  // Factors out of tolerance that cancel: the step looks ideal (or better), but is not.
  const bool offsetting = gain >= 1 - th.ideal_tolerance && (!gains.empty() || gain >= 1);
  s.diagnosis = offsetting ? "offsetting" : "loss";

  // More runnable workers than cores: the losses come from time slicing.
  const bool oversubscribed = ctx.cores > 0 && b.workers > ctx.cores;
  if (oversubscribed) {
    std::ostringstream ev;
    ev << b.workers << " workers on " << ctx.cores << " cores";
    if (available(b.ivcsw_rate)) ev << ", " << fmt(b.ivcsw_rate) << " involuntary context switches/s per rank";
    if (available(a.ivcsw_rate)) ev << " (was " << fmt(a.ivcsw_rate) << " at " << fmt(c1, 6) << " " << ctx.axis << ")";
    s.causes.push_back({"oversubscription", gain > 0 ? 1 / gain : kNaN, ev.str()});
  } else {
    for (const Factor* f : losses) s.causes.push_back({f->cause, 1 / f->value, f->words});
    if (s.causes.empty() && !offsetting) {
      // No single factor out of tolerance: the largest one, if it explains enough.
      const Factor* best = nullptr;
      for (const auto& f : factors)
        if (!best || f.value < best->value) best = &f;
      if (best && 1 / best->value >= 1 + th.cause_min / 2)
        s.causes.push_back({best->cause, 1 / best->value, best->words});
    }
  }
  if (load1 || load2) add_machine_load();
  if (s.causes.empty()) {
    if (s.speedup < 1 - th.cause_min)
      s.causes.push_back({"slowdown", s.speedup > 0 ? 1 / s.speedup : kNaN,
                          "slower with more workers and no factor of the model explains it: contention for a "
                          "shared resource or run-to-run noise"});
    else if (!(karp_flatt(s.speedup, s.ratio) <= 0))  // a serial part only where the step loses time
      s.causes.push_back({"serial-fraction", gain > 0 ? 1 / gain : kNaN,
                          "Karp-Flatt serial fraction " + fmt(karp_flatt(s.speedup, s.ratio), 2)});
  }
  s.cause = s.causes.front().cause;
  why << eff_words;
  if (offsetting) {
    why << ", within " << fmt(100 * th.ideal_tolerance, 3) << "% of ideal only because the factors offset: "
        << factor_list(losses) << (losses.empty() ? "" : " lose") << (losses.empty() || gains.empty() ? "" : ", ")
        << factor_list(gains) << (gains.empty() ? "" : " gain");
  }
  for (const auto& c : s.causes) {
    why << "; " << c.cause << ": " << c.evidence;
    if (c.cause != "machine-load" && available(c.factor)) why << " explains " << fmt(c.factor) << "x";
  }
  s.explanation = why.str();
  return s;
}

std::string mpi_call_sentence(const std::vector<MpiCallStats>& calls, double window_sum_s) {
  std::ostringstream os;
  int shown = 0;
  for (const auto& c : calls) {
    if (starts_or_ends_mpi(c.name)) continue;
    if (shown == 3) break;
    os << (shown ? ", " : "") << c.name << " " << fmt(c.time_s) << " s";
    if (window_sum_s > 0) os << " (" << pct(c.time_s / window_sum_s) << ")";
    ++shown;
  }
  return os.str();
}

}  // namespace rtrace::analysis
