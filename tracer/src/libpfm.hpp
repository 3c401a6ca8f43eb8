// libpfm4, reached through dlopen (the tracer loads into every process of the
// app and must not fail to load where libpfm4 is missing): the core PMU's name
// and the perf_event encoding of an event name. Debian: libpfm4 (runtime),
// libpfm4-dev (headers, needed to build this part; without them the PMU path
// records "unavailable: built without libpfm4").
#pragma once

#include "pmu_events.hpp"

#include <string>

namespace rtrace::tracer {

class Libpfm final : public EventEncoder {
 public:
  // The process-wide instance, loaded and initialised once; nullptr when
  // libpfm4 cannot be used, with the reason in `why`. LIBPFM_FORCE_PMU=<name>
  // (libpfm4's own variable) makes it describe another CPU (tests).
  static Libpfm* get(std::string* why) noexcept;
  // libpfm4's name of the first core PMU it finds present ("skl", "amd64_fam19h_zen4"); "" when none.
  std::string core_pmu() const;
  bool encode(const std::string& name, PerfEncoding& out) override;
  // The library's reason for the last failed encode (for logs).
  const std::string& last_error() const noexcept { return last_error_; }

 private:
  Libpfm() = default;
  std::string last_error_;
};

}  // namespace rtrace::tracer
