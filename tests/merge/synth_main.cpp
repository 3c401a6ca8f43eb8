// rtrace-merge-synth: writes synthetic part files for merge tests and
// bench/merge_scale.sh.
//
//   rtrace-merge-synth trace DIR COUNT [--kernels K] [--memcpy K] [--regions K]
//       writes DIR/rank-<r>.h5 for r in 0..COUNT-1, one rank group each
//   rtrace-merge-synth ranks FILE COUNT [--kernels K] [--memcpy K] [--regions K] [--first R]
//       writes FILE as one trace file holding ranks R..R+COUNT-1 (R: 0; what the
//       tracer's collective ranks.h5 holds; bench/commit_scale.sh runs it as
//       the app, into $RTRACE_TRACE_DIR/ranks.h5)
//   rtrace-merge-synth run FILE POINTS COMPLETE_IDS [FAILED_IDS]
//       writes a run file of a threads=1..POINTS sweep with the listed
//       (comma-separated, "-" for none) points committed
//   rtrace-merge-synth ranks-sweep FILE R1,R2,...
//       writes a run file of a ranks=R1,R2,... sweep with every point
//       committed without rank groups (bench/ingest_scale.sh merges them in
//       with `rtrace merge --point`)
#include "synth.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

namespace {

int to_int(const std::string& s, const char* what) {
  char* end = nullptr;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 0 || v > 100000000) {
    std::fprintf(stderr, "rtrace-merge-synth: %s: expected a non-negative integer, got `%s`\n", what, s.c_str());
    std::exit(2);
  }
  return static_cast<int>(v);
}

std::vector<int> to_list(const std::string& s, const char* what) {
  std::vector<int> out;
  if (s == "-" || s.empty()) return out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(to_int(item, what));
  return out;
}

// With RTRACE_SYNTH_IO_LOG set, appends "<bytes this process wrote> <file size>"
// to it, so bench/commit_scale.sh can tell the app's writes from rtrace's.
void report_io(const std::string& file) {
  const char* log = std::getenv("RTRACE_SYNTH_IO_LOG");
  if (!log || !*log) return;
  long long written = -1;
  if (std::FILE* io = std::fopen("/proc/self/io", "r")) {
    char line[128];
    while (std::fgets(line, sizeof line, io))
      if (std::sscanf(line, "write_bytes: %lld", &written) == 1) break;
    std::fclose(io);
  }
  struct stat st {};
  const long long size = ::stat(file.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
  if (std::FILE* out = std::fopen(log, "a")) {
    std::fprintf(out, "%lld %lld\n", written, size);
    std::fclose(out);
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: rtrace-merge-synth trace DIR COUNT [--kernels K] [--memcpy K] [--regions K]\n"
               "       rtrace-merge-synth ranks FILE COUNT [--kernels K] [--memcpy K] [--regions K] [--first R]\n"
               "       rtrace-merge-synth run FILE POINTS COMPLETE_IDS [FAILED_IDS]\n"
               "       rtrace-merge-synth ranks-sweep FILE R1,R2,...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  try {
    if (a.size() >= 3 && (a[0] == "trace" || a[0] == "ranks")) {
      rtrace::synth::RankSpec spec;
      int first = 0;
      for (std::size_t i = 3; i + 1 < a.size(); i += 2) {
        if (a[i] == "--kernels") spec.kernels = to_int(a[i + 1], "--kernels");
        else if (a[i] == "--memcpy") spec.memcpys = to_int(a[i + 1], "--memcpy");
        else if (a[i] == "--regions") spec.regions = to_int(a[i + 1], "--regions");
        else if (a[i] == "--first" && a[0] == "ranks") first = to_int(a[i + 1], "--first");
        else return usage();
      }
      const int count = to_int(a[2], "COUNT");
      if (a[0] == "ranks") {
        std::vector<std::int64_t> ranks;
        for (int r = 0; r < count; ++r) ranks.push_back(first + r);
        rtrace::synth::write_trace(a[1], ranks, spec);
        report_io(a[1]);
        return 0;
      }
      ::mkdir(a[1].c_str(), 0755);
      for (int r = 0; r < count; ++r)
        rtrace::synth::write_trace(a[1] + "/rank-" + std::to_string(r) + ".h5", {r}, spec);
      return 0;
    }
    if (a.size() == 3 && a[0] == "ranks-sweep") {
      rtrace::synth::RunSpec spec;
      spec.ranks_axis = to_list(a[2], "R1,R2,...");
      if (spec.ranks_axis.empty()) return usage();
      spec.points = static_cast<int>(spec.ranks_axis.size());
      for (int p = 0; p < spec.points; ++p) spec.complete.push_back(p);
      spec.ranks_per_point = 0;
      rtrace::synth::write_run(a[1], spec);
      return 0;
    }
    if ((a.size() == 4 || a.size() == 5) && a[0] == "run") {
      rtrace::synth::RunSpec spec;
      spec.points = to_int(a[2], "POINTS");
      spec.complete = to_list(a[3], "COMPLETE_IDS");
      if (a.size() == 5) spec.failed = to_list(a[4], "FAILED_IDS");
      rtrace::synth::write_run(a[1], spec);
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtrace-merge-synth: %s\n", e.what());
    return 1;
  }
  return usage();
}
