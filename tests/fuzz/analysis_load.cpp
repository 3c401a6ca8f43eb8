// Fuzz target: `rtrace analyze` loading a (mutated) run file. Unusable input
// must be an analysis::InputError (or a store::Error), never a crash.
#include "fuzz_util.hpp"

#include "rtrace/analysis/dataset.hpp"
#include "rtrace/store/hdf5.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const rtrace::fuzz::ScratchFile scratch("analysis");
  if (!scratch.write(data, size)) return 0;
  try {
    (void)rtrace::analysis::load_run(scratch.path());
  } catch (const rtrace::analysis::InputError&) {
  } catch (const rtrace::store::Error&) {
  }
  return 0;
}
