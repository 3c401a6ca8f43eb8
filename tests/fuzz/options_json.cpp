// Fuzz target: restoring a sweep's options from the options JSON stored in a
// run file (`rtrace run --resume`), i.e. JSON read from an untrusted file.
#include "fuzz_util.hpp"

#include "rtrace/launcher/options.hpp"

#include <exception>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string json(reinterpret_cast<const char*>(data), size);
  rtrace::launcher::RunOptions o;
  try {
    o.fill_from_json(json);
    (void)o.to_json();
  } catch (const std::exception& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
  }
  return 0;
}
