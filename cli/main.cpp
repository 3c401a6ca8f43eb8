// rtrace: one binary, subcommands dispatched to the component libraries.
#include "crash_guard.hpp"
#include "subcommands.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[maybe_unused]] int not_built(const char* name, const char* component) {
  std::fprintf(stderr, "rtrace %s: not available in this build (component `%s` was not built)\n", name, component);
  return 2;
}

#ifndef RTRACE_HAVE_RUN
int run_missing(int, char**) { return not_built("run", "launcher"); }
#endif
#ifndef RTRACE_HAVE_ERT
int ert_missing(int, char**) { return not_built("ert", "ert"); }
#endif
#ifndef RTRACE_HAVE_ANALYZE
int analyze_missing(int, char**) { return not_built("analyze", "analysis"); }
#endif
#ifndef RTRACE_HAVE_COUNTS
int counts_missing(int, char**) { return not_built("counts", "counts"); }
#endif

struct Subcommand {
  const char* name;
  int (*main)(int, char**);
  const char* help;
  // Reads files the user hands it: runs in a child so a libhdf5 crash on a
  // damaged file becomes one line (crash_guard.hpp).
  bool guarded = false;
};

const Subcommand kSubcommands[] = {
#ifdef RTRACE_HAVE_RUN
    {"run", rtrace::cli::run_main, "sweep an application over concurrency levels (default)"},
#else
    {"run", run_missing, "sweep an application over concurrency levels (default)"},
#endif
#ifdef RTRACE_HAVE_ERT
    {"ert", rtrace::cli::ert_main, "measure the empirical roofline of a partition"},
#else
    {"ert", ert_missing, "measure the empirical roofline of a partition"},
#endif
#ifdef RTRACE_HAVE_ANALYZE
    {"analyze", rtrace::cli::analyze_main, "roofline scaling trajectories and diagnosis", true},
#else
    {"analyze", analyze_missing, "roofline scaling trajectories and diagnosis"},
#endif
#ifdef RTRACE_HAVE_COUNTS
    {"counts", rtrace::cli::counts_main, "count FLOPs and bytes per cache level of one run (Valgrind)"},
#else
    {"counts", counts_missing, "count FLOPs and bytes per cache level of one run (Valgrind)"},
#endif
    {"validate", rtrace::cli::validate_main, "check a file against the rtrace schema"},
    {"merge", rtrace::cli::merge_main, "merge point/rank part files into one run file", true},
    {"pack", rtrace::cli::pack_main, "copy a run and its point files into one self-contained file", true},
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: rtrace [run] --sweep AXIS=SPEC [options] -- APP [ARGS...]\n"
               "       rtrace <subcommand> [options]\n\nsubcommands:\n");
  for (const auto& s : kSubcommands) std::fprintf(out, "  %-9s %s\n", s.name, s.help);
  std::fprintf(out, "\n`rtrace <subcommand> --help` describes each one's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2) {
    const std::string first = argv[1];
    if (first == "--version" || first == "version") {
      std::printf("rtrace %s\n", RTRACE_VERSION_STRING);
      return 0;
    }
    if (first == "help" || ((first == "--help" || first == "-h") && argc == 2)) {
      usage(stdout);
      return 0;
    }
    for (const auto& s : kSubcommands) {
      if (first == s.name) {
        std::string name = std::string("rtrace ") + s.name;
        std::vector<char*> args;
        args.push_back(name.data());
        for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
        args.push_back(nullptr);
        if (s.guarded) return rtrace::cli::run_crash_guarded(name.c_str(), s.main, static_cast<int>(args.size() - 1), args.data());
        return s.main(static_cast<int>(args.size() - 1), args.data());
      }
    }
    if (first.empty() || first[0] != '-') {
      // A path is an app typed without `--` (`rtrace ./app`): say where it goes.
      if (first.find('/') != std::string::npos)
        std::fprintf(stderr, "rtrace: unknown subcommand `%s`: to run an app, put it after `--`, as in "
                             "`rtrace [options] -- %s` (try `rtrace --help`)\n", first.c_str(), first.c_str());
      else
        std::fprintf(stderr, "rtrace: unknown subcommand `%s` (try `rtrace --help`)\n", first.c_str());
      return 2;
    }
  }
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  // `run` is the default subcommand: `rtrace --sweep ... -- app`.
  std::string name = "rtrace run";
  std::vector<char*> args;
  args.push_back(name.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  return kSubcommands[0].main(static_cast<int>(args.size() - 1), args.data());
}
