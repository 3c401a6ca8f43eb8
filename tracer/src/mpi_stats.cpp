#include "mpi_stats.hpp"

namespace rtrace::tracer {

const char* mpi_function_name(MpiFn f) noexcept {
  static const char* const kNames[] = {
      "MPI_Init", "MPI_Init_thread", "MPI_Finalize",
      "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Wait", "MPI_Waitall", "MPI_Sendrecv",
      "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce", "MPI_Allgather", "MPI_Alltoall", "MPI_Barrier",
      "MPI_Gather", "MPI_Scatter",
      "MPI_Ssend", "MPI_Waitany", "MPI_Test", "MPI_Allgatherv", "MPI_Alltoallv", "MPI_Gatherv",
      "MPI_Scatterv", "MPI_Reduce_scatter"};
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
