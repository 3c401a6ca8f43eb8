#include "mpi_stats.hpp"

namespace rtrace::tracer {

const char* mpi_function_name(MpiFn f) noexcept {
  static const char* const kNames[] = {
#define RTRACE_MPI_NAME(name) "MPI_" #name,
      RTRACE_MPI_FUNCTIONS(RTRACE_MPI_NAME)
#undef RTRACE_MPI_NAME
  };
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<int>(MpiFn::Count), "one name per MpiFn");
  int i = static_cast<int>(f);
  return (i >= 0 && i < static_cast<int>(MpiFn::Count)) ? kNames[i] : "MPI_?";
}

std::vector<store::MpiRow> MpiStats::rows(NameTable& names) const {
  std::vector<store::MpiRow> out;
  for (int i = 0; i < static_cast<int>(MpiFn::Count); ++i) {
    const Slot& s = slots_[i];
    const std::int64_t open = s.open.load(std::memory_order_relaxed);
    std::int64_t calls = s.calls.load(std::memory_order_relaxed) + open;
    if (calls == 0) continue;
    store::MpiRow r{};
    r.name_id = names.id(mpi_function_name(static_cast<MpiFn>(i)));
    r.calls = calls;
    r.time_s = open > 0 ? store::kUnavailable : static_cast<double>(s.time_ns.load(std::memory_order_relaxed)) * 1e-9;
    r.bytes_sent = s.sent.load(std::memory_order_relaxed);
    r.bytes_received = s.received.load(std::memory_order_relaxed);
    out.push_back(r);
  }
  return out;
}

double MpiStats::total_time_s() const noexcept {
  std::int64_t ns = 0;
  for (const auto& s : slots_) ns += s.time_ns.load(std::memory_order_relaxed);
  return static_cast<double>(ns) * 1e-9;
}

void MpiStats::reset() noexcept {
  for (auto& s : slots_) {
    s.calls.store(0);
    s.time_ns.store(0);
    s.sent.store(0);
    s.received.store(0);
    s.open.store(0);
  }
}

}  // namespace rtrace::tracer
