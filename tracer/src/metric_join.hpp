// Metrics mode: which profiled range belongs to which kernel launch.
//
// The Range Profiler (auto ranges, kernel replay) gives one range per launch
// it profiled, in launch order, per context, each named after its kernel. A
// launch that does not become a range (a CUDA graph node, a library's
// internal kernel, a launch beyond the range buffer) must not shift every
// later kernel's FLOPs and bytes onto the wrong kernel, so ranges are matched
// to launches by context, order AND name: range j of a context goes to the
// next launch of that context, at or after the previous match, whose kernel
// has the range's name. Launches skipped on the way get no metrics and are
// counted; a range whose name matches no later launch is dropped and counted.
#pragma once

#include "rtrace/store/records.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rtrace::tracer {

struct LaunchKey {
  std::string raw_name;        // as CUPTI's activity record names it (usually mangled)
  std::string name;            // demangled
  std::uint32_t context_id = 0;
  bool from_graph = false;     // launched as a CUDA graph node
};

struct MetricRange {
  std::uint32_t context_id = 0;
  std::string name;            // the range name CUPTI gives (the kernel's)
  store::KernelRow metrics{};  // metric columns only
};

struct RangeJoin {
  std::vector<std::ptrdiff_t> range_of_launch;  // per launch: index into the ranges, -1 = no metrics
  std::int64_t launches_without_range = 0;      // skipped launches (graph ones included)
  std::int64_t graph_launches_without_range = 0;
  std::int64_t launches_after_last_range = 0;   // past the last range of their context (buffer full, no profiler)
  std::int64_t ranges_without_launch = 0;       // dropped: no launch of their name left in their context
  std::vector<std::string> examples;            // a few "range `x` matched no launch" lines for the log
};

// True when a range named `range_name` is a launch of the kernel with
// activity-record name `raw` (demangled: `demangled`): equal raw or
// demangled names, or equal function names without the parameter list.
bool same_kernel(const std::string& range_name, const std::string& raw, const std::string& demangled);

// `launches` in launch order (correlation id), `ranges` in the order the
// profiler recorded them per context.
RangeJoin join_ranges(const std::vector<LaunchKey>& launches, const std::vector<MetricRange>& ranges);

std::string demangle_kernel_name(const std::string& name);

}  // namespace rtrace::tracer
