// `rtrace [run]`: maps the launcher's exceptions to one-line messages and exit codes.
#include "rtrace/launcher/options.hpp"
#include "rtrace/launcher/sweep.hpp"
#include "rtrace/launcher/sweep_runner.hpp"
#include "rtrace/store/hdf5.hpp"

#include "subcommands.hpp"

#include <cstdio>
#include <exception>

namespace rtrace::cli {

int run_main(int argc, char** argv) {
  using namespace rtrace::launcher;
  std::vector<std::string> rtrace_argv{"rtrace"};
  for (int i = 1; i < argc; ++i) rtrace_argv.emplace_back(argv[i]);
  try {
    RunOptions opts = parse_run_options(argc, argv);
    if (opts.help) {
      std::fputs(opts.help_text.c_str(), stdout);
      return 0;
    }
    return run_sweep(std::move(opts), rtrace_argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "rtrace run: %s\n", e.what());
  } catch (const SweepSpecError& e) {
    std::fprintf(stderr, "rtrace run: %s\n", e.what());
  } catch (const rtrace::store::Error& e) {
    std::fprintf(stderr, "rtrace run: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtrace run: %s\n", e.what());
  }
  return kExitCannotStart;
}

}  // namespace rtrace::cli
