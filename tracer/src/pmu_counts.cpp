#include "pmu_counts.hpp"

#include "libpfm.hpp"
#include "pmu_events.hpp"

#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

namespace rtrace::tracer::pmu {
namespace {

struct ThreadSlot {
  int index = 0;               // 0 = the thread that started counting (main), then in creation order
  std::vector<int> fds;        // one per planned event, -1 where it was not opened
  std::vector<double> final;   // read when the thread ended (its fds are closed then)
  bool ended = false;
};

struct State {
  std::mutex mutex;
  bool requested = false;
  std::atomic<bool> active{false};
  PmuPlan plan;
  std::string status = "unavailable";
  std::string why;             // the note when unavailable
  std::vector<ThreadSlot> threads;
  int threads_failed = 0;      // threads whose counters could not be opened
  bool multiplexed = false;    // some event shared its counter: values scaled
  pthread_key_t key{};
  bool key_ok = false;
};
State& g() {
  static State* s = new State;  // leaked on purpose: used until the very end
  return *s;
}

int open_event(const PerfEncoding& e, int* err) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = e.type;
  attr.config = e.config;
  attr.config1 = e.config1;
  attr.config2 = e.config2;
  attr.exclude_kernel = 1;  // the application's work; kernels and hypervisors are not its FLOPs
  attr.exclude_hv = 1;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) *err = errno;
  return static_cast<int>(fd);
}

// Why the kernel gives no hardware counter, or "" where it does: the generic
// instructions event, which every PMU the kernel drives offers. Asked where
// libpfm4 recognises no core PMU, so the note says whether the CPU is unknown
// to libpfm4 or the machine has no counters at all (a VM, a container).
std::string kernel_counter_refusal() {
  PerfEncoding e{};
  e.type = PERF_TYPE_HARDWARE;
  e.config = PERF_COUNT_HW_INSTRUCTIONS;
  int err = 0;
  const int fd = open_event(e, &err);
  if (fd >= 0) {
    close(fd);
    return "";
  }
  return "perf_event_open(instructions): " + std::string(std::strerror(err)) +
         (err == EACCES ? " (perf_event_paranoid forbids it)"
                        : " (no PMU here: a VM or container without hardware counters?)");
}

// Opens the planned events for the calling thread; fds[i] = -1 where an event failed.
std::vector<int> open_thread(const PmuPlan& plan, std::vector<int>* errors) {
  std::vector<int> fds(plan.events.size(), -1);
  if (errors) errors->assign(plan.events.size(), 0);
  for (std::size_t i = 0; i < plan.events.size(); ++i) {
    int err = 0;
    fds[i] = open_event(plan.events[i].encoding, &err);
    if (errors) (*errors)[i] = err;
  }
  return fds;
}

std::vector<double> read_values(const std::vector<int>& fds, bool& multiplexed) {
  std::vector<double> v(fds.size(), std::nan(""));
  for (std::size_t i = 0; i < fds.size(); ++i) {
    if (fds[i] < 0) continue;
    std::uint64_t buf[3] = {};
    if (::read(fds[i], buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) continue;
    if (buf[2] < buf[1]) multiplexed = true;
    v[i] = scaled_count(buf[0], buf[1], buf[2]);
  }
  return v;
}

void close_all(std::vector<int>& fds) {
  for (int& fd : fds)
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
}

// The key's destructor: a thread that ends keeps its last values, not its fds.
void on_thread_exit(void* slot_plus_one) {
  State& s = g();
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto i = reinterpret_cast<std::uintptr_t>(slot_plus_one) - 1;
    if (i >= s.threads.size() || s.threads[i].ended) return;
    ThreadSlot& t = s.threads[i];
    t.final = read_values(t.fds, s.multiplexed);
    close_all(t.fds);
    t.ended = true;
  } catch (...) {
  }
}

void register_thread(State& s, std::vector<int> fds) {
  ThreadSlot t;
  t.index = static_cast<int>(s.threads.size());
  t.fds = std::move(fds);
  s.threads.push_back(std::move(t));
  if (s.key_ok) pthread_setspecific(s.key, reinterpret_cast<void*>(static_cast<std::uintptr_t>(s.threads.size())));
}

}  // namespace

std::string start(const std::string& mode) noexcept {
  if (mode != "pmu" && mode != "auto") return "";
  State& s = g();
  try {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.requested = true;
    std::string why;
    Libpfm* pfm = Libpfm::get(&why);
    if (!pfm) {
      s.why = why;
      return "PMU counts unavailable: " + why;
    }
    const std::string pmu = pfm->core_pmu();
    if (pmu.empty()) {
      const std::string kernel = kernel_counter_refusal();
      s.why = kernel.empty() ? "libpfm4 does not know this CPU's core PMU (the kernel offers generic counters, but "
                               "FLOP and cache events need their names: a newer libpfm4, or --counts sim)"
                             : "libpfm4 finds no core PMU on this CPU, and the kernel none either: " + kernel;
      return "PMU counts unavailable: " + s.why;
    }
    s.plan = plan_events(pmu, *pfm);
    if (s.plan.status() == "unavailable") {
      s.why = "no FLOP or cache events known for the PMU " + pmu;
      return "PMU counts unavailable: " + s.why;
    }
    std::vector<int> errors;
    std::vector<int> fds = open_thread(s.plan, &errors);
    std::size_t opened = 0, first_failed = fds.size();
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i] >= 0) ++opened;
      else if (first_failed == fds.size()) first_failed = i;
    }
    if (opened == 0) {
      // A VM or container without a PMU: ENOENT / EOPNOTSUPP; perf_event_paranoid: EACCES.
      s.why = "perf_event_open(" + s.plan.events[first_failed].name + "): " + std::strerror(errors[first_failed]) +
              (errors[first_failed] == EACCES ? " (perf_event_paranoid forbids it)"
                                              : " (no PMU here: a VM or container without hardware counters?)");
      PmuPlan none;
      none.pmu = s.plan.pmu;
      s.plan = std::move(none);
      return "PMU counts unavailable: " + s.why;
    }
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i] < 0) s.plan.drop_event(i);
    if (s.plan.status() == "unavailable") {
      close_all(fds);
      s.why = "no FLOP or cache event of " + pmu + " could be opened";
      return "PMU counts unavailable: " + s.why;
    }
    s.key_ok = pthread_key_create(&s.key, on_thread_exit) == 0;
    s.status = s.plan.status();
    register_thread(s, std::move(fds));
    s.active.store(true);
    std::string events;
    for (const auto& e : s.plan.events) events += (events.empty() ? "" : ", ") + e.name;
    return "PMU counts (" + s.status + ") on " + pmu + ": " + events;
  } catch (const std::exception& e) {
    s.why = std::string("PMU set-up failed: ") + e.what();
    return s.why;
  } catch (...) {
    s.why = "PMU set-up failed";
    return s.why;
  }
}

bool active() noexcept { return g().active.load(); }

void thread_begin() noexcept {
  State& s = g();
  if (!s.active.load()) return;
  try {
    std::vector<int> fds = open_thread(s.plan, nullptr);  // the plan is fixed once active
    std::lock_guard<std::mutex> lock(s.mutex);
    bool any = false;
    for (int fd : fds) any |= fd >= 0;
    if (!any) {
      ++s.threads_failed;
      return;
    }
    register_thread(s, std::move(fds));
  } catch (...) {
    ++s.threads_failed;
  }
}

void after_fork() noexcept {
  State& s = g();
  if (!s.requested) return;
  try {
    new (&s.mutex) std::mutex();  // may have been held by a thread that does not exist here
    for (auto& t : s.threads) close_all(t.fds);
    s.threads.clear();
    s.threads_failed = 0;
    s.multiplexed = false;
    if (!s.active.load()) return;
    std::vector<int> fds = open_thread(s.plan, nullptr);
    register_thread(s, std::move(fds));
  } catch (...) {
  }
}

void fill(store::RankRecords& rec, bool blocking) noexcept {
  State& s = g();
  if (!s.requested) return;
  try {
    std::unique_lock<std::mutex> lock(s.mutex, std::defer_lock);
    if (blocking) lock.lock();
    else if (!lock.try_lock()) return;
    store::CountInfoRow info{};
    info.serialised = 0;
    info.wall_s = store::kUnavailable;
    info.exit_code = -1;
    store::set_str(info.source, s.plan.pmu.empty() ? std::string("pmu") : s.plan.source());
    std::string note;
    if (!s.active.load()) {
      store::set_str(info.status, "unavailable");
      note = s.why;
    } else {
      store::set_str(info.status, s.status);
      for (const auto& t : s.threads) {
        std::vector<double> v = t.ended ? t.final : read_values(t.fds, s.multiplexed);
        rec.counts.push_back(pmu_count_row(s.plan, v, t.index));
      }
      note = s.plan.note();
      if (s.multiplexed) note = "multiplexed: scaled by enabled/running time; " + note;
      if (s.threads_failed > 0) {
        store::set_str(info.status, "partial");
        note = std::to_string(s.threads_failed) + " thread(s) not counted; " + note;
      }
    }
    info.threads = static_cast<std::int32_t>(s.threads.size());
    store::set_text(info.note, note);
    rec.counts_info.push_back(info);
  } catch (...) {
    rec.log.push_back("error: the PMU counts could not be recorded");
  }
}

}  // namespace rtrace::tracer::pmu
