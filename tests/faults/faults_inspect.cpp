// Reads a run file back through rtrace::store and prints what the fault tests
// compare, as JSON: the validation verdict, every planned point (complete,
// status, exit code, signal) and, for complete points, the captured stdout
// tail and the ranks that read back.
// usage: faults_inspect FILE
//        faults_inspect --set-root-attr FILE NAME VALUE   (makes e.g. a "newer schema" file)
#include "rtrace/store/run_file.hpp"
#include "rtrace/store/validate.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <exception>
#include <string>

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--set-root-attr") {
    try {
      auto f = rtrace::store::File::open(argv[2], rtrace::store::Access::ReadWrite);
      f.root().set_attr(argv[3], std::string(argv[4]));
      f.close();
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "faults_inspect: %s\n", e.what());
      return 1;
    }
  }
  if (argc != 2) {
    std::fprintf(stderr, "usage: faults_inspect FILE\n");
    return 2;
  }
  using namespace rtrace::store;
  nlohmann::json out;
  const ValidationReport v = validate_file(argv[1]);
  out["verdict"] = v.verdict == ValidationReport::Verdict::Valid     ? "valid"
                   : v.verdict == ValidationReport::Verdict::Invalid ? "invalid"
                                                                      : "unreadable";
  out["fatal"] = v.fatal;
  out["deviations"] = v.deviations;
  out["points"] = nlohmann::json::array();
  try {
    const File f = File::open(argv[1]);
    const Group points_group = f.root().exists("points") ? f.root().open_group("points") : Group{};
    for (const auto& row : read_points(f)) {
      nlohmann::json p;
      p["id"] = row.point_id;
      p["label"] = get_str(row.label);
      p["complete"] = row.complete != 0;
      p["status"] = get_str(row.status);
      p["exit_code"] = row.exit_code;
      p["signal"] = row.signal;
      if (row.complete) {
        // A complete point must read back whole: output and every rank.
        const Group g = points_group.open_group(point_group_name(row.point_id));
        const CapturedOutput o = read_output(g);
        p["stdout_tail"] = o.stdout_tail;
        p["stdout_bytes"] = o.stdout_bytes;
        p["stderr_tail"] = o.stderr_tail;
        const Group ranks = g.open_group("ranks");
        int n = 0;
        for (const auto& r : ranks.children()) {
          (void)read_rank(ranks.open_group(r));
          ++n;
        }
        p["ranks"] = n;
        p["log"] = g.has_attr("log") ? g.attr_strings("log") : std::vector<std::string>{};
      }
      out["points"].push_back(p);
    }
  } catch (const std::exception& e) {
    out["read_error"] = e.what();
  }
  std::puts(out.dump().c_str());
  return 0;
}
