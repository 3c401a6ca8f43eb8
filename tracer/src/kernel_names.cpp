#include "kernel_names.hpp"

#include <cstring>

#include "metric_join.hpp"

namespace rtrace::tracer {

std::shared_ptr<const KernelName> KernelNameCache::lookup(const char* raw) {
  if (!raw) {
    if (!unknown_) unknown_ = std::make_shared<const KernelName>(KernelName{"", "<unknown>"});
    return unknown_;
  }
  auto it = by_pointer_.find(raw);
  if (it != by_pointer_.end() && std::strcmp(it->second->raw.c_str(), raw) == 0) return it->second;
  ++demanglings_;
  auto name = std::make_shared<const KernelName>(KernelName{raw, demangle_kernel_name(raw)});
  by_pointer_[raw] = name;
  return name;
}

}  // namespace rtrace::tracer
