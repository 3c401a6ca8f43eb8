// libcupti reached through dlopen, so the tracer loads on machines without a
// GPU or CUDA install and then does nothing.
#pragma once

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <string>
#include <vector>

#include "metric_list.hpp"

namespace rtrace::tracer {

struct CuptiApi {
  void* handle = nullptr;
  std::string path;   // the library that was loaded
  std::string error;  // why loading failed
  // Activity + callback API.
  decltype(&cuptiActivityEnable) activity_enable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) activity_register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) activity_flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) activity_next_record = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) activity_dropped = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiEnableCallback) enable_callback = nullptr;
  decltype(&cuptiEnableDomain) enable_domain = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  // Profiling (metrics mode).
  decltype(&cuptiProfilerInitialize) profiler_initialize = nullptr;
  decltype(&cuptiProfilerGetCounterAvailability) counter_availability = nullptr;
  decltype(&cuptiDeviceGetChipName) chip_name = nullptr;
  decltype(&cuptiGetDeviceId) get_device_id = nullptr;
  decltype(&cuptiGetContextId) get_context_id = nullptr;
  decltype(&cuptiRangeProfilerEnable) rp_enable = nullptr;
  decltype(&cuptiRangeProfilerDisable) rp_disable = nullptr;
  decltype(&cuptiRangeProfilerSetConfig) rp_set_config = nullptr;
  decltype(&cuptiRangeProfilerStart) rp_start = nullptr;
  decltype(&cuptiRangeProfilerStop) rp_stop = nullptr;
  decltype(&cuptiRangeProfilerDecodeData) rp_decode = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataSize) rp_counter_data_size = nullptr;
  decltype(&cuptiRangeProfilerCounterDataImageInitialize) rp_counter_data_init = nullptr;
  decltype(&cuptiRangeProfilerGetCounterDataInfo) rp_counter_data_info = nullptr;
  decltype(&cuptiRangeProfilerCounterDataGetRangeInfo) rp_range_info = nullptr;
  decltype(&cuptiProfilerHostEvaluateToGpuValues) host_evaluate = nullptr;
  HostApi host;
  std::vector<std::string> tried;  // every candidate, in order, with why it failed

  bool loaded() const noexcept { return handle != nullptr; }
  bool has_trace_api() const noexcept;
  bool has_profiler_api() const noexcept;
  std::string result(CUptiResult r) const;
};

// Loads libcupti once: $RTRACE_CUPTI_LIB alone when set, else the first found
// of: libcupti.so.13 next to this library
// (a bundle's lib/: the CUPTI the tracer was built against), libcupti.so.13
// and libcupti.so on the loader path, then $CUDA_HOME/extras/CUPTI/lib64,
// $CUDA_HOME/lib64, $CUDA_HOME/lib (CUDA_HOME defaults to /usr/local/cuda).
// A libcupti loaded by path gets libnvperf_host.so / libnvperf_target.so from
// its own directory loaded first (libcupti dlopens them by name, and an
// unmodified libcupti has no RUNPATH that would find them there).
// Never unloaded or destroyed: exit handlers use it until the very end.
CuptiApi& cupti_api() noexcept;

// The directory of this library (librtrace_tracer.so), "" when unknown.
std::string tracer_library_dir();

}  // namespace rtrace::tracer
