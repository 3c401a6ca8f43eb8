#include "rtrace/analysis/profile.hpp"
#include "rtrace/analysis/output_guard.hpp"
#include "mpi_names.hpp"
#include "text_format.hpp"

#include "rtrace/analysis/analyze.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

namespace rtrace::analysis {

namespace {

const char* const kOpenMpBucket = "OpenMP runtime (wait, barrier, spin)";
const char* const kMpiBucket = "MPI library (progress)";
const char* const kTracerBucket = "rtrace tracer";
const char* const kTracerFrame = "rtrace";  // the tracer's frames in a folded stack

// Folded-stack frames may not contain ';' (the separator) or newlines.
std::string folded_frame(std::string s) {
  for (char& c : s)
    if (c == ';' || c == '\n' || c == '\r') c = ',';
  return s;
}

// True when the text before position `i` ends with the word "operator": the
// "(" at `i` then opens the "()" of a call operator's name, not a parameter list.
bool after_operator_keyword(const std::string& s, std::size_t i) {
  constexpr std::size_t kLen = 8;  // "operator"
  if (i < kLen || s.compare(i - kLen, kLen, "operator") != 0) return false;
  if (i == kLen) return true;
  const unsigned char before = static_cast<unsigned char>(s[i - kLen - 1]);
  return !(std::isalnum(before) || before == '_');
}

}  // namespace

std::string short_function_name(const std::string& name) {
  if (auto at = name.find(kInlinedIn); at != std::string::npos && name.back() == ']') {
    const std::size_t from = at + std::strlen(kInlinedIn);
    return short_function_name(name.substr(0, at)) + kInlinedIn +
           short_function_name(name.substr(from, name.size() - 1 - from)) + "]";
  }
  std::string s = name;
  const std::string omp = " [clone ._omp_fn.";
  bool outlined = false;
  if (auto at = s.find(omp); at != std::string::npos) {
    s.resize(at);
    outlined = true;
  }
  if (auto at = s.find(" [clone "); at != std::string::npos) s.resize(at);
  // C and Fortran symbols are not demangled: GCC's outlined region is "f._omp_fn.N".
  if (auto at = s.rfind("._omp_fn."); !outlined && at != std::string::npos && at > 0 && at + 9 < s.size() &&
                                         s.find_first_not_of("0123456789", at + 9) == std::string::npos) {
    s.resize(at);
    outlined = true;
  }
  // Trailing qualifiers of member functions.
  for (const char* q : {" const", " volatile", " &&", " &"})
    if (s.size() > std::strlen(q) && s.compare(s.size() - std::strlen(q), std::string::npos, q) == 0)
      s.resize(s.size() - std::strlen(q));
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      else if (s[i] == '(' && --depth == 0) {
        // "operator()" with no parameter list after it (DWARF's name of an
        // inlined lambda or functor call) keeps its "()": it is the name.
        if (i > 0 && !after_operator_keyword(s, i)) s.resize(i);
        break;
      }
    }
  }
  return outlined ? s + " (OpenMP region)" : s;
}

bool is_standard_library_function(const std::string& name) {
  // The qualified name is the last top-level word of the name without its
  // parameter list: a template's return type comes first
  // ("double* std::__copy_move<...>::__copy_m<double>(...)").
  std::string s = name;
  if (auto at = s.find(" [clone "); at != std::string::npos) s.resize(at);
  int depth = 0;
  std::size_t end = s.size(), start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') ++depth;
    else if (c == '>' && depth > 0) --depth;
    else if (c == '(' && depth == 0 && !after_operator_keyword(s, i)) {
      end = i;
      break;
    } else if (c == ' ' && depth == 0) {
      start = i + 1;
    }
  }
  const std::string q = s.substr(start, end > start ? end - start : 0);
  for (const char* prefix : {"std::", "__gnu_cxx::", "__cxxabiv1::"})
    if (q.rfind(prefix, 0) == 0) return true;
  return false;
}

// Two OpenMP regions of one function ("f [clone ._omp_fn.0]", "._omp_fn.1")
// share the short name "f (OpenMP region)": those then show GCC's region
// number, "f (OpenMP region 1)", so the report does not list one name twice.
void disambiguate_openmp_regions(std::vector<FunctionSeries>& functions) {
  std::map<std::string, int> uses;
  for (const auto& f : functions) ++uses[f.short_name];
  const std::string clone = "._omp_fn.", marker = " (OpenMP region)";
  for (auto& f : functions) {
    if (uses[f.short_name] < 2) continue;
    const auto at = f.name.find(clone);
    const auto mark = f.short_name.find(marker);
    if (at == std::string::npos || mark == std::string::npos) continue;
    std::size_t end = at + clone.size();
    while (end < f.name.size() && std::isdigit(static_cast<unsigned char>(f.name[end]))) ++end;
    if (end == at + clone.size()) continue;
    f.short_name.insert(mark + marker.size() - 1, " " + f.name.substr(at + clone.size(), end - at - clone.size()));
  }
}

std::string scaling_shape(double t1, double t2, double c1, double c2, const std::string& category, bool weak,
                          double threads2) {
  const bool runtime = category == "mpi" || category == "openmp";
  // Below 1.5 effective threads one thread did most of it: serial enough.
  const bool parallel = available(threads2) && threads2 >= 1.5;
  if (!(t1 > 0)) return runtime ? "growing: communication or waiting, absent at the first point"
                                : "growing: appears with concurrency";
  const double r = t2 / t1, k = c2 / c1;
  if (weak) {
    // The work per worker is constant: constant time is ideal, and a serial
    // part grows with the total work (k times).
    if (!runtime && !parallel && k > 1 && r >= 0.8 * k) return "growing with the total work: serial";
    if (r >= 1.25) return runtime ? "growing: communication or waiting" : "growing: replicated work or communication";
    return runtime ? "constant: waiting" : "constant: weak-scaling ideal";
  }
  if (r >= 1.25) return runtime ? "growing: communication or waiting" : "growing: replicated work or communication";
  if (r >= 0.8) return runtime ? "constant: waiting" : parallel ? kConstantParallelShape : "constant: serial";
  if (k > 0 && r > 1.25 / k) return "shrinking slower than ideal";
  return "scales";
}

RankProfile profile_of_rank(const store::RankRecords& rank) {
  RankProfile p;
  if (rank.sampling.empty() || rank.callpaths.empty()) return p;
  p.period_s = rank.sampling[0].period_s;
  const auto& rows = rank.callpaths;
  auto name_of = [&](std::int64_t id) -> std::string {
    return id >= 0 && static_cast<std::size_t>(id) < rank.names.size() ? rank.names[static_cast<std::size_t>(id)]
                                                                         : std::string("?");
  };
  auto parent_of = [&](std::size_t i) -> std::int64_t {
    const std::int64_t par = rows[i].parent_id;
    return par >= 0 && static_cast<std::size_t>(par) < i ? par : -1;  // malformed parents end the walk
  };
  // Code without a symbol: the tracer names it "module+0xOFFSET".
  for (const auto& r : rows) {
    const std::string fn = name_of(r.function_id), mod = name_of(r.module_id);
    const bool unnamed = !mod.empty() && fn.size() > mod.size() + 3 && fn.compare(0, mod.size() + 3, mod + "+0x") == 0;
    if (unnamed) p.unnamed_functions[mod].insert(fn);
    if (r.self_samples <= 0) continue;
    p.samples += static_cast<double>(r.self_samples);
    if (unnamed) p.unnamed_samples[mod] += static_cast<double>(r.self_samples);
  }
  // Attribution of each node's self samples (see the header).
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.self_samples <= 0) continue;
    std::string cat = store::get_str(r.category);
    std::size_t leaf = i;
    // libc/libm code counts for whoever called it: the first non-system frame up the stack.
    if (cat == "system") {
      for (std::int64_t n = parent_of(i); n >= 0; n = parent_of(static_cast<std::size_t>(n))) {
        const std::string c = store::get_str(rows[static_cast<std::size_t>(n)].category);
        if (c == "system") continue;
        cat = c;
        leaf = static_cast<std::size_t>(n);
        break;
      }
    }
    std::string fn;
    std::string fn_cat = cat;
    if (cat == "openmp") {
      fn = kOpenMpBucket;
    } else if (cat == "mpi") {
      // The outermost MPI_* frame of the run of MPI frames around the leaf.
      fn = kMpiBucket;
      for (std::int64_t n = static_cast<std::int64_t>(leaf); n >= 0; n = parent_of(static_cast<std::size_t>(n))) {
        const auto& row = rows[static_cast<std::size_t>(n)];
        const std::string c = store::get_str(row.category);
        if (c == "rtrace") {  // MPI calls the tracer itself makes (its write at MPI_Finalize)
          fn = kTracerBucket;
          fn_cat = "rtrace";
          break;
        }
        if (c != "mpi" && c != "system") break;
        const std::string f = mpi_entry_name(name_of(row.function_id));
        if (!f.empty()) fn = f;
      }
    } else if (cat == "rtrace") {
      fn = kTracerBucket;
    } else {
      // C++ standard-library code compiled into the app (std::fill inlined
      // from a vector resize) counts, like libc, for its first caller outside
      // the standard library: that is the code its user can change.
      if (is_standard_library_function(name_of(rows[leaf].function_id)))
        for (std::int64_t n = parent_of(leaf); n >= 0; n = parent_of(static_cast<std::size_t>(n))) {
          const auto& row = rows[static_cast<std::size_t>(n)];
          const std::string c = store::get_str(row.category);
          if (c != "app" && c != "system") break;  // called from a runtime: keep the leaf
          if (is_standard_library_function(name_of(row.function_id))) continue;
          if (c == "app") leaf = static_cast<std::size_t>(n);  // else libc above it: keep the leaf
          break;
        }
      fn = name_of(rows[leaf].function_id);  // app code, or a system-only stack (its leaf)
      if (rows[leaf].inlined)
        for (std::int64_t n = parent_of(leaf); n >= 0; n = parent_of(static_cast<std::size_t>(n)))
          if (!rows[static_cast<std::size_t>(n)].inlined) {
            fn += kInlinedIn + name_of(rows[static_cast<std::size_t>(n)].function_id) + "]";
            break;
          }
    }
    p.thread_samples[r.thread][fn] += static_cast<double>(r.self_samples);
    p.category.emplace(fn, fn_cat);
    // Folded stack of this node. The tracer's own frames are not the app's:
    // from the outermost one down the stack is one "rtrace" frame (issue 30:
    // rtrace::tracer frames in the app's flame graph).
    std::vector<std::size_t> path;
    for (std::int64_t n = static_cast<std::int64_t>(i); n >= 0; n = parent_of(static_cast<std::size_t>(n)))
      path.push_back(static_cast<std::size_t>(n));
    std::string key = "thread " + std::to_string(r.thread);
    for (auto n = path.rbegin(); n != path.rend(); ++n) {
      if (store::get_str(rows[*n].category) == "rtrace") {
        key += std::string(";") + kTracerFrame;
        break;
      }
      key += ";" + folded_frame(name_of(rows[*n].function_id));
    }
    p.folded[key] += static_cast<double>(r.self_samples);
  }
  return p;
}

HostFunctionTimes sampled_host_function_times_of(const store::RankRecords& rank) {
  HostFunctionTimes out;
  if (rank.sampling.empty() || rank.callpaths.empty()) return out;
  const auto& rows = rank.callpaths;
  std::map<int, double> work, all;                               // thread -> samples of work, all samples
  std::map<int, std::map<std::int64_t, double>> hosts;           // thread -> host function id -> samples
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r.self_samples <= 0) continue;
    const std::string cat = store::get_str(r.category);
    if (cat == "app" || cat == "system") work[r.thread] += static_cast<double>(r.self_samples);
    all[r.thread] += static_cast<double>(r.self_samples);
    std::size_t host = i;
    while (rows[host].inlined) {
      const std::int64_t par = rows[host].parent_id;
      if (par < 0 || static_cast<std::size_t>(par) >= host) break;  // malformed parents end the walk
      host = static_cast<std::size_t>(par);
    }
    hosts[r.thread][rows[host].function_id] += static_cast<double>(r.self_samples);
  }
  int critical = -1;
  for (const auto& [thread, n] : work)
    if (n > out.work) {
      out.work = n;
      critical = thread;
    }
  if (critical < 0) return out;
  out.samples = all[critical];
  const double period = rank.sampling[0].period_s;
  for (const auto& [id, n] : hosts[critical]) {
    if (id < 0 || static_cast<std::size_t>(id) >= rank.names.size()) continue;
    out.seconds[rank.names[static_cast<std::size_t>(id)]] += n * period;
  }
  return out;
}

RankSampledCode sampled_code_of(const store::RankRecords& rank) {
  RankSampledCode out;
  if (rank.sampling.empty() || rank.callpaths.empty()) return out;
  const auto& rows = rank.callpaths;
  auto name_of = [&](std::int64_t id) -> std::string {
    return id >= 0 && static_cast<std::size_t>(id) < rank.names.size() ? rank.names[static_cast<std::size_t>(id)]
                                                                         : std::string();
  };
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].self_samples <= 0) continue;
    std::size_t host = i;  // the function holding the code: inlined frames count for it
    while (rows[host].inlined) {
      const std::int64_t par = rows[host].parent_id;
      if (par < 0 || static_cast<std::size_t>(par) >= host) break;
      host = static_cast<std::size_t>(par);
    }
    const std::string fn = name_of(rows[host].function_id);
    if (fn.empty()) continue;
    const double n = static_cast<double>(rows[i].self_samples);
    SampledCode& c = out.functions[fn];
    if (c.module.empty()) {
      c.module = name_of(rows[host].module_id);
      c.category = store::get_str(rows[host].category);
    }
    c.samples += n;
    const std::string cat = store::get_str(rows[i].category);
    if (cat == "app" || cat == "system") out.work += n;
  }
  return out;
}

std::map<std::string, double> sampled_host_function_times(const std::vector<store::RankRecords>& ranks) {
  HostFunctionTimes best;
  for (const auto& rank : ranks) {
    HostFunctionTimes h = sampled_host_function_times_of(rank);
    if (h.work > best.work) best = std::move(h);
  }
  return best.seconds;
}

namespace {

bool is_work(const std::string& category) { return category == "app" || category == "system"; }

// Per configuration: function -> FunctionAtPoint, from the ranks of one point.
std::map<std::string, FunctionAtPoint> functions_at_point(const std::vector<RankProfile>& ranks,
                                                          std::map<std::string, std::string>& categories,
                                                          double& period) {
  std::map<std::string, FunctionAtPoint> out;
  // Critical thread per rank: the most samples of work (not waiting in a runtime).
  int critical_rank = -1;
  int critical_thread = -1;
  double best = -1;
  std::map<std::string, std::vector<double>> per_rank_cpu;
  for (std::size_t ri = 0; ri < ranks.size(); ++ri) {
    const auto& rp = ranks[ri];
    if (!available(rp.period_s)) continue;
    period = rp.period_s;
    for (const auto& [fn, cat] : rp.category) categories.emplace(fn, cat);
    for (const auto& [thread, fns] : rp.thread_samples) {
      double work = 0;
      for (const auto& [fn, n] : fns) {
        auto c = rp.category.find(fn);
        if (c != rp.category.end() && is_work(c->second)) work += n;
        auto& v = per_rank_cpu[fn];
        v.resize(ranks.size(), 0);
        v[ri] += n * rp.period_s;
      }
      if (work > best) {
        best = work;
        critical_rank = static_cast<int>(ri);
        critical_thread = thread;
      }
    }
  }
  for (const auto& [fn, cpu] : per_rank_cpu) {
    FunctionAtPoint f;
    double sum = 0, mx = 0;
    for (double v : cpu) sum += v, mx = std::max(mx, v);
    f.cpu_s = sum;
    const double mean = sum / static_cast<double>(ranks.size());
    f.imbalance = ranks.size() > 1 && mean > 0 ? mx / mean - 1 : kNaN;
    f.time_s = 0;
    out[fn] = f;
  }
  if (critical_rank >= 0) {
    const auto& rp = ranks[static_cast<std::size_t>(critical_rank)];
    for (const auto& [fn, n] : rp.thread_samples.at(critical_thread)) out[fn].time_s = n * rp.period_s;
    std::map<std::string, std::pair<double, double>> spread;  // function -> (sum, busiest thread)
    for (const auto& [thread, fns] : rp.thread_samples)
      for (const auto& [fn, n] : fns) {
        auto& [sum, busiest] = spread[fn];
        sum += n;
        busiest = std::max(busiest, n);
      }
    for (const auto& [fn, sb] : spread)
      if (sb.second > 0) out[fn].threads = sb.first / sb.second;
  }
  return out;
}

}  // namespace

ProfileResult profile_functions(const AnalysisResult& res,
                                const std::vector<std::vector<store::RankRecords>>& per_config) {
  ProfileResult out;
  const auto& configs = res.run.configs;
  const int nconf = static_cast<int>(configs.size());
  std::map<std::string, int> index;
  std::map<std::string, std::string> categories;
  out.folded.assign(static_cast<std::size_t>(nconf), {});
  double all_samples = 0;
  std::map<std::string, double> unnamed_samples;
  std::map<std::string, std::set<std::string>> unnamed_functions;
  for (int ci = 0; ci < nconf && ci < static_cast<int>(per_config.size()); ++ci) {
    std::vector<RankProfile> ranks;
    for (const auto& r : per_config[static_cast<std::size_t>(ci)]) {
      RankProfile rp = profile_of_rank(r);
      if (!available(rp.period_s)) continue;
      all_samples += rp.samples;
      for (const auto& [m, n] : rp.unnamed_samples) unnamed_samples[m] += n;
      for (const auto& [m, fns] : rp.unnamed_functions) unnamed_functions[m].insert(fns.begin(), fns.end());
      for (const auto& [k, v] : rp.folded)
        out.folded[static_cast<std::size_t>(ci)]["rank " + std::to_string(r.info.rank) + ";" + k] += v;
      ranks.push_back(std::move(rp));
    }
    if (ranks.empty()) continue;
    out.available = true;
    double period = kNaN;
    auto fns = functions_at_point(ranks, categories, period);
    if (available(period)) out.period_s = period;
    for (auto& [fn, at] : fns) {
      auto [it, fresh] = index.emplace(fn, static_cast<int>(out.functions.size()));
      if (fresh) {
        FunctionSeries s;
        s.name = fn;
        // Runtime buckets ("OpenMP runtime (wait, barrier, spin)") keep their whole name.
        s.short_name = fn == kOpenMpBucket || fn == kMpiBucket || fn == kTracerBucket ? fn : short_function_name(fn);
        s.at.assign(static_cast<std::size_t>(nconf), FunctionAtPoint{});
        out.functions.push_back(std::move(s));
      }
      auto& s = out.functions[static_cast<std::size_t>(it->second)];
      s.at[static_cast<std::size_t>(ci)] = at;
      s.total_time_s += at.time_s;
    }
  }
  for (const auto& [m, fns] : unnamed_functions) {
    const auto n = unnamed_samples.find(m);
    out.unnamed.push_back({m, all_samples > 0 && n != unnamed_samples.end() ? n->second / all_samples : 0,
                           static_cast<int>(fns.size())});
  }
  std::stable_sort(out.unnamed.begin(), out.unnamed.end(),
                   [](const UnnamedModule& a, const UnnamedModule& b) { return a.share > b.share; });
  for (auto& s : out.functions) s.category = categories.count(s.name) ? categories[s.name] : "app";
  disambiguate_openmp_regions(out.functions);
  // Sorted by critical-path time; indices stay valid after this point only.
  std::stable_sort(out.functions.begin(), out.functions.end(),
                   [](const FunctionSeries& a, const FunctionSeries& b) { return a.total_time_s > b.total_time_s; });
  return out;
}

SampledStep sampled_step(const ProfileResult& p, int config1, int config2, double c1, double c2, bool weak) {
  SampledStep out;
  if (!p.available || !available(p.period_s) || config1 < 0 || config2 < 0) return out;
  double total = 0, serial = 0, largest = 0;
  for (const auto& f : p.functions) {
    if (static_cast<std::size_t>(std::max(config1, config2)) >= f.at.size()) continue;
    const auto& a = f.at[static_cast<std::size_t>(config1)];
    const auto& b = f.at[static_cast<std::size_t>(config2)];
    if (!available(b.time_s) || b.time_s < 3 * p.period_s) continue;  // too few samples to judge
    const double t1 = available(a.time_s) ? a.time_s : 0;
    const double lost = b.time_s - t1 * (weak ? 1.0 : c1 / c2);
    if (!(lost > 0.05 * b.time_s)) continue;  // sampling noise (as in the groups)
    total += lost;
    if (f.category == "app" && scaling_shape(t1, b.time_s, c1, c2, f.category, weak, b.threads) == "constant: serial") {
      serial += lost;
      if (lost > largest) {
        largest = lost;
        out.serial_function = f.short_name;
      }
    }
  }
  if (total <= 0) return out;
  out.available = true;
  out.serial_share = serial / total;
  return out;
}

namespace {
// The functions the sentences name (each group's top 3 losers), then the
// largest by time up to kShownFunctions.
void set_shown_functions(ProfileResult& p) {
  p.shown.clear();
  auto add = [&](int fi) {
    if (fi >= 0 && fi < static_cast<int>(p.functions.size()) && p.functions[static_cast<std::size_t>(fi)].total_time_s > 0 &&
        std::find(p.shown.begin(), p.shown.end(), fi) == p.shown.end())
      p.shown.push_back(fi);
  };
  for (const auto& g : p.groups)
    for (std::size_t i = 0; i < g.lost.size() && i < 3; ++i) add(g.lost[i].function);
  for (int fi = 0; fi < static_cast<int>(p.functions.size()) && p.shown.size() < kShownFunctions; ++fi) add(fi);
}
}  // namespace

void profile_groups(ProfileResult& out, const AnalysisResult& res) {
  out.groups.clear();
  if (!out.available || res.axis.empty()) {
    set_shown_functions(out);
    return;
  }
  const auto& configs = res.run.configs;

  // Groups along the axis: the same ones as the application summaries.
  for (const auto& sum : res.summaries) {
    if (sum.points.size() < 2) continue;
    ProfileGroup g;
    g.fixed = sum.fixed;
    for (const auto& p : sum.points) g.configs.push_back(p.config);
    const int f = g.configs.front(), l = g.configs.back();
    const double cf = configs[static_cast<std::size_t>(f)].concurrency(res.axis);
    const double cl = configs[static_cast<std::size_t>(l)].concurrency(res.axis);
    const auto& pf = sum.points.front();
    const auto& pl = sum.points.back();
    // The ideal time at the last point: the first point's time (weak: constant
    // time per worker) or that time over the concurrency ratio (strong).
    const double ideal_ratio = sum.weak ? 1.0 : cf / cl;
    if (available(pf.time_s) && available(pl.time_s)) g.wall_lost_s = pl.time_s - pf.time_s * ideal_ratio;
    const bool windowed = pf.pop.basis == "mpi" && pf.pop.window_measured && pl.pop.basis == "mpi" && pl.pop.window_measured;
    double total = 0;
    for (int fi = 0; fi < static_cast<int>(out.functions.size()); ++fi) {
      const auto& s = out.functions[static_cast<std::size_t>(fi)];
      // MPI startup and teardown run outside the MPI window: where the summary's
      // time is that window, their samples are not part of the loss it states.
      if (windowed && starts_or_ends_mpi(s.short_name)) continue;
      const auto& af = s.at[static_cast<std::size_t>(f)];
      const auto& al = s.at[static_cast<std::size_t>(l)];
      if (!available(al.time_s) || al.time_s < 3 * out.period_s) continue;  // too few samples to judge
      const double tf = available(af.time_s) ? af.time_s : 0;
      const double lost = al.time_s - tf * ideal_ratio;
      // Within 5% of its own ideal time a function's loss is sampling noise, not a finding.
      if (!(lost > 0.05 * al.time_s)) continue;
      FunctionLoss fl;
      fl.function = fi;
      fl.lost_s = lost;
      fl.shape = scaling_shape(tf, al.time_s, cf, cl, s.category, sum.weak, al.threads);
      fl.imbalance = al.imbalance;
      // The roofline verdict where the function is also an annotated region or a kernel.
      for (int ki = 0; ki < static_cast<int>(res.kernels.size()); ++ki) {
        if (res.kernels[static_cast<std::size_t>(ki)].name != s.short_name) continue;
        for (const auto& t : res.trajectories)
          if (t.kernel == ki && t.fixed == g.fixed && !t.steps.empty()) fl.roofline = t.steps.back().d.diagnosis;
      }
      g.lost.push_back(fl);
      total += lost;
    }
    for (auto& x : g.lost) x.share = total > 0 ? x.lost_s / total : 0;
    std::sort(g.lost.begin(), g.lost.end(), [](const FunctionLoss& a, const FunctionLoss& b) { return a.lost_s > b.lost_s; });
    std::ostringstream s;
    s << "Sampled: ";
    if (available(g.wall_lost_s) && g.wall_lost_s > 0) s << "lost " << fmt(g.wall_lost_s) << " s";
    else s << "time beyond ideal";
    s << " at " << res.axis << "=" << fmt(cl, 6) << ": ";
    if (g.lost.empty()) {
      s << "no function loses time against ideal scaling.";
    } else {
      for (std::size_t i = 0; i < g.lost.size() && i < 3; ++i) {
        const auto& x = g.lost[i];
        const auto& fs = out.functions[static_cast<std::size_t>(x.function)];
        if (i) s << ", ";
        s << fmt(100 * x.share, 3) << "% in `" << fs.short_name << "` (" << x.shape;
        if (available(x.imbalance) && x.imbalance > 0.1) s << "; imbalance " << fmt(100 * x.imbalance, 3) << "%";
        if (!x.roofline.empty()) s << "; roofline: " << x.roofline;
        s << ")";
      }
      s << ".";
    }
    g.sentence = s.str();
    out.groups.push_back(std::move(g));
  }
  set_shown_functions(out);
}

ProfileResult build_profile(const AnalysisResult& res, const std::vector<std::vector<store::RankRecords>>& per_config) {
  ProfileResult out = profile_functions(res, per_config);
  profile_groups(out, res);
  return out;
}

std::string symbol_hint(const std::vector<UnnamedModule>& unnamed, double min_share) {
  std::vector<const UnnamedModule*> shown;
  for (const auto& m : unnamed)
    if (m.share >= min_share) shown.push_back(&m);
  if (shown.empty()) return "";
  std::ostringstream s;
  s << "sampled code without symbols is named module+0xOFFSET: ";
  for (std::size_t i = 0; i < shown.size() && i < 5; ++i) {
    s << (i ? ", " : "") << shown[i]->module << " (" << format::percent(shown[i]->share) << " of the samples, "
      << shown[i]->functions << (shown[i]->functions == 1 ? " function)" : " functions)");
  }
  if (shown.size() > 5) s << " and " << shown.size() - 5 << " more";
  s << ". To name them: install each module's debug symbols (Debian: `dpkg -S <module>` names its package; "
       "install <package>-dbgsym from the debian-debug archive), or fetch them once into debuginfod's cache "
       "(`DEBUGINFOD_URLS=https://debuginfod.debian.net debuginfod-find debuginfo <module>`, Debian package "
       "debuginfod; the tracer reads that cache, never the network), or rebuild with -g and do not strip; an "
       "OFFSET is the function's start: "
       "`addr2line -f -e <unstripped module> 0xOFFSET` names it.";
  return s.str();
}

void read_profile(AnalysisResult& res) noexcept {
  try {
    const std::string& path = res.run.path;
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return;
    store::File file = store::File::open(path);
    const auto& root = file.root();
    if (!root.exists("points")) return;
    store::Group points = root.open_group("points");
    std::vector<std::vector<store::RankRecords>> per_config;
    for (const auto& c : res.run.configs) {
      per_config.emplace_back();
      if (c.point_ids.empty()) continue;
      const std::string pname = store::point_group_name(c.point_ids.front());
      if (!points.exists(pname)) continue;
      store::Group pg = points.open_group(pname);
      if (!pg.exists("ranks")) continue;
      store::Group rg = pg.open_group("ranks");
      // Only sampled ranks, and of them only what the profile uses: a point
      // of 10^5 unsampled ranks costs one existence check per rank.
      for (const auto& child : rg.children()) {
        store::Group g = rg.open_group(child);
        if (!g.exists("sampling")) continue;
        per_config.back().push_back(store::read_rank_parts(g, store::kRankInfo | store::kRankNames | store::kRankSampling));
      }
    }
    res.profile = profile_functions(res, per_config);
    if (std::string hint = symbol_hint(res.profile.unnamed); !hint.empty()) res.hints.push_back(hint);
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("sampled call paths unreadable: ") + e.what());
  } catch (...) {
    res.warnings.push_back("sampled call paths unreadable");
  }
}

void join_profile(AnalysisResult& res) noexcept {
  try {
    profile_groups(res.profile, res);
    for (const auto& g : res.profile.groups) {
      if (g.sentence.empty()) continue;
      for (auto& sum : res.summaries)
        if (sum.fixed == g.fixed) sum.sentences.push_back(g.sentence);
    }
  } catch (const std::exception& e) {
    res.warnings.push_back(std::string("sampled call paths: ") + e.what());
  }
}

void attach_profile(AnalysisResult& res) noexcept {
  read_profile(res);
  join_profile(res);
}

nlohmann::json profile_to_json(const ProfileResult& p, int max_functions) {
  using nlohmann::json;
  auto num = [](double v) { return available(v) ? json(v) : json(nullptr); };
  auto seconds = [&](double v) { return json{{"value", num(v)}, {"unit", "s"}}; };
  json fns = json::array();
  for (int i = 0; i < static_cast<int>(p.functions.size()) && i < max_functions; ++i) {
    const auto& f = p.functions[static_cast<std::size_t>(i)];
    json t = json::array(), imb = json::array(), cpu = json::array();
    for (const auto& a : f.at) {
      t.push_back(num(a.time_s));
      imb.push_back(num(a.imbalance));
      cpu.push_back(num(a.cpu_s));
    }
    fns.push_back({{"name", f.name}, {"short_name", f.short_name}, {"category", f.category}, {"time_s", t},
                   {"cpu_s", cpu}, {"imbalance", imb}});
  }
  json groups = json::array();
  for (const auto& g : p.groups) {
    json lost = json::array();
    for (const auto& l : g.lost)
      lost.push_back({{"function", p.functions[static_cast<std::size_t>(l.function)].name},
                      {"short_name", p.functions[static_cast<std::size_t>(l.function)].short_name},
                      {"lost", seconds(l.lost_s)},
                      {"share", l.share},
                      {"shape", l.shape},
                      {"imbalance", num(l.imbalance)},
                      {"roofline", l.roofline}});
    groups.push_back({{"fixed", g.fixed}, {"wall_lost", seconds(g.wall_lost_s)}, {"lost", lost}, {"sentence", g.sentence}});
  }
  json unnamed = json::array();  // 1.5.0
  for (const auto& m : p.unnamed)
    unnamed.push_back({{"module", m.module}, {"share", m.share}, {"functions", m.functions}});
  return {{"available", p.available}, {"period", seconds(p.period_s)}, {"functions", fns}, {"groups", groups},
          {"unnamed_modules", unnamed}};
}

std::vector<std::string> write_folded(const AnalysisResult& res, const std::string& dir) {
  std::vector<std::string> written;
  if (!res.profile.available) throw InputError("--folded: the run has no sampled call stacks (run with --sample HZ > 0)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("--folded " + dir + ": cannot create the directory: " + ec.message());
  for (std::size_t ci = 0; ci < res.profile.folded.size() && ci < res.run.configs.size(); ++ci) {
    const auto& folded = res.profile.folded[ci];
    if (folded.empty()) continue;
    char base[32];
    std::snprintf(base, sizeof base, "c%03d", static_cast<int>(ci));
    const std::string label = res.run.configs[ci].label;
    for (const auto& [ext, text] : {std::make_pair(std::string(".folded"), folded_text(folded)),
                                   std::make_pair(std::string(".speedscope.json"),
                                                  speedscope_json(folded, label, res.profile.period_s))}) {
      const std::string path = dir + "/" + base + ext;
      std::ofstream out;
      open_output_file(path, out, std::ios::binary);
      out << text;
      out.close();
      if (!out) throw InputError("--folded: cannot write " + path);
      written.push_back(path);
    }
  }
  return written;
}

std::string folded_text(const std::map<std::string, double>& folded) {
  std::string out;
  for (const auto& [stack, n] : folded) {
    if (n <= 0) continue;
    out += stack + " " + std::to_string(static_cast<long long>(std::llround(n))) + "\n";
  }
  return out;
}

std::string speedscope_json(const std::map<std::string, double>& folded, const std::string& name, double period_s) {
  // https://www.speedscope.app/file-format-schema.json: one "sampled" profile,
  // weights in seconds of CPU time.
  nlohmann::json frames = nlohmann::json::array();
  std::map<std::string, int> frame_index;
  nlohmann::json samples = nlohmann::json::array(), weights = nlohmann::json::array();
  double total = 0;
  for (const auto& [stack, n] : folded) {
    nlohmann::json ids = nlohmann::json::array();
    std::size_t start = 0;
    while (start <= stack.size()) {
      std::size_t end = stack.find(';', start);
      if (end == std::string::npos) end = stack.size();
      std::string f = stack.substr(start, end - start);
      auto [it, fresh] = frame_index.emplace(f, static_cast<int>(frame_index.size()));
      if (fresh) frames.push_back({{"name", f}});
      ids.push_back(it->second);
      start = end + 1;
    }
    const double w = n * (available(period_s) ? period_s : 1.0);
    samples.push_back(ids);
    weights.push_back(w);
    total += w;
  }
  nlohmann::json j;
  j["$schema"] = "https://www.speedscope.app/file-format-schema.json";
  j["name"] = name;
  j["exporter"] = "rtrace analyze";
  j["shared"] = {{"frames", frames}};
  j["profiles"] = nlohmann::json::array({{{"type", "sampled"},
                                          {"name", name},
                                          {"unit", "seconds"},
                                          {"startValue", 0},
                                          {"endValue", total},
                                          {"samples", samples},
                                          {"weights", weights}}});
  return j.dump();
}

}  // namespace rtrace::analysis
