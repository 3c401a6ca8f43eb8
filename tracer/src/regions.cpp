#include "regions.hpp"

#include <time.h>

#include <cmath>
#include <cstring>
#include <map>
#include <new>
#include <thread>
#include <unordered_map>

namespace rtrace::tracer {

namespace {

std::int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::atomic<std::uint64_t> g_next_recorder_id{1};
constexpr std::size_t kMaxDepth = 512;
constexpr std::size_t kMaxWarningsPerThread = 16;

// NaN means "never declared"; the first declaration turns it into a sum.
void accumulate(double& field, double v) noexcept {
  if (std::isnan(field)) field = 0.0;
  field += v;
}
void merge_declared(double& into, double v) noexcept {
  if (!std::isnan(v)) accumulate(into, v);
}

}  // namespace

struct RegionEntry {
  std::string name;
  std::int64_t calls = 0;
  std::int64_t time_ns = 0;
  double flops[3] = {NAN, NAN, NAN};
  double bytes[4] = {NAN, NAN, NAN, NAN};
  double hw[4] = {NAN, NAN, NAN, NAN};  // instructions, cycles, fp64, fp32
};

struct Frame {
  RegionEntry* entry;
  std::int64_t start_ns;
  HwCounts start_counts;
};

struct RegionRecorder::ThreadData {
  std::atomic_flag busy = ATOMIC_FLAG_INIT;
  std::vector<Frame> stack;
  std::unordered_map<std::string, RegionEntry> entries;
  std::unordered_map<const char*, RegionEntry*> by_pointer;
  std::unique_ptr<CounterSource> counters;
  std::vector<std::string> warnings;
  std::int64_t errors = 0;

  void lock() noexcept {
    while (busy.test_and_set(std::memory_order_acquire)) std::this_thread::yield();
  }
  bool try_lock() noexcept { return !busy.test_and_set(std::memory_order_acquire); }
  void unlock() noexcept { busy.clear(std::memory_order_release); }

  RegionEntry* find(const char* name) {
    auto it = by_pointer.find(name);
    if (it != by_pointer.end() && std::strcmp(it->second->name.c_str(), name) == 0) return it->second;
    auto& e = entries[name];
    if (e.name.empty()) e.name = name;
    by_pointer[name] = &e;
    return &e;
  }
  void warn(std::string text) {
    ++errors;
    if (warnings.size() < kMaxWarningsPerThread) warnings.push_back(std::move(text));
  }
  void add_counters(RegionEntry* e, const HwCounts& start) noexcept {
    HwCounts now;
    if (!counters || !counters->read(now)) return;
    const double s[4] = {start.instructions, start.cycles, start.fp64_ops, start.fp32_ops};
    const double n[4] = {now.instructions, now.cycles, now.fp64_ops, now.fp32_ops};
    for (int i = 0; i < 4; ++i)
      if (!std::isnan(s[i]) && !std::isnan(n[i])) accumulate(e->hw[i], n[i] - s[i]);
  }
};

namespace {
// The calling thread's data for one recorder (tests may create several).
struct ThreadCache {
  std::uint64_t recorder_id = 0;
  std::uint64_t generation = 0;
  RegionRecorder::ThreadData* data = nullptr;
};
thread_local ThreadCache t_cache;

class Guard {
 public:
  explicit Guard(RegionRecorder::ThreadData* d) noexcept : d_(d) { d_->lock(); }
  ~Guard() { d_->unlock(); }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;
 private:
  RegionRecorder::ThreadData* d_;
};
}  // namespace

RegionRecorder::RegionRecorder(CounterProvider* counters)
    : counters_(counters), id_(g_next_recorder_id.fetch_add(1)) {}

RegionRecorder::~RegionRecorder() = default;

RegionRecorder::ThreadData* RegionRecorder::this_thread() noexcept {
  if (t_cache.recorder_id == id_ && t_cache.generation == generation_.load(std::memory_order_relaxed))
    return t_cache.data;
  return register_thread();
}

RegionRecorder::ThreadData* RegionRecorder::register_thread() noexcept {
  try {
    auto data = std::make_unique<ThreadData>();
    if (counters_) data->counters = counters_->open_for_this_thread(nullptr);
    ThreadData* raw = data.get();
    {
      std::lock_guard<std::mutex> lock(threads_mutex_);
      threads_.push_back(std::move(data));
    }
    t_cache = ThreadCache{id_, generation_.load(std::memory_order_relaxed), raw};
    return raw;
  } catch (...) {
    return nullptr;
  }
}

void RegionRecorder::begin(const char* name) noexcept {
  ThreadData* d = this_thread();
  if (!d) return;
  Guard g(d);
  try {
    if (!name) return d->warn("rtrace_region_begin(NULL) ignored");
    if (d->stack.size() >= kMaxDepth) return d->warn(std::string("region `") + name + "` nested deeper than 512: ignored");
    Frame f{d->find(name), 0, HwCounts{}};
    if (d->counters) d->counters->read(f.start_counts);
    f.start_ns = now_ns();  // last, so the frame's own setup is not timed
    d->stack.push_back(f);
  } catch (...) {
    ++d->errors;
  }
}

void RegionRecorder::end(const char* name) noexcept {
  std::int64_t t = now_ns();
  ThreadData* d = this_thread();
  if (!d) return;
  Guard g(d);
  try {
    if (!name) return d->warn("rtrace_region_end(NULL) ignored");
    // Find the innermost open frame with this name.
    std::size_t i = d->stack.size();
    while (i > 0 && std::strcmp(d->stack[i - 1].entry->name.c_str(), name) != 0) --i;
    if (i == 0) return d->warn(std::string("rtrace_region_end(`") + name + "`) without a matching begin: ignored");
    // Frames above it were never ended: close them here, and say so.
    while (d->stack.size() > i) {
      Frame& inner = d->stack.back();
      d->warn("region `" + inner.entry->name + "` was not ended before `" + name + "`: closed with it");
      inner.entry->calls += 1;
      inner.entry->time_ns += t - inner.start_ns;
      d->add_counters(inner.entry, inner.start_counts);
      d->stack.pop_back();
    }
    Frame f = d->stack.back();
    d->stack.pop_back();
    f.entry->calls += 1;
    f.entry->time_ns += t - f.start_ns;
    d->add_counters(f.entry, f.start_counts);
  } catch (...) {
    ++d->errors;
  }
}

void RegionRecorder::add_flops(const char* name, int precision, double flops) noexcept {
  ThreadData* d = this_thread();
  if (!d) return;
  Guard g(d);
  try {
    if (!name) return d->warn("rtrace_region_add_flops(NULL, ...) ignored");
    if (precision < 0 || precision > 2)
      return d->warn(std::string("rtrace_region_add_flops(`") + name + "`): unknown precision " + std::to_string(precision));
    if (!(flops >= 0)) return;  // negative and NaN are ignored (documented)
    accumulate(d->find(name)->flops[precision], flops);
  } catch (...) {
    ++d->errors;
  }
}

void RegionRecorder::add_bytes(const char* name, int level, double bytes) noexcept {
  ThreadData* d = this_thread();
  if (!d) return;
  Guard g(d);
  try {
    if (!name) return d->warn("rtrace_region_add_bytes(NULL, ...) ignored");
    if (level < 0 || level > 3)
      return d->warn(std::string("rtrace_region_add_bytes(`") + name + "`): unknown level " + std::to_string(level));
    if (!(bytes >= 0)) return;
    accumulate(d->find(name)->bytes[level], bytes);
  } catch (...) {
    ++d->errors;
  }
}

RegionRecorder::Collected RegionRecorder::collect(NameTable& names, bool blocking) const {
  Collected out;
  std::unique_lock<std::mutex> lock(threads_mutex_, std::defer_lock);
  if (blocking) {
    lock.lock();
  } else if (!lock.try_lock()) {
    out.warnings.push_back("region data busy at a fatal signal: regions not recorded");
    return out;
  }
  // std::map keeps the output in name order, independent of thread order.
  std::map<std::string, RegionEntry> merged;
  for (const auto& t : threads_) {
    if (blocking) {
      t->lock();
    } else if (!t->try_lock()) {
      ++out.skipped_threads;
      continue;
    }
    for (const auto& [name, e] : t->entries) {
      RegionEntry& m = merged[name];
      m.calls += e.calls;
      m.time_ns += e.time_ns;
      for (int i = 0; i < 3; ++i) merge_declared(m.flops[i], e.flops[i]);
      for (int i = 0; i < 4; ++i) merge_declared(m.bytes[i], e.bytes[i]);
      for (int i = 0; i < 4; ++i) merge_declared(m.hw[i], e.hw[i]);
    }
    out.open_frames += static_cast<std::int64_t>(t->stack.size());
    out.errors += t->errors;
    for (const auto& w : t->warnings) out.warnings.push_back(w);
    t->unlock();
  }
  if (out.skipped_threads > 0)
    out.warnings.push_back(std::to_string(out.skipped_threads) + " thread(s) busy at a fatal signal: their regions are missing");
  if (out.open_frames > 0)
    out.warnings.push_back(std::to_string(out.open_frames) + " region call(s) still open when collected: not counted");
  for (const auto& [name, e] : merged) {
    store::RegionRow r{};
    r.name_id = names.id(name);
    r.calls = e.calls;
    r.time_s = static_cast<double>(e.time_ns) * 1e-9;
    r.flops_fp64 = e.flops[0];
    r.flops_fp32 = e.flops[1];
    r.flops_fp16 = e.flops[2];
    r.bytes_l1 = e.bytes[0];
    r.bytes_l2 = e.bytes[1];
    r.bytes_l3 = e.bytes[2];
    r.bytes_dram = e.bytes[3];
    r.hw_instructions = e.hw[0];
    r.hw_cycles = e.hw[1];
    r.hw_fp64_ops = e.hw[2];
    r.hw_fp32_ops = e.hw[3];
    out.rows.push_back(r);
  }
  return out;
}

void RegionRecorder::reset_after_fork() noexcept {
  // Only the forking thread survives in the child; the other threads' data may
  // be mid-update (their flags set forever), so it is set aside, not reused.
  // Another thread may have held the registry mutex at fork(): in the child it
  // would stay locked forever, so it is constructed afresh first.
  new (&threads_mutex_) std::mutex();
  try {
    std::lock_guard<std::mutex> lock(threads_mutex_);
    for (auto& t : threads_) retired_.push_back(std::move(t));
    threads_.clear();
  } catch (...) {
  }
  generation_.fetch_add(1);
}

}  // namespace rtrace::tracer
