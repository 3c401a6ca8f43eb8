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

constexpr std::size_t kMaxRanges = 4096;  // ranges held per context before the counter image is full

struct ContextProfile {
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::uint32_t context_id = 0;
  MetricPlan plan;
  std::vector<std::uint8_t> counter_availability;
  std::vector<std::uint8_t> counter_data;
  std::vector<const char*> names;
  std::string chip;
};

std::mutex g_mutex;
// Leaked on purpose (like cupti_api()): the exit flush needs it after static
// destructors registered before it have run.
std::map<CUcontext, std::unique_ptr<ContextProfile>>& profiles() {
  static auto* m = new std::map<CUcontext, std::unique_ptr<ContextProfile>>();
  return *m;
}
bool g_profiler_initialized = false;

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

// Stops profiling of one context and turns its ranges into kernel metrics.
void collect(RankState& s, ContextProfile& p) {
  CuptiApi& api = cupti_api();
  if (!p.profiler) return;
  CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = p.profiler;
  check(s, api, api.rp_stop(&stop), "cuptiRangeProfilerStop");
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = p.profiler;
  if (check(s, api, api.rp_decode(&decode), "cuptiRangeProfilerDecodeData") && decode.numOfRangeDropped > 0) {
    s.add_dropped(static_cast<std::int64_t>(decode.numOfRangeDropped));
    s.log(LogLevel::Warn, std::to_string(decode.numOfRangeDropped) + " profiled range(s) dropped: more than " +
                              std::to_string(kMaxRanges) + " kernel launches in one context");
  }
  CUpti_RangeProfiler_GetCounterDataInfo_Params info{CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = p.counter_data.data();
  info.counterDataImageSize = p.counter_data.size();
  if (check(s, api, api.rp_counter_data_info(&info), "cuptiRangeProfilerGetCounterDataInfo")) {
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
  CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  disable.pRangeProfilerObject = p.profiler;
  api.rp_disable(&disable);
  p.profiler = nullptr;
  release_plan(api.host, p.plan);
}

}  // namespace

void metrics_context_created(RankState& s, CUcontext ctx) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mutex);
    CuptiApi& api = cupti_api();
    if (!api.has_profiler_api()) {
      const std::string line = api.path + " lacks the Range Profiler / Profiler Host API";
      s.error("metrics: " + line);
      s.set_gpu_status(GpuStatus::MetricsFailed, line);
      return;
    }
    if (!g_profiler_initialized) {
      CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
      if (!check(s, api, api.profiler_initialize(&init), "cuptiProfilerInitialize")) return;
      g_profiler_initialized = true;
      // The profiler may register exit handlers of its own: flush before them.
      register_gpu_exit_flush();
    }
    auto p = std::make_unique<ContextProfile>();
    if (!check(s, api, api.get_context_id(ctx, &p->context_id), "cuptiGetContextId")) return;
    // The context's device from CUPTI itself: no driver symbol lookups, and a
    // failure is an error in the file instead of a silent "device 0".
    std::uint32_t device = 0;
    if (!check(s, api, api.get_device_id(ctx, &device), "cuptiGetDeviceId")) return;
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = device;
    if (!check(s, api, api.chip_name(&chip), "cuptiDeviceGetChipName")) return;
    p->chip = chip.pChipName ? chip.pChipName : "";
    CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    avail.ctx = ctx;
    if (check(s, api, api.counter_availability(&avail), "counter availability size")) {
      p->counter_availability.resize(avail.counterAvailabilityImageSize);
      avail.pCounterAvailabilityImage = p->counter_availability.data();
      if (!check(s, api, api.counter_availability(&avail), "counter availability")) p->counter_availability.clear();
    }
    p->plan = plan_metrics(api.host, p->chip, p->counter_availability.empty() ? nullptr : p->counter_availability.data(),
                           roofline_metrics());
    for (const auto& w : p->plan.warnings) s.log(LogLevel::Warn, "metrics: " + w);
    for (const auto& n : p->plan.notes) s.log(LogLevel::Info, "metrics: " + n);
    if (!p->plan.ok) {
      s.error("metrics: " + p->plan.error);
      s.set_gpu_status(GpuStatus::MetricsFailed, p->plan.error);
      return;
    }
    s.log(LogLevel::Info, "metrics: " + std::to_string(p->plan.metrics.size()) + " metrics on " + p->chip + ", " +
                              std::to_string(p->plan.passes) + " replay pass(es) per kernel launch");
    for (const auto& m : p->plan.metrics) p->names.push_back(m.name.c_str());

    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
    enable.ctx = ctx;
    if (!check(s, api, api.rp_enable(&enable), "cuptiRangeProfilerEnable")) return;
    p->profiler = enable.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
    size.pRangeProfilerObject = p->profiler;
    size.pMetricNames = p->names.data();
    size.numMetrics = p->names.size();
    size.maxNumOfRanges = kMaxRanges;
    size.maxNumRangeTreeNodes = kMaxRanges;
    if (!check(s, api, api.rp_counter_data_size(&size), "cuptiRangeProfilerGetCounterDataSize")) return;
    p->counter_data.resize(size.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params cdi{
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
    cdi.pRangeProfilerObject = p->profiler;
    cdi.counterDataSize = p->counter_data.size();
    cdi.pCounterData = p->counter_data.data();
    if (!check(s, api, api.rp_counter_data_init(&cdi), "cuptiRangeProfilerCounterDataImageInitialize")) return;
    CUpti_RangeProfiler_SetConfig_Params cfg{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
    cfg.pRangeProfilerObject = p->profiler;
    cfg.configSize = p->plan.config_image.size();
    cfg.pConfig = p->plan.config_image.data();
    cfg.counterDataImageSize = p->counter_data.size();
    cfg.pCounterDataImage = p->counter_data.data();
    cfg.range = CUPTI_AutoRange;
    cfg.replayMode = CUPTI_KernelReplay;
    cfg.maxRangesPerPass = kMaxRanges;
    cfg.numNestingLevels = 1;
    cfg.minNestingLevel = 1;
    cfg.passIndex = 0;
    cfg.targetNestingLevel = 1;
    if (!check(s, api, api.rp_set_config(&cfg), "cuptiRangeProfilerSetConfig")) return;
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = p->profiler;
    if (!check(s, api, api.rp_start(&start), "cuptiRangeProfilerStart")) return;
    s.set_gpu_status(GpuStatus::Metrics, p->chip + ": " + std::to_string(p->plan.metrics.size()) + " metrics, " +
                                             std::to_string(p->plan.passes) + " replay pass(es)");
    profiles()[ctx] = std::move(p);
  } catch (...) {
    s.error("metrics: setting up the range profiler failed");
    s.set_gpu_status(GpuStatus::MetricsFailed, "setting up the range profiler failed");
  }
}

void metrics_context_destroying(RankState& s, CUcontext ctx) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = profiles().find(ctx);
    if (it == profiles().end()) return;
    collect(s, *it->second);
    profiles().erase(it);
  } catch (...) {
    s.error("metrics: collecting the ranges failed");
  }
}

void metrics_flush_all(RankState& s) noexcept {
  try {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [ctx, p] : profiles()) collect(s, *p);
    profiles().clear();
  } catch (...) {
    s.error("metrics: collecting the ranges failed");
  }
}

}  // namespace rtrace::tracer
