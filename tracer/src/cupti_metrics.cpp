// Metrics mode: CUPTI Range Profiler with auto ranges and kernel replay, so
// every kernel launch becomes one range, replayed for as many passes as the
// metric set needs. The metric set is validated for the device's chip with
// the Profiler Host API first (missing metrics are dropped with a warning).
//
// Each range keeps its context and its name (the kernel's); RankState joins
// ranges with launches by context, order and name (metric_join.hpp), so a
// launch that did not become a range never shifts metrics onto another kernel.
// What CUPTI refused is recorded as the process's gpu_status: the launcher
// decides from it whether the metrics of an SM partition must be collected
// outside the partition (docs/launcher.md).
//
// Two limits of the profiler shape this file (issue 31):
//  * One profiling session per device: cupti_profiler_target.h says setting
//    up profiling "may fail, if any profiling or sampling session is active on
//    the specified context or its device". At most one context per device has
//    its range profiler enabled; a launch in another context of that device
//    first collects and disables the enabled one, then profiles its own.
//    With a green partition (cupti_green.cpp) only the green context is ever
//    profiled, never its parent primary context (cuGreenCtxCreate retains it,
//    cuda.h), so contexts created before the green one are held until it exists.
//  * A counter data image holds kMaxRanges ranges: launches are counted per
//    context and, at the limit, the profiler is stopped, its ranges decoded and
//    evaluated, the image initialised again and profiling restarted, as
//    NVIDIA's profiling-injection sample does. Ranges CUPTI still dropped are
//    counted and said.
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cupti_gpu.hpp"
#include "cupti_loader.hpp"
#include "metric_list.hpp"
#include "tracer.hpp"

namespace rtrace::tracer {

namespace {

constexpr std::size_t kMaxRanges = 4096;  // ranges one counter data image holds

struct ContextProfile {
  CUcontext ctx = nullptr;
  std::uint32_t context_id = 0;
  std::uint32_t device = 0;
  bool set_up = false;                             // plan and images made
  bool broken = false;                             // a set-up step failed: never tried again
  CUpti_RangeProfiler_Object* profiler = nullptr;  // enabled (at most one per device)
  MetricPlan plan;
  std::vector<std::uint8_t> counter_availability;
  std::vector<std::uint8_t> counter_data;
  std::vector<const char*> names;
  std::string chip;
  std::size_t ranges_in_image = 0;  // launches since the image was last initialised
  std::int64_t restarts = 0;        // images filled and restarted
  std::int64_t dropped = 0;         // ranges CUPTI dropped
  std::int64_t enables = 0;         // times its profiler was enabled (1 + switches back to it)
};

// Whether a green partition decides which context is profiled.
enum class Green { None, Pending, Active, Failed };

struct Profiles {
  std::mutex mutex;
  // Leaked on purpose (like cupti_api()): the exit flush needs it after static
  // destructors registered before it have run.
  std::map<CUcontext, std::unique_ptr<ContextProfile>> by_context;
  bool profiler_initialized = false;
  Green green = Green::None;
  CUcontext green_ctx = nullptr;
  std::vector<CUcontext> held;  // created while the green context was pending
};
Profiles& profiles() {
  static auto* p = new Profiles();
  return *p;
}

// A refusal by CUPTI, sorted by what the launcher can do about it.
GpuStatus status_of(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return GpuStatus::MetricsDenied;  // counters need permission: nowhere else helps
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_HARDWARE_BUSY:
    case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
      return GpuStatus::MetricsRefused;  // not here (MPS, MIG, a VM...): maybe elsewhere
    default:
      return GpuStatus::MetricsFailed;
  }
}

bool check(RankState& s, CuptiApi& api, CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const std::string line = std::string(what) + ": " + api.result(r);
  s.error("metrics: " + line);
  s.set_gpu_status(status_of(r), line);
  return false;
}

std::string ctx_name(const ContextProfile& p) { return "context " + std::to_string(p.context_id); }

// The chip, the counter availability and the metric plan of a context. Needs
// no session active on its device (counter availability may fail otherwise).
bool set_up(RankState& s, ContextProfile& p) {
  if (p.set_up) return true;
  if (p.broken) return false;
  p.broken = true;  // until every step below succeeded
  CuptiApi& api = cupti_api();
  Profiles& all = profiles();
  if (!all.profiler_initialized) {
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    if (!check(s, api, api.profiler_initialize(&init), "cuptiProfilerInitialize")) return false;
    all.profiler_initialized = true;
    // The profiler may register exit handlers of its own: flush before them.
    register_gpu_exit_flush();
  }
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = p.device;
  if (!check(s, api, api.chip_name(&chip), "cuptiDeviceGetChipName")) return false;
  p.chip = chip.pChipName ? chip.pChipName : "";
  CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = p.ctx;
  if (check(s, api, api.counter_availability(&avail), "counter availability size")) {
    p.counter_availability.resize(avail.counterAvailabilityImageSize);
    avail.pCounterAvailabilityImage = p.counter_availability.data();
    if (!check(s, api, api.counter_availability(&avail), "counter availability")) p.counter_availability.clear();
  }
  p.plan = plan_metrics(api.host, p.chip, p.counter_availability.empty() ? nullptr : p.counter_availability.data(),
                        roofline_metrics());
  for (const auto& w : p.plan.warnings) s.log(LogLevel::Warn, "metrics: " + w);
  for (const auto& n : p.plan.notes) s.log(LogLevel::Info, "metrics: " + n);
  if (!p.plan.ok) {
    s.error("metrics: " + p.plan.error);
    s.set_gpu_status(GpuStatus::MetricsFailed, p.plan.error);
    return false;
  }
  s.log(LogLevel::Info, "metrics: " + std::to_string(p.plan.metrics.size()) + " metrics on " + p.chip + ", " +
                            std::to_string(p.plan.passes) + " replay pass(es) per kernel launch");
  for (const auto& m : p.plan.metrics) p.names.push_back(m.name.c_str());
  p.set_up = true;
  p.broken = false;
  return true;
}

// Initialises the counter data image, configures and starts the enabled profiler.
bool start(RankState& s, ContextProfile& p) {
  CuptiApi& api = cupti_api();
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params cdi{
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  cdi.pRangeProfilerObject = p.profiler;
  cdi.counterDataSize = p.counter_data.size();
  cdi.pCounterData = p.counter_data.data();
  if (!check(s, api, api.rp_counter_data_init(&cdi), "cuptiRangeProfilerCounterDataImageInitialize")) return false;
  CUpti_RangeProfiler_SetConfig_Params cfg{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  cfg.pRangeProfilerObject = p.profiler;
  cfg.configSize = p.plan.config_image.size();
  cfg.pConfig = p.plan.config_image.data();
  cfg.counterDataImageSize = p.counter_data.size();
  cfg.pCounterDataImage = p.counter_data.data();
  cfg.range = CUPTI_AutoRange;
  cfg.replayMode = CUPTI_KernelReplay;
  cfg.maxRangesPerPass = kMaxRanges;
  cfg.numNestingLevels = 1;
  cfg.minNestingLevel = 1;
  cfg.passIndex = 0;
  cfg.targetNestingLevel = 1;
  if (!check(s, api, api.rp_set_config(&cfg), "cuptiRangeProfilerSetConfig")) return false;
  CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = p.profiler;
  if (!check(s, api, api.rp_start(&st), "cuptiRangeProfilerStart")) return false;
  p.ranges_in_image = 0;
  return true;
}

void disable(ContextProfile& p) {
  if (!p.profiler) return;
  CuptiApi& api = cupti_api();
  CUpti_RangeProfiler_Disable_Params d{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  d.pRangeProfilerObject = p.profiler;
  api.rp_disable(&d);
  p.profiler = nullptr;
}

// Enables the range profiler of a set-up context (no other on its device is).
bool enable(RankState& s, ContextProfile& p) {
  CuptiApi& api = cupti_api();
  CUpti_RangeProfiler_Enable_Params en{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = p.ctx;
  if (!check(s, api, api.rp_enable(&en), "cuptiRangeProfilerEnable")) return false;
  p.profiler = en.pRangeProfilerObject;
  if (p.counter_data.empty()) {
    CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = p.profiler;
    size.pMetricNames = p.names.data();
    size.numMetrics = p.names.size();
    size.maxNumOfRanges = kMaxRanges;
    size.maxNumRangeTreeNodes = kMaxRanges;
    if (!check(s, api, api.rp_counter_data_size(&size), "cuptiRangeProfilerGetCounterDataSize")) {
      disable(p);
      return false;
    }
    p.counter_data.resize(size.counterDataSize);
  }
  if (!start(s, p)) {
    disable(p);
    return false;
  }
  ++p.enables;
  s.set_gpu_status(GpuStatus::Metrics, p.chip + ": " + std::to_string(p.plan.metrics.size()) + " metrics, " +
                                           std::to_string(p.plan.passes) + " replay pass(es)");
  return true;
}

// Stops the profiler and turns the image's ranges into kernel metrics; the
// profiler stays enabled (restart) or is disabled by the caller.
void harvest(RankState& s, ContextProfile& p) {
  CuptiApi& api = cupti_api();
  if (!p.profiler) return;
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = p.profiler;
  check(s, api, api.rp_stop(&stop), "cuptiRangeProfilerStop");
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = p.profiler;
  if (check(s, api, api.rp_decode(&decode), "cuptiRangeProfilerDecodeData") && decode.numOfRangeDropped > 0) {
    p.dropped += static_cast<std::int64_t>(decode.numOfRangeDropped);
    s.add_dropped(static_cast<std::int64_t>(decode.numOfRangeDropped));
    s.log(LogLevel::Warn, "metrics: " + ctx_name(p) + ": " + std::to_string(decode.numOfRangeDropped) +
                              " profiled range(s) dropped by CUPTI (launches it saw that rtrace's launch count "
                              "missed): no metrics for them");
  }
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = p.counter_data.data();
  info.counterDataImageSize = p.counter_data.size();
  if (!check(s, api, api.rp_counter_data_info(&info), "cuptiRangeProfilerGetCounterDataInfo")) return;
  std::vector<double> values(p.names.size());
  std::vector<MetricRange> ranges;
  ranges.reserve(info.numTotalRanges);
  std::size_t unnamed = 0;
  for (std::size_t i = 0; i < info.numTotalRanges; ++i) {
    MetricRange range;
    range.context_id = p.context_id;
    // The range's name is its kernel's (auto ranges): the join checks it.
    CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri{CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE};
    ri.pCounterDataImage = p.counter_data.data();
    ri.counterDataImageSize = p.counter_data.size();
    ri.rangeIndex = i;
    ri.rangeDelimiter = "/";
    if (api.rp_range_info(&ri) == CUPTI_SUCCESS && ri.rangeName) range.name = ri.rangeName;
    else ++unnamed;  // matches no launch: dropped and counted by the join
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = p.plan.host;
    ev.pCounterDataImage = p.counter_data.data();
    ev.counterDataImageSize = p.counter_data.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = p.names.data();
    ev.numMetrics = p.names.size();
    ev.pMetricValues = values.data();
    if (!check(s, api, api.host_evaluate(&ev), "cuptiProfilerHostEvaluateToGpuValues")) continue;
    clear_metrics(range.metrics);
    for (std::size_t k = 0; k < p.plan.metrics.size(); ++k) apply_metric(range.metrics, p.plan.metrics[k], values[k]);
    range.metrics.has_metrics = 1;
    ranges.push_back(std::move(range));
  }
  if (unnamed > 0)
    s.log(LogLevel::Warn, "metrics: " + std::to_string(unnamed) +
                              " range(s) without a name (cuptiRangeProfilerCounterDataGetRangeInfo failed): dropped");
  s.add_metric_ranges(std::move(ranges));
}

// The last collection of a context: its ranges, a summary line, its plan released.
void finish(RankState& s, ContextProfile& p) {
  if (p.profiler) {
    harvest(s, p);
    disable(p);
  }
  if (p.restarts > 0)
    s.log(LogLevel::Info, "metrics: " + ctx_name(p) + ": the range buffer (" + std::to_string(kMaxRanges) +
                              " ranges) filled " + std::to_string(p.restarts) +
                              " time(s): profiling stopped, decoded and restarted each time");
  if (p.enables > 1)
    s.log(LogLevel::Info, "metrics: " + ctx_name(p) + ": profiled in " + std::to_string(p.enables) +
                              " stretches (one profiling session per device: other contexts of device " +
                              std::to_string(p.device) + " were profiled in between)");
  if (p.set_up) release_plan(cupti_api().host, p.plan);
  p.set_up = false;
}

ContextProfile* enabled_on(std::uint32_t device) {
  for (auto& [ctx, p] : profiles().by_context)
    if (p->device == device && p->profiler) return p.get();
  return nullptr;
}

// A profile for `ctx` (known to CUPTI), profiled now when its device has none
// enabled, else from its first launch on.
void track(RankState& s, CUcontext ctx) {
  CuptiApi& api = cupti_api();
  auto p = std::make_unique<ContextProfile>();
  p->ctx = ctx;
  if (!check(s, api, api.get_context_id(ctx, &p->context_id), "cuptiGetContextId")) return;
  // The context's device from CUPTI itself: no driver symbol lookups, and a
  // failure is an error in the file instead of a silent "device 0".
  if (!check(s, api, api.get_device_id(ctx, &p->device), "cuptiGetDeviceId")) return;
  ContextProfile& ref = *p;
  profiles().by_context[ctx] = std::move(p);
  if (const ContextProfile* other = enabled_on(ref.device)) {
    s.log(LogLevel::Info, "metrics: " + ctx_name(ref) + " profiled from its first launch on (one profiling session " +
                              "per device: " + ctx_name(*other) + " is profiled now)");
    return;
  }
  if (set_up(s, ref) && !enable(s, ref)) ref.broken = true;  // refused (MPS, MIG...): not tried at every launch
}

}  // namespace

void metrics_hold_for_green() noexcept {
  std::lock_guard<std::mutex> lock(profiles().mutex);
  if (profiles().green == Green::None) profiles().green = Green::Pending;
}

void metrics_context_created(RankState& s, CUcontext ctx) noexcept {
  try {
    Profiles& all = profiles();
    std::lock_guard<std::mutex> lock(all.mutex);
    CuptiApi& api = cupti_api();
    if (!api.has_profiler_api()) {
      const std::string line = api.path + " lacks the Range Profiler / Profiler Host API";
      s.error("metrics: " + line);
      s.set_gpu_status(GpuStatus::MetricsFailed, line);
      return;
    }
    if (all.by_context.count(ctx)) return;
    if (all.green == Green::Pending) {
      // Perhaps the parent the green context retains (cuGreenCtxCreate): held
      // until the green context exists, then profiled only if that failed.
      all.held.push_back(ctx);
      return;
    }
    if (all.green == Green::Active && ctx != all.green_ctx) {
      std::uint32_t id = 0;
      api.get_context_id(ctx, &id);
      s.log(LogLevel::Info, "metrics: context " + std::to_string(id) +
                                " not profiled: only the green context is (one profiling session per device)");
      return;
    }
    track(s, ctx);
  } catch (...) {
    s.error("metrics: setting up the range profiler failed");
    s.set_gpu_status(GpuStatus::MetricsFailed, "setting up the range profiler failed");
  }
}

void metrics_green_ready(RankState& s, CUcontext green) noexcept {
  try {
    Profiles& all = profiles();
    std::lock_guard<std::mutex> lock(all.mutex);
    all.green = Green::Active;
    all.green_ctx = green;
    CuptiApi& api = cupti_api();
    for (CUcontext c : all.held) {
      if (c == green) continue;
      std::uint32_t id = 0;
      api.get_context_id(c, &id);
      s.log(LogLevel::Info, "metrics: context " + std::to_string(id) +
                                " (the green context's parent or an earlier one) not profiled: only the green context "
                                "is (one profiling session per device)");
    }
    all.held.clear();
    if (!all.by_context.count(green) && api.has_profiler_api()) track(s, green);
  } catch (...) {
    s.error("metrics: setting up the range profiler of the green context failed");
    s.set_gpu_status(GpuStatus::MetricsFailed, "setting up the range profiler of the green context failed");
  }
}

void metrics_green_failed(RankState& s) noexcept {
  try {
    Profiles& all = profiles();
    std::lock_guard<std::mutex> lock(all.mutex);
    all.green = Green::Failed;
    std::vector<CUcontext> held;
    held.swap(all.held);
    if (!cupti_api().has_profiler_api()) return;
    for (CUcontext c : held)
      if (!all.by_context.count(c)) track(s, c);
  } catch (...) {
    s.error("metrics: setting up the range profiler failed");
    s.set_gpu_status(GpuStatus::MetricsFailed, "setting up the range profiler failed");
  }
}

void metrics_before_launch(RankState& s, CUcontext ctx) noexcept {
  try {
    Profiles& all = profiles();
    std::lock_guard<std::mutex> lock(all.mutex);
    auto it = all.by_context.find(ctx);
    if (it == all.by_context.end()) return;  // not profiled (another context is, or it failed)
    ContextProfile& p = *it->second;
    if (!p.profiler) {
      if (p.broken) return;
      // One session per device: the enabled context's ranges first.
      if (ContextProfile* other = enabled_on(p.device)) {
        harvest(s, *other);
        disable(*other);
      }
      if (!set_up(s, p) || !enable(s, p)) {
        p.broken = true;
        return;
      }
    }
    if (p.ranges_in_image >= kMaxRanges) {
      harvest(s, p);
      ++p.restarts;
      if (!start(s, p)) {
        disable(p);
        p.broken = true;
        return;
      }
    }
    ++p.ranges_in_image;
  } catch (...) {
    s.error("metrics: restarting the range profiler failed");
  }
}

void metrics_context_destroying(RankState& s, CUcontext ctx) noexcept {
  try {
    Profiles& all = profiles();
    std::lock_guard<std::mutex> lock(all.mutex);
    auto it = all.by_context.find(ctx);
    if (it == all.by_context.end()) return;
    finish(s, *it->second);
    all.by_context.erase(it);
  } catch (...) {
    s.error("metrics: collecting the ranges failed");
  }
}

void metrics_flush_all(RankState& s) noexcept {
  try {
    Profiles& all = profiles();
    std::lock_guard<std::mutex> lock(all.mutex);
    for (auto& [ctx, p] : all.by_context) finish(s, *p);
    all.by_context.clear();
  } catch (...) {
    s.error("metrics: collecting the ranges failed");
  }
}

}  // namespace rtrace::tracer
