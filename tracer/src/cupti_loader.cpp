#include "cupti_loader.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <vector>

namespace rtrace::tracer {

bool CuptiApi::has_trace_api() const noexcept {
  return activity_enable && activity_register_callbacks && activity_flush_all && activity_next_record &&
         activity_dropped && subscribe && enable_callback && result_string;
}

bool CuptiApi::has_profiler_api() const noexcept {
  return profiler_initialize && counter_availability && chip_name && get_device_id && get_context_id && rp_enable &&
         rp_disable && rp_set_config && rp_start && rp_stop && rp_decode && rp_counter_data_size &&
         rp_counter_data_init && rp_counter_data_info && rp_range_info && host_evaluate && host.complete();
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

// Loads `path` (a file name or a path); for a path, the Perfworks libraries of
// its directory first, so that libcupti's own dlopen of them by name finds
// those (an already loaded soname is reused) instead of none or another version.
void* open_cupti(const std::string& path, std::string& error) {
  if (const auto slash = path.rfind('/'); slash != std::string::npos) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      error = "no such file";
      return nullptr;
    }
    const std::string dir = path.substr(0, slash + 1);
    for (const char* perf : {"libnvperf_host.so", "libnvperf_target.so"})
      if (stat((dir + perf).c_str(), &st) == 0) dlopen((dir + perf).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error = e ? e : "dlopen failed";
  }
  return h;
}

CuptiApi load() {
  CuptiApi api;
  std::vector<std::string> candidates;
  if (const char* only = std::getenv("RTRACE_CUPTI_LIB"); only && *only) {
    candidates.push_back(only);  // the user's choice, and nothing else
  } else {
    if (const std::string here = tracer_library_dir(); !here.empty()) candidates.push_back(here + "/libcupti.so.13");
    candidates.push_back("libcupti.so.13");
    candidates.push_back("libcupti.so");
    const char* home = std::getenv("CUDA_HOME");
    const std::string cuda = home && *home ? home : "/usr/local/cuda";
    for (const char* dir : {"/extras/CUPTI/lib64/", "/lib64/", "/lib/"}) {
      candidates.push_back(cuda + dir + "libcupti.so.13");
      candidates.push_back(cuda + dir + "libcupti.so");
    }
  }
  std::string last_error;
  for (const auto& c : candidates) {
    std::string why;
    api.handle = open_cupti(c, why);
    if (api.handle) {
      // The file actually loaded (a bare name resolves through the loader path).
      api.path = c;
      if (c.find('/') == std::string::npos) {
        Dl_info info{};
        void* sym = dlsym(api.handle, "cuptiGetResultString");
        if (sym && dladdr(sym, &info) && info.dli_fname) api.path = info.dli_fname;
      }
      break;
    }
    api.tried.push_back(c + ": " + why);
    if (why != "no such file") last_error = why;
  }
  if (!api.handle) {
    api.error = candidates.size() == 1
                    ? "libcupti not loadable from RTRACE_CUPTI_LIB=" + candidates[0] + " (" + api.tried[0] + ")"
                    : "libcupti.so.13 not found (tried " + std::to_string(candidates.size()) +
                          " places: next to the tracer, the loader path, $CUDA_HOME or /usr/local/cuda" +
                          (last_error.empty() ? "" : "; last error: " + last_error) + ")";
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
  bind(h, api.enable_domain, "cuptiEnableDomain");
  bind(h, api.result_string, "cuptiGetResultString");
  bind(h, api.profiler_initialize, "cuptiProfilerInitialize");
  bind(h, api.counter_availability, "cuptiProfilerGetCounterAvailability");
  bind(h, api.chip_name, "cuptiDeviceGetChipName");
  bind(h, api.get_device_id, "cuptiGetDeviceId");
  bind(h, api.get_context_id, "cuptiGetContextId");
  bind(h, api.rp_enable, "cuptiRangeProfilerEnable");
  bind(h, api.rp_disable, "cuptiRangeProfilerDisable");
  bind(h, api.rp_set_config, "cuptiRangeProfilerSetConfig");
  bind(h, api.rp_start, "cuptiRangeProfilerStart");
  bind(h, api.rp_stop, "cuptiRangeProfilerStop");
  bind(h, api.rp_decode, "cuptiRangeProfilerDecodeData");
  bind(h, api.rp_counter_data_size, "cuptiRangeProfilerGetCounterDataSize");
  bind(h, api.rp_counter_data_init, "cuptiRangeProfilerCounterDataImageInitialize");
  bind(h, api.rp_counter_data_info, "cuptiRangeProfilerGetCounterDataInfo");
  bind(h, api.rp_range_info, "cuptiRangeProfilerCounterDataGetRangeInfo");
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

std::string tracer_library_dir() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&tracer_library_dir), &info) || !info.dli_fname) return {};
  std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

CuptiApi& cupti_api() noexcept {
  // Leaked on purpose: a function-local static would be destroyed by an exit
  // handler registered when it was first used (inside cuInit), i.e. BEFORE the
  // tracer's own exit flush runs and still needs it.
  static CuptiApi* api = new CuptiApi(load());
  return *api;
}

}  // namespace rtrace::tracer
