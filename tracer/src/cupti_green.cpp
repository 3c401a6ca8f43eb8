// An SM partition for an unmodified CUDA app without MPS: a green context of
// RTRACE_GREEN_CTX_SMS SMs, made current by the tracer at the entry of the
// app's CUDA driver calls (CUPTI driver-API callbacks), so the app's
// contexts, modules, memory and launches land in it from the first call on.
// The launcher uses it for the kernel-count run of an sms point when CUPTI
// refuses to profile under MPS (docs/launcher.md); whether the app's kernels
// really ran there is read from their activity records (their contextId), and
// only those rows say "in-partition" (RankState::set_partition_context).
//
// What cuda.h says about green contexts shapes the rest (issue 31):
//  * cuGreenCtxCreate retains the device's primary context: the profiler
//    profiles the green context only, never that parent (cupti_metrics.cpp);
//  * "a green context can be current to only one thread at a time": it
//    belongs to the first thread whose driver call made it current; a kernel
//    launched from any other thread refuses the partition for the process
//    (gpu_status metrics-refused, with the reason): the launcher then counts
//    on the whole device instead;
//  * on compute capability 9.x, once a module with dynamic parallelism is
//    loaded, green-context kernels may use 2 more SMs: such a module is flagged.
// An idea from the field notes, built here and tested against the fake driver:
// on a GPU, validate.sh shows whether the counts land in-partition.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "cupti_gpu.hpp"
#include "cupti_loader.hpp"
#include "tracer.hpp"

namespace rtrace::tracer {

namespace {

struct Green {
  int requested = 0;
  bool tried = false;
  std::atomic<CUcontext> ctx{nullptr};  // set once, after owner
  std::atomic<long> owner{0};           // the thread the green context belongs to
  std::atomic<bool> refused{false};
  std::atomic<bool> cdp_flagged{false};
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
};
Green& green() {
  static auto* g = new Green();  // leaked: used from exit paths too
  return *g;
}
std::mutex g_create_mutex;
thread_local bool t_in_green = false;  // our own driver calls raise callbacks too

long this_thread() noexcept { return static_cast<long>(syscall(SYS_gettid)); }

bool metrics_mode(RankState& s) { return s.config().mode == TracerMode::CudaMetrics; }

template <class Fn>
bool bind(void* h, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(h, name));
  return fn != nullptr;
}

// Creates the green context once; false (logged) when it cannot be exactly
// the requested SMs.
bool create(RankState& s) {
  Green& g = green();
  g.tried = true;
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*get_resource)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*split)(CUdevResource*, unsigned*, const CUdevResource*, CUdevResource*, unsigned, unsigned) = nullptr;
  CUresult (*generate)(CUdevResourceDesc*, CUdevResource*, unsigned) = nullptr;
  CUresult (*create_green)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned) = nullptr;
  CUresult (*from_green)(CUcontext*, CUgreenCtx) = nullptr;
  if (!h || !bind(h, device_get, "cuDeviceGet") || !bind(h, get_resource, "cuDeviceGetDevResource") ||
      !bind(h, split, "cuDevSmResourceSplitByCount") || !bind(h, generate, "cuDevResourceGenerateDesc") ||
      !bind(h, create_green, "cuGreenCtxCreate") || !bind(h, from_green, "cuCtxFromGreenCtx") ||
      !bind(h, g.ctx_get_current, "cuCtxGetCurrent") || !bind(h, g.ctx_set_current, "cuCtxSetCurrent")) {
    s.log(LogLevel::Warn, "green context: the driver has no green-context API: the app runs on the whole device");
    return false;
  }
  CUdevice dev = 0;
  CUdevResource all{}, group{}, rest{};
  unsigned groups = 1;
  CUdevResourceDesc desc = nullptr;
  CUgreenCtx gc = nullptr;
  CUresult r = device_get(&dev, 0);
  if (r == CUDA_SUCCESS) r = get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
  if (r == CUDA_SUCCESS) r = split(&group, &groups, &all, &rest, 0, static_cast<unsigned>(g.requested));
  if (r != CUDA_SUCCESS || groups < 1) {
    s.log(LogLevel::Warn, "green context of " + std::to_string(g.requested) + " SMs not possible (CUDA error " +
                              std::to_string(static_cast<int>(r)) + "): the app runs on the whole device");
    return false;
  }
  if (static_cast<int>(group.sm.smCount) != g.requested) {
    s.log(LogLevel::Warn, "green context: the driver splits SMs in groups of " +
                              std::to_string(group.sm.smCoscheduledAlignment) + " (min " +
                              std::to_string(group.sm.minSmPartitionSize) + "): " + std::to_string(g.requested) +
                              " SMs would be " + std::to_string(group.sm.smCount) +
                              ", not the partition: the app runs on the whole device");
    return false;
  }
  r = generate(&desc, &group, 1);
  if (r == CUDA_SUCCESS) r = create_green(&gc, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
  CUcontext ctx = nullptr;
  if (r == CUDA_SUCCESS) r = from_green(&ctx, gc);
  if (r != CUDA_SUCCESS) {
    s.log(LogLevel::Warn, "green context of " + std::to_string(g.requested) + " SMs: creation failed (CUDA error " +
                              std::to_string(static_cast<int>(r)) + "): the app runs on the whole device");
    return false;
  }
  g.owner.store(this_thread());  // the creating thread: its driver call is making it current
  g.ctx.store(ctx);
  std::uint32_t id = 0;
  CuptiApi& api = cupti_api();
  if (api.get_context_id && api.get_context_id(ctx, &id) == CUPTI_SUCCESS) s.set_partition_context(id);
  s.log(LogLevel::Info, "green context " + std::to_string(id) + " of " + std::to_string(g.requested) +
                            " SMs made current for the app's CUDA calls");
  return true;
}

bool needs_no_context(CUpti_CallbackId cbid) {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuInit:
    case CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion:
    case CUPTI_DRIVER_TRACE_CBID_cuDeviceGet:
    case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount:
    case CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute:
    case CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress:
    case CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2:
      return true;
    default:
      return false;
  }
}

// A kernel launched from a thread the green context does not belong to: it
// runs in that thread's own context, on the whole device. The partition is
// refused for the process, once, with the reason.
void refuse_other_thread(RankState& s, long tid) {
  Green& g = green();
  if (g.refused.exchange(true)) return;
  const std::string line = "green context: a kernel launched from a second thread (" + std::to_string(tid) +
                           "; the green context belongs to thread " + std::to_string(g.owner.load()) +
                           "): a green context can be current to one thread at a time (cuda.h), so that thread's "
                           "kernels ran outside the partition; multi-threaded launchers are counted on the whole "
                           "device";
  s.log(LogLevel::Warn, "metrics: " + line);
  s.set_gpu_status(GpuStatus::MetricsRefused, line);
}

}  // namespace

bool start_green_partition(RankState& s, int sms) noexcept {
  try {
    CuptiApi& api = cupti_api();
    if (sms <= 0 || !api.enable_domain || !subscriber_handle()) return false;
    green().requested = sms;
    if (CUptiResult r = api.enable_domain(1, subscriber_handle(), CUPTI_CB_DOMAIN_DRIVER_API); r != CUPTI_SUCCESS) {
      s.log(LogLevel::Warn, "green context: driver API callbacks refused: " + api.result(r));
      return false;
    }
    if (api.enable_callback)
      api.enable_callback(1, subscriber_handle(), CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
    if (metrics_mode(s)) metrics_hold_for_green();
    return true;
  } catch (...) {
    s.error("green context: set-up failed");
    return false;
  }
}

void green_on_driver_api(RankState& s, CUpti_CallbackId cbid, const CUpti_CallbackData* data) noexcept {
  Green& g = green();
  if (g.requested <= 0 || t_in_green || !data || data->callbackSite != CUPTI_API_ENTER || needs_no_context(cbid))
    return;
  t_in_green = true;
  try {
    bool created_now = false, ok = false;
    {
      std::lock_guard<std::mutex> lock(g_create_mutex);
      if (!g.tried) {
        created_now = true;
        ok = create(s);
      }
    }
    if (created_now && metrics_mode(s)) {
      if (ok) metrics_green_ready(s, g.ctx.load());
      else metrics_green_failed(s);
    }
    if (CUcontext ctx = g.ctx.load()) {
      const long me = this_thread();
      if (g.owner.load() == me) {
        CUcontext current = nullptr;
        if (g.ctx_get_current(&current) == CUDA_SUCCESS && current != ctx) g.ctx_set_current(ctx);
      } else if (is_kernel_launch(cbid)) {
        refuse_other_thread(s, me);
      }
    }
  } catch (...) {
  }
  t_in_green = false;
}

CUcontext green_context_of_this_thread() noexcept {
  Green& g = green();
  CUcontext ctx = g.ctx.load();
  return ctx && g.owner.load() == this_thread() ? ctx : nullptr;
}

void green_on_module_loaded(RankState& s, const CUpti_ResourceData* data) noexcept {
  Green& g = green();
  if (g.requested <= 0 || !data || !data->resourceDescriptor) return;
  const auto* module = static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor);
  if (!module->pCubin || module->cubinSize == 0) return;
  // Device-side launches compile to calls of the device runtime's launch entry
  // (CUDA 12+: __cudaCDP2LaunchDeviceV2; before: cudaLaunchDevice), named in
  // the module's ELF symbols and sections.
  static const char kMarker[] = "LaunchDevice";
  const char* begin = module->pCubin;
  const char* end = begin + module->cubinSize;
  if (std::search(begin, end, kMarker, kMarker + sizeof kMarker - 1) == end) return;
  if (g.cdp_flagged.exchange(true)) return;
  s.log(LogLevel::Warn, "metrics: green context: module " + std::to_string(module->moduleId) +
                            " uses dynamic parallelism (CDP): on compute capability 9.x kernels in green contexts may "
                            "then run on 2 SMs more than the partition's " + std::to_string(g.requested) +
                            " (cuda.h): counts marked in-partition may include them");
}

}  // namespace rtrace::tracer
