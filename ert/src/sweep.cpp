#include "rtrace/ert/sweep.hpp"

#include "rtrace/ert/ceilings.hpp"

#include <algorithm>
#include <cmath>

namespace rtrace::ert {

const char* to_string(Series s) noexcept { return s == Series::Bandwidth ? "bandwidth" : "flops"; }

TrialPolicy default_policy(bool quick) {
  TrialPolicy p;
  if (quick) {
    p.min_seconds = 0.001;
    p.repeats = 3;
  } else {
    p.min_seconds = 0.004;
    p.repeats = 5;
  }
  return p;
}

SweepController::SweepController(std::vector<Measurement> plan, TrialPolicy policy, int workers, int ranks,
                                 DramSearch dram_search)
    : plan_(std::move(plan)),
      policy_(policy),
      workers_(std::max(workers, 1)),
      ranks_(std::max(ranks, 1)),
      search_(dram_search) {
  policy_.repeats = std::max(policy_.repeats, 1);
  policy_.max_calibrations = std::max(policy_.max_calibrations, 1);
}

std::int64_t SweepController::predict_trials(const Measurement& m) const {
  // The most similar kernel timed so far in the same series: same precision
  // and variant, the closest F; its time per element-trial scaled by the F
  // ratio (an upper bound once compute-bound, conservative while memory-bound).
  const Rate* best = nullptr;
  for (const Rate& r : rates_) {
    if (r.series != m.series || r.one_worker != m.one_worker || r.kernel.precision != m.kernel.precision ||
        r.kernel.variant != m.kernel.variant)
      continue;
    if (!best || std::abs(std::log2(double(r.kernel.flops_per_element) / m.kernel.flops_per_element)) <
                     std::abs(std::log2(double(best->kernel.flops_per_element) / m.kernel.flops_per_element)))
      best = &r;
  }
  if (!best) return 1;
  double spet = best->seconds_per_element_trial;
  if (m.kernel.flops_per_element > best->kernel.flops_per_element)
    spet *= double(m.kernel.flops_per_element) / best->kernel.flops_per_element;
  const double per_trial = spet * double(m.elements_per_worker);
  if (!(per_trial > 0)) return 1;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(policy_.min_seconds * 1.2 / per_trial)));
}

void SweepController::search_dram(const Measurement& m) {
  if (!(search_.earliest_bytes > 0) || m.series != Series::Bandwidth || m.one_worker) return;
  const double ws = double(measurement_working_set_bytes(m, workers_, ranks_));
  if (dram_found_bytes_ > 0) {
    if (ws > dram_found_bytes_) ++dram_points_;
    return;
  }
  std::vector<double> gbs;
  for (auto it = samples_.rbegin(); it != samples_.rend() && gbs.size() < std::size_t(std::max(kept_, 1)); ++it)
    gbs.push_back(it->gbytes_per_s());
  const double here = median_of(gbs);
  bandwidth_points_.emplace_back(ws, here);
  if (bandwidth_points_.size() < 2) return;
  const auto& before = bandwidth_points_[bandwidth_points_.size() - 2];
  if (before.first < search_.earliest_bytes || before.first >= search_.latest_bytes) return;
  std::vector<double> llc;
  for (const auto& p : bandwidth_points_)
    if (p.first > search_.llc_low_bytes && p.first <= search_.llc_high_bytes) llc.push_back(p.second);
  if (llc.empty()) return;
  llc_gbs_ = median_of(llc);
  const double below = search_.below_llc * llc_gbs_;
  if (before.second <= below && here <= below && here >= (1 - search_.flat_tolerance) * before.second) {
    dram_found_bytes_ = before.first;
    dram_points_ = 2;
  }
}

bool SweepController::skip_for_dram(std::size_t i) {
  if (!(dram_found_bytes_ > 0)) return false;
  Measurement& m = plan_[i];
  if (m.series != Series::Bandwidth) return false;
  const double ws = double(measurement_working_set_bytes(m, workers_, ranks_));
  if (ws <= dram_found_bytes_) return false;
  if (!m.one_worker) return dram_points_ >= search_.points;
  // One worker sees no more cache than the partition: past the found start is DRAM for it too.
  const std::int64_t block = std::max<std::int64_t>(search_.block_elements, 1);
  const double wanted = search_.one_worker_factor * dram_found_bytes_ / double(element_bytes(m.kernel.precision));
  m.elements_per_worker =
      std::min(m.elements_per_worker, std::max<std::int64_t>(block, std::int64_t(wanted / double(block)) * block));
  return false;
}

bool SweepController::next(PlannedRun& run) {
  while (!started_ && current_ < plan_.size() && skip_for_dram(current_)) skipped_.push_back(current_++);
  if (current_ >= plan_.size()) return false;
  const Measurement& m = plan_[current_];
  if (!started_) {
    trials_ = predict_trials(m);
    calibrations_ = 0;
    kept_ = 0;
    redo_in_measurement_ = 0;
    warming_ = true;
  }
  run.measurement = current_;
  run.trials = trials_;
  run.first_of_measurement = !started_;
  // Warm-up until one run has lasted min_seconds; every measurement gets at
  // least one (it also brings the working set into the level being measured).
  run.warmup = warming_;
  started_ = true;
  last_ = run;
  return true;
}

void SweepController::record(double seconds, const std::vector<double>& rank_seconds, double on_cpu_fraction) {
  RunTiming t;
  t.seconds = seconds;
  t.rank_seconds = rank_seconds;
  t.on_cpu_fraction = on_cpu_fraction;
  record(t);
}

void SweepController::record(const RunTiming& t) {
  if (current_ >= plan_.size()) return;
  ++runs_;
  const Measurement& m = plan_[current_];
  const double seconds = t.seconds;
  // What the kernel itself took: the workers' own time, not the span (which
  // includes how late the last worker started).
  const double kernel_seconds = std::isfinite(t.worker_seconds) && t.worker_seconds > 0 ? t.worker_seconds : seconds;
  const bool preempted = t.on_cpu_fraction < policy_.min_on_cpu_fraction;
  const bool skewed = !last_.warmup && seconds > 0 && t.start_skew > policy_.max_start_skew_fraction * seconds;
  // Redo disturbed runs, but on a machine that stays busy give up after
  // doubling the number of runs (the samples then show the noise).
  const bool redo_budget_left = redone_ < plan_.size() * std::size_t(policy_.repeats + 1);
  const bool may_redo = redo_in_measurement_ < policy_.max_redo_per_measurement && redo_budget_left;
  if ((preempted || skewed) && may_redo) {
    ++redo_in_measurement_;
    ++redone_;
    if (skewed) ++skewed_;
    if (skewed && !preempted) {
      // The workers did not start together although none was preempted
      // during its run (a slow wake-up the gate did not absorb): a longer
      // run makes the same skew a smaller part of it, up to
      // max_seconds_per_run. A preempted run is only redone: a longer one
      // would be preempted more often.
      const double wanted = t.start_skew / (0.5 * policy_.max_start_skew_fraction);
      double scale = std::clamp(wanted / std::max(kernel_seconds, 1e-9), 2.0, 4.0);
      if (kernel_seconds > 0) scale = std::min(scale, std::max(1.0, policy_.max_seconds_per_run / kernel_seconds));
      trials_ = std::max<std::int64_t>(trials_, static_cast<std::int64_t>(std::ceil(double(trials_) * scale)));
    }
    return;  // disturbed: the time says nothing about the kernel. Again.
  }
  if (last_.warmup) {
    ++calibrations_;
    if (kernel_seconds < policy_.min_seconds && calibrations_ < policy_.max_calibrations) {
      // Too short: scale up (at most x1000 per step) and warm up again.
      const double scale = kernel_seconds > 0 ? policy_.min_seconds * 1.25 / kernel_seconds : 1000.0;
      trials_ = std::max<std::int64_t>(trials_ + 1, static_cast<std::int64_t>(std::ceil(trials_ * std::min(scale, 1000.0))));
      return;  // still warming up
    }
    if (kernel_seconds > 4 * policy_.min_seconds && trials_ > 1 && !preempted) {
      // Far too long (the prediction came from a faster level): shorten the
      // kept runs. Only an undisturbed warm-up says so: once the redo budget
      // is spent a preempted one reaches here, and its time is the
      // scheduler's, not the kernel's (shortening on it left 1-trial runs
      // that timed thread start-up skew).
      const double scale = policy_.min_seconds * 1.5 / kernel_seconds;
      trials_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(trials_ * scale)));
    }
    warming_ = false;
    kept_ = 0;
    if (kernel_seconds > 0 && last_.trials > 0) {
      const double spet = kernel_seconds / (double(last_.trials) * double(m.elements_per_worker));
      auto it = std::find_if(rates_.begin(), rates_.end(), [&](const Rate& r) {
        return r.series == m.series && r.one_worker == m.one_worker && r.kernel.precision == m.kernel.precision &&
               r.kernel.variant == m.kernel.variant && r.kernel.flops_per_element == m.kernel.flops_per_element;
      });
      if (it == rates_.end()) rates_.push_back(Rate{m.series, m.one_worker, m.kernel, spet});
      else it->seconds_per_element_trial = spet;
    }
    return;
  }

  // The workers and ranks whose elements the run covered.
  const int workers = m.one_worker ? 1 : workers_;
  const int ranks = m.one_worker ? 1 : ranks_;
  Sample s;
  s.series = m.series;
  s.kernel = m.kernel;
  s.elements_per_worker = m.elements_per_worker;
  s.working_set_bytes = measurement_working_set_bytes(m, workers_, ranks_);
  s.one_worker = m.one_worker;
  s.trials = last_.trials;
  s.workers = workers;
  s.ranks = ranks;
  s.repeat = m.first_repeat + kept_;
  s.disturbed = preempted || skewed;
  if (s.disturbed) ++kept_disturbed_;
  s.seconds = seconds;
  s.rank_seconds = t.rank_seconds.empty() || m.one_worker ? std::vector<double>{seconds} : t.rank_seconds;
  const SampleCost cost = sample_cost(m.kernel, m.elements_per_worker * workers * ranks, last_.trials);
  s.bytes = cost.bytes;
  s.flops = cost.flops;
  samples_.push_back(std::move(s));
  if (++kept_ >= (m.repeats > 0 ? m.repeats : policy_.repeats)) {
    search_dram(m);
    ++current_;
    started_ = false;
  }
}

std::int64_t measurement_working_set_bytes(const Measurement& m, int workers, int ranks) {
  const std::int64_t covered = m.one_worker ? 1 : std::int64_t(std::max(workers, 1)) * std::max(ranks, 1);
  return m.elements_per_worker * static_cast<std::int64_t>(element_bytes(m.kernel.precision)) * covered;
}

std::vector<double> bandwidth_working_sets(const CpuPlanInputs& in) {
  const double workers = double(std::max(in.threads, 1)) * std::max(in.ranks, 1);
  const double start = 4096.0 * workers;
  const double llc = in.llc_capacity_bytes;
  const double dram = in.dram_start_bytes > 0 ? std::max(in.dram_start_bytes, llc) : 4.0 * llc;
  double end = std::max(dram * (in.quick ? kDramRangeSweptQuick : kDramRangeSwept), 4.0 * start);
  if (in.max_working_set_bytes > 0) end = std::min(end, std::max(in.max_working_set_bytes, 4.0 * start));
  const double cache_step = std::pow(2.0, in.quick ? 0.5 : 0.25);
  // Between the LLC and DRAM's range the curve only falls: no ceiling comes
  // from there, 2 points per octave show the fall.
  const double transition_step = std::pow(2.0, 0.5);
  const double dram_step = std::pow(2.0, 0.25);
  std::vector<double> sizes;
  // Exact powers of two in the low part keep the cache boundaries on the grid.
  for (double ws = start; ws <= end * 1.0001;) {
    sizes.push_back(ws);
    if (ws >= dram * 0.98) {
      ws = std::max(ws, dram) * dram_step;
      continue;
    }
    // The transition ends just below DRAM's range (rounded to whole register
    // blocks it stays out of it), whose first point is a DRAM step past it.
    const double next = ws * (ws >= llc ? transition_step : cache_step);
    ws = next > dram ? dram * 0.99 : next;
  }
  if (sizes.back() < end * 0.999) sizes.push_back(end);
  return sizes;
}

std::int64_t flop_elements_per_worker(const CpuPlanInputs& in, Precision p, std::size_t block_elements) {
  const double l1_block_bytes = std::clamp(in.l1_bytes_per_thread / 2.0, 2048.0, 16384.0);
  const std::int64_t b = std::int64_t(std::max<std::size_t>(block_elements, 1));
  return std::max<std::int64_t>(b, std::int64_t(l1_block_bytes / element_bytes(p) / double(b)) * b);
}

int flop_group_repeats(bool quick) {
  return (default_policy(quick).repeats + kFlopTimeGroups - 1) / kFlopTimeGroups;
}

std::vector<Measurement> make_cpu_plan(const CpuPlanInputs& in, std::size_t block_fp64, std::size_t block_fp32,
                                       const std::vector<Measurement>& before_end) {
  const std::int64_t workers = std::int64_t(std::max(in.threads, 1)) * std::max(in.ranks, 1);
  const std::vector<int> high = high_intensity_flops(supported_flops_per_element());
  const int group_repeats = flop_group_repeats(in.quick);
  auto flop_kernels = [&](bool high_f, int group, std::vector<Measurement>& plan) {
    for (Precision p : in.precisions) {
      if (p != Precision::FP64 && p != Precision::FP32) continue;
      const std::int64_t elems = flop_elements_per_worker(in, p, p == Precision::FP64 ? block_fp64 : block_fp32);
      for (Variant v : {Variant::Fma, Variant::NoFma})
        for (int f : supported_flops_per_element()) {
          const bool is_high = std::find(high.begin(), high.end(), f) != high.end();
          if (is_high != high_f) continue;
          Measurement m{Series::Flops, KernelSpec{p, v, f}, elems};
          if (high_f) {
            m.repeats = group_repeats;
            m.first_repeat = group * group_repeats;
          }
          plan.push_back(m);
        }
    }
  };
  std::vector<Measurement> plan;
  flop_kernels(true, 0, plan);  // the start
  const std::size_t block = std::max<std::size_t>(block_fp64, 1);
  std::int64_t last_elems = -1;
  for (double ws : bandwidth_working_sets(in)) {
    const double per_worker_elems = ws / double(workers) / 8.0;
    std::int64_t elems = std::max<std::int64_t>(
        std::int64_t(block), std::int64_t(std::llround(per_worker_elems / double(block))) * std::int64_t(block));
    if (elems == last_elems) continue;
    last_elems = elems;
    plan.push_back(Measurement{Series::Bandwidth, KernelSpec{Precision::FP64, Variant::Fma, 1}, elems});
  }
  flop_kernels(false, 0, plan);
  flop_kernels(true, 1, plan);  // the middle
  plan.insert(plan.end(), before_end.begin(), before_end.end());
  flop_kernels(true, 2, plan);  // the end
  return plan;
}

}  // namespace rtrace::ert

namespace rtrace::ert {

std::vector<double> one_worker_working_sets(const std::vector<MemoryLevel>& levels, double max_working_set_bytes) {
  std::vector<double> sizes;
  auto add = [&](double ws, const LevelRange& r) {
    if (max_working_set_bytes > 0) ws = std::min(ws, max_working_set_bytes);
    if (ws > r.low && ws <= r.high) sizes.push_back(ws);
  };
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const LevelRange r = level_range(levels, i);
    if (std::isinf(r.high)) {
      // DRAM: a quarter above its range's start (levels.hpp), no larger than
      // it must be (first-touching memory is slow on a VM).
      add(i > 0 ? 1.25 * r.low : 64.0 * 1048576, r);
      continue;
    }
    // A cache: three working sets across its range, the best counting, as
    // the partition's ceiling is the best over its plateau (issue 32: on a
    // Zen 5 VM two workers moved 1050 GB/s at 4 KiB each in L1 and 780 at
    // 24 KiB; against one worker at 24 KiB alone, 390, the partition was
    // "above 2 x one worker's" in half the runs, and re-measured). The first
    // cache from the sweep's smallest working set (4 KiB) to half of it.
    const double low = i == 0 ? std::min(4096.0, r.high / 2) : r.low, high = i == 0 ? r.high / 2 : r.high;
    if (!(low > 0) || high <= 2 * low) {
      add(i == 0 ? high : std::sqrt(r.low * r.high), r);  // a narrow range: its middle
      continue;
    }
    for (double f : i == 0 ? std::vector<double>{0, 0.5, 1} : std::vector<double>{0.25, 0.5, 0.75})
      add(low * std::pow(high / low, f), r);
  }
  return sizes;
}

std::vector<Measurement> make_one_worker_plan(const std::vector<Precision>& precisions,
                                              const std::vector<double>& level_working_sets,
                                              std::int64_t flop_elements_fp64, std::int64_t flop_elements_fp32,
                                              std::size_t block_elements_fp64) {
  std::vector<Measurement> plan;
  const std::int64_t block = std::int64_t(std::max<std::size_t>(block_elements_fp64, 1));
  for (double ws : level_working_sets) {
    const std::int64_t elems = std::max<std::int64_t>(block, std::int64_t(std::llround(ws / 8.0 / double(block))) * block);
    Measurement m{Series::Bandwidth, KernelSpec{Precision::FP64, Variant::Fma, 1}, elems};
    m.one_worker = true;
    plan.push_back(m);
  }
  const std::vector<int> high = high_intensity_flops(supported_flops_per_element());
  for (Precision p : precisions) {
    if (p != Precision::FP64 && p != Precision::FP32) continue;
    for (Variant v : {Variant::Fma, Variant::NoFma})
      for (int f : high) {
        Measurement m{Series::Flops, KernelSpec{p, v, f}, p == Precision::FP64 ? flop_elements_fp64 : flop_elements_fp32};
        m.one_worker = true;
        plan.push_back(m);
      }
  }
  return plan;
}

}  // namespace rtrace::ert
