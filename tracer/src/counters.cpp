#include "counters.hpp"

#include "libpfm.hpp"
#include "pmu_events.hpp"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

namespace rtrace::tracer {

namespace {

long perf_event_open(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
  return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

// The per-width FLOP events of the core PMU, named through libpfm4
// (pmu_events.hpp: Intel's FP_ARITH_INST_RETIRED; AMD's PMU has no precision
// split, so its regions keep hw_fp64_ops/hw_fp32_ops NaN). Looked up once.
struct FpEvent { PerfEncoding encoding; double lanes; bool fp64; };
const std::vector<FpEvent>& fp_events() {
  static const std::vector<FpEvent> events = [] {
    std::vector<FpEvent> out;
    Libpfm* pfm = Libpfm::get(nullptr);
    if (!pfm) return out;
    const PmuPlan plan = plan_events(pfm->core_pmu(), *pfm);
    for (int q = static_cast<int>(PmuQuantity::Fp64Scalar); q <= static_cast<int>(PmuQuantity::Fp32V512); ++q) {
      const auto& terms = plan.terms[q];
      if (terms.size() != 1) return std::vector<FpEvent>{};  // partial FP coverage would undercount: none
      out.push_back({plan.events[terms[0].event].encoding, terms[0].factor,
                     q <= static_cast<int>(PmuQuantity::Fp64V512)});
    }
    return out;
  }();
  return events;
}

class PerfEventSource final : public CounterSource {
 public:
  ~PerfEventSource() override {
    for (int fd : fds_) close(fd);
  }
  bool open(std::string* why) {
    if (!add(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions", why)) return false;
    if (!add(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "cycles", why)) return false;
    std::string ignored;
    for (const auto& e : fp_events()) {  // only now: a PMU answered for instructions and cycles
      if (!add(e.encoding.type, e.encoding.config, "FP_ARITH_INST_RETIRED", &ignored, e.encoding.config1)) {
        fp_events_.clear();  // partial FP coverage would undercount: report none
        break;
      }
      fp_events_.push_back(e);
    }
    ioctl(fds_[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
    ioctl(fds_[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
    return true;
  }
  bool read(HwCounts& out) noexcept override {
    // PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING: nr, enabled, running, values...
    std::uint64_t buf[3 + 16] = {};
    ssize_t n = ::read(fds_[0], buf, sizeof buf);
    if (n < static_cast<ssize_t>(3 * sizeof(std::uint64_t))) return false;
    std::uint64_t nr = buf[0];
    if (nr < 2 || nr > fds_.size()) return false;
    // Scale for multiplexing: the group runs together, so one factor for all.
    double scale = buf[2] ? static_cast<double>(buf[1]) / static_cast<double>(buf[2]) : 0.0;
    out.instructions = static_cast<double>(buf[3]) * scale;
    out.cycles = static_cast<double>(buf[4]) * scale;
    if (!fp_events_.empty() && nr >= 2 + fp_events_.size()) {
      double d = 0, s = 0;
      for (std::size_t i = 0; i < fp_events_.size(); ++i) {
        double v = static_cast<double>(buf[5 + i]) * scale * fp_events_[i].lanes;
        (fp_events_[i].fp64 ? d : s) += v;
      }
      out.fp64_ops = d;
      out.fp32_ops = s;
    }
    return true;
  }

 private:
  bool add(std::uint32_t type, std::uint64_t config, const char* what, std::string* why, std::uint64_t config1 = 0) {
    if (fds_.size() >= 16) return false;
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    attr.config1 = config1;
    attr.disabled = fds_.empty() ? 1 : 0;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    long fd = perf_event_open(&attr, 0, -1, fds_.empty() ? -1 : fds_[0], 0);
    if (fd < 0) {
      if (why) *why = std::string("perf_event_open(") + what + "): " + std::strerror(errno);
      return false;
    }
    fds_.push_back(static_cast<int>(fd));
    return true;
  }
  std::vector<int> fds_;
  std::vector<FpEvent> fp_events_;
};

}  // namespace

std::unique_ptr<CounterSource> PerfEventProvider::open_for_this_thread(std::string* why) noexcept {
  try {
    auto src = std::make_unique<PerfEventSource>();
    if (!src->open(why)) return nullptr;
    return src;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return nullptr;
  }
}

bool counters_available(CounterProvider& provider, std::string* why) noexcept {
  auto src = provider.open_for_this_thread(why);
  if (!src) return false;
  HwCounts c;
  if (!src->read(c)) {
    if (why) *why = std::string(provider.name()) + ": reading the counters failed";
    return false;
  }
  return true;
}

}  // namespace rtrace::tracer
