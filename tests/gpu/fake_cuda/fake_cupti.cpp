// A stand-in for CUPTI (libcupti.so.13) on machines without a GPU. Test helper
// only (see fake_cuda.h): it implements the entry points rtrace's tracer binds
// (tracer/src/cupti_loader.cpp) on top of the fake driver's launch reports.
//
// Like the real library where the tracer depends on it:
//  * activity records are buffered inside CUPTI and delivered only through
//    the client's buffer callbacks on cuptiActivityFlushAll (nothing is lost
//    while CUPTI is alive);
//  * CUPTI tears itself down at exit (an exit handler registered when the
//    library is loaded, i.e. inside cuInit): every later call fails and the
//    records still buffered are gone. A tool that flushes from an exit handler
//    registered BEFORE libcupti was loaded runs after that teardown and loses
//    its last records: tests/tracer catch that order regressing;
//  * the Range Profiler with auto ranges and kernel replay gives one range per
//    kernel launch, named after the kernel; launches of CUDA graph nodes do not
//    become ranges (FAKE_CUPTI_GRAPH_RANGES=1: they do);
//  * under MPS the range profiler is refused with CUPTI_ERROR_NOT_SUPPORTED
//    (FAKE_CUPTI_PROFILE_UNDER_MPS=1: accepted), the activity API works;
//  * one profiling session per device (cupti_profiler_target.h: setting up
//    profiling "may fail, if any profiling or sampling session is active on
//    the specified context or its device"): while a context's range profiler
//    is enabled, cuptiRangeProfilerEnable and cuptiProfilerGetCounterAvailability
//    for any context of that device fail with CUPTI_ERROR_HARDWARE_BUSY;
//  * a counter data image holds the ranges it was sized for; later launches
//    are dropped (cuptiRangeProfilerDecodeData counts them) until it is
//    initialised again;
//  * counter access restricted to administrators (the driver's default
//    NVreg_RestrictProfilingToAdminUsers=1) refuses cuptiProfilerInitialize
//    with CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (FAKE_CUPTI_INSUFFICIENT_PRIVILEGES=1).
// Other knobs: FAKE_CUPTI_INSUFFICIENT_PRIVILEGES=1 (counter access refused),
// FAKE_CUPTI_DROP_RECORD=<kernel name> (that kernel's activity records are
// dropped and counted), FAKE_CUPTI_CHIP (default GH100),
// FAKE_CUPTI_MISSING_METRICS=<name,...> (the chip lacks them).
#include "fake_cuda.h"

#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback;
  void* userdata;
  std::set<std::pair<int, int>> enabled;
};
struct CUpti_RangeProfiler_Object {
  CUcontext ctx;
  bool started = false;
  std::uint8_t* image = nullptr;
  std::size_t image_size = 0;
  std::size_t max_ranges_per_pass = 0;
  int passes = 2;
};
struct CUpti_Profiler_Host_Object {
  std::string chip;
  std::vector<std::string> metrics;
};

namespace {

// The counter data image: a header, then one slot per range.
constexpr std::uint32_t kImageMagic = 0x46414b45;  // "FAKE"
struct ImageHeader {
  std::uint32_t magic;
  std::uint32_t max_ranges;
  std::uint32_t ranges;
  std::uint32_t dropped;
};
struct RangeSlot {
  char name[256];
  FakeCudaWork work;
  double duration_ns;
};

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The state lives until the process ends (leaked): after the teardown every
// call fails on g_torn_down, deterministically, never on a destroyed object.
std::mutex g_mutex;
std::atomic<bool> g_torn_down{false};
CUpti_Subscriber_st* g_subscriber = nullptr;
CUpti_BuffersCallbackRequestFunc g_request = nullptr;
CUpti_BuffersCallbackCompleteFunc g_complete = nullptr;
std::set<int>& g_kinds = *new std::set<int>();
std::vector<CUpti_ActivityKernel10>& g_pending = *new std::vector<CUpti_ActivityKernel10>();  // until a flush
std::size_t g_dropped = 0;
bool g_profiler_initialized = false;
std::map<CUcontext, CUpti_RangeProfiler_Object*>& g_profilers = *new std::map<CUcontext, CUpti_RangeProfiler_Object*>();

bool poisoned(const char* call) {
  if (!g_torn_down.load()) return false;
  std::fprintf(stderr, "fake libcupti: %s called after CUPTI's own exit-time teardown\n", call);
  return true;
}

void teardown() {
  // CUPTI's exit handler: buffered records are discarded, the API is closed.
  std::lock_guard<std::mutex> lock(g_mutex);
  g_torn_down = true;
  if (!g_pending.empty())
    std::fprintf(stderr, "fake libcupti: teardown discards %zu undelivered activity record(s)\n", g_pending.size());
  g_pending.clear();
}

__attribute__((constructor)) void on_load() { std::atexit(teardown); }

void resource_callback(CUpti_CallbackId id, CUcontext ctx) {
  CUpti_Subscriber_st* s = g_subscriber;
  if (!s || g_torn_down || !s->enabled.count({CUPTI_CB_DOMAIN_RESOURCE, static_cast<int>(id)})) return;
  CUpti_ResourceData data{};
  data.context = ctx;
  s->callback(s->userdata, CUPTI_CB_DOMAIN_RESOURCE, id, &data);
}

void on_context_created(CUcontext ctx) { resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, ctx); }

std::set<int>& g_domains = *new std::set<int>();  // domains enabled whole (cuptiEnableDomain)

void on_api_enter(int cbid, const char* name) {
  CUpti_Subscriber_st* s = g_subscriber;
  if (!s || g_torn_down) return;
  if (!g_domains.count(CUPTI_CB_DOMAIN_DRIVER_API) && !s->enabled.count({CUPTI_CB_DOMAIN_DRIVER_API, cbid})) return;
  CUpti_CallbackData data{};
  data.callbackSite = CUPTI_API_ENTER;
  data.functionName = name;
  data.context = fakecuda_current_context();  // read before the callback, as CUPTI does
  s->callback(s->userdata, CUPTI_CB_DOMAIN_DRIVER_API, static_cast<CUpti_CallbackId>(cbid), &data);
}
void on_context_destroying(CUcontext ctx) { resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, ctx); }

void on_module_loaded(uint32_t id, const char* image, size_t size) {
  CUpti_Subscriber_st* s = g_subscriber;
  if (!s || g_torn_down || !s->enabled.count({CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED})) return;
  CUpti_ModuleResourceData module{};
  module.moduleId = id;
  module.cubinSize = size;
  module.pCubin = image;
  CUpti_ResourceData data{};
  data.context = fakecuda_current_context();
  data.resourceDescriptor = &module;
  s->callback(s->userdata, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED, &data);
}

// The profiling session active on `ctx`'s device, if any (one per device).
const CUpti_RangeProfiler_Object* session_on_device_of(CUcontext ctx) {
  for (const auto& [c, o] : g_profilers)
    if (fakecuda_context_device(c) == fakecuda_context_device(ctx)) return o;
  return nullptr;
}

ImageHeader* header_of(std::uint8_t* image) { return reinterpret_cast<ImageHeader*>(image); }
const ImageHeader* header_of(const std::uint8_t* image) { return reinterpret_cast<const ImageHeader*>(image); }
RangeSlot* slots_of(std::uint8_t* image) { return reinterpret_cast<RangeSlot*>(image + sizeof(ImageHeader)); }
const RangeSlot* slots_of(const std::uint8_t* image) {
  return reinterpret_cast<const RangeSlot*>(image + sizeof(ImageHeader));
}

int on_launch_begin(const FakeCudaLaunch* l) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_profilers.find(l->context);
  if (it == g_profilers.end() || !it->second->started || !it->second->image) return 1;
  if (l->from_graph && env("FAKE_CUPTI_GRAPH_RANGES") != "1") return 1;
  CUpti_RangeProfiler_Object* p = it->second;
  ImageHeader* h = header_of(p->image);
  const std::size_t limit = std::min<std::size_t>(h->max_ranges, p->max_ranges_per_pass);
  if (h->ranges >= limit) {
    ++h->dropped;
    return p->passes;
  }
  RangeSlot& s = slots_of(p->image)[h->ranges++];
  std::snprintf(s.name, sizeof s.name, "%s", l->name);
  s.work = *l->work;
  s.duration_ns = fakecuda_kernel_ns(l->work, fakecuda_context_sms(l->context));
  return p->passes;
}

void on_launch_end(const FakeCudaLaunch* l) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_torn_down || !g_kinds.count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) return;
  if (!env("FAKE_CUPTI_DROP_RECORD").empty() && env("FAKE_CUPTI_DROP_RECORD") == l->name) {
    ++g_dropped;
    return;
  }
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.name = l->name;
  k.correlationId = l->correlation_id;
  k.contextId = l->context_id;
  k.deviceId = l->device;
  k.streamId = l->stream_id;
  k.gridX = static_cast<int32_t>(l->grid[0]);
  k.gridY = static_cast<int32_t>(l->grid[1]);
  k.gridZ = static_cast<int32_t>(l->grid[2]);
  k.blockX = static_cast<int32_t>(l->block[0]);
  k.blockY = static_cast<int32_t>(l->block[1]);
  k.blockZ = static_cast<int32_t>(l->block[2]);
  k.registersPerThread = 32;
  k.start = l->start_ns;
  k.end = l->end_ns;
  k.graphId = l->from_graph ? 1 : 0;  // 0: not launched through a graph
  g_pending.push_back(k);
}

const FakeCudaObserver kObserver = {on_context_created, on_context_destroying, on_launch_begin, on_launch_end,
                                    on_api_enter, on_module_loaded};

// The metric value of one range, from what the fake kernel did.
double metric_value(const std::string& name, const RangeSlot& s) {
  const FakeCudaWork& w = s.work;
  const std::string base = name.substr(0, name.find('.'));
  if (name == "gpu__time_duration.sum") return s.duration_ns;
  if (name == "sm__cycles_elapsed.avg.per_second") return 1.755e9;
  // Plain arrays, no static objects with destructors: this runs from exit
  // handlers too (the tracer's final flush), after such objects may be gone.
  struct Op {
    const char* name;
    double FakeCudaWork::*field;
  };
  static constexpr Op kOps[] = {{"dadd", &FakeCudaWork::dadd}, {"dmul", &FakeCudaWork::dmul},
                                {"dfma", &FakeCudaWork::dfma}, {"fadd", &FakeCudaWork::fadd},
                                {"fmul", &FakeCudaWork::fmul}, {"ffma", &FakeCudaWork::ffma},
                                {"hadd", &FakeCudaWork::hadd}, {"hmul", &FakeCudaWork::hmul},
                                {"hfma", &FakeCudaWork::hfma}};
  const std::string prefix = "sm__sass_thread_inst_executed_op_";
  if (base.rfind(prefix, 0) == 0) {
    const auto op = base.substr(prefix.size(), base.find("_pred_on") - prefix.size());
    for (const Op& o : kOps)
      if (op == o.name) return w.*(o.field);
    return 0.0;
  }
  if (base == "sm__ops_path_tensor_src_fp16") return w.tensor_fp16;
  if (base == "sm__ops_path_tensor_src_fp64") return w.tensor_fp64;
  if (base == "sm__ops_path_tensor_src_bf16_dst_fp32") return w.tensor_bf16;
  if (base == "sm__ops_path_tensor_src_tf32_dst_fp32") return w.tensor_tf32;
  if (base == "sm__ops_path_tensor_src_fp8") return w.tensor_fp8;
  if (base == "l1tex__t_bytes") return w.bytes_l1;
  if (base == "lts__t_bytes") return w.bytes_l2;
  if (base == "dram__bytes_read") return w.bytes_dram_read;
  if (base == "dram__bytes_write") return w.bytes_dram_write;
  if (base == "smsp__inst_executed") return (w.dadd + w.dmul + w.dfma + w.fadd + w.fmul + w.ffma) / 32 + 100;
  if (base == "smsp__thread_inst_executed_pred_on") return w.dadd + w.dmul + w.dfma + w.fadd + w.fmul + w.ffma + 3200;
  return 0.0;
}

bool metric_missing(const std::string& name) {
  const std::string missing = "," + env("FAKE_CUPTI_MISSING_METRICS") + ",";
  return missing.find("," + name + ",") != std::string::npos;
}

}  // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char** s) {
  switch (r) {
    case CUPTI_SUCCESS: *s = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *s = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: *s = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"; break;
    case CUPTI_ERROR_NOT_INITIALIZED: *s = "CUPTI_ERROR_NOT_INITIALIZED"; break;
    case CUPTI_ERROR_INVALID_METRIC_NAME: *s = "CUPTI_ERROR_INVALID_METRIC_NAME"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_HARDWARE_BUSY: *s = "CUPTI_ERROR_HARDWARE_BUSY"; break;
    default: *s = "CUPTI_ERROR_UNKNOWN (fake)"; break;
  }
  return CUPTI_SUCCESS;
}

// ------------------------------------------------------------ callbacks
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  if (poisoned("cuptiSubscribe")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_subscriber) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  g_subscriber = new CUpti_Subscriber_st{callback, userdata, {}};
  *subscriber = g_subscriber;
  fakecuda_set_observer(&kObserver);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain domain) {
  if (poisoned("cuptiEnableDomain")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!s) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) g_domains.insert(domain);
  else g_domains.erase(domain);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s, CUpti_CallbackDomain domain,
                                         CUpti_CallbackId cbid) {
  if (poisoned("cuptiEnableCallback")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!s) return CUPTI_ERROR_INVALID_PARAMETER;
  if (enable) s->enabled.insert({domain, static_cast<int>(cbid)});
  else s->enabled.erase({domain, static_cast<int>(cbid)});
  return CUPTI_SUCCESS;
}

// ------------------------------------------------------------ activity
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind) {
  if (poisoned("cuptiActivityEnable")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  g_kinds.insert(kind);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                    CUpti_BuffersCallbackCompleteFunc complete) {
  if (poisoned("cuptiActivityRegisterCallbacks")) return CUPTI_ERROR_NOT_INITIALIZED;
  g_request = request;
  g_complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  if (poisoned("cuptiActivityFlushAll")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::vector<CUpti_ActivityKernel10> records;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    records.swap(g_pending);
  }
  if (!g_request || !g_complete) return CUPTI_SUCCESS;
  std::size_t done = 0;
  while (done < records.size()) {
    std::uint8_t* buffer = nullptr;
    std::size_t size = 0, max_records = 0;
    g_request(&buffer, &size, &max_records);
    if (!buffer || size < sizeof(CUpti_ActivityKernel10)) return CUPTI_ERROR_UNKNOWN;
    std::size_t valid = 0;
    while (done < records.size() && valid + sizeof(CUpti_ActivityKernel10) <= size) {
      std::memcpy(buffer + valid, &records[done++], sizeof(CUpti_ActivityKernel10));
      valid += sizeof(CUpti_ActivityKernel10);
    }
    g_complete(nullptr, 0, buffer, size, valid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  if (poisoned("cuptiActivityGetNextRecord")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::uint8_t* next = *record ? reinterpret_cast<std::uint8_t*>(*record) + sizeof(CUpti_ActivityKernel10) : buffer;
  if (next + sizeof(CUpti_ActivityKernel10) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(next);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  if (poisoned("cuptiActivityGetNumDroppedRecords")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  *dropped = g_dropped;
  g_dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext ctx, uint32_t* id) {
  if (!ctx) return CUPTI_ERROR_INVALID_CONTEXT;
  *id = fakecuda_context_id(ctx);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext ctx, uint32_t* device) {
  if (!ctx) return CUPTI_ERROR_INVALID_CONTEXT;
  *device = static_cast<uint32_t>(fakecuda_context_device(ctx));
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiFinalize(void) { return CUPTI_SUCCESS; }

// ------------------------------------------------------------ profiler (target)
CUptiResult CUPTIAPI cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params*) {
  if (poisoned("cuptiProfilerInitialize")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (env("FAKE_CUPTI_INSUFFICIENT_PRIVILEGES") == "1") return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  g_profiler_initialized = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params*) { return CUPTI_SUCCESS; }

CUptiResult CUPTIAPI cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params* p) {
  if (poisoned("cuptiProfilerGetCounterAvailability")) return CUPTI_ERROR_NOT_INITIALIZED;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (session_on_device_of(p->ctx ? p->ctx : fakecuda_current_context())) return CUPTI_ERROR_HARDWARE_BUSY;
  }
  if (!p->pCounterAvailabilityImage) {
    p->counterAvailabilityImageSize = 64;
    return CUPTI_SUCCESS;
  }
  std::memset(p->pCounterAvailabilityImage, 0, p->counterAvailabilityImageSize);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params* p) {
  const char* chip = std::getenv("FAKE_CUPTI_CHIP");
  p->pChipName = chip && *chip ? chip : "GH100";
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params* p) {
  if (poisoned("cuptiRangeProfilerEnable")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!g_profiler_initialized) return CUPTI_ERROR_NOT_INITIALIZED;
  if (env("FAKE_CUPTI_INSUFFICIENT_PRIVILEGES") == "1") return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  if (fakecuda_under_mps() && env("FAKE_CUPTI_PROFILE_UNDER_MPS") != "1") return CUPTI_ERROR_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!p->ctx) return CUPTI_ERROR_INVALID_CONTEXT;
  if (session_on_device_of(p->ctx)) {
    std::fprintf(stderr, "fake libcupti: cuptiRangeProfilerEnable(context %u): a profiling session is active on its "
                         "device\n", fakecuda_context_id(p->ctx));
    return CUPTI_ERROR_HARDWARE_BUSY;
  }
  auto* o = new CUpti_RangeProfiler_Object{};
  o->ctx = p->ctx;
  g_profilers[p->ctx] = o;
  p->pRangeProfilerObject = o;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params* p) {
  if (poisoned("cuptiRangeProfilerDisable")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_profilers.begin(); it != g_profilers.end(); ++it)
    if (it->second == p->pRangeProfilerObject) {
      delete it->second;
      g_profilers.erase(it);
      break;
    }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params* p) {
  if (poisoned("cuptiRangeProfilerGetCounterDataSize")) return CUPTI_ERROR_NOT_INITIALIZED;
  p->counterDataSize = sizeof(ImageHeader) + p->maxNumOfRanges * sizeof(RangeSlot);
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params* p) {
  if (poisoned("cuptiRangeProfilerCounterDataImageInitialize")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!p->pCounterData || p->counterDataSize < sizeof(ImageHeader)) return CUPTI_ERROR_INVALID_PARAMETER;
  ImageHeader* h = header_of(p->pCounterData);
  h->magic = kImageMagic;
  h->max_ranges = static_cast<std::uint32_t>((p->counterDataSize - sizeof(ImageHeader)) / sizeof(RangeSlot));
  h->ranges = 0;
  h->dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params* p) {
  if (poisoned("cuptiRangeProfilerSetConfig")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  CUpti_RangeProfiler_Object* o = p->pRangeProfilerObject;
  if (!o || !p->pCounterDataImage) return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->range != CUPTI_AutoRange || p->replayMode != CUPTI_KernelReplay) return CUPTI_ERROR_NOT_SUPPORTED;
  o->image = p->pCounterDataImage;
  o->image_size = p->counterDataImageSize;
  o->max_ranges_per_pass = p->maxRangesPerPass;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params* p) {
  if (poisoned("cuptiRangeProfilerStart")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  p->pRangeProfilerObject->started = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params* p) {
  if (poisoned("cuptiRangeProfilerStop")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  p->pRangeProfilerObject->started = false;
  p->isAllPassSubmitted = 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params* p) {
  if (poisoned("cuptiRangeProfilerDecodeData")) return CUPTI_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mutex);
  const CUpti_RangeProfiler_Object* o = p->pRangeProfilerObject;
  p->numOfRangeDropped = o && o->image ? header_of(o->image)->dropped : 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params* p) {
  if (poisoned("cuptiRangeProfilerGetCounterDataInfo")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!p->pCounterDataImage || header_of(p->pCounterDataImage)->magic != kImageMagic)
    return CUPTI_ERROR_INVALID_PARAMETER;
  p->numTotalRanges = header_of(p->pCounterDataImage)->ranges;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiRangeProfilerCounterDataGetRangeInfo(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params* p) {
  if (poisoned("cuptiRangeProfilerCounterDataGetRangeInfo")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!p->pCounterDataImage || header_of(p->pCounterDataImage)->magic != kImageMagic ||
      p->rangeIndex >= header_of(p->pCounterDataImage)->ranges)
    return CUPTI_ERROR_INVALID_PARAMETER;
  p->rangeName = slots_of(p->pCounterDataImage)[p->rangeIndex].name;
  return CUPTI_SUCCESS;
}

// ------------------------------------------------------------ profiler (host)
CUptiResult CUPTIAPI cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params* p) {
  if (!p->pChipName) return CUPTI_ERROR_INVALID_PARAMETER;
  p->pHostObject = new CUpti_Profiler_Host_Object{p->pChipName, {}};
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params* p) {
  delete p->pHostObject;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetMetricProperties(CUpti_Profiler_Host_GetMetricProperties_Params* p) {
  if (!p->pMetricName || metric_missing(p->pMetricName)) return CUPTI_ERROR_INVALID_METRIC_NAME;
  p->pDescription = "fake metric";
  p->pHwUnit = "fake";
  p->pDimUnit = "";
  p->metricType = CUPTI_METRIC_TYPE_COUNTER;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params* p) {
  for (std::size_t i = 0; i < p->numMetrics; ++i) {
    if (metric_missing(p->ppMetricNames[i])) return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->pHostObject->metrics.push_back(p->ppMetricNames[i]);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params* p) {
  std::size_t n = 0;
  for (const auto& m : p->pHostObject->metrics) n += m.size() + 1;
  p->configImageSize = n + 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params* p) {
  std::size_t at = 0;
  for (const auto& m : p->pHostObject->metrics) {
    if (at + m.size() + 1 >= p->configImageSize) return CUPTI_ERROR_INVALID_PARAMETER;
    std::memcpy(p->pConfigImage + at, m.c_str(), m.size() + 1);
    at += m.size() + 1;
  }
  p->pConfigImage[at] = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params* p) {
  p->numOfPasses = 2;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params* p) {
  if (poisoned("cuptiProfilerHostEvaluateToGpuValues")) return CUPTI_ERROR_NOT_INITIALIZED;
  if (!p->pCounterDataImage || header_of(p->pCounterDataImage)->magic != kImageMagic ||
      p->rangeIndex >= header_of(p->pCounterDataImage)->ranges)
    return CUPTI_ERROR_INVALID_PARAMETER;
  const RangeSlot& s = slots_of(p->pCounterDataImage)[p->rangeIndex];
  for (std::size_t i = 0; i < p->numMetrics; ++i) p->pMetricValues[i] = metric_value(p->ppMetricNames[i], s);
  return CUPTI_SUCCESS;
}

}  // extern "C"
