#include "metric_join.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

namespace rtrace::tracer {

std::string demangle_kernel_name(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && d ? std::string(d) : name;
  std::free(d);
  return out;
}

namespace {

// "void ns::k<int>(float*, int)" -> "void ns::k<int>": up to the first '('
// outside template brackets.
std::string without_parameters(const std::string& s) {
  int depth = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    else if (s[i] == '>' && depth > 0) --depth;
    else if (s[i] == '(' && depth == 0) return s.substr(0, i);
  }
  return s;
}

// The function name alone: no return type, no parameters ("ns::k<int>").
std::string function_name(const std::string& demangled) {
  std::string s = without_parameters(demangled);
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == '>') ++depth;
    else if (s[i] == '<' && depth > 0) --depth;
    else if (s[i] == ' ' && depth == 0) return s.substr(i + 1);
  }
  return s;
}

}  // namespace

bool same_kernel(const std::string& range_name, const std::string& raw, const std::string& demangled) {
  if (range_name == raw || range_name == demangled) return true;
  const std::string r = demangle_kernel_name(range_name);
  if (r == demangled) return true;
  const std::string a = function_name(r), b = function_name(demangled);
  return !a.empty() && a == b;
}

RangeJoin join_ranges(const std::vector<LaunchKey>& launches, const std::vector<MetricRange>& ranges) {
  RangeJoin out;
  out.range_of_launch.assign(launches.size(), -1);
  // Per context: its launches (positions into `launches`) and ranges, in order.
  std::map<std::uint32_t, std::vector<std::size_t>> launches_of, ranges_of;
  for (std::size_t i = 0; i < launches.size(); ++i) launches_of[launches[i].context_id].push_back(i);
  for (std::size_t j = 0; j < ranges.size(); ++j) ranges_of[ranges[j].context_id].push_back(j);
  for (const auto& [ctx, launch_positions] : launches_of) {
    // A plain reference: C++17 lambdas cannot capture a structured binding (clang refuses).
    const std::vector<std::size_t>& lpos = launch_positions;
    const auto rit = ranges_of.find(ctx);
    static const std::vector<std::size_t> kNone;
    const std::vector<std::size_t>& rpos = rit == ranges_of.end() ? kNone : rit->second;
    // Where each kernel name occurs among this context's launches (indices into lpos).
    std::unordered_map<std::string, std::vector<std::size_t>> by_name;
    for (std::size_t k = 0; k < lpos.size(); ++k) by_name[launches[lpos[k]].name].push_back(k);
    std::unordered_map<std::string, std::string> range_to_launch_name;  // resolved once per range name
    auto launch_name_of = [&](const std::string& range_name) -> const std::string* {
      auto it = range_to_launch_name.find(range_name);
      if (it == range_to_launch_name.end()) {
        std::string found;
        for (const auto& [name, ks] : by_name) {
          const LaunchKey& any = launches[lpos[ks.front()]];
          if (same_kernel(range_name, any.raw_name, any.name)) {
            found = name;
            break;
          }
        }
        it = range_to_launch_name.emplace(range_name, found).first;
      }
      return it->second.empty() ? nullptr : &it->second;
    };
    std::size_t next = 0;  // first launch (index into lpos) not yet passed
    for (std::size_t j : rpos) {
      const std::string* name = launch_name_of(ranges[j].name);
      std::size_t k = lpos.size();
      if (name) {
        const auto& ks = by_name[*name];
        auto at = std::lower_bound(ks.begin(), ks.end(), next);
        if (at != ks.end()) k = *at;
      }
      if (k == lpos.size()) {
        ++out.ranges_without_launch;
        if (out.examples.size() < 3)
          out.examples.push_back("range `" + ranges[j].name + "` (context " + std::to_string(ctx) +
                                 ") matched no later launch of that kernel");
        continue;
      }
      for (std::size_t s = next; s < k; ++s) {
        ++out.launches_without_range;
        if (launches[lpos[s]].from_graph) ++out.graph_launches_without_range;
      }
      out.range_of_launch[lpos[k]] = static_cast<std::ptrdiff_t>(j);
      next = k + 1;
    }
    if (!rpos.empty()) out.launches_after_last_range += static_cast<std::int64_t>(lpos.size() - next);
  }
  return out;
}

}  // namespace rtrace::tracer
