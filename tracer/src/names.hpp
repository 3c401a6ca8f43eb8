// Interns names into the rank's `names` table (name_id -> string).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace rtrace::tracer {

class NameTable {
 public:
  std::int64_t id(const std::string& name);
  const std::vector<std::string>& names() const noexcept { return names_; }
  std::vector<std::string> take() { index_.clear(); return std::move(names_); }

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, std::int64_t> index_;
};

}  // namespace rtrace::tracer
