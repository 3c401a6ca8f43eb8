#include "rtrace/analysis/pop.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace rtrace::analysis {
namespace {

std::string pct(double v) { return fmt(100 * v, 3) + "%"; }

// Involuntary context switches per second per worker above which the machine
// was busy with other work. Measured on this project's 2-core VM: 1-14/s per
// worker idle, 80-140/s at load average 3 (docs/analysis.md).
constexpr double kBusyMachinePreemptionsPerWorker = 50;
double per_worker_preemptions(const PopPoint& p) {
  return available(p.ivcsw_rate) && p.threads > 0 ? p.ivcsw_rate / p.threads : kNaN;
}

bool is_init(const std::string& n) { return n == "MPI_Init" || n == "MPI_Init_thread"; }
bool is_finalize(const std::string& n) { return n == "MPI_Finalize"; }

double median_of(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !available(x); }), v.end());
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

double RankUsage::window_s() const noexcept {
  if (!available(wall_s)) return kNaN;
  if (!mpi_initialised) return wall_s;
  double start = available(init_end_s) ? init_end_s : 0;
  double end = available(finalize_start_s) ? finalize_start_s : wall_s;
  return end > start ? end - start : kNaN;
}
double RankUsage::startup_s() const noexcept {
  return mpi_initialised && available(init_end_s) ? init_end_s : 0;
}
double RankUsage::teardown_s() const noexcept {
  return mpi_initialised && available(finalize_start_s) && available(wall_s) ? std::max(0.0, wall_s - finalize_start_s)
                                                                             : 0;
}

PointUsage point_usage(const std::vector<store::RankRecords>& ranks) {
  PointUsage out;
  std::map<std::string, std::size_t> call_index;
  std::vector<std::vector<double>> call_rank_time;  // [call][rank]
  const std::size_t nranks = ranks.size();
  for (std::size_t r = 0; r < nranks; ++r) {
    const auto& rec = ranks[r];
    RankUsage u;
    u.wall_s = rec.info.wall_s;
    u.user_s = rec.info.user_s;
    u.system_s = rec.info.system_s;
    u.involuntary_ctxsw = rec.info.involuntary_ctxsw >= 0 ? static_cast<double>(rec.info.involuntary_ctxsw) : kNaN;
    u.voluntary_ctxsw = rec.info.voluntary_ctxsw >= 0 ? static_cast<double>(rec.info.voluntary_ctxsw) : kNaN;
    u.omp_threads = rec.info.omp_threads;
    // NaN when absent: MPI not initialised, or a file from before the tracer recorded the window.
    u.init_end_s = rec.info.mpi_init_end;
    u.finalize_start_s = rec.info.mpi_finalize_start;
    if (available(u.init_end_s)) u.mpi_initialised = true;
    for (const auto& m : rec.mpi) {
      std::string name = (m.name_id >= 0 && static_cast<std::size_t>(m.name_id) < rec.names.size())
                             ? rec.names[static_cast<std::size_t>(m.name_id)]
                             : "MPI#" + std::to_string(m.name_id);
      double t = available(m.time_s) ? m.time_s : 0;
      if (is_init(name)) { u.init_s += t; u.mpi_initialised = true; }
      else if (is_finalize(name)) u.finalize_s += t;
      else { u.mpi_s += t; out.any_mpi_rows = true; u.mpi_initialised = true; }
      auto it = call_index.find(name);
      if (it == call_index.end()) {
        it = call_index.emplace(name, out.calls.size()).first;
        MpiCallStats s;
        s.name = name;
        out.calls.push_back(s);
        call_rank_time.emplace_back(nranks, 0.0);
      }
      MpiCallStats& s = out.calls[it->second];
      s.calls += m.calls;
      s.time_s += t;
      s.bytes += static_cast<double>(std::max<std::int64_t>(0, m.bytes_sent) + std::max<std::int64_t>(0, m.bytes_received));
      call_rank_time[it->second][r] += t;
    }
    for (const auto& row : rec.regions) {
      if (!available(row.hw_instructions) || !available(row.hw_cycles) || !available(row.time_s)) continue;
      u.hw_instructions = (available(u.hw_instructions) ? u.hw_instructions : 0) + row.hw_instructions;
      u.hw_cycles = (available(u.hw_cycles) ? u.hw_cycles : 0) + row.hw_cycles;
      u.hw_time_s = (available(u.hw_time_s) ? u.hw_time_s : 0) + row.time_s;
    }
    out.any_rows |= !rec.mpi.empty();
    out.mpi_initialised |= u.mpi_initialised;
    out.ranks.push_back(u);
  }
  for (std::size_t i = 0; i < out.calls.size(); ++i) {
    const auto& v = call_rank_time[i];
    if (v.empty()) continue;
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    out.calls[i].rank_min_s = *lo;
    out.calls[i].rank_max_s = *hi;
    out.calls[i].rank_mean_s = sum / static_cast<double>(v.size());
  }
  std::stable_sort(out.calls.begin(), out.calls.end(),
                   [](const MpiCallStats& a, const MpiCallStats& b) { return a.time_s > b.time_s; });
  return out;
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
  double cpu_sum = 0, sys_sum = 0, cpu_per_wall_sum = 0, ivcsw_rate_sum = 0;
  int cpu_n = 0, ivcsw_n = 0;
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
    // Wall-clock useful time per rank; with t threads per rank every rank is
    // t workers, so the sums count t x useful (PE is unchanged by t).
    p.basis = "mpi";
    p.useful_sum_s = useful_sum * threads;
    p.useful_max_s = useful_max;
    p.useful_mean_s = useful_sum / nranks;
    p.mpi_share = window_sum > 0 && !usage.calls_not_intercepted() ? mpi_sum / window_sum : kNaN;
    if (useful_max > 0) p.load_balance = p.useful_mean_s / useful_max;
    if (window_max > 0) p.communication_efficiency = useful_max / window_max;
    p.parallel_efficiency = p.load_balance * p.communication_efficiency;
  } else if (available(p.cpu_s)) {
    // No MPI: the useful time is the CPU time (per-thread useful time is not measured).
    p.basis = "cpu-time";
    p.useful_sum_s = p.cpu_s;
    p.parallel_efficiency = p.cpu_s / (p.workers * wall_max);
  }
  return p;
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
  const PopPoint& ref = *points.front();
  for (std::size_t i = 0; i < points.size(); ++i) {
    PopPoint& p = *points[i];
    if (available(ref.useful_sum_s) && available(p.useful_sum_s) && p.useful_sum_s > 0 && work[i] > 0 &&
        work[0] > 0 && p.basis == ref.basis)
      p.computation_scalability = (ref.useful_sum_s / work[0]) / (p.useful_sum_s / work[i]);
    p.global_efficiency = p.parallel_efficiency * p.computation_scalability;
    if (available(ref.hw_instructions) && available(p.hw_instructions) && work[i] > 0 && work[0] > 0) {
      p.instruction_scalability = (ref.hw_instructions / work[0]) / (p.hw_instructions / work[i]);
      p.ipc_scalability = (p.hw_instructions / p.hw_cycles) / (ref.hw_instructions / ref.hw_cycles);
      p.frequency_scalability = (p.hw_cycles / p.hw_time_s) / (ref.hw_cycles / ref.hw_time_s);
    }
  }
}

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
  std::ostringstream why;
  if (!available(s.efficiency)) {
    s.diagnosis = "loss";
    s.cause = "slowdown";
    s.explanation = "no wall time recorded at one of the points";
    return s;
  }
  const bool same_basis = !a.basis.empty() && a.basis == b.basis;
  if (same_basis) {
    s.pe_factor = b.parallel_efficiency / a.parallel_efficiency;
    s.cs_factor = b.computation_scalability / a.computation_scalability;
    if (a.basis == "mpi") {
      s.lb_factor = b.load_balance / a.load_balance;
      s.comm_factor = b.communication_efficiency / a.communication_efficiency;
      s.startup_factor = s.wall_efficiency / s.efficiency;  // (W2/T2)/(W1/T1): outside the window
    } else {
      s.startup_factor = 1;
    }
  }
  const double gain = s.efficiency;
  const std::string eff_words = (ctx.weak ? "weak-scaling efficiency " : "step efficiency ") + pct(gain) +
                                (windowed ? " (MPI window " : " (time ") + fmt(t1) + " s -> " + fmt(t2) + " s on " +
                                fmt(s.ratio) + "x " + ctx.axis + ")";
  // Startup/teardown that grow with the concurrency (by more than cause_min of
  // the wall time) are a scaling loss of their own; a fixed cost is not.
  const double outside1 = a.wall_s - a.window_s, outside2 = b.wall_s - b.window_s;
  if (windowed && outside2 - outside1 > th.cause_min * b.wall_s && s.wall_efficiency < 1 - th.ideal_tolerance &&
      gain >= 1 - th.ideal_tolerance) {
    s.diagnosis = "loss";
    s.cause = "startup";
    s.explanation = eff_words + ", but startup and teardown outside the window grow " + fmt(outside1) + " s -> " +
                    fmt(outside2) + " s, so the wall-clock efficiency is " + pct(s.wall_efficiency);
    return s;
  }
  // A change within the repeats' own spread is not evidence of anything.
  if (spread > 0 && std::fabs(std::log(gain)) <= std::log(1 + spread) &&
      (gain < 1 - th.ideal_tolerance || gain > 1 + th.superlinear_margin)) {
    s.diagnosis = "noise";
    s.explanation = eff_words + " lies within the repeats' spread of " + pct(spread);
    return s;
  }
  if (gain > 1 + th.superlinear_margin) {
    s.diagnosis = "superlinear";
    s.explanation = eff_words + ": faster than ideal";
    if (spread <= 0) s.explanation += "; a single sample per point cannot rule out a disturbed baseline";
    return s;
  }
  if (gain >= 1 - th.ideal_tolerance) {
    s.diagnosis = "ideal";
    s.explanation = eff_words;
    return s;
  }
  s.diagnosis = "loss";

  struct Candidate { std::string cause; double factor; std::string words; };
  std::vector<Candidate> cand;
  auto add = [&](const std::string& cause, double factor, const std::string& words) {
    if (available(factor) && factor > 0) cand.push_back({cause, 1 / factor, words});  // extra-time factor
  };
  // CPU/wall near 1 per rank with several threads per rank: the threads do not run.
  const bool threads_idle = available(b.cpu_per_wall) && b.threads >= 2 && b.cpu_per_wall <= 1.25;
  // Spinning is a change across the step: an app whose own work already ran in the kernel at the
  // first point (syscall-heavy timing, I/O) is not spinning because the share is still high.
  const bool spinning = available(b.system_share) && b.system_share >= 0.3 &&
                       (!available(a.system_share) || b.system_share >= a.system_share + 0.1);
  if (same_basis && a.basis == "mpi") {
    add("imbalance", s.lb_factor,
        "load balance " + fmt(a.load_balance, 3) + " -> " + fmt(b.load_balance, 3) + " (useful time per rank: max " +
            fmt(b.useful_max_s) + " s, mean " + fmt(b.useful_mean_s) + " s)");
    add("mpi", s.comm_factor,
        "communication efficiency " + fmt(a.communication_efficiency, 3) + " -> " + fmt(b.communication_efficiency, 3) +
            " (MPI share of the window " + pct(a.mpi_share) + " -> " + pct(b.mpi_share) + ")");
    std::string cs_cause = threads_idle ? "threads-unused" : spinning ? "spin-wait" : "computation-scaling";
    add(cs_cause, s.cs_factor,
        cs_cause == "threads-unused"
            ? "CPU/wall per rank is " + fmt(b.cpu_per_wall) + " at " + fmt(c2, 6) + " " + ctx.axis +
                  ": the added threads mostly wait (never given work, or blocked on a lock or critical section)"
        : cs_cause == "spin-wait"
            ? "computation scalability " + fmt(s.cs_factor) + " with " + pct(b.system_share) +
                  " of the CPU time in the kernel (threads spinning or yielding)"
            : "useful time per unit of work grows " + fmt(1 / s.cs_factor) +
                  "x (computation scalability " + fmt(a.computation_scalability, 3) + " -> " +
                  fmt(b.computation_scalability, 3) + "): replicated work or cache effects");
  } else if (same_basis) {  // cpu-time basis: threads without MPI
    add(threads_idle ? "threads-unused" : "serial-fraction", s.pe_factor,
        threads_idle ? "CPU/wall is " + fmt(b.cpu_per_wall) + " at " + fmt(c2, 6) + " " + ctx.axis +
                           ": the added threads mostly wait (never given work, or blocked on a lock or "
                           "critical section)"
                     : "CPU utilisation " + pct(a.parallel_efficiency) + " -> " + pct(b.parallel_efficiency) +
                           " of the " + std::to_string(b.workers) + " workers' time: a part runs on fewer threads");
    const bool far_above = available(s.cs_factor) && s.cs_factor < 1 / 1.5;
    std::string cs_cause = (spinning || far_above) ? "spin-wait" : "computation-scaling";
    add(cs_cause, s.cs_factor,
        cs_cause == "spin-wait"
            ? "CPU time grows " + fmt(1 / s.cs_factor) + "x for the same work (" + pct(b.system_share) +
                  " system time, CPU/wall " + fmt(b.cpu_per_wall) + "): threads burn CPU waiting"
            : "CPU time per unit of work grows " + fmt(1 / s.cs_factor) + "x: replicated work or cache effects");
  }
  const Candidate* best = nullptr;
  for (const auto& c : cand)
    if (!best || c.factor > best->factor) best = &c;
  // More runnable workers than cores: the losses come from time slicing.
  const bool oversubscribed = ctx.cores > 0 && b.workers > ctx.cores;
  // No more workers than cores, yet each is preempted often: other processes
  // ran on the cores, and a loss that only says "more time for the same work"
  // (computation scaling, a serial part, a slowdown, threads that got no CPU)
  // is the machine's, not the app's. Spinning keeps its name: its evidence
  // (kernel time) is the app's own.
  const double preempt1 = per_worker_preemptions(a), preempt2 = per_worker_preemptions(b);
  const bool machine_busy = !oversubscribed && available(preempt2) && preempt2 >= kBusyMachinePreemptionsPerWorker &&
                            (!available(preempt1) || preempt2 >= 2 * preempt1 ||
                             preempt1 >= kBusyMachinePreemptionsPerWorker);
  const bool best_is_named = best && best->factor >= 1 + th.cause_min / 2;
  if (machine_busy && (!best_is_named || best->cause == "computation-scaling" || best->cause == "serial-fraction" ||
                       best->cause == "threads-unused")) {
    s.cause = "machine-load";
    why << eff_words << "; " << fmt(preempt2) << " involuntary context switches/s per worker";
    if (available(preempt1)) why << " (was " << fmt(preempt1) << ")";
    why << " with no more workers than cores: other processes took the cores, so the extra time is not the "
        << "app's; rerun on an idle or exclusive node";
    s.explanation = why.str();
    return s;
  }
  if (oversubscribed && (!best || best->cause != "startup")) {
    s.cause = "oversubscription";
    why << eff_words << "; " << b.workers << " workers on " << ctx.cores << " cores";
    if (available(b.ivcsw_rate)) why << ", " << fmt(b.ivcsw_rate) << " involuntary context switches/s per rank";
    if (available(a.ivcsw_rate)) why << " (was " << fmt(a.ivcsw_rate) << ")";
    s.explanation = why.str();
    return s;
  }
  if (best_is_named) {
    s.cause = best->cause;
    why << eff_words << "; " << best->words << " accounts for " << fmt(best->factor) << "x over ideal";
  } else if (s.speedup < 1 - th.cause_min) {
    s.cause = "slowdown";
    why << eff_words << "; slower with more workers and no factor of the model explains it: contention for a "
        << "shared resource or run-to-run noise";
  } else {
    s.cause = "serial-fraction";
    why << eff_words << "; Karp-Flatt serial fraction " << fmt(karp_flatt(s.speedup, s.ratio), 2);
  }
  s.explanation = why.str();
  return s;
}

std::string mpi_call_sentence(const std::vector<MpiCallStats>& calls, double window_sum_s) {
  std::ostringstream os;
  int shown = 0;
  for (const auto& c : calls) {
    if (is_init(c.name) || is_finalize(c.name)) continue;
    if (shown == 3) break;
    os << (shown ? ", " : "") << c.name << " " << fmt(c.time_s) << " s";
    if (window_sum_s > 0) os << " (" << pct(c.time_s / window_sum_s) << ")";
    ++shown;
  }
  return os.str();
}

}  // namespace rtrace::analysis
