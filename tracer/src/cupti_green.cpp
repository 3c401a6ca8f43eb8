// An SM partition for an unmodified CUDA app without MPS: a green context of
// RTRACE_GREEN_CTX_SMS SMs, made current by the tracer on every thread at the
// entry of its CUDA driver calls (CUPTI driver-API callbacks), so the app's
// contexts, modules, memory and launches land in it from the first call on.
// The launcher uses it for the kernel-count run of an sms point when CUPTI
// refuses to profile under MPS (docs/launcher.md); whether the app's kernels
// really ran there is read from their activity records (their contextId), and
// only those rows say "in-partition" (RankState::set_partition_context).
// An idea from the field notes, built here and tested against the fake driver:
// on a GPU, validate.sh shows whether the counts land in-partition.
#include <dlfcn.h>

#include <mutex>

#include "cupti_gpu.hpp"
#include "cupti_loader.hpp"
#include "tracer.hpp"

namespace rtrace::tracer {

namespace {

struct Green {
  int requested = 0;
  bool tried = false;
  CUcontext ctx = nullptr;
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
};
Green& green() {
  static auto* g = new Green();  // leaked: used from exit paths too
  return *g;
}
std::mutex g_create_mutex;
thread_local bool t_in_green = false;  // our own driver calls raise callbacks too

template <class Fn>
bool bind(void* h, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(dlsym(h, name));
  return fn != nullptr;
}

// Creates the green context once; false (logged) when it cannot be exactly
// the requested SMs.
void create(RankState& s) {
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
    return;
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
    return;
  }
  if (static_cast<int>(group.sm.smCount) != g.requested) {
    s.log(LogLevel::Warn, "green context: the driver splits SMs in groups of " +
                              std::to_string(group.sm.smCoscheduledAlignment) + " (min " +
                              std::to_string(group.sm.minSmPartitionSize) + "): " + std::to_string(g.requested) +
                              " SMs would be " + std::to_string(group.sm.smCount) +
                              ", not the partition: the app runs on the whole device");
    return;
  }
  r = generate(&desc, &group, 1);
  if (r == CUDA_SUCCESS) r = create_green(&gc, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
  if (r == CUDA_SUCCESS) r = from_green(&g.ctx, gc);
  if (r != CUDA_SUCCESS) {
    g.ctx = nullptr;
    s.log(LogLevel::Warn, "green context of " + std::to_string(g.requested) + " SMs: creation failed (CUDA error " +
                              std::to_string(static_cast<int>(r)) + "): the app runs on the whole device");
    return;
  }
  std::uint32_t id = 0;
  CuptiApi& api = cupti_api();
  if (api.get_context_id && api.get_context_id(g.ctx, &id) == CUPTI_SUCCESS) s.set_partition_context(id);
  s.log(LogLevel::Info, "green context " + std::to_string(id) + " of " + std::to_string(g.requested) +
                            " SMs made current for the app's CUDA calls");
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
    {
      std::lock_guard<std::mutex> lock(g_create_mutex);
      if (!g.tried) create(s);
    }
    if (g.ctx) {
      CUcontext current = nullptr;
      if (g.ctx_get_current(&current) == CUDA_SUCCESS && current != g.ctx) g.ctx_set_current(g.ctx);
    }
  } catch (...) {
  }
  t_in_green = false;
}

}  // namespace rtrace::tracer
