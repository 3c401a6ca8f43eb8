// Fuzz target: the schema validator and the store's readers on a mutated
// HDF5 file (run, ert or trace). Bad files must come back as a verdict or a
// store::Error, never a crash.
#include "fuzz_util.hpp"

#include "rtrace/store/run_file.hpp"
#include "rtrace/store/validate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const rtrace::fuzz::ScratchFile scratch("run");
  if (!scratch.write(data, size)) return 0;
  using namespace rtrace::store;
  const ValidationReport report = validate_file(scratch.path());
  if (report.verdict == ValidationReport::Verdict::Unreadable && report.fatal.empty()) __builtin_trap();
  try {
    const File f = File::open(scratch.path());
    const Group& root = f.root();
    try { check_schema(f); } catch (const Error&) {}
    try { (void)read_run_metadata(root); } catch (const Error&) {}
    try { (void)read_machine(root); } catch (const Error&) {}
    try { (void)read_axes(f); } catch (const Error&) {}
    try { if (root.exists("ert")) (void)read_ceilings(root.open_group("ert")); } catch (const Error&) {}
    std::vector<SweepPointRow> points;
    try { points = read_points(f); } catch (const Error&) {}
    // Every point group and every rank group the file has, listed or not.
    for (const char* top : {"points", "ranks"}) {
      try {
        if (!root.exists(top) || !root.is_group(top)) continue;
        const Group parent = root.open_group(top);
        for (const auto& name : parent.children()) {
          try {
            if (!parent.is_group(name)) continue;
            const Group g = parent.open_group(name);
            if (std::string(top) == "ranks") {
              (void)read_rank(g);
              continue;
            }
            try { (void)read_ceilings(g); } catch (const Error&) {}
            try { (void)read_output(g); } catch (const Error&) {}
            if (g.exists("ranks") && g.is_group("ranks")) {
              const Group ranks = g.open_group("ranks");
              for (const auto& r : ranks.children()) {
                try { (void)read_rank(ranks.open_group(r)); } catch (const Error&) {}
              }
            }
          } catch (const Error&) {
          }
        }
      } catch (const Error&) {
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
