// `rtrace pack RUN -o FILE`: one self-contained file from a run in the
// point-file layout (for mailing or archiving); readers take either form.
#include "../../cli/subcommands.hpp"
#include "rtrace/store/run_file.hpp"

#include <cstdio>
#include <string>

namespace rtrace::cli {

int pack_main(int argc, char** argv) {
  std::string run, output;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: rtrace pack RUN -o FILE\n\n"
          "Writes FILE as one self-contained run file: the index RUN and every point file\n"
          "it links (RUN.d/pNNNNNN.h5) copied into one HDF5 file, as schema 1.0-1.5 laid it out.\n"
          "rtrace and h5py read either form the same way. FILE must not exist.\n"
          "Exit status: 0 written, 2 bad usage or an unreadable run (nothing written).\n");
      return 0;
    }
    if (a == "-o" || a == "--output") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rtrace pack: %s needs a file name\n", a.c_str());
        return 2;
      }
      output = argv[++i];
    } else if (a.rfind("--output=", 0) == 0) {
      output = a.substr(9);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "rtrace pack: unknown option `%s` (see `rtrace pack --help`)\n", a.c_str());
      return 2;
    } else if (run.empty()) {
      run = a;
    } else {
      std::fprintf(stderr, "rtrace pack: more than one run file given (`%s`, `%s`)\n", run.c_str(), a.c_str());
      return 2;
    }
  }
  if (run.empty()) {
    std::fprintf(stderr, "rtrace pack: no run file given (usage: rtrace pack RUN -o FILE)\n");
    return 2;
  }
  if (output.empty()) {
    std::fprintf(stderr, "rtrace pack: missing -o FILE (the packed output)\n");
    return 2;
  }
  try {
    store::pack_run(run, output);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rtrace pack: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace rtrace::cli
