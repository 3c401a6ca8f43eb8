// Fields of a separated list, empty ones kept ("a,,b" -> a, "", b): the
// geometry spec and the dispatch choices recorded by the tracer.
#pragma once

#include <string>
#include <vector>

namespace rtrace::counts {

inline std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

}  // namespace rtrace::counts
