// `rtrace analyze`: the CLI entry point. Maps typed errors to one line + exit code.
#include "subcommands.hpp"

#include "rtrace/analysis/analyze.hpp"
#include "rtrace/analysis/compare.hpp"
#include "rtrace/analysis/output_guard.hpp"
#include "rtrace/analysis/report.hpp"

#include <rtrace/store/hdf5.hpp>

#include <boost/program_options.hpp>

#include <fstream>
#include <iostream>

namespace po = boost::program_options;

namespace rtrace::cli {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out;
  analysis::open_output_file(path, out);
  out << text;
  if (!out.flush()) throw analysis::InputError(path + ": write failed");
}

}  // namespace

int analyze_main(int argc, char** argv) {
  using namespace rtrace::analysis;
  AnalyzeOptions opt;
  Thresholds& th = opt.thresholds;
  double launch_floor_us = th.launch_floor_s * 1e6;
  std::string json_path, csv_dir, svg_dir, html_path, folded_dir;
  std::vector<std::string> inputs, pp_files;
  bool write = false, quiet = false;

  po::options_description visible("Usage: rtrace analyze RUN.h5 [options]\n       rtrace analyze A.h5 B.h5 ...   (runs side by side)\n       rtrace analyze --pp A.h5 B.h5 ...\nOptions");
  visible.add_options()
      ("help,h", "show this help")
      ("axis", po::value(&opt.axis), "concurrency axis of the trajectories: threads, ranks, nodes, sms (default: the first swept one that varies)")
      ("scaling", po::value(&opt.scaling)->default_value(opt.scaling), "strong, weak or auto (weak when a zipped axis grows with the concurrency)")
      ("json", po::value(&json_path), "write the analysis as JSON (schemas/analysis-v1.json)")
      ("csv", po::value(&csv_dir), "write points.csv, steps.csv, summary.csv into DIR")
      ("svg", po::value(&svg_dir), "write the charts as SVG files into DIR")
      ("html", po::value(&html_path), "write a self-contained HTML report")
      ("folded", po::value(&folded_dir), "write each configuration's sampled stacks as cNNN.folded (flamegraph.pl, inferno) and cNNN.speedscope.json into DIR")
      ("write", po::bool_switch(&write), "store the results under /analysis in the run file")
      ("pp", po::value(&pp_files)->multitoken(), "performance portability Phi across run files (one per platform)")
      ("quiet,q", po::bool_switch(&quiet), "no terminal table")
      ("ideal-tolerance", po::value(&th.ideal_tolerance)->default_value(th.ideal_tolerance), "a step is ideal when S/r >= 1 - this")
      ("superlinear-margin", po::value(&th.superlinear_margin)->default_value(th.superlinear_margin), "a step is superlinear when S/r > 1 + this")
      ("ai-drop", po::value(&th.ai_drop)->default_value(th.ai_drop), "tau: an AI ratio below 1 - tau is a cache-capacity loss")
      ("ai-rise", po::value(&th.ai_rise)->default_value(th.ai_rise), "an AI ratio above 1 + this counts as rising")
      ("on-ceiling", po::value(&th.on_ceiling)->default_value(th.on_ceiling), "efficiency at or above which a kernel sits on its ceiling")
      ("cause-min", po::value(&th.cause_min)->default_value(th.cause_min), "a cause must explain this much extra time (fraction) to be named")
      ("launch-floor-us", po::value(&launch_floor_us)->default_value(launch_floor_us), "GPU launches shorter than this (us) are launch-overhead bound")
      ("tail-efficiency", po::value(&th.tail_efficiency)->default_value(th.tail_efficiency), "last-wave fill below this is a tail effect")
      ("mpi-share-rise", po::value(&th.mpi_share_rise)->default_value(th.mpi_share_rise), "MPI share rising by this fraction of wall time is MPI evidence")
      ("load-share", po::value(&th.load_share)->default_value(th.load_share), "machine-load when other processes and steal took this share of a point's cores")
      ("work-change", po::value(&th.work_change)->default_value(th.work_change), "counted FLOPs changing by more than this between strong-scaling points: work-changed, no roofline verdict; growing with the concurrency within this: weak scaling found")
      ("headline-share", po::value(&th.headline_share)->default_value(th.headline_share), "a cause must explain this share of a step's lost time to be its headline");
  po::options_description hidden;
  hidden.add_options()("input", po::value(&inputs));
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add("input", -1);

  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << visible << "\n";
      return 0;
    }
    po::notify(vm);
    th.launch_floor_s = launch_floor_us * 1e-6;
    th.validate();

    // Every output is checked before anything is read or written: none may
    // replace an input, an HDF5 file or a run's points directory (issue 25).
    OutputGuard guard;
    for (const auto& f : inputs) guard.protect(f);
    for (const auto& f : pp_files) guard.protect(f);
    if (!json_path.empty()) guard.check_file("--json", json_path);
    if (!html_path.empty()) guard.check_file("--html", html_path);
    if (!csv_dir.empty()) guard.check_dir("--csv", csv_dir);
    if (!svg_dir.empty()) guard.check_dir("--svg", svg_dir);
    if (!folded_dir.empty()) guard.check_dir("--folded", folded_dir);

    if (!pp_files.empty()) {
      pp_files.insert(pp_files.end(), inputs.begin(), inputs.end());
      if (pp_files.size() < 2) throw InputError("--pp: expected at least two run files (one per platform)");
      std::vector<AnalysisResult> runs;
      for (const auto& f : pp_files) runs.push_back(analyze(load_run(f), opt));
      PortabilityResult pp = portability(runs);
      if (pp.kernels.empty())
        throw InputError("--pp: no kernel or region is common to all " + std::to_string(runs.size()) +
                         " files, so there is no portability to compute (to compare runs: rtrace analyze A.h5 B.h5)");
      if (!quiet) std::cout << render_portability_text(pp);
      if (!json_path.empty()) write_file(json_path, to_json(pp).dump(1) + "\n");
      return 0;
    }

    if (inputs.empty()) throw InputError("missing the run file (usage: rtrace analyze RUN.h5 [options]; --help)");
    if (inputs.size() > 1) {
      // Several runs: side by side per configuration.
      std::vector<AnalysisResult> runs;
      for (const auto& f : inputs) runs.push_back(analyze(load_run(f), opt));
      CompareResult cmp = compare_runs(runs);
      if (!quiet) std::cout << render_compare_text(cmp);
      if (!json_path.empty()) write_file(json_path, to_json(cmp).dump(1) + "\n");
      return 0;
    }
    AnalysisResult res = analyze(load_run(inputs.front()), opt);
    if (!quiet) std::cout << render_text(res);
    nlohmann::json doc;
    if (!json_path.empty() || write) doc = to_json(res);
    if (!json_path.empty()) write_file(json_path, doc.dump(1) + "\n");
    if (!csv_dir.empty()) write_csv(res, csv_dir);
    if (!folded_dir.empty()) write_folded(res, folded_dir);
    std::vector<SvgChart> charts;
    if (!svg_dir.empty() || !html_path.empty()) charts = render_svgs(res);
    if (!svg_dir.empty()) write_svgs(charts, svg_dir);
    if (!html_path.empty()) write_file(html_path, render_html(res, charts));
    if (write) write_back(res, doc);
    return 0;
  } catch (const po::error& e) {
    std::cerr << "rtrace analyze: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const InputError& e) {
    std::cerr << "rtrace analyze: " << e.what() << "\n";
    return 2;
  } catch (const store::Error& e) {
    std::cerr << "rtrace analyze: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rtrace analyze: internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace rtrace::cli
