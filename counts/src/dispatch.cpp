#include "rtrace/counts/dispatch.hpp"

#include "split_fields.hpp"

#include "rtrace/store/file.hpp"
#include "rtrace/store/run_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <set>

namespace fs = std::filesystem;

namespace rtrace::counts {

namespace {

using ByRank = std::map<std::int64_t, std::vector<store::DispatchRow>>;

void read_ranks_group(const store::Group& ranks, ByRank& out) {
  for (const auto& name : ranks.children()) {
    const auto rec = store::read_rank_parts(ranks.open_group(name), store::kRankInfo | store::kRankDispatch);
    if (!rec.dispatch.empty()) out[rec.info.rank] = rec.dispatch;
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

const store::DispatchRow* find(const std::vector<store::DispatchRow>& rows, const char* library, const char* item) {
  for (const auto& r : rows)
    if (store::get_str(r.library) == library && store::get_str(r.item) == item) return &r;
  return nullptr;
}

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  return "";
}

bool env_has(const std::vector<std::string>& env, const std::string& name) {
  for (const auto& e : env)
    if (e.compare(0, name.size() + 1, name + "=") == 0) return true;
  return false;
}

void append(std::string& to, const std::string& what) {
  if (what.empty()) return;
  to += (to.empty() ? "" : "; ") + what;
}

// FFTW_MEASURE (the default) times candidate plans: under the tool others win.
const char* const kFftwAdvice =
    "FFTW: plans differ run to run; for the same plan import wisdom in both runs (fftw_import_wisdom_from_filename) "
    "or plan with FFTW_ESTIMATE";

// OpenBLAS cores whose kernels use AVX-512: Valgrind 3.19 cannot run them.
bool openblas_core_needs_avx512(const std::string& core) {
  const std::string c = lower(core);
  return c == "skylakex" || c == "cooperlake" || c == "sapphirerapids" || c == "zen4" || c == "zen5";
}

// OpenBLAS names its DYNAMIC_ARCH kernels after the core, in capitals
// (dgemm_kernel_HASWELL): the cores a DYNAMIC_ARCH build knows.
const char* const kOpenBlasCores[] = {"PRESCOTT", "CORE2", "PENRYN", "DUNNINGTON", "NEHALEM", "SANDYBRIDGE",
                                      "HASWELL", "SKYLAKEX", "COOPERLAKE", "SAPPHIRERAPIDS", "ZEN", "ATOM",
                                      "BARCELONA", "BOBCAT", "BULLDOZER", "PILEDRIVER", "STEAMROLLER", "EXCAVATOR",
                                      "OPTERON", "OPTERON_SSE3", "ATHLON", "KATMAI", "COPPERMINE", "NORTHWOOD",
                                      "BANIAS", "NANO"};

std::string kernel_core(const std::string& function) {
  const auto us = function.rfind('_');
  if (us == std::string::npos) return "";
  // OPTERON_SSE3 has an underscore of its own.
  if (function.size() > 13 && function.compare(function.size() - 13, 13, "_OPTERON_SSE3") == 0) return "OPTERON_SSE3";
  const std::string tail = function.substr(us + 1);
  for (const char* c : kOpenBlasCores)
    if (tail == c) return tail;
  return "";
}

// glibc features the hwcaps tunable can turn off and which Valgrind 3.19's
// CPU (Haswell-like on an AVX2 host) offers: turning off one it lacks
// (AVX-512, FMA4, RTM) would change nothing.
const char* const kSteerableGlibcFeatures[] = {"SSSE3", "SSE4_1", "SSE4_2", "POPCNT", "MOVBE", "LZCNT",
                                               "BMI1",  "BMI2",   "AVX",    "AVX2",   "FMA",   "ERMS"};

}  // namespace

ByRank read_timed_dispatch(const std::string& path, std::int64_t point_id) {
  ByRank out;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw DispatchSourceError("`" + path + "`: no such file or directory");
  try {
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(path, ec))
        if (e.path().extension() == ".h5") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      for (const auto& file : files) {
        auto f = store::File::open(file);
        if (f.root().exists("ranks")) read_ranks_group(f.root().open_group("ranks"), out);
      }
      return out;
    }
    auto f = store::File::open(path);
    if (f.root().exists("ranks")) {
      read_ranks_group(f.root().open_group("ranks"), out);
      return out;
    }
    if (!f.root().exists("points")) throw DispatchSourceError("`" + path + "` holds no ranks (not a trace or run file)");
    const auto points = f.root().open_group("points");
    if (point_id >= 0) {
      const std::string name = store::point_group_name(point_id);
      if (!points.exists(name)) throw DispatchSourceError("`" + path + "` has no point " + std::to_string(point_id));
      const auto g = points.open_group(name);
      if (g.exists("ranks")) read_ranks_group(g.open_group("ranks"), out);
      return out;
    }
    for (const auto& name : points.children()) {
      const auto g = points.open_group(name);
      if (g.exists("ranks")) read_ranks_group(g.open_group("ranks"), out);
      if (!out.empty()) break;
    }
  } catch (const DispatchSourceError&) {
    throw;
  } catch (const std::exception& e) {
    throw DispatchSourceError("`" + path + "`: " + e.what());
  }
  return out;
}

Steering plan_steering(const ByRank& timed, const std::vector<std::string>& env) {
  Steering s;
  if (timed.empty()) return s;
  s.observed = true;
  const auto& [rank, rows] = *timed.begin();
  // Ranks (nodes) that chose otherwise than the one followed.
  std::set<std::int64_t> differ;
  for (const auto& [r, other] : timed) {
    if (r == rank) continue;
    for (const auto& row : rows) {
      const auto* o = find(other, store::get_str(row.library).c_str(), store::get_str(row.item).c_str());
      if (!o || store::get_str(o->choice) != store::get_str(row.choice)) differ.insert(r);
    }
  }

  // OpenBLAS: OPENBLAS_CORETYPE takes the names openblas_get_corename gives.
  if (const auto* ob = find(rows, "openblas", "core")) {
    const std::string core = store::get_str(ob->choice);
    const std::string config = store::get_str(ob->detail);
    s.timed_openblas_core = core;
    if (core.empty()) {
    } else if (config.find("DYNAMIC_ARCH") == std::string::npos && !config.empty()) {
      append(s.steered, "OpenBLAS built for one core (" + core + "): the same kernels in both runs");
    } else if (env_has(env, "OPENBLAS_CORETYPE")) {
      append(s.steered, "OpenBLAS core " + core + " (OPENBLAS_CORETYPE=" + env_value(env, "OPENBLAS_CORETYPE") +
                            " set for both runs)");
    } else if (openblas_core_needs_avx512(core)) {
      append(s.not_steered, "OpenBLAS: the timed run's " + core +
                                " kernels use AVX-512, which Valgrind 3.19 cannot run: counted with the core OpenBLAS "
                                "picks under it");
    } else {
      s.env.push_back("OPENBLAS_CORETYPE=" + core);
      append(s.steered, "OpenBLAS core " + core + " (OPENBLAS_CORETYPE=" + core + ")");
    }
  }

  // MKL (untested here: no MKL on the machines rtrace is tested on): its
  // documented variables. MKL_ENABLE_INSTRUCTIONS caps the instruction set
  // and changes nothing else; below SSE4_2 only MKL_CBWR names the path.
  if (const auto* mkl = find(rows, "mkl", "cbwr_branch")) {
    const std::string branch = store::get_str(mkl->choice);
    if (env_has(env, "MKL_ENABLE_INSTRUCTIONS") || env_has(env, "MKL_CBWR")) {
      append(s.steered, "MKL path " + branch + " (MKL_ENABLE_INSTRUCTIONS/MKL_CBWR set for both runs; untested on MKL)");
    } else if (branch.find("AVX512") != std::string::npos) {
      append(s.not_steered, "MKL: the timed run's " + branch + " path uses AVX-512, which Valgrind 3.19 cannot run");
    } else if (branch == "AVX2" || branch == "AVX" || branch == "SSE4_2") {
      s.env.push_back("MKL_ENABLE_INSTRUCTIONS=" + branch);
      append(s.steered, "MKL path " + branch + " (MKL_ENABLE_INSTRUCTIONS=" + branch + "; untested on MKL)");
    } else if (branch == "COMPATIBLE" || branch == "SSE2" || branch == "SSSE3" || branch == "SSE4_1") {
      s.env.push_back("MKL_CBWR=" + branch);
      append(s.steered, "MKL path " + branch + " (MKL_CBWR=" + branch + "; untested on MKL)");
    } else {
      append(s.not_steered, "MKL: unknown code path `" + branch + "` not steered");
    }
  }

  // glibc: turn off under Valgrind what the timed run did not have active.
  if (const auto* hw = find(rows, "glibc", "hwcaps")) {
    std::set<std::string> active;
    for (const auto& f : split_fields(store::get_str(hw->choice), ','))
      if (!f.empty()) active.insert(f);
    std::string off;
    for (const char* f : kSteerableGlibcFeatures)
      if (!active.count(f)) off += (off.empty() ? "-" : ",-") + std::string(f);
    if (!off.empty()) {
      const std::string tunables = env_value(env, "GLIBC_TUNABLES");
      std::string value;
      if (tunables.find("glibc.cpu.hwcaps=") != std::string::npos) {
        // Append to the user's own hwcaps list (tunables are ':'-separated).
        std::vector<std::string> parts = split_fields(tunables, ':');
        for (auto& p : parts)
          if (p.rfind("glibc.cpu.hwcaps=", 0) == 0) p += "," + off;
        for (std::size_t i = 0; i < parts.size(); ++i) value += (i ? ":" : "") + parts[i];
      } else {
        value = (tunables.empty() ? "" : tunables + ":") + "glibc.cpu.hwcaps=" + off;
      }
      s.env.push_back("GLIBC_TUNABLES=" + value);
      append(s.steered, "glibc CPU features as timed (glibc.cpu.hwcaps=" + off + ")");
    }
    if (active.count("AVX512F") || active.count("AVX512VL") || active.count("AVX512BW")) {
      const auto* memcpy = find(rows, "glibc", "memcpy");
      append(s.not_steered, "glibc: timed string functions may use AVX-512" +
                                (memcpy ? " (memcpy " + store::get_str(memcpy->choice) + ")" : std::string()) +
                                ", which Valgrind 3.19 lacks");
    }
  }

  if (find(rows, "fftw", "loaded")) append(s.not_steered, kFftwAdvice);

  if (!differ.empty())
    append(s.not_steered, std::to_string(differ.size()) + " rank(s) chose otherwise than rank " + std::to_string(rank) +
                              ", whose choice was steered to");
  return s;
}

void check_counted_dispatch(const std::map<std::int64_t, CountedRank>& ranks, Steering& s) {
  std::set<std::string> cores;
  bool fftw = false, openblas = false;
  for (const auto& [rank, cr] : ranks) {
    for (const auto& row : cr.counts) {
      if (row.module_id < 0 || static_cast<std::size_t>(row.module_id) >= cr.names.size()) continue;
      const std::string& module = cr.names[static_cast<std::size_t>(row.module_id)];
      if (module.find("libfftw3") != std::string::npos) fftw = true;
      if (module.find("openblas") == std::string::npos && module.find("libblas") == std::string::npos) continue;
      openblas = true;
      if (row.function_id < 0 || static_cast<std::size_t>(row.function_id) >= cr.names.size()) continue;
      const double flops = row.flops_fp64_scalar + row.flops_fp64_v128 + row.flops_fp64_v256 + row.flops_fp32_scalar +
                           row.flops_fp32_v128 + row.flops_fp32_v256;
      if (flops <= 0) continue;
      const std::string core = kernel_core(cr.names[static_cast<std::size_t>(row.function_id)]);
      if (!core.empty()) cores.insert(core);
    }
  }
  std::string counted;
  for (const auto& c : cores) counted += (counted.empty() ? "" : ", ") + c;
  if (!s.timed_openblas_core.empty()) {
    const std::string timed = upper(s.timed_openblas_core);
    cores.erase(timed);
    if (!cores.empty() && s.not_steered.find("OpenBLAS") == std::string::npos) {
      std::string other;
      for (const auto& c : cores) other += (other.empty() ? "" : ", ") + c;
      append(s.not_steered, "OpenBLAS: timed core " + s.timed_openblas_core + ", counted kernels of " + other);
    }
  } else if (openblas && !counted.empty()) {
    append(s.not_steered, "OpenBLAS: counted " + counted + " kernels; the timed run's core was not observed" +
                              std::string(s.observed ? "" : " (no tracer)"));
  }
  if (fftw && s.not_steered.find("FFTW") == std::string::npos) append(s.not_steered, kFftwAdvice);
}

void record_steering(std::map<std::int64_t, CountedRank>& ranks, const Steering& s) {
  auto fit = [](char* dst, std::size_t n, const std::string& text) {
    const std::string t = text.size() < n ? text : text.substr(0, n - 4) + "...";
    std::memset(dst, 0, n);
    std::memcpy(dst, t.data(), t.size());
  };
  for (auto& [rank, cr] : ranks) {
    fit(cr.info.steered, sizeof cr.info.steered, s.steered);
    fit(cr.info.not_steered, sizeof cr.info.not_steered, s.not_steered);
  }
}

}  // namespace rtrace::counts
