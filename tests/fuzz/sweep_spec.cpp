// Fuzz target: the sweep-spec grammar (`--sweep AXIS=SPEC`, several axes,
// --zip, --repeat). Input: first byte = flags (bit 0: zip, bits 1-3: repeat
// 1..8), then one axis text per line.
#include "fuzz_util.hpp"

#include "rtrace/launcher/sweep.hpp"

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool zip = data[0] & 1;
  const int repeat = 1 + ((data[0] >> 1) & 7);
  std::vector<std::string> axes;
  std::string line;
  for (std::size_t pos = 1; pos < size && axes.size() < 8;) {
    pos = rtrace::fuzz::next_line(data, size, pos, line);
    axes.push_back(line);
  }
  using namespace rtrace::launcher;
  for (const auto& text : axes) {
    try {
      const SweepAxis axis = parse_sweep_axis(text);
      // What the parser promises: values and numbers agree, no empty axis.
      if (axis.values.empty()) __builtin_trap();
      if (!axis.numbers.empty() && axis.numbers.size() != axis.values.size()) __builtin_trap();
      if (axis.values.size() > kMaxSweepPoints) __builtin_trap();
    } catch (const SweepSpecError& e) {
      if (std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();  // one line
    }
  }
  try {
    const SweepPlan plan = make_sweep_plan(axes, zip, repeat);
    if (plan.points.size() > kMaxSweepPoints) __builtin_trap();
    (void)plan.describe();
    for (const auto& p : plan.points) (void)p.label();
  } catch (const SweepSpecError& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) __builtin_trap();
  }
  return 0;
}
