// Fuzz target: `rtrace run --ert FILE` importing ceilings from a (mutated)
// ert or run file, the launcher's only ceiling import. Bad files must throw
// a std::exception that becomes the point's one-line ceiling error.
#include "fuzz_util.hpp"

#include "rtrace/launcher/ceilings.hpp"

#include <exception>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const rtrace::fuzz::ScratchFile scratch("ert");
  if (!scratch.write(data, size)) return 0;
  rtrace::launcher::Partition partition;
  partition.threads = 1;
  std::string detail;
  try {
    (void)rtrace::launcher::read_ceilings_from(scratch.path(), partition, detail);
  } catch (const std::exception& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
  }
  return 0;
}
