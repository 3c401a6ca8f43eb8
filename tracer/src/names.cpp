#include "names.hpp"

namespace rtrace::tracer {

std::int64_t NameTable::id(const std::string& name) {
  auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  auto id = static_cast<std::int64_t>(names_.size());
  names_.push_back(name);
  index_.emplace(name, id);
  return id;
}

}  // namespace rtrace::tracer
