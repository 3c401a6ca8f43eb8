// The account of each step's lost time over functions and causes (issue 39).
#include "rtrace/analysis/loss_account.hpp"

#include "mpi_names.hpp"
#include "rtrace/analysis/analyze.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

namespace rtrace::analysis {
namespace {

// The counted function's step between two configurations, nullptr when the
// function has no counts there (or no trajectory in this group).
struct CountedStep {
  const TrajectoryStep* step = nullptr;
  const KernelAtPoint* k1 = nullptr;
  const KernelAtPoint* k2 = nullptr;
};
CountedStep counted_step(const AnalysisResult& res, const FunctionSeries& f, const std::string& fixed, int from, int to) {
  CountedStep out;
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
    const KernelSeries& s = res.kernels[static_cast<std::size_t>(ki)];
    if (s.kind != kFunctionKind) continue;
    if (s.name != f.short_name && s.name != f.name && short_function_name(s.name) != f.short_name) continue;
    for (const auto& t : res.trajectories) {
      if (t.kernel != ki || t.fixed != fixed) continue;
      for (const auto& st : t.steps)
        if (st.from == from && st.to == to) {
          out.step = &st;
          out.k1 = &res.run.configs[static_cast<std::size_t>(from)].kernels[static_cast<std::size_t>(s.at[from])];
          out.k2 = &res.run.configs[static_cast<std::size_t>(to)].kernels[static_cast<std::size_t>(s.at[to])];
          return out;
        }
    }
  }
  return out;
}

// The cause of a function's loss that its roofline does not name: its
// category, or the shape of its sampled time.
std::string shape_cause(const std::string& category, const std::string& shape) {
  if (category == "mpi") return "mpi";
  if (category == "openmp") return "runtime-wait";
  if (shape.find("serial") != std::string::npos) return "serial-fraction";
  // A time that grows or holds on several threads: work the workers repeat,
  // or the workers contending for memory or the kernel's locks. Without
  // counts the samples cannot tell which: POP's computation-scaling (with
  // counts, work-grew and the roofline's causes are taken first).
  return "computation-scaling";
}

// The counted work of a kernel: FLOPs, or instructions for code without FLOPs.
double counted_work(const KernelAtPoint& k, bool flops) {
  return flops ? k.counts.total_flops() : k.counted_instructions;
}

struct Part {
  std::string cause, where;
  double log_share = 0;
};

// A function's loss split over its step's factors (see the header): parts in
// logarithms that are each >= 0 and add up to ln(t2 / (t1 x ideal)) > 0.
// lambda1, lambda2: the function's imbalance across ranks (max/mean - 1) at
// both points: the critical rank's time is the mean rank's times 1 + lambda.
std::vector<Part> split_loss(double ell, double r, bool weak, const CountedStep& cs, const std::string& fallback,
                             double lambda1, double lambda2) {
  std::vector<Part> parts;
  double remaining = ell;
  auto take = [&](const std::string& cause, const std::string& where, double term) {
    if (!(term > 0) || !(remaining > 0)) return;
    const double part = std::min(term, remaining);
    parts.push_back({cause, where, part});
    remaining -= part;
  };
  if (available(lambda2)) take("imbalance", "", std::log((1 + lambda2) / (1 + (available(lambda1) ? lambda1 : 0.0))));
  const std::string& rest_cause = fallback;
  if (cs.step) {
    const StepDiagnosis& d = cs.step->d;
    // Work that grew between the points (strong: any growth; weak: beyond r).
    const bool by_flops = d.intensity != "instructions" && !flop_less(*cs.k1) &&
                          available(cs.k1->counts.total_flops()) && cs.k1->counts.total_flops() > 0;
    const double w1 = counted_work(*cs.k1, by_flops), w2 = counted_work(*cs.k2, by_flops);
    if (available(w1) && available(w2) && w1 > 0 && w2 > 0)
      take("work-grew", "", std::log(w2 / w1) - (weak ? std::log(r) : 0.0));
    if (d.diagnosis == "cache-capacity")
      take("cache-capacity", d.cache, d.capacity_ratio > 0 ? -std::log(d.capacity_ratio) : remaining);
    else if ((d.diagnosis == "bandwidth-contention" || d.diagnosis == "compute-bound") &&
             available(d.factors.ceiling_ratio) && d.factors.ceiling_ratio > 0)
      take(d.diagnosis, d.factors.basis_ceiling, std::log(r / d.factors.ceiling_ratio));
    // The rest is named by the samples' shape, not by classify_step's "other"
    // cause: that one weighs the application's evidence (its MPI share, the
    // machine's load, which the MPI functions and the unsampled time carry
    // themselves) and falls back to a Karp-Flatt "serial-fraction" without
    // any (LAMMPS's pair force, 1.72x on 2x, was "mpi", then "serial", for
    // its own 0.64 s; issue 39). The imbalance part is taken above.
  }
  if (remaining > 0) parts.push_back({rest_cause, "", remaining});
  return parts;
}

// Adds seconds to a cause of the step (its functions are listed once all are in).
void add_cause(std::vector<CauseSeconds>& causes, const std::string& cause, const std::string& where, double seconds) {
  for (auto& c : causes)
    if (c.cause == cause && c.where == where) {
      c.seconds += seconds;
      return;
    }
  CauseSeconds c;
  c.cause = cause;
  c.where = where;
  c.seconds = seconds;
  causes.push_back(std::move(c));
}

std::string seconds_text(double s) { return fmt(s, 3) + " s"; }

std::string account_sentence(const StepAccount& a, const std::string& axis) {
  std::ostringstream os;
  os << "Lost time at " << axis << " " << fmt(a.c1, 6) << "->" << fmt(a.c2, 6) << ": " << seconds_text(a.lost_s)
     << " (" << seconds_text(a.t2) << " against " << (a.weak ? "the same " : "an ideal ") << seconds_text(a.weak ? a.t1 : a.t1 * a.c1 / a.c2)
     << ")";
  if (!(a.lost_s > 0)) {
    os << "; " << a.why_no_headline << ".";
    return os.str();
  }
  os << ": ";
  std::size_t shown = 0;
  for (const auto& c : a.causes) {
    if (!(c.seconds > 0) || shown == 4) continue;
    if (shown++) os << ", ";
    os << c.label() << " " << seconds_text(c.seconds) << " (" << fmt(100 * c.share, 3) << "%";
    for (std::size_t i = 0; i < c.functions.size() && i < 2; ++i) os << (i ? ", `" : ", in `") << c.functions[i] << "`";
    os << ")";
  }
  if (a.gained_s < 0) {
    os << "; of " << seconds_text(a.gross_lost_s) << " lost, " << seconds_text(-a.gained_s) << " came back";
    const double off_cpu_gain = a.unsampled_s < 0 ? -a.unsampled_s : 0;
    if (off_cpu_gain > 0 && off_cpu_gain < -a.gained_s)
      os << " (functions that scaled better than ideal " << seconds_text(-a.gained_s - off_cpu_gain)
         << ", less time off the CPU " << seconds_text(off_cpu_gain) << ")";
    else if (off_cpu_gain > 0)
      os << " (less time off the CPU)";
    else
      os << " (functions that scaled better than ideal)";
  }
  os << "; sampling uncertainty +-" << seconds_text(a.uncertainty_s);
  if (a.spread_s > 0) os << ", repeats' spread +-" << seconds_text(a.spread_s / 2);
  if (!a.headline.empty()) {
    os << ". Headline: " << a.headline;
    if (a.tentative) os << " (tentative: one sample per point; --repeat 3 gives its spread)";
  } else {
    os << ". No headline: " << a.why_no_headline;
  }
  os << ".";
  return os.str();
}

}  // namespace

std::string CauseSeconds::label() const {
  if (where.empty()) return cause;
  if (cause == "cache-capacity") return cause + " at " + where;
  return cause + " on " + where;
}

std::vector<StepAccount> account_steps(const AnalysisResult& res, const AppSummary& sum) {
  std::vector<StepAccount> out;
  const ProfileResult& prof = res.profile;
  if (!prof.available || !available(prof.period_s) || prof.period_s <= 0 || sum.points.size() < 2) return out;
  const Thresholds& th = res.thresholds;
  const double period = prof.period_s;
  for (std::size_t i = 0; i + 1 < sum.points.size(); ++i) {
    const AppPoint& a = sum.points[i];
    const AppPoint& b = sum.points[i + 1];
    StepAccount acc;
    acc.from = a.config;
    acc.to = b.config;
    acc.c1 = a.concurrency;
    acc.c2 = b.concurrency;
    acc.weak = sum.weak;
    acc.t1 = a.time_s;
    acc.t2 = b.time_s;
    acc.tentative = a.repeats <= 1 || b.repeats <= 1;
    acc.spread_s = std::max(a.spread, b.spread) * b.time_s;
    const double r = acc.c2 / acc.c1;
    const double ideal = sum.weak ? 1.0 : 1.0 / r;
    acc.lost_s = acc.t2 - acc.t1 * ideal;
    if (!available(acc.lost_s) || !(r > 0)) continue;
    // The summary's time is the MPI window where one was measured: MPI's start-up and teardown are outside it.
    const bool windowed = a.pop.basis == "mpi" && a.pop.window_measured && b.pop.basis == "mpi" && b.pop.window_measured;
    double sampled_net = 0, variance = 0, held1 = 0, held2 = 0;
    for (const FunctionSeries& f : prof.functions) {
      if (f.category == "rtrace") continue;  // the tracer's own time is never the app's loss
      if (windowed && starts_or_ends_mpi(f.short_name)) continue;
      if (static_cast<std::size_t>(std::max(acc.from, acc.to)) >= f.at.size()) continue;
      const FunctionAtPoint& p1 = f.at[static_cast<std::size_t>(acc.from)];
      const FunctionAtPoint& p2 = f.at[static_cast<std::size_t>(acc.to)];
      const double ft1 = available(p1.time_s) ? p1.time_s : 0;
      const double ft2 = available(p2.time_s) ? p2.time_s : 0;
      if (ft1 <= 0 && ft2 <= 0) continue;
      held1 += ft1;
      held2 += ft2;
      FunctionAccount fa;
      fa.name = f.short_name;
      fa.t1 = ft1;
      fa.t2 = ft2;
      fa.lost_s = ft2 - ft1 * ideal;
      // Sample counts are Poisson: var(t) = t x period.
      const double var = period * (ft2 + ft1 * ideal * ideal);
      fa.uncertainty_s = std::sqrt(var);
      variance += var;
      sampled_net += fa.lost_s;
      const CountedStep cs = ft1 > 0 && ft2 > 0 ? counted_step(res, f, sum.fixed, acc.from, acc.to) : CountedStep{};
      fa.basis = !cs.step ? "samples"
                 : cs.step->d.intensity == "instructions" ? "roofline (instructions)" : "roofline (FLOPs)";
      const std::string by_shape =
          shape_cause(f.category, scaling_shape(ft1, ft2, acc.c1, acc.c2, f.category, sum.weak, p2.threads));
      if (fa.lost_s > 0) {
        const double ell = ft1 > 0 ? std::log(ft2 / (ft1 * ideal)) : kNaN;
        if (available(ell) && ell > 0) {
          const double weight = fa.lost_s / ell;  // the log-mean weight: the parts add up to lost_s exactly
          for (const Part& p : split_loss(ell, r, sum.weak, cs, by_shape, p1.imbalance, p2.imbalance))
            fa.causes.push_back(CauseSeconds{p.cause, p.where, p.log_share * weight, kNaN, {fa.name}});
        } else {
          fa.causes.push_back(CauseSeconds{by_shape, "", fa.lost_s, kNaN, {fa.name}});
        }
        for (const auto& c : fa.causes) add_cause(acc.causes, c.cause, c.where, c.seconds);
      } else {
        acc.gained_s += fa.lost_s;
      }
      acc.functions.push_back(std::move(fa));
    }
    // Both points sampled: a point without samples would make every function's time a loss or a gain.
    if (acc.functions.empty() || !(held1 > 0) || !(held2 > 0)) continue;
    // Wall time the critical thread's samples do not hold: off-CPU waits, start-up, other processes.
    const double unsampled = acc.lost_s - sampled_net;
    // (Below a sampling period, or 1% of the loss, it is rounding.)
    // On a busy machine (the launcher's measure) that time is the other processes'.
    const bool busy = (a.pop.load_measured && a.pop.taken_share >= th.load_share) ||
                      (b.pop.load_measured && b.pop.taken_share >= th.load_share);
    acc.unsampled_s = unsampled;
    if (unsampled > std::max(period, 0.01 * std::fabs(acc.lost_s)))
      add_cause(acc.causes, busy ? "machine-load" : "off-cpu", "", unsampled);
    else if (unsampled < 0)
      acc.gained_s += unsampled;  // less time off the CPU than at the first point: a gain (HPCC at 1 -> 2 ranks)
    acc.uncertainty_s = 2 * std::sqrt(variance);
    // Shares of the seconds lost (what the functions that lost time lost, and
    // the unsampled time): they add up to 100%; the gains are said apart.
    for (const auto& c : acc.causes) acc.gross_lost_s += std::max(0.0, c.seconds);
    for (auto& c : acc.causes) c.share = acc.gross_lost_s > 0 ? c.seconds / acc.gross_lost_s : kNaN;
    std::stable_sort(acc.causes.begin(), acc.causes.end(),
                     [](const CauseSeconds& x, const CauseSeconds& y) { return x.seconds > y.seconds; });
    std::stable_sort(acc.functions.begin(), acc.functions.end(),
                     [](const FunctionAccount& x, const FunctionAccount& y) { return x.lost_s > y.lost_s; });
    // Each cause's functions, most of its seconds first.
    for (auto& c : acc.causes) {
      std::vector<std::pair<double, std::string>> in;
      for (const auto& fa : acc.functions)
        for (const auto& fc : fa.causes)
          if (fc.cause == c.cause && fc.where == c.where) in.emplace_back(fc.seconds, fa.name);
      std::stable_sort(in.begin(), in.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
      c.functions.clear();
      for (const auto& [seconds, name] : in) c.functions.push_back(name);
    }
    // The headline: the cause with the most seconds, if it explains enough of a real loss.
    if (!(acc.lost_s > th.ideal_tolerance * acc.t2)) {
      acc.why_no_headline = "within " + fmt(100 * th.ideal_tolerance, 3) + "% of ideal, no loss to account for";
    } else if (acc.causes.empty() || !(acc.causes.front().seconds > 0)) {
      acc.why_no_headline = "no function loses time";
    } else if (acc.causes.front().share < th.headline_share) {
      acc.why_no_headline = "no cause explains " + fmt(100 * th.headline_share, 3) + "% of the loss";
    } else if (acc.causes.front().seconds <= acc.uncertainty_s) {
      acc.why_no_headline = "the largest cause (" + acc.causes.front().label() + ", " +
                            seconds_text(acc.causes.front().seconds) + ") is within the sampling uncertainty";
    } else {
      acc.headline_index = 0;
      acc.headline = acc.causes.front().label();
    }
    acc.sentence = account_sentence(acc, res.axis);
    out.push_back(std::move(acc));
  }
  return out;
}

void apply_account(StepDiagnosis& d, const StepAccount& acc) {
  // Only steps the roofline judged as losses: ideal, superlinear, work-changed and code-differs stand.
  if (d.diagnosis != "cache-capacity" && d.diagnosis != "bandwidth-contention" && d.diagnosis != "compute-bound" &&
      d.diagnosis != "other")
    return;
  if (acc.headline_index < 0) {
    if (d.diagnosis == "other") return;
    // The application's counted roofline names a cause the account does not carry.
    d.explanation += "; the account of the lost time names no headline (" + acc.why_no_headline + ")";
    d.diagnosis = "other";
    d.cause = "";
    d.level = d.cache = "";
    return;
  }
  const CauseSeconds& c = acc.causes[static_cast<std::size_t>(acc.headline_index)];
  const std::string before = d.diagnosis == "other" ? d.cause : d.diagnosis;
  if (c.cause == "cache-capacity" || c.cause == "bandwidth-contention" || c.cause == "compute-bound") {
    if (d.diagnosis != c.cause || (c.cause == "cache-capacity" && d.cache != c.where)) {
      d.diagnosis = c.cause;
      d.cause = "";
      if (c.cause == "cache-capacity") {
        d.cache = c.where;
        d.level = "";  // the functions' levels: the account's sentence names them
      } else {
        d.level = c.where;
      }
    }
  } else {
    d.diagnosis = "other";
    d.cause = c.cause;
    d.level = d.cache = "";
  }
  const std::string after = d.diagnosis == "other" ? d.cause : d.diagnosis;
  std::ostringstream why;
  why << c.label() << " explains " << fmt(c.seconds, 3) << " s of the " << fmt(acc.gross_lost_s, 3) << " s lost ("
      << fmt(100 * c.share, 3) << "%";
  if (!c.functions.empty()) why << ", in `" << c.functions.front() << "`";
  why << ")";
  if (!before.empty() && before != after) why << "; the whole program's counts alone read " << before;
  d.explanation = why.str() + "; " + d.explanation;
}

namespace {
// A POP cause that names the same loss more precisely than the account's:
// all the work on one thread (threads-unused) is a serial fraction; threads
// blocked on a lock or spinning are the runtime's waits; time off the CPU is
// threads blocked (a lock, a blocking MPI wait) or descheduled (more threads
// than cores, other processes), which the context switches and the
// launcher's load tell and the samples cannot.
bool refines(const std::string& pop_cause, const std::string& account_cause) {
  if (account_cause == "serial-fraction") return pop_cause == "threads-unused";
  if (account_cause == "runtime-wait") return pop_cause == "lock-wait" || pop_cause == "spin-wait";
  if (account_cause == "off-cpu")
    return pop_cause == "lock-wait" || pop_cause == "oversubscription" || pop_cause == "machine-load" ||
           pop_cause == "mpi";
  return false;
}
}  // namespace

void apply_account(AppStep& st, const StepAccount& acc) {
  if (acc.headline_index < 0 || (st.diagnosis != "loss" && st.diagnosis != "offsetting")) return;
  const CauseSeconds& c = acc.causes[static_cast<std::size_t>(acc.headline_index)];
  // A POP cause that names the headline's seconds more precisely leads instead (the evidence is its).
  for (std::size_t i = 0; i < st.causes.size(); ++i)
    if (refines(st.causes[i].cause, c.cause)) {
      if (i > 0) {
        std::rotate(st.causes.begin(), st.causes.begin() + static_cast<std::ptrdiff_t>(i),
                    st.causes.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        st.cause = st.causes.front().cause;
      }
      return;
    }
  std::ostringstream evidence;
  evidence << "explains " << fmt(c.seconds, 3) << " s of the " << fmt(acc.gross_lost_s, 3) << " s lost ("
           << fmt(100 * c.share, 3) << "%";
  if (!c.functions.empty()) evidence << ", in `" << c.functions.front() << "`";
  evidence << ")";
  // Its factor: the step's time over the time without this cause's seconds.
  const double factor = acc.t2 > c.seconds ? acc.t2 / (acc.t2 - c.seconds) : kNaN;
  std::vector<StepCause> causes{StepCause{c.cause, factor, evidence.str()}};
  for (auto& old : st.causes)
    if (old.cause != c.cause) causes.push_back(std::move(old));
  const bool changed = st.cause != c.cause;
  st.causes = std::move(causes);
  st.cause = c.cause;
  if (changed) st.explanation = c.label() + " " + evidence.str() + " (the loss account); POP factors: " + st.explanation;
}

}  // namespace rtrace::analysis
