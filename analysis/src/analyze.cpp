#include "rtrace/analysis/analyze.hpp"

#include "rtrace/analysis/report.hpp"

#include <rtrace/store/axis_names.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace rtrace::analysis {
namespace {

std::string choose_axis(const RunData& run, const std::string& requested, std::vector<std::string>& warnings) {
  auto varies = [&](const std::string& axis) {
    std::set<double> values;
    for (const auto& c : run.configs)
      if (available(c.concurrency(axis))) values.insert(c.concurrency(axis));
    return values.size() > 1;
  };
  if (!requested.empty()) {
    if (!is_concurrency_axis(requested)) {
      // The launcher's did-you-mean ("rank" -> ranks), limited to the axes analyze can follow.
      std::string hint;
      for (const auto& n : store::likely_axis_names(requested))
        if (is_concurrency_axis(n)) hint += (hint.empty() ? "`" : " or `") + n + "`";
      throw InputError("--axis " + requested + ": expected one of threads, ranks, nodes, sms" +
                       (hint.empty() ? std::string() : "; did you mean " + hint + "?"));
    }
    if (!varies(requested)) warnings.push_back("axis " + requested + " does not vary in this run: no trajectories");
    return requested;
  }
  std::vector<std::string> candidates;
  for (const auto& a : run.axes)
    if (is_concurrency_axis(a)) candidates.push_back(a);
  for (const char* a : kConcurrencyAxes) candidates.emplace_back(a);
  for (const auto& a : candidates)
    if (varies(a)) return a;
  return "";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out.empty() ? "the concurrency" : out;
}

// Numeric value of a label token ("1000", "1e3"); NaN when not a number.
double token_number(const std::string& v) {
  if (v.empty()) return kNaN;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  return end && *end == '\0' ? x : kNaN;
}

// The non-concurrency axes whose numeric value strictly grows with the
// concurrency along `axis` over all configurations (a zipped weak-scaling sweep).
std::vector<std::string> axes_growing_with(const RunData& run, const std::string& axis) {
  std::vector<int> idx;
  for (int i = 0; i < static_cast<int>(run.configs.size()); ++i)
    if (available(run.configs[i].concurrency(axis))) idx.push_back(i);
  std::sort(idx.begin(), idx.end(), [&](int a, int b) {
    return run.configs[a].concurrency(axis) < run.configs[b].concurrency(axis);
  });
  std::vector<std::string> out;
  if (idx.size() < 2) return out;
  std::set<std::string> names;
  for (const auto& [name, value] : run.configs[idx.front()].tokens)
    if (!is_concurrency_axis(name)) names.insert(name);
  for (const auto& name : names) {
    bool grows = true;
    double prev = kNaN, prev_c = kNaN;
    for (int i : idx) {
      double v = kNaN;
      for (const auto& [n, value] : run.configs[i].tokens)
        if (n == name) v = token_number(value);
      double c = run.configs[i].concurrency(axis);
      if (!available(v)) { grows = false; break; }
      if (available(prev) && (c > prev_c ? !(v > prev) : v != prev)) { grows = false; break; }
      prev = v;
      prev_c = c;
    }
    if (grows) out.push_back(name);
  }
  return out;
}

std::string key_without(const Configuration& c, const std::string& axis, const std::vector<std::string>& also) {
  std::string out;
  for (const auto& [name, value] : c.tokens) {
    if (name == axis || std::find(also.begin(), also.end(), name) != also.end()) continue;
    if (!out.empty()) out += ' ';
    out += name + "=" + value;
  }
  return out;
}

// rtrace's own work above this share of a point's time is said first, with
// the way to lower it (issue 30: a tracer that doubled HPCC's time and called
// its cost the app's loss).
constexpr double kTracerShareSaid = 0.02;

std::string pct_of(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

// "rtrace's own work took 6.2% of the ranks' time at 'ranks=2' (...)", or ""
// when no point's share exceeds kTracerShareSaid.
std::string tracer_cost_warning(const AnalysisResult& res) {
  const Configuration* worst = nullptr;
  for (const auto& c : res.run.configs) {
    const PopPoint& p = c.pop.pop;
    if (available(p.tracer_share) && p.tracer_share > kTracerShareSaid &&
        (!worst || p.tracer_share > worst->pop.pop.tracer_share))
      worst = &c;
  }
  if (!worst) return "";
  const PopPoint& p = worst->pop.pop;
  const double wall = p.tracer_s / p.tracer_share;  // the ranks' wall time
  struct Part { const char* what; double s; };
  const Part parts[] = {{"the sampler's signal handler", p.tracer_sampler_s},
                        {"its MPI wrappers' bookkeeping", p.tracer_wrapper_s},
                        {"its own code (region API, counters)", p.tracer_code_s},
                        {"building the records at the end (symbolising the samples)", p.tracer_exit_s}};
  std::string list;
  const Part* largest = nullptr;
  for (const Part& part : parts) {
    if (!available(part.s) || part.s <= 0) continue;
    if (!list.empty()) list += ", ";
    list += std::string(part.what) + " " + pct_of(part.s / wall);
    if (!largest || part.s > largest->s) largest = &part;
  }
  std::string way_out;
  if (largest == &parts[0] || largest == &parts[3])
    way_out = "rerun with a lower sampling rate (`--sample 50`) or none (`--sample 0`: no sampled call paths)";
  else if (largest == &parts[1])
    way_out = "the wrappers time each MPI call that is neither a poll nor called more than 50000 times a second; "
              "`--tracer none` runs the app untraced (no MPI or sampled data)";
  else
    way_out = "annotate fewer, longer regions";
  return "rtrace's own work took " + pct_of(p.tracer_share) + " of the ranks' time at '" + worst->label + "' (" +
         list + "): it is taken out of the app's window and useful time, never counted as the app's loss; to lower it, " +
         way_out;
}

// What the MPI and repeat data cannot tell, said once per run.
void add_usage_warnings(AnalysisResult& res) {
  if (std::string w = tracer_cost_warning(res); !w.empty()) res.warnings.insert(res.warnings.begin(), std::move(w));
  bool old_file = false, single = true, any_steps = res.run.configs.size() > 1;
  for (const auto& c : res.run.configs) {
    const PopPoint& p = c.pop.pop;
    res.mpi |= p.mpi_initialised;
    if (p.mpi_initialised && !p.window_measured) old_file = true;
    if (c.repeats() > 1) single = false;
    if (p.mpi_initialised && c.pop.calls.empty()) {
        res.warnings.push_back("configuration '" + c.label +
                               "': MPI was initialised but no MPI call was recorded: MPI calls not intercepted "
                               "(e.g. Fortran bindings that call PMPI directly); MPI share unavailable");
    }
  }
  // A busy machine: the launcher's measurement from outside the app where the
  // file has it (1.7), else a single-threaded rank far below one CPU.
  double busiest = kNaN, starved = kNaN;
  std::string busiest_label, starved_label;
  bool measured = false;
  for (const auto& c : res.run.configs) {
    const PopPoint& p = c.pop.pop;
    if (p.load_measured) {
      measured = true;
      if (available(p.taken_share) && p.taken_share >= res.thresholds.load_share &&
          (!available(busiest) || p.taken_share > busiest)) {
        busiest = p.taken_share;
        busiest_label = c.label;
      }
      continue;
    }
    // Only single-threaded ranks tell load apart from an app that leaves its threads idle.
    double per_worker = p.threads == 1 ? p.cpu_per_wall : kNaN;
    if (available(per_worker) && per_worker < 0.5 && (!available(starved) || per_worker < starved)) {
      starved = per_worker;
      starved_label = c.label;
    }
  }
  char buf[32];
  if (available(busiest)) {
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * busiest);
    res.warnings.push_back("the machine was busy with other work: at '" + busiest_label + "' other processes took " +
                           buf + " of the point's cores (measured by the launcher from outside the app), so the "
                           "factors measured on the wall clock show the machine's load besides the application's");
  } else if (available(starved) && !measured) {
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * starved);
    res.warnings.push_back("the machine may have been busy with other work: at '" + starved_label +
                           "' a single-threaded rank got " + buf + " of a CPU (a file before 1.7 has no measurement "
                           "of other processes), so the CPU-time causes (threads-unused, spin-wait, serial-fraction) "
                           "may show the machine's load rather than the application");
  }
  if (old_file)
    res.warnings.push_back("no MPI window in this run file (recorded before the tracer timed MPI_Init and "
                           "MPI_Finalize): the whole wall time is the window, so startup counts as useful time");
  if (single && any_steps)
    res.hints.push_back("one sample per configuration: a step cannot be told from run-to-run noise; rerun with "
                        "--repeat 3 to measure the spread");
}

const char* const kCountsHint =
    "for a counted roofline without annotations (FLOPs and bytes per memory level, per function), rerun with "
    "`rtrace run --counts sim` (one Valgrind counting pass per configuration, much slower than the timed run) or "
    "on a node whose PMU gives the FLOP and cache events (`--counts pmu`)";

// "cache-capacity at L3 (DRAM AI falls)", "other (cause: imbalance)".
std::string step_words(const StepDiagnosis& d) {
  if (d.diagnosis == "other" && !d.cause.empty()) return "other (cause: " + d.cause + ")";
  return describe_step(d);
}

std::string percent_signed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f%%", 100 * v);
  return buf;
}

// Where counts are unavailable or partial, and where declared and counted
// values disagree by more than 10%: warnings and counts_notes, once per run.
void add_counts_notes(AnalysisResult& res) {
  std::map<std::string, std::vector<std::string>> unavailable;  // "source: note" -> labels
  std::map<std::string, std::vector<std::string>> partial;
  for (const auto& c : res.run.configs) {
    const PointCounts& pc = c.counts;
    if (!pc.present) continue;
    const std::string why = (pc.source.empty() ? std::string("counts") : pc.source) +
                            (pc.note.empty() ? "" : ": " + pc.note);
    if (!pc.usable) unavailable[pc.status + "\x1f" + why].push_back(c.label);
    else if (pc.status == "partial") partial[why].push_back(c.label);
  }
  auto labels = [](const std::vector<std::string>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size() && i < 4; ++i) out += (i ? ", " : "") + (v[i].empty() ? "-" : v[i]);
    if (v.size() > 4) out += ", ... " + std::to_string(v.size() - 4) + " more";
    return out;
  };
  for (const auto& [key, l] : unavailable) {
    const auto sep = key.find('\x1f');
    res.warnings.push_back("counts " + key.substr(0, sep) + " at " + labels(l) + " (" + key.substr(sep + 1) +
                           "): no counted roofline there");
  }
  for (const auto& [why, l] : partial)
    res.warnings.push_back("counts partial at " + labels(l) + " (" + why + "): what the source cannot see is n/a");
  // Caches simulated from a virtual machine's topology: its last level may
  // be the host's whole cache, not the VM's share of it.
  for (const auto& c : res.run.configs) {
    const PointCounts& pc = c.counts;
    if (!pc.usable || pc.cache_geometry != "hwloc-vm" || pc.levels.empty()) continue;
    const store::CountLevelRow& last = pc.levels.back();
    std::ostringstream os;
    os << "the counted caches are this virtual machine's as it reports them (hwloc): its "
       << store::get_str(last.name) << " of " << fmt(static_cast<double>(last.full_size_bytes) / (1 << 20), 3)
       << " MiB may be the host's, not the VM's share of it, and bytes beyond the L1 depend on it; give the real "
          "caches to the counting pass with $RTRACE_COUNTS_GEOMETRY=\"L1=SIZE,WAYS,LINE;L2=...;L3=...\" "
          "(`rtrace counts --geometry`)";
    res.warnings.push_back(os.str());
    break;
  }
  // The counted window and the counting run's dispatch, once per wording.
  std::map<std::string, std::vector<std::string>> window, steered, not_steered;
  for (const auto& c : res.run.configs) {
    const PointCounts& pc = c.counts;
    if (!pc.usable) continue;
    if (!pc.window.empty()) window[pc.window + (pc.user_window ? "\x1f" : "")].push_back(c.label);
    if (!pc.steered.empty()) steered[pc.steered].push_back(c.label);
    if (!pc.not_steered.empty()) not_steered[pc.not_steered].push_back(c.label);
  }
  for (const auto& [key, l] : window) {
    const bool user = key.back() == '\x1f';
    const std::string w = user ? key.substr(0, key.size() - 1) : key;
    res.counts_notes.push_back(
        "counted window: " + w + " at " + labels(l) +
        (user ? "; outside it only instructions and FLOPs were counted, and the timed run did not time it: counted "
                "intensities, no rates"
              : w == "MPI_Init..MPI_Finalize" ? "; the application's counts are those of the window the summary times"
                                              : ""));
  }
  for (const auto& [what, l] : steered)
    res.counts_notes.push_back("counting run steered to the timed run's dispatch at " + labels(l) + ": " + what);
  for (const auto& [what, l] : not_steered)
    res.counts_notes.push_back("counted code may differ from the timed code at " + labels(l) + ": " + what);
  // Disagreements: one line per (kernel, quantity) with the range over configurations.
  const std::size_t notes_before = res.counts_notes.size();
  struct Range { double lo = 1e300, hi = -1e300; std::vector<std::string> at; std::string function, source; };
  std::map<std::pair<std::string, std::string>, Range> by;
  std::vector<std::pair<std::string, std::string>> order;
  for (const auto& c : res.run.configs)
    for (const auto& chk : c.counts_checks) {
      auto key = std::make_pair(chk.kernel, chk.quantity);
      if (!by.count(key)) order.push_back(key);
      Range& r = by[key];
      r.lo = std::min(r.lo, chk.difference);
      r.hi = std::max(r.hi, chk.difference);
      r.at.push_back(c.label);
      r.function = chk.function;
      r.source = chk.source;
    }
  for (const auto& key : order) {
    const Range& r = by[key];
    std::ostringstream os;
    if (key.first == "application")
      os << "declared regions (sum) and the counted application disagree: " << key.second << " ";
    else
      os << "region " << key.first << " and its counted function" << (r.function.find(", ") != std::string::npos ? "s " : " ")
         << r.function << " disagree: " << key.second << " ";
    os << "declared " << (r.lo == r.hi ? percent_signed(r.lo) : percent_signed(r.lo) + ".." + percent_signed(r.hi))
       << " against counted (" << r.source << ") at " << labels(r.at) << "; the declaration is used";
    if (key.first == "application" && r.hi < 0) os << " (code outside the regions, or a declaration that undercounts)";
    res.counts_notes.push_back(os.str());
  }
  res.declared_disagreements = static_cast<int>(res.counts_notes.size() - notes_before);
}

// The counted work in the report's model (counted_work.hpp): per
// configuration the runtimes' share and the application's FLOP mix; per
// counted kernel what it has instead of a rate and its FLOP mix; and the
// sentences, each once with the configurations it holds at.
void add_counted_work(AnalysisResult& res) {
  const auto& configs = res.run.configs;
  res.vector_bits = res.run.vector_bits;
  struct Note {
    std::string key, sentence;
    std::vector<std::string> at;
    const CodeMismatch* mismatch = nullptr;  // its shares' range over the configurations
    double timed_lo = kNaN, timed_hi = kNaN, counted_lo = kNaN, counted_hi = kNaN;
  };
  std::vector<Note> notes;  // in first-seen order
  auto note = [&](const std::string& key, const std::string& sentence, const Configuration& c,
                  const CodeMismatch* m = nullptr) {
    const std::string at = c.label.empty() ? std::string("-") : c.label;
    Note* n = nullptr;
    for (auto& x : notes)
      if (x.key == key) n = &x;
    if (!n) {
      notes.push_back({key, sentence, {}, m});
      n = &notes.back();
    }
    n->at.push_back(at);
    if (m) {
      auto widen = [](double v, double& lo, double& hi) {
        if (!available(v)) return;
        lo = available(lo) ? std::min(lo, v) : v;
        hi = available(hi) ? std::max(hi, v) : v;
      };
      widen(m->timed_share, n->timed_lo, n->timed_hi);
      widen(m->counted_share, n->counted_lo, n->counted_hi);
    }
  };
  auto share = [](double part, double rest) {
    if (!available(part)) return kNaN;
    const double whole = part + (available(rest) ? rest : 0);
    return whole > 0 ? part / whole : kNaN;
  };
  for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci) {
    const Configuration& c = configs[ci];
    if (!c.counts.usable) continue;
    const KernelAtPoint* app = c.find(kApplicationKind, kApplicationKind);
    if (!app) continue;
    const bool simulated = c.counts.source.rfind("sim:", 0) == 0;
    const RuntimeCounts& rt = c.counts.runtime;
    CountedWork w;
    w.config = ci;
    w.runtime_instruction_share = share(rt.instructions, app->counted_instructions);
    w.runtime_l1_share = share(rt.counts.bytes[0], app->counts.bytes[0]);
    w.runtime_flop_share = share(rt.counts.total_flops(), app->counts.total_flops());
    w.runtime_sentence = runtime_sentence(rt, app->counts, app->counted_instructions);
    w.mix_sentence = flop_mix_sentence(app->mix, res.vector_bits, simulated);
    if (!w.mix_sentence.empty()) note("mix\x1f" + w.mix_sentence, "the application's FLOPs: " + w.mix_sentence, c);
    if (!w.runtime_sentence.empty()) note("runtime\x1f" + w.runtime_sentence, w.runtime_sentence, c);
    for (const auto& m : c.code_mismatches) note("code\x1f" + m.timed + "\x1f" + m.counted, m.sentence, c, &m);
    res.counted_work.push_back(std::move(w));
  }
  for (const auto& n : notes) {
    std::string at;
    for (std::size_t i = 0; i < n.at.size(); ++i) at += (i ? ", " : "") + n.at[i];
    const std::string sentence =
        n.mismatch ? code_mismatch_sentence(*n.mismatch, n.timed_lo, n.timed_hi, n.counted_lo, n.counted_hi)
                   : n.sentence;
    res.counted_work_notes.push_back("at " + at + ": " + sentence);
  }
  // Per counted kernel: the note instead of a rate, and its FLOP mix.
  for (auto& s : res.kernels) {
    if (!is_counted_kind(s.kind)) continue;
    bool timed = false;
    double sampled = 0;
    for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci) {
      if (s.at[ci] < 0) continue;
      const auto& k = configs[ci].kernels[static_cast<std::size_t>(s.at[ci])];
      timed |= available(k.time_s);
      sampled += configs[ci].sampled_work;
      if (s.counts_note.empty() && !k.code_note.empty())
        s.counts_note = "at " + (configs[ci].label.empty() ? std::string("-") : configs[ci].label) + ": " +
                        k.code_note + "; no rate and no verdict there";
      // The counting tool's AVX-512 caveat is said once, with the application's mix.
      const std::string mix = flop_mix_sentence(k.mix, res.vector_bits, false);
      if (!mix.empty()) s.mix_sentence = mix;
    }
    if (s.kind == kFunctionKind && !timed && s.counts_note.empty())
      s.counts_note = sampled > 0 ? "no sample of it in the timed runs: AI only"
                                  : "no sampled time (run with --sample): AI only";
  }
}

// Per group: the counted roofline of the application and of its top
// functions, where a step loses: the first such step in words, with the source.
std::vector<std::string> counted_sentences(const AnalysisResult& res, const std::string& key) {
  std::vector<std::string> out;
  int functions = 0;
  for (const auto& t : res.trajectories) {
    const auto& s = res.kernels[static_cast<std::size_t>(t.kernel)];
    if (t.fixed != key || !is_counted_kind(s.kind) || !s.counts_available) continue;
    if (s.kind == kFunctionKind && ++functions > 3) continue;
    for (const auto& st : t.steps) {
      if (st.d.diagnosis == "ideal" || st.d.diagnosis == "superlinear") continue;
      const auto& k = res.run.configs[static_cast<std::size_t>(st.to)].kernels[static_cast<std::size_t>(s.at[st.to])];
      std::ostringstream os;
      os << "Counted roofline (" << k.counts_source << "): "
         << (s.kind == kApplicationKind ? std::string("the application") : "function " + s.name);
      if (st.d.diagnosis == "work-changed" || st.d.diagnosis == "code-differs")
        os << " from " << res.axis << "=" << fmt(st.c1, 6) << " to " << fmt(st.c2, 6) << ": " << st.d.explanation
           << ".";
      else
        os << " stops scaling past " << res.axis << "=" << fmt(st.c1, 6) << ": " << step_words(st.d) << " - "
           << st.d.explanation << ".";
      // A host function's counts cover the code inlined into it; the samples split its time among them.
      if (s.kind == kFunctionKind && res.profile.available) {
        std::string inlined;
        int n = 0;
        const std::string marker = std::string(kInlinedIn) + s.name + "]";
        for (const auto& f : res.profile.functions)
          if (f.short_name.size() > marker.size() &&
              f.short_name.compare(f.short_name.size() - marker.size(), marker.size(), marker) == 0 && n++ < 3)
            inlined += (inlined.empty() ? "`" : ", `") + f.short_name.substr(0, f.short_name.size() - marker.size()) + "`";
        if (!inlined.empty())
          os << " Its counts cover the code inlined into it (" << inlined
             << "), which the samples time apart: the loss account above splits its time among them.";
      }
      out.push_back(os.str());
      break;
    }
  }
  return out;
}

}  // namespace

// Weak scaling found from the counts (issue 39): the counted application's
// work (FLOPs, or instructions for code without FLOPs) grows in proportion to
// the concurrency at every step of every group, within th.work_change. Returns
// the evidence in words ("" when not found: no counts, or the work holds).
static std::string weak_from_counts(const std::vector<Configuration>& configs, const std::string& axis, const Thresholds& th) {
  std::map<std::string, std::vector<std::pair<double, double>>> groups;  // fixed key -> (concurrency, work)
  std::string unit;
  for (const auto& c : configs) {
    const double conc = c.concurrency(axis);
    if (!available(conc) || conc <= 0) continue;
    for (const auto& k : c.kernels) {
      if (k.kind != kApplicationKind) continue;
      const double flops = k.counts.total_flops();
      const bool by_flops = available(flops) && flops > 0 && !flop_less(k);
      const double work = by_flops ? flops : k.counted_instructions;
      if (!available(work) || work <= 0) continue;
      const std::string u = by_flops ? "FLOPs" : "instructions";
      if (!unit.empty() && unit != u) return "";  // one measure of work for the whole run
      unit = u;
      groups[fixed_key(c, axis)].push_back({conc, work});
    }
  }
  int steps = 0;
  std::string words;
  for (auto& [key, pts] : groups) {
    std::sort(pts.begin(), pts.end());
    for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
      const double r = pts[i + 1].first / pts[i].first, w = pts[i + 1].second / pts[i].second;
      if (r < 1 + 2 * th.work_change) continue;  // too close to tell growing work from constant
      if (std::fabs(w / r - 1) > th.work_change) return "";
      if (words.empty())
        words = "the counted " + unit + " grow with " + axis + " (" + fmt(pts[i].second) + " -> " +
                fmt(pts[i + 1].second) + " on " + fmt(r) + "x " + axis + ")";
      ++steps;
    }
  }
  return steps > 0 ? words : "";
}

std::string fixed_key(const Configuration& c, const std::string& axis) {
  std::istringstream in(c.label);
  std::string token, out;
  const std::string prefix = axis + "=";
  bool any = false;
  while (in >> token) {
    any = true;
    if (!axis.empty() && token.compare(0, prefix.size(), prefix) == 0) continue;
    if (!out.empty()) out += ' ';
    out += token;
  }
  if (!any) {  // no label: describe the other concurrency values
    for (const char* a : kConcurrencyAxes) {
      if (axis == a || !available(c.concurrency(a))) continue;
      if (!out.empty()) out += ' ';
      out += std::string(a) + "=" + fmt(c.concurrency(a), 6);
    }
  }
  return out;
}

std::vector<CeilingUsed> ceilings_used(const std::vector<Configuration>& configs,
                                       const std::vector<KernelSeries>& kernels) {
  std::vector<CeilingUsed> out;
  for (int ci = 0; ci < static_cast<int>(configs.size()); ++ci)
    for (const Ceiling& c : configs[ci].ceilings.all()) {
      MemLevel level{};
      const bool is_level = level_from_ceiling_name(c.name, level);
      const bool used = std::any_of(kernels.begin(), kernels.end(), [&](const KernelSeries& s) {
        if (ci >= static_cast<int>(s.eval.size())) return false;
        const RooflineEval& e = s.eval[ci];
        return is_level ? available(e.level_bound[static_cast<int>(level)]) : e.peak_name == c.name;
      });
      if (used) out.push_back(CeilingUsed{ci, c});
    }
  return out;
}

AnalysisResult analyze(RunData run, const AnalyzeOptions& options) {
  options.thresholds.validate();
  AnalysisResult res;
  res.thresholds = options.thresholds;
  res.warnings = run.warnings;
  res.axis = choose_axis(run, options.axis, res.warnings);
  res.run = std::move(run);
  const auto& configs = res.run.configs;
  const int nconf = static_cast<int>(configs.size());
  add_usage_warnings(res);

  // Kernel series.
  std::map<std::pair<std::string, std::string>, int> index;
  for (int ci = 0; ci < nconf; ++ci) {
    const auto& c = configs[ci];
    for (int ki = 0; ki < static_cast<int>(c.kernels.size()); ++ki) {
      const auto& k = c.kernels[ki];
      auto [it, fresh] = index.emplace(std::make_pair(k.kind, k.name), static_cast<int>(res.kernels.size()));
      if (fresh) {
        KernelSeries s;
        s.name = k.name;
        s.kind = k.kind;
        s.at.assign(nconf, -1);
        s.eval.assign(nconf, RooflineEval{});
        res.kernels.push_back(std::move(s));
      }
      KernelSeries& s = res.kernels[it->second];
      s.at[ci] = ki;
      s.eval[ci] = evaluate(k, c.ceilings);
      // Counted code without FLOPs has counts too: bytes per instruction (issue 39).
      s.counts_available |= s.eval[ci].counts_available() || (s.eval[ci].flop_less && k.counts.any_bytes());
      if (available(k.time_s)) s.total_time_s += k.time_s;
    }
  }
  res.ceilings_used = ceilings_used(configs, res.kernels);
  // Time shares: regions and kernels of their summed time; the application
  // is the whole; a counted function's is its sampled time over the application's.
  double all_time = 0, app_time = 0;
  for (const auto& s : res.kernels) {
    if (s.kind == kApplicationKind) app_time = s.total_time_s;
    else if (!is_counted_kind(s.kind)) all_time += s.total_time_s;
  }
  double function_shares = 0;
  for (auto& s : res.kernels) {
    if (s.kind == kApplicationKind) s.time_share = 1;
    else if (s.kind == kFunctionKind) s.time_share = app_time > 0 ? std::min(1.0, s.total_time_s / app_time) : 0;
    else s.time_share = all_time > 0 ? s.total_time_s / all_time : 0;
    if (s.kind == kFunctionKind) function_shares += s.time_share;
    res.counts_available |= s.counts_available;
  }
  // Each function's time is its slowest rank's, so over ranks that differ the
  // shares can add up past the whole (LAMMPS: 101.6%, issue 39): then they
  // are shares of the functions' summed time.
  if (function_shares > 1)
    for (auto& s : res.kernels)
      if (s.kind == kFunctionKind) s.time_share /= function_shares;
  // The application first, then regions and kernels, then counted functions; by time share within each.
  auto kind_order = [](const std::string& kind) { return kind == kApplicationKind ? 0 : kind == kFunctionKind ? 2 : 1; };
  std::stable_sort(res.kernels.begin(), res.kernels.end(), [&](const KernelSeries& a, const KernelSeries& b) {
    const int ka = kind_order(a.kind), kb = kind_order(b.kind);
    return ka != kb ? ka < kb : a.time_share > b.time_share;
  });
  add_counts_notes(res);
  add_counted_work(res);
  if (res.kernels.empty()) {
    // An unannotated application: ceilings have nothing to bound, the diagnosis is the whole application's.
    res.warnings.erase(std::remove_if(res.warnings.begin(), res.warnings.end(),
                                      [](const std::string& w) {
                                        return w.find("has no ceilings: roofline bounds unavailable") !=
                                               std::string::npos;
                                      }),
                       res.warnings.end());
    res.warnings.push_back("no annotated regions, GPU kernels or counted operations: whole-application diagnosis "
                           "only (POP efficiencies, named causes, MPI calls)");
    res.hints.push_back(kCountsHint);
  } else if (!res.counts_available) {
    res.warnings.push_back(
        "no operation counts in this run (no annotations, no hardware counters, no CUPTI metrics, no counting "
        "pass): reporting time scaling, efficiency, Karp-Flatt serial fraction, MPI share and imbalance only");
    res.hints.push_back(kCountsHint);
  }

  if (res.axis.empty()) {
    if (nconf > 1) res.warnings.push_back("no concurrency axis varies across configurations: no trajectories");
    attach_profile(res);  // flame graphs need no axis
    return res;
  }

  // Strong or weak scaling. Weak: a zipped axis grows with the concurrency;
  // the groups then run along it (the growing axes leave the group key).
  std::vector<std::string> growing = axes_growing_with(res.run, res.axis);
  if (options.scaling != "auto" && options.scaling != "strong" && options.scaling != "weak")
    throw InputError("--scaling " + options.scaling + ": expected strong, weak or auto");
  bool weak = options.scaling == "weak";
  if (options.scaling == "auto" && !growing.empty()) {
    // Zipped (recorded, or every label differs in both): each concurrency has its own size.
    std::set<std::string> strong_keys;
    for (int ci = 0; ci < nconf; ++ci) strong_keys.insert(fixed_key(configs[ci], res.axis));
    weak = res.run.zip || static_cast<int>(strong_keys.size()) == nconf;
  }
  // No axis grows with the concurrency, yet the counted work does: weak scaling found, and said.
  std::string weak_found;
  if (options.scaling == "auto" && !weak) {
    weak_found = weak_from_counts(configs, res.axis, res.thresholds);
    weak = !weak_found.empty();
  }
  if (options.scaling == "weak" && growing.empty())
    res.warnings.push_back("--scaling weak: no swept axis grows with " + res.axis +
                           "; taking the work as proportional to " + res.axis);
  if (!weak) growing.clear();
  res.scaling = weak ? "weak" : "strong";

  // Groups of configurations with the other axes fixed, each ordered by concurrency.
  std::vector<std::string> group_order;
  std::map<std::string, std::vector<int>> groups;
  for (int ci = 0; ci < nconf; ++ci) {
    if (!available(configs[ci].concurrency(res.axis))) continue;
    std::string key = weak && !configs[ci].tokens.empty() ? key_without(configs[ci], res.axis, growing)
                                                          : fixed_key(configs[ci], res.axis);
    if (!groups.count(key)) group_order.push_back(key);
    groups[key].push_back(ci);
  }
  for (auto& [key, members] : groups)
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
      return configs[a].concurrency(res.axis) < configs[b].concurrency(res.axis);
    });

  const Thresholds& th = res.thresholds;
  auto evidence = [&](const Configuration& c, const KernelAtPoint& k) {
    StepEvidence ev;
    ev.imbalance = k.imbalance;
    ev.mpi_share = c.mpi_share;
    ev.mean_launch_s = k.mean_launch_s;
    ev.mean_blocks = k.mean_blocks;
    if (k.kind == "gpu-kernel") ev.sms = c.sms();
    // Other processes' share of the CPU cores (the launcher's, from outside the app): what a CPU
    // kernel's ceilings share with them; a GPU kernel's ceilings are the GPU's.
    if (c.pop.pop.load_measured && k.kind != "gpu-kernel") ev.machine_load = c.pop.pop.taken_share;
    // The counting pass's caches: each worker's room in each (a private cache
    // whole, a shared one over the rank's threads on it).
    if (is_counted_kind(k.kind) && c.counts.usable)
      for (const auto& level : c.counts.levels) {
        MemLevel l;
        if (!level_from_ceiling_name(store::get_str(level.name), l) || l == MemLevel::DRAM || level.size_bytes <= 0)
          continue;
        ev.cache_per_worker[static_cast<int>(l)] =
            static_cast<double>(level.size_bytes) / (level.threads_sharing > 1 ? level.threads_sharing : 1);
      }
    return ev;
  };

  for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
    const auto& s = res.kernels[ki];
    for (const auto& key : group_order) {
      Trajectory t;
      t.kernel = ki;
      t.fixed = key;
      for (int ci : groups[key])
        if (s.at[ci] >= 0) t.configs.push_back(ci);
      if (t.configs.size() < 2) continue;
      for (std::size_t i = 0; i + 1 < t.configs.size(); ++i) {
        int a = t.configs[i], b = t.configs[i + 1];
        const auto& ka = configs[a].kernels[s.at[a]];
        const auto& kb = configs[b].kernels[s.at[b]];
        TrajectoryStep step;
        step.from = a;
        step.to = b;
        step.c1 = configs[a].concurrency(res.axis);
        step.c2 = configs[b].concurrency(res.axis);
        // Counted kernels whose two points did not count the same work, or
        // whose counted code is not the timed code: no roofline verdict.
        if (is_counted_kind(s.kind) &&
            unmatched_step(ka, kb, s.eval[a], s.eval[b], step.c1, step.c2, weak, th, step.d)) {
          t.steps.push_back(std::move(step));
          continue;
        }
        KernelAtPoint kb_work = kb;
        if (weak) {
          // Time per unit of work (the work grows with the concurrency): the step's speedup is a time ratio.
          double r = step.c2 / step.c1;
          kb_work.time_s /= r;
          kb_work.mean_rank_time_s /= r;
        }
        step.d = classify_step(ka, kb_work, s.eval[a], s.eval[b], configs[a].ceilings, configs[b].ceilings, step.c1,
                               step.c2, evidence(configs[a], ka), evidence(configs[b], kb_work), th);
        t.steps.push_back(std::move(step));
      }
      res.trajectories.push_back(std::move(t));
    }
  }

  // Sampled call paths first: the steps' causes use the functions' shapes.
  read_profile(res);
  // Whole-application summary per group.
  for (const auto& key : group_order) {
    const auto& members = groups[key];
    AppSummary sum;
    sum.fixed = key;
    for (int ci : members) {
      AppPoint p;
      p.config = ci;
      p.concurrency = configs[ci].concurrency(res.axis);
      // MPI apps are timed on their window (the median repeat's); startup/teardown on their own line.
      p.time_s = configs[ci].timed_app_time_s();
      if (!available(p.time_s)) {  // no rank wall time: use the kernels' time
        double t = 0;
        for (const auto& k : configs[ci].kernels)
          if (!is_counted_kind(k.kind)) t += available(k.time_s) ? k.time_s : 0;
        p.time_s = t > 0 ? t : kNaN;
      }
      p.mpi_share = configs[ci].mpi_share;
      p.pop = configs[ci].pop.pop;
      p.repeats = configs[ci].repeats();
      p.spread = p.repeats > 1 ? configs[ci].pop.wall_spread : 0;
      sum.points.push_back(p);
    }
    sum.weak = weak;
    sum.grows_with = growing;
    const AppPoint& base = sum.points.front();
    for (auto& p : sum.points) {
      double r = p.concurrency / base.concurrency;
      if (weak) {
        p.efficiency = base.time_s / p.time_s;  // T(ref) / T(p)
        p.speedup = p.efficiency * r;          // scaled speedup
      } else {
        p.speedup = base.time_s / p.time_s;
        p.efficiency = p.speedup / r;
        p.karp_flatt = karp_flatt(p.speedup, r);
      }
    }
    sum.final_efficiency = sum.points.back().efficiency;
    summarise_steps(sum, res.axis, res.run.cores, th, &res.profile);
    sum.weak_found = weak_found;
    // The account of each step's lost time; the counted application's verdict is its headline.
    sum.accounts = account_steps(res, sum);
    for (const auto& acc : sum.accounts) {
      for (auto& st : sum.steps)
        if (sum.points[static_cast<std::size_t>(st.from)].config == acc.from &&
            sum.points[static_cast<std::size_t>(st.to)].config == acc.to)
          apply_account(st, acc);
      for (auto& t : res.trajectories) {
        if (t.fixed != key || res.kernels[static_cast<std::size_t>(t.kernel)].kind != kApplicationKind) continue;
        for (auto& st : t.steps)
          if (st.from == acc.from && st.to == acc.to) apply_account(st.d, acc);
      }
    }
    // Lost time per kernel at the group's last point.
    if (members.size() > 1) {
      int f = members.front(), l = members.back();
      double cf = configs[f].concurrency(res.axis), cl = configs[l].concurrency(res.axis);
      double total = 0;
      for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
        const auto& s = res.kernels[ki];
        // Counted functions overlap the regions: the sampled profile ranks their losses.
        if (s.at[f] < 0 || s.at[l] < 0 || is_counted_kind(s.kind)) continue;
        // Ideal: the first point's time over the concurrency ratio (strong), the same time (weak).
        double lost = configs[l].kernels[s.at[l]].time_s - configs[f].kernels[s.at[f]].time_s * (weak ? 1.0 : cf / cl);
        if (available(lost) && lost > 0) { sum.lost.push_back({ki, lost, 0}); total += lost; }
      }
      for (auto& x : sum.lost) x.share = total > 0 ? x.lost_s / total : 0;
      std::sort(sum.lost.begin(), sum.lost.end(), [](const LostTime& a, const LostTime& b) { return a.lost_s > b.lost_s; });
    }
    // Words.
    const auto& last = sum.points.back();
    std::ostringstream s1;
    if (sum.points.size() < 2) {
      s1 << "Only one point at " << res.axis << "=" << fmt(last.concurrency, 6) << ": no scaling to judge.";
      sum.sentences.push_back(s1.str());
    } else {
      if (weak && !weak_found.empty())
        s1 << "Weak scaling found: " << weak_found << ", so the steps are judged as weak scaling (--scaling strong "
           << "overrides). Weak-scaling efficiency at " << res.axis << "=" << fmt(last.concurrency, 6) << " is "
           << fmt(100 * last.efficiency, 3) << "% (time " << fmt(base.time_s) << " s -> " << fmt(last.time_s)
           << " s while the work grows " << fmt(last.concurrency / base.concurrency) << "x).";
      else if (weak)
        s1 << "Weak-scaling efficiency at " << res.axis << "=" << fmt(last.concurrency, 6) << " is "
           << fmt(100 * last.efficiency, 3) << "% (time " << fmt(base.time_s) << " s -> " << fmt(last.time_s)
           << " s while the work grows " << fmt(last.concurrency / base.concurrency) << "x with "
           << (growing.empty() ? std::string("the concurrency (--scaling weak)") : join_names(growing)) << ").";
      else
        s1 << "Strong-scaling efficiency at " << res.axis << "=" << fmt(last.concurrency, 6) << " is "
           << fmt(100 * last.efficiency, 3) << "% (speedup " << fmt(last.speedup) << "x on "
           << fmt(last.concurrency / base.concurrency) << "x the concurrency of " << res.axis << "="
           << fmt(base.concurrency, 6) << ").";
      sum.sentences.push_back(s1.str());
      for (auto& sentence : step_sentences(sum, res.axis, th)) sum.sentences.push_back(std::move(sentence));
      for (const auto& acc : sum.accounts)
        if (acc.lost_s > th.ideal_tolerance * acc.t2) sum.sentences.push_back(acc.sentence);
      if (!sum.lost.empty()) {
        std::ostringstream s3;
        s3 << "Most lost time: ";
        for (std::size_t i = 0; i < sum.lost.size() && i < 3; ++i) {
          if (i) s3 << ", ";
          s3 << res.kernels[sum.lost[i].kernel].name << " (" << fmt(100 * sum.lost[i].share, 3) << "%, "
             << fmt(sum.lost[i].lost_s) << " s)";
        }
        s3 << ".";
        sum.sentences.push_back(s3.str());
      }
      // The counted roofline of the application and its top functions.
      for (auto& sentence : counted_sentences(res, key)) sum.sentences.push_back(std::move(sentence));
      // Why the biggest losers stop scaling.
      for (std::size_t i = 0; i < sum.lost.size() && i < 3; ++i) {
        for (const auto& t : res.trajectories) {
          if (t.kernel != sum.lost[i].kernel || t.fixed != key) continue;
          for (const auto& st : t.steps) {
            if (st.d.diagnosis == "ideal" || st.d.diagnosis == "superlinear") continue;
            std::ostringstream s4;
            s4 << res.kernels[t.kernel].name << " stops scaling past " << res.axis << "=" << fmt(st.c1, 6) << ": "
               << step_words(st.d);
            s4 << " - " << st.d.explanation << ".";
            sum.sentences.push_back(s4.str());
            break;
          }
        }
      }
    }
    res.summaries.push_back(std::move(sum));
  }

  // Instruction roofline for GPU kernels with instruction counters.
  for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
    const auto& s = res.kernels[ki];
    if (!s.gpu()) continue;
    for (int ci = 0; ci < nconf; ++ci) {
      if (s.at[ci] < 0) continue;
      const auto& c = configs[ci];
      const auto& k = c.kernels[s.at[ci]];
      if (!k.instructions.available()) continue;
      InstructionPoint ip;
      ip.kernel = ki;
      ip.config = ci;
      double t = available(k.counts_time_s) ? k.counts_time_s : k.time_s;
      if (available(t) && t > 0) ip.warp_gips = k.instructions.warp_instructions / t / 1e9;
      // One GPU per rank; 4 warp schedulers per SM (Volta through Hopper).
      if (available(c.sms()) && available(k.instructions.sm_clock_hz))
        ip.peak_gips = c.sms() * 4 * k.instructions.sm_clock_hz / 1e9 * std::max(1, k.ranks_present);
      const auto& in = k.instructions;
      if (available(in.global_transactions) && in.global_transactions > 0) {
        ip.ii_global = in.global_ldst_instructions / in.global_transactions;
        ip.ii_l1 = in.warp_instructions / in.global_transactions;
      }
      if (available(in.shared_transactions) && in.shared_transactions > 0)
        ip.ii_shared = in.shared_ldst_instructions / in.shared_transactions;
      if (const auto* b = c.ceilings.bandwidth(MemLevel::L1)) ip.gtxn_l1 = b->value / 32;
      if (const auto* b = c.ceilings.bandwidth(MemLevel::L2)) ip.gtxn_l2 = b->value / 32;
      if (const auto* b = c.ceilings.bandwidth(MemLevel::DRAM)) ip.gtxn_dram = b->value / 32;
      res.instruction.push_back(ip);
    }
  }
  join_profile(res);  // sampled call paths: per-function losses joined into the summaries
  return res;
}

PortabilityResult portability(const std::vector<AnalysisResult>& runs) {
  PortabilityResult out;
  std::vector<int> platform_config;
  for (const auto& r : runs) {
    out.files.push_back(r.run.path);
    // The platform is the run's largest configuration along its axis (the whole machine).
    int best = static_cast<int>(r.run.configs.size()) - 1;
    if (!r.axis.empty()) {
      double bc = -1;
      for (int ci = 0; ci < static_cast<int>(r.run.configs.size()); ++ci) {
        double c = r.run.configs[ci].concurrency(r.axis);
        if (available(c) && c > bc) { bc = c; best = ci; }
      }
    }
    platform_config.push_back(best);
    out.platforms.push_back(r.run.configs[best].label);
  }
  if (runs.empty()) return out;
  std::map<std::pair<std::string, std::string>, std::vector<double>> eff;
  std::map<std::pair<std::string, std::string>, int> present;
  for (std::size_t f = 0; f < runs.size(); ++f) {
    for (const auto& s : runs[f].kernels) {
      if (s.at[platform_config[f]] < 0) continue;
      auto key = std::make_pair(s.kind, s.name);
      auto& v = eff[key];
      v.resize(runs.size(), kNaN);
      v[f] = s.eval[platform_config[f]].efficiency;
      ++present[key];
    }
  }
  for (const auto& [key, v] : eff) {
    if (present[key] != static_cast<int>(runs.size())) {
      out.missing.push_back(key.second);
      continue;
    }
    PortabilityEntry e;
    e.kind = key.first;
    e.name = key.second;
    e.efficiency = v;
    e.phi = performance_portability(v);
    if (e.phi == 0) {
      for (std::size_t f = 0; f < v.size(); ++f)
        if (!available(v[f]) || v[f] <= 0) {
          e.note = "unsupported on " + runs[f].run.path + " (no efficiency: counts or ceilings unavailable)";
          break;
        }
    }
    out.kernels.push_back(std::move(e));
  }
  std::sort(out.kernels.begin(), out.kernels.end(),
            [](const PortabilityEntry& a, const PortabilityEntry& b) { return a.phi > b.phi; });
  return out;
}

}  // namespace rtrace::analysis
