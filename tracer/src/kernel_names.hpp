// Kernel names of CUPTI activity records, demangled once per kernel.
//
// A kernel record's `name` is shared by every record of the same kernel
// (cupti_activity.h: "shared across all activity records representing the
// same kernel"), so names are cached by that pointer: one demangling and one
// copy per kernel, not two copies and a demangling per record (issue 31). The
// pointer is only a hint: a cached entry is used when its text still equals
// the record's (a module unloaded and another loaded could reuse the address).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>

namespace rtrace::tracer {

struct KernelName {
  std::string raw;        // as the activity record names it (usually mangled)
  std::string demangled;
};

class KernelNameCache {
 public:
  // The names of `raw` (nullptr: "<unknown>"); the same object for every
  // record of a kernel.
  std::shared_ptr<const KernelName> lookup(const char* raw);
  std::size_t demanglings() const noexcept { return demanglings_; }

 private:
  std::unordered_map<const char*, std::shared_ptr<const KernelName>> by_pointer_;
  std::shared_ptr<const KernelName> unknown_;
  std::size_t demanglings_ = 0;
};

}  // namespace rtrace::tracer
