// Fuzz target: the tracer's record decoding (the flat string-list encoding
// ranks send each other over MPI before the collective write). A truncated or
// lying buffer must throw std::runtime_error; decoded lists must re-encode to
// the bytes they came from.
#include "fuzz_util.hpp"

#include "serialize.hpp"

#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::size_t pos = 0;
  try {
    while (pos < in.size()) {
      const std::size_t start = pos;
      const auto list = rtrace::tracer::unpack_strings(in, pos);
      if (pos <= start || pos > in.size()) __builtin_trap();
      std::string again;
      rtrace::tracer::pack_strings(list, again);
      if (again != in.substr(start, pos - start)) __builtin_trap();
    }
  } catch (const std::runtime_error&) {
    if (pos > in.size()) __builtin_trap();
  }
  return 0;
}
