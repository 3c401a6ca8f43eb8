#include "cupti_loader.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

namespace rtrace::tracer {

bool CuptiApi::has_trace_api() const noexcept {
  return activity_enable && activity_register_callbacks && activity_flush_all && activity_next_record &&
         activity_dropped && subscribe && enable_callback && result_string;
}

bool CuptiApi::has_profiler_api() const noexcept {
  return profiler_initialize && counter_availability && chip_name && get_device_id && rp_enable && rp_disable && rp_set_config &&
         rp_start && rp_stop && rp_decode && rp_counter_data_size && rp_counter_data_init && rp_counter_data_info &&
         host_evaluate && host.complete();
}

std::string CuptiApi::result(CUptiResult r) const {
  const char* s = nullptr;
  if (result_string) result_string(r, &s);
  return s ? s : "CUPTI error " + std::to_string(static_cast<int>(r));
}

namespace {
template <class Fn>
void bind(void* handle, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(handle, name));
}

CuptiApi load() {
  CuptiApi api;
  std::vector<std::string> candidates = {"libcupti.so.13", "libcupti.so"};
  const char* home = std::getenv("CUDA_HOME");
  std::string cuda = home && *home ? home : "/usr/local/cuda";
  for (const char* dir : {"/extras/CUPTI/lib64/", "/lib64/", "/lib/"}) {
    candidates.push_back(cuda + dir + "libcupti.so.13");
    candidates.push_back(cuda + dir + "libcupti.so");
  }
  std::string errors;
  for (const auto& c : candidates) {
    api.handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (api.handle) {
      api.path = c;
      break;
    }
    if (const char* e = dlerror()) errors = e;
  }
  if (!api.handle) {
    api.error = "libcupti not found (last error: " + errors + ")";
    return api;
  }
  void* h = api.handle;
  bind(h, api.activity_enable, "cuptiActivityEnable");
  bind(h, api.activity_register_callbacks, "cuptiActivityRegisterCallbacks");
  bind(h, api.activity_flush_all, "cuptiActivityFlushAll");
  bind(h, api.activity_next_record, "cuptiActivityGetNextRecord");
  bind(h, api.activity_dropped, "cuptiActivityGetNumDroppedRecords");
  bind(h, api.subscribe, "cuptiSubscribe");
  bind(h, api.enable_callback, "cuptiEnableCallback");
  bind(h, api.result_string, "cuptiGetResultString");
  bind(h, api.profiler_initialize, "cuptiProfilerInitialize");
  bind(h, api.counter_availability, "cuptiProfilerGetCounterAvailability");
  bind(h, api.chip_name, "cuptiDeviceGetChipName");
  bind(h, api.get_device_id, "cuptiGetDeviceId");
  bind(h, api.rp_enable, "cuptiRangeProfilerEnable");
  bind(h, api.rp_disable, "cuptiRangeProfilerDisable");
  bind(h, api.rp_set_config, "cuptiRangeProfilerSetConfig");
  bind(h, api.rp_start, "cuptiRangeProfilerStart");
  bind(h, api.rp_stop, "cuptiRangeProfilerStop");
  bind(h, api.rp_decode, "cuptiRangeProfilerDecodeData");
  bind(h, api.rp_counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
  bind(h, api.rp_counter_data_init, "cuptiRangeProfilerCounterDataImageInitialize");
  bind(h, api.rp_counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
  bind(h, api.host_evaluate, "cuptiProfilerHostEvaluateToGpuValues");
  bind(h, api.host.initialize, "cuptiProfilerHostInitialize");
  bind(h, api.host.deinitialize, "cuptiProfilerHostDeinitialize");
  bind(h, api.host.metric_properties, "cuptiProfilerHostGetMetricProperties");
  bind(h, api.host.add_metrics, "cuptiProfilerHostConfigAddMetrics");
  bind(h, api.host.config_image_size, "cuptiProfilerHostGetConfigImageSize");
  bind(h, api.host.config_image, "cuptiProfilerHostGetConfigImage");
  bind(h, api.host.num_passes, "cuptiProfilerHostGetNumOfPasses");
  api.host.result_string = api.result_string;
  return api;
}
}  // namespace

CuptiApi& cupti_api() noexcept {
  static CuptiApi api = load();
  return api;
}

}  // namespace rtrace::tracer
