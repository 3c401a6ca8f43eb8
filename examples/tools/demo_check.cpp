// rtrace-demo-check: compares what the tracer measured for the demo kernels
// with what rtrace-demo-cuda says they should do (tests/gpu/validate.sh).
//
//   rtrace-demo-check kernels FILE.h5 --expect EXPECT.tsv [--flops-tol 0.01]
//                     [--dram-tol 0.10] [--dram-check SYMBOL]... [--markdown OUT.md]
//   rtrace-demo-check ceilings FILE.h5 [--markdown OUT.md]
//   rtrace-demo-check points RUN.h5
//   rtrace-demo-check kernel-time RUN.h5 SYMBOL
//   rtrace-demo-check point-kernels RUN.h5 SYMBOL
//   rtrace-demo-check ert-sms RUN.h5
//   rtrace-demo-check ceiling-values RUN.h5
//
// FILE is a tracer file (/ranks/rNNNNNN) or a run file (/points/*/ranks/*); for
// `ceilings`, an ERT file (/ert) or a run file (each point's ceilings).
// `points` prints one tab-separated line per planned point: id, label, status,
// exit code, SMs requested / achieved, partition method, wall seconds, and the
// demo's result check read from the point's captured stdout (ok, FAILED or
// none): validate.sh judges from the file, not from rtrace's console.
// The expectations' 7th column names the counter the FLOPs are compared with:
// fp64 (default), fp32, fp16, tensor (2 x tensor_ops: one math op per
// multiply-accumulate, docs/tracer.md), or tensor-fp16 / tensor-fp64 (2 x the
// ops of that source type alone, tensor_ops_fp16 / _fp64: a DMMA kernel whose
// ops landed in another type's column fails).
// `point-kernels` prints per complete point: id, the SMs granted, launches of
// SYMBOL traced (rows with a timeline) and their summed seconds, launches with
// metrics, their FLOPs (fp64 + fp32 + fp16 + 2 x tensor) and DRAM bytes, and
// the metrics provenance(s) ("-" when none): a point without such kernels is a
// line of zeros, never a missing line. `ert-sms` prints per point the SMs
// granted, the SMs the point's ERT measured (/ert/sms_achieved of the file its
// ceilings came from; -1 when unknown) and that file. `ceiling-values` prints
// per point and ceiling: id, SMs granted, name, value, min, max, unreliable.
// Exit: 0 every exact check within tolerance, 1 a check failed, 2 bad usage or
// unreadable input, 3 no kernel metrics in the file.
#include "rtrace/store/run_file.hpp"

#include <cxxabi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace rtrace::store;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

// Per kernel name, summed over launches and ranks.
struct KernelTotals {
  long long launches = 0, with_metrics = 0;
  double flops_fp64 = 0, flops_fp32 = 0, flops_fp16 = 0, tensor_ops = 0, dram_bytes = 0, seconds = 0;
  double tensor_fp16 = 0, tensor_fp64 = 0;  // by source type
};

// NaN (not measured on this chip) counts as 0 in a sum over launches.
double finite_or_zero(double v) { return std::isnan(v) ? 0.0 : v; }

void collect_rank(const Group& rank_group, std::map<std::string, KernelTotals>& out) {
  const RankRecords rec = read_rank(rank_group);
  for (const KernelRow& k : rec.kernels) {
    const std::string name = k.name_id >= 0 && static_cast<std::size_t>(k.name_id) < rec.names.size()
                                 ? demangle(rec.names[static_cast<std::size_t>(k.name_id)])
                                 : "?";
    KernelTotals& t = out[name];
    ++t.launches;
    t.seconds += double(k.end_ns - k.start_ns) * 1e-9;
    if (!k.has_metrics) continue;
    ++t.with_metrics;
    t.flops_fp64 += finite_or_zero(k.flops_fp64);
    t.flops_fp32 += finite_or_zero(k.flops_fp32);
    t.flops_fp16 += finite_or_zero(k.flops_fp16);
    t.tensor_ops += finite_or_zero(k.tensor_ops);
    t.tensor_fp16 += finite_or_zero(k.tensor_ops_fp16);
    t.tensor_fp64 += finite_or_zero(k.tensor_ops_fp64);
    t.dram_bytes += k.bytes_dram_read + k.bytes_dram_write;
  }
}

std::map<std::string, KernelTotals> collect(const File& f) {
  std::map<std::string, KernelTotals> out;
  const Group& root = f.root();
  auto each_rank = [&](const Group& ranks) {
    for (const auto& r : ranks.children()) collect_rank(ranks.open_group(r), out);
  };
  if (root.exists("ranks")) each_rank(root.open_group("ranks"));
  if (root.exists("points")) {
    const Group points = root.open_group("points");
    for (const auto& p : points.children()) {
      const Group point = points.open_group(p);
      if (point.exists("ranks")) each_rank(point.open_group("ranks"));
    }
  }
  return out;
}

struct Expectation {
  std::string symbol, region;
  long long launches = 0;
  double flops = 0;
  bool exact = false;
  double dram = 0;
  std::string precision = "fp64";
};

// The measured FLOPs an expectation is compared with.
double measured_flops(const KernelTotals& t, const std::string& precision) {
  if (precision == "fp32") return t.flops_fp32;
  if (precision == "fp16") return t.flops_fp16;
  if (precision == "tensor") return 2.0 * t.tensor_ops;
  if (precision == "tensor-fp16") return 2.0 * t.tensor_fp16;
  if (precision == "tensor-fp64") return 2.0 * t.tensor_fp64;
  return t.flops_fp64;
}

std::vector<Expectation> read_expectations(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("--expect " + path + ": cannot read");
  std::vector<Expectation> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    Expectation e;
    int exact = 0;
    if (!std::getline(is, e.symbol, '\t') || !std::getline(is, e.region, '\t') ||
        !(is >> e.launches >> e.flops >> exact >> e.dram))
      throw UsageError(path + ":" + std::to_string(lineno) + ": expected 6 tab-separated fields");
    e.exact = exact != 0;
    std::string precision;
    if (is >> precision) e.precision = precision;
    if (e.precision != "fp64" && e.precision != "fp32" && e.precision != "fp16" && e.precision != "tensor" &&
        e.precision != "tensor-fp16" && e.precision != "tensor-fp64")
      throw UsageError(path + ":" + std::to_string(lineno) + ": precision `" + e.precision +
                       "`: expected fp64, fp32, fp16, tensor, tensor-fp16 or tensor-fp64");
    out.push_back(e);
  }
  if (out.empty()) throw UsageError(path + ": no expectations");
  return out;
}

std::string num(double v) {
  if (std::isnan(v)) return "n/a";
  char b[64];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

int cmd_kernels(const std::vector<std::string>& args) {
  std::string file, expect_path, markdown;
  double flops_tol = 0.01, dram_tol = 0.10;
  std::vector<std::string> dram_checks;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto val = [&]() -> std::string {
      if (i + 1 >= args.size()) throw UsageError(args[i] + ": missing value");
      return args[++i];
    };
    if (args[i] == "--expect") expect_path = val();
    else if (args[i] == "--flops-tol") flops_tol = std::stod(val());
    else if (args[i] == "--dram-tol") dram_tol = std::stod(val());
    else if (args[i] == "--dram-check") dram_checks.push_back(val());
    else if (args[i] == "--markdown") markdown = val();
    else if (file.empty() && args[i][0] != '-') file = args[i];
    else throw UsageError("unexpected argument `" + args[i] + "`");
  }
  if (file.empty() || expect_path.empty()) throw UsageError("kernels: need FILE.h5 and --expect EXPECT.tsv");
  const auto expectations = read_expectations(expect_path);
  const File f = File::open(file);
  const auto kernels = collect(f);

  std::ostringstream md;
  md << "| kernel | region | launches (metrics/expected) | counter | FLOPs analytic | measured | ratio | FLOP check "
        "| DRAM bytes compulsory | measured | ratio | DRAM check |\n"
     << "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  bool failed = false, any_metrics = false;
  for (const auto& e : expectations) {
    KernelTotals t;
    for (const auto& [name, k] : kernels)
      if (name.find(e.symbol) != std::string::npos) {
        t.launches += k.launches;
        t.with_metrics += k.with_metrics;
        t.flops_fp64 += k.flops_fp64;
        t.flops_fp32 += k.flops_fp32;
        t.flops_fp16 += k.flops_fp16;
        t.tensor_ops += k.tensor_ops;
        t.tensor_fp16 += k.tensor_fp16;
        t.tensor_fp64 += k.tensor_fp64;
        t.dram_bytes += k.dram_bytes;
      }
    any_metrics = any_metrics || t.with_metrics > 0;
    const bool complete = t.with_metrics == e.launches;
    const double measured = measured_flops(t, e.precision);
    const double fr = complete ? measured / e.flops : NAN;
    const double dr = complete ? t.dram_bytes / e.dram : NAN;
    std::string fverdict, dverdict = "info";
    if (!complete) {
      fverdict = "FAIL (" + std::to_string(t.with_metrics) + " of " + std::to_string(e.launches) + " launches measured)";
      failed = true;
    } else if (!e.exact) {
      fverdict = "info (not exactly countable)";
    } else if (std::fabs(fr - 1.0) <= flops_tol) {
      fverdict = "pass";
    } else {
      fverdict = "FAIL";
      failed = true;
    }
    for (const auto& s : dram_checks)
      if (s == e.symbol) {
        if (complete && std::fabs(dr - 1.0) <= dram_tol) dverdict = "pass";
        else {
          dverdict = "FAIL";
          failed = true;
        }
      }
    md << "| `" << e.symbol << "` | " << e.region << " | " << t.with_metrics << "/" << e.launches << " | "
       << e.precision << " | " << num(e.flops) << " | " << num(complete ? measured : NAN) << " | " << num(fr)
       << " | " << fverdict
       << " | " << num(e.dram) << " | " << num(complete ? t.dram_bytes : NAN) << " | " << num(dr) << " | "
       << dverdict << " |\n";
  }
  std::cout << md.str();
  if (!markdown.empty()) {
    std::ofstream out(markdown, std::ios::app);
    out << md.str();
    if (!out) throw UsageError("--markdown " + markdown + ": write failed");
  }
  if (!any_metrics) {
    std::fprintf(stderr, "rtrace-demo-check: %s has no kernel metrics (was the tracer in cuda-metrics mode?)\n",
                 file.c_str());
    return 3;
  }
  return failed ? 1 : 0;
}

int cmd_ceilings(const std::vector<std::string>& args) {
  std::string file, markdown;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--markdown" && i + 1 < args.size()) markdown = args[++i];
    else if (file.empty() && args[i][0] != '-') file = args[i];
    else throw UsageError("unexpected argument `" + args[i] + "`");
  }
  if (file.empty()) throw UsageError("ceilings: need FILE.h5");
  const File f = File::open(file);
  std::ostringstream md;
  auto table = [&](const std::string& label, const Group& g) {
    md << "\n" << label << "\n\n| ceiling | value | unit | min | max | repeats |\n|---|---|---|---|---|---|\n";
    for (const CeilingRow& c : read_ceilings(g))
      md << "| " << c.name << " | " << num(c.value) << " | " << c.unit << " | " << num(c.min) << " | " << num(c.max)
         << " | " << c.repeats << " |\n";
  };
  if (f.root().exists("ert")) {
    const Group ert = f.root().open_group("ert");
    std::string label = "ERT " + file;
    if (ert.has_attr("sms_requested"))
      label += " (SMs requested " + std::to_string(ert.attr_int("sms_requested")) + ", achieved " +
               std::to_string(ert.has_attr("sms_achieved") ? ert.attr_int("sms_achieved") : -1) + ")";
    table(label, ert);
  } else if (f.root().exists("points")) {
    const Group points = f.root().open_group("points");
    for (const auto& p : points.children()) table("point " + p, points.open_group(p));
  } else {
    throw UsageError(file + ": neither an ERT file (/ert) nor a run file (/points)");
  }
  std::cout << md.str();
  if (!markdown.empty()) std::ofstream(markdown, std::ios::app) << md.str();
  return 0;
}

// The SMs a point was granted: the row's sms_granted (schema 1.6), else, in
// older files, the request.
std::int32_t sms_granted(const SweepPointRow& p) { return p.sms_granted > 0 ? p.sms_granted : p.sms_requested; }

int cmd_points(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].empty() || args[0][0] == '-') throw UsageError("points: need RUN.h5");
  const File f = File::open(args[0]);
  const Group& root = f.root();
  // sms_granted: what the partition mechanism granted; files without that
  // field record only the request, which is then what was asked to hold.
  std::cout << "# point_id\tlabel\tstatus\texit_code\tsms_requested\tsms_granted\tsms_achieved\tpartition_method\twall_s"
               "\tcheck\n";
  for (const SweepPointRow& p : read_points(f)) {
    std::string check = "none";
    const std::string group = point_group_name(p.point_id);
    if (p.complete && root.exists("points") && root.open_group("points").exists(group)) {
      const CapturedOutput out = read_output(root.open_group("points").open_group(group));
      // The demos print `check=ok` per kernel and `check FAILED` (stderr) on a wrong result.
      if (out.stderr_tail.find("check FAILED") != std::string::npos ||
          out.stdout_tail.find("check FAILED") != std::string::npos)
        check = "FAILED";
      else if (out.stdout_tail.find("check=ok") != std::string::npos)
        check = "ok";
    }
    char wall[32];
    std::snprintf(wall, sizeof wall, "%.6f", p.wall_s);
    const std::string method = get_str(p.partition_method);
    std::cout << p.point_id << '\t' << get_str(p.label) << '\t' << get_str(p.status) << '\t' << p.exit_code << '\t'
              << p.sms_requested << '\t' << sms_granted(p) << '\t' << p.sms_achieved << '\t'
              << (method.empty() ? "-" : method) << '\t' << wall << '\t' << check << '\n';
  }
  return 0;
}

// Per point: the summed duration and count of the kernels whose name contains SYMBOL.
int cmd_kernel_time(const std::vector<std::string>& args) {
  if (args.size() != 2) throw UsageError("kernel-time: need RUN.h5 SYMBOL");
  const File f = File::open(args[0]);
  const Group& root = f.root();
  if (!root.exists("points")) throw UsageError(args[0] + ": not a run file (no /points)");
  const Group points = root.open_group("points");
  std::cout << "# point_id\tseconds\tlaunches\n";
  for (const SweepPointRow& p : read_points(f)) {
    const std::string group = point_group_name(p.point_id);
    if (!p.complete || !points.exists(group)) continue;
    const Group point = points.open_group(group);
    if (!point.exists("ranks")) continue;
    const Group ranks = point.open_group("ranks");
    double seconds = 0;
    long long launches = 0;
    for (const auto& r : ranks.children()) {
      const RankRecords rec = read_rank(ranks.open_group(r));
      for (const KernelRow& k : rec.kernels) {
        if (k.name_id < 0 || static_cast<std::size_t>(k.name_id) >= rec.names.size()) continue;
        if (demangle(rec.names[static_cast<std::size_t>(k.name_id)]).find(args[1]) == std::string::npos) continue;
        if (k.end_ns <= k.start_ns) continue;  // a metrics run's row: no timeline (sms sweeps merge them in)
        seconds += double(k.end_ns - k.start_ns) * 1e-9;
        ++launches;
      }
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9f", seconds);
    std::cout << p.point_id << '\t' << buf << '\t' << launches << '\n';
  }
  return 0;
}

// Per point: traced launches and time, launches with metrics and their counts.
int cmd_point_kernels(const std::vector<std::string>& args) {
  if (args.size() != 2) throw UsageError("point-kernels: need RUN.h5 SYMBOL");
  const File f = File::open(args[0]);
  const Group& root = f.root();
  if (!root.exists("points")) throw UsageError(args[0] + ": not a run file (no /points)");
  const Group points = root.open_group("points");
  std::cout << "# point_id\tsms_granted\ttraced_launches\tseconds\tmetric_launches\tflops\tdram_bytes\tprovenance\n";
  for (const SweepPointRow& p : read_points(f)) {
    const std::string group = point_group_name(p.point_id);
    if (!p.complete || !points.exists(group)) continue;
    const Group point = points.open_group(group);
    long long traced = 0, counted = 0;
    double seconds = 0, flops = 0, dram = 0;
    std::string provenance;
    if (point.exists("ranks")) {
      const Group ranks = point.open_group("ranks");
      for (const auto& r : ranks.children()) {
        const RankRecords rec = read_rank(ranks.open_group(r));
        for (const KernelRow& k : rec.kernels) {
          if (k.name_id < 0 || static_cast<std::size_t>(k.name_id) >= rec.names.size()) continue;
          if (demangle(rec.names[static_cast<std::size_t>(k.name_id)]).find(args[1]) == std::string::npos) continue;
          if (k.end_ns > k.start_ns) {
            ++traced;
            seconds += double(k.end_ns - k.start_ns) * 1e-9;
          }
          if (!k.has_metrics) continue;
          ++counted;
          flops += finite_or_zero(k.flops_fp64) + finite_or_zero(k.flops_fp32) + finite_or_zero(k.flops_fp16) +
                   2 * finite_or_zero(k.tensor_ops);
          dram += finite_or_zero(k.bytes_dram_read) + finite_or_zero(k.bytes_dram_write);
          const std::string pv = get_str(k.metrics_provenance);
          if (!pv.empty() && provenance.find(pv) == std::string::npos)
            provenance += (provenance.empty() ? "" : "+") + pv;
        }
      }
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.9f\t%lld\t%.6g\t%.6g", seconds, counted, flops, dram);
    std::cout << p.point_id << '\t' << sms_granted(p) << '\t' << traced << '\t' << buf << '\t'
              << (provenance.empty() ? "-" : provenance) << '\n';
  }
  return 0;
}

// Per point: the SMs its ERT measured, from the file its ceilings came from.
int cmd_ert_sms(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("ert-sms: need RUN.h5");
  const File f = File::open(args[0]);
  const Group& root = f.root();
  if (!root.exists("points")) throw UsageError(args[0] + ": not a run file (no /points)");
  const Group points = root.open_group("points");
  std::cout << "# point_id\tsms_granted\tert_sms_achieved\tceilings_source\n";
  for (const SweepPointRow& p : read_points(f)) {
    const std::string group = point_group_name(p.point_id);
    if (!p.complete || !points.exists(group)) continue;
    const Group point = points.open_group(group);
    std::string source = point.has_attr("ceilings_source") ? point.attr_string("ceilings_source") : "";
    long long achieved = -1;
    if (!source.empty()) {
      try {
        const File ert = File::open(source.substr(0, source.find(':')));
        if (ert.root().exists("ert") && ert.root().open_group("ert").has_attr("sms_achieved"))
          achieved = ert.root().open_group("ert").attr_int("sms_achieved");
      } catch (const std::exception&) {
      }
    }
    std::cout << p.point_id << '\t' << sms_granted(p) << '\t' << achieved << '\t' << (source.empty() ? "-" : source)
              << '\n';
  }
  return 0;
}

// Per point and ceiling: the values, for checks across partitions.
int cmd_ceiling_values(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("ceiling-values: need RUN.h5");
  const File f = File::open(args[0]);
  const Group& root = f.root();
  if (!root.exists("points")) throw UsageError(args[0] + ": not a run file (no /points)");
  const Group points = root.open_group("points");
  std::cout << "# point_id\tsms_granted\tname\tvalue\tmin\tmax\tunreliable\n";
  for (const SweepPointRow& p : read_points(f)) {
    const std::string group = point_group_name(p.point_id);
    if (!p.complete || !points.exists(group) || !points.open_group(group).exists("ceilings")) continue;
    for (const CeilingRow& c : read_ceilings(points.open_group(group))) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "%.6g\t%.6g\t%.6g\t%d", c.value, c.min, c.max, c.unreliable > 0 ? 1 : 0);
      std::cout << p.point_id << '\t' << sms_granted(p) << '\t' << get_str(c.name) << '\t' << buf << '\n';
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty())
      throw UsageError(
          "usage: rtrace-demo-check kernels|ceilings|points|kernel-time|point-kernels|ert-sms|ceiling-values FILE.h5 ...");
    const std::string cmd = args.front();
    args.erase(args.begin());
    if (cmd == "kernels") return cmd_kernels(args);
    if (cmd == "ceilings") return cmd_ceilings(args);
    if (cmd == "points") return cmd_points(args);
    if (cmd == "kernel-time") return cmd_kernel_time(args);
    if (cmd == "point-kernels") return cmd_point_kernels(args);
    if (cmd == "ert-sms") return cmd_ert_sms(args);
    if (cmd == "ceiling-values") return cmd_ceiling_values(args);
    throw UsageError("unknown command `" + cmd +
                     "` (kernels, ceilings, points, kernel-time, point-kernels, ert-sms or ceiling-values)");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rtrace-demo-check: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtrace-demo-check: %s\n", e.what());
    return 2;
  }
}
