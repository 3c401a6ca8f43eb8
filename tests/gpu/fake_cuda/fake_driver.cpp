// A stand-in for the CUDA driver (libcuda.so.1) on machines without a GPU.
// Test helper only (see fake_cuda.h). It implements the part of the driver
// API that tests/gpu/fake_cuda/fake_cuda_app.cpp uses, and what the real
// driver does for tools: cuInit loads $CUDA_INJECTION64_PATH and calls its
// InitializeInjection, and every context creation/destruction and kernel
// launch is reported to the (fake) CUPTI that registered as observer.
#include "fake_cuda.h"

#include <dlfcn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

struct CUctx_st {
  std::uint32_t id = 0;
  int device = 0;
  int sms = 0;
  bool primary = false;
  bool green = false;
  int refs = 0;
  std::uint64_t clock_ns = 0;  // the context's virtual GPU clock
  std::atomic<long> current_on{0};  // green: the thread it is current on (cuda.h: one at a time)
};
struct CUmod_st {
  std::uint32_t id = 0;
};
struct CUfunc_st {
  std::string name;
};
struct CUgreenCtx_st {
  int sms = 0;
  CUcontext ctx = nullptr;
};
struct CUdevResourceDesc_st {
  int sms = 0;
};
struct FakeNode {
  CUfunction function;
  unsigned grid[3], block[3];
  FakeCudaWork work;
};
struct CUgraph_st {
  std::vector<FakeNode> nodes;
};
struct CUgraphExec_st {
  std::vector<FakeNode> nodes;
};
struct CUgraphNode_st {
  int index;
};

namespace {

std::mutex g_mutex;
bool g_initialized = false;
bool g_under_mps = false;
int g_device_sms = 132;
int g_mps_sms = 0;
std::uint32_t g_next_context = 1;
std::atomic<std::uint32_t> g_correlation{0};
CUcontext g_primary = nullptr;
const FakeCudaObserver* g_observer = nullptr;
thread_local CUcontext t_current = nullptr;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

long this_thread() { return static_cast<long>(syscall(SYS_gettid)); }

// EXCLUSIVE_PROCESS compute mode with a live MPS server: only MPS clients get
// a context (CUDA_ERROR_DEVICE_UNAVAILABLE for anyone else).
bool device_unavailable() {
  if (env("FAKE_CUDA_COMPUTE_MODE") != "3" || g_under_mps) return false;
  const std::string server = env("FAKE_MPS_SERVER_FILE");
  return !server.empty() && access(server.c_str(), F_OK) == 0;
}

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The share of SMs MPS grants for a percentage, as rtrace's model and the fake
// MPS daemon assume: ceil(p% of the SMs), rounded up to whole TPCs of 2.
int mps_sms(int pct, int device) {
  int sms = static_cast<int>(std::ceil(pct * device / 100.0));
  sms = (sms + 1) / 2 * 2;
  return std::min(sms, device);
}

// An MPS client reaches the control daemon through CUDA_MPS_PIPE_DIRECTORY;
// without one it runs as if MPS did not exist (as the real driver does).
bool connect_mps() {
  const std::string dir = env("CUDA_MPS_PIPE_DIRECTORY");
  if (dir.empty()) return false;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/control";
  if (path.size() >= sizeof addr.sun_path) {
    close(fd);
    return false;
  }
  std::strcpy(addr.sun_path, path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return false;
  }
  const std::string pct = env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  char exe[512] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string name = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : "?";
  name = name.substr(name.rfind('/') + 1);
  const std::string cvd = env("CUDA_VISIBLE_DEVICES").empty() ? "unset" : env("CUDA_VISIBLE_DEVICES");
  const std::string line = "client role=cuda-app pct=" + (pct.empty() ? std::string("none") : pct) + " cvd=" + cvd + " args=[" + name +
                           " metrics=" + (env("RTRACE_TRACER_MODE").empty() ? "none" : env("RTRACE_TRACER_MODE")) +
                           "]\n";
  (void)!write(fd, line.data(), line.size());
  shutdown(fd, SHUT_WR);
  char buf[64];
  const bool answered = read(fd, buf, sizeof buf) > 0;
  close(fd);
  return answered;
}

void inject() {
  const std::string path = env("CUDA_INJECTION64_PATH");
  if (path.empty()) return;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "fake libcuda: cannot load CUDA_INJECTION64_PATH %s: %s\n", path.c_str(), dlerror());
    return;
  }
  using Init = int (*)();
  if (auto init = reinterpret_cast<Init>(dlsym(h, "InitializeInjection"))) init();
}

CUcontext new_context(bool primary) {
  auto* c = new CUctx_st;
  c->id = g_next_context++;
  c->device = 0;
  c->sms = g_under_mps ? g_mps_sms : g_device_sms;
  c->primary = primary;
  return c;
}

// CUPTI's driver-API callback at the entry of a call, before the current
// context is read (a tool may make another context current there).
void api_enter(int cbid, const char* name) {
  if (g_observer && g_observer->api_enter) g_observer->api_enter(cbid, name);
}

void notify_module(std::uint32_t id, const char* image, std::size_t size) {
  if (g_observer && g_observer->module_loaded) g_observer->module_loaded(id, image, size);
}

// Makes `ctx` current on this thread; a green context current on another
// thread refuses (cuda.h: "a green context can be current to only one thread
// at a time"), and says so.
CUresult make_current(CUcontext ctx) {
  const long me = this_thread();
  if (ctx && ctx->green) {
    long expected = 0;
    if (!ctx->current_on.compare_exchange_strong(expected, me) && expected != me) {
      std::fprintf(stderr,
                   "fake libcuda: green context %u made current on a second thread (%ld; current on %ld): "
                   "a green context can be current to one thread at a time\n",
                   ctx->id, me, expected);
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  }
  if (t_current && t_current != ctx && t_current->green) {
    long mine = me;
    t_current->current_on.compare_exchange_strong(mine, 0);
  }
  t_current = ctx;
  return CUDA_SUCCESS;
}

// The primary context, retained once more (created when it does not exist):
// `created` says whether the caller must report it.
CUcontext retain_primary(bool& created) {
  if (!g_primary) {
    g_primary = new_context(true);
    created = true;
  }
  ++g_primary->refs;
  return g_primary;
}

void notify_created(CUcontext c) {
  if (g_observer && g_observer->context_created) g_observer->context_created(c);
}
void notify_destroying(CUcontext c) {
  if (g_observer && g_observer->context_destroying) g_observer->context_destroying(c);
}

CUresult launch(CUcontext ctx, const std::string& name, const unsigned grid[3], const unsigned block[3],
                const FakeCudaWork& work, bool from_graph) {
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  static std::mutex names_mutex;
  static auto& names = *new std::vector<std::string*>();  // leaked: records point at them until exit
  const char* stable = nullptr;
  {
    std::lock_guard<std::mutex> lock(names_mutex);
    for (auto* s : names)
      if (*s == name) stable = s->c_str();
    if (!stable) {
      names.push_back(new std::string(name));
      stable = names.back()->c_str();
    }
  }
  FakeCudaLaunch l{};
  l.name = stable;
  l.context = ctx;
  l.context_id = ctx->id;
  l.device = static_cast<std::uint32_t>(ctx->device);
  l.stream_id = 7;
  l.correlation_id = ++g_correlation;
  for (int i = 0; i < 3; ++i) {
    l.grid[i] = grid[i];
    l.block[i] = block[i];
  }
  l.from_graph = from_graph ? 1 : 0;
  l.work = &work;
  int replay = 1;
  if (g_observer && g_observer->launch_begin) replay = std::max(1, g_observer->launch_begin(&l));
  const double ns = fakecuda_kernel_ns(&work, ctx->sms);
  l.start_ns = std::max(ctx->clock_ns, now_ns());
  // Kernel replay runs the launch once per pass (plus a save/restore of its
  // memory): the activity record of a profiled launch spans all of it.
  l.end_ns = l.start_ns + static_cast<std::uint64_t>(ns * replay + (replay > 1 ? 20000.0 * replay : 0.0));
  ctx->clock_ns = l.end_ns + 1000;
  if (g_observer && g_observer->launch_end) g_observer->launch_end(&l);
  return CUDA_SUCCESS;
}

FakeCudaWork work_of(void** params) {
  FakeCudaWork w{};
  if (params && params[0]) std::memcpy(&w, params[0], sizeof w);
  return w;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------ the fake's seam
void fakecuda_set_observer(const FakeCudaObserver* observer) { g_observer = observer; }
uint32_t fakecuda_context_id(CUcontext ctx) { return ctx ? ctx->id : 0; }
CUcontext fakecuda_current_context(void) { return t_current; }
int fakecuda_context_device(CUcontext ctx) { return ctx ? ctx->device : -1; }
int fakecuda_context_sms(CUcontext ctx) { return ctx ? ctx->sms : 0; }
int fakecuda_under_mps(void) { return g_under_mps ? 1 : 0; }
int fakecuda_device_sms(void) { return g_device_sms; }

double fakecuda_kernel_ns(const FakeCudaWork* w, int sms) {
  double usable = std::max(1, sms);
  if (w->blocks_needed > 0) usable = std::min(usable, w->blocks_needed);
  const double flops = w->dadd + w->dmul + 2 * w->dfma + (w->fadd + w->fmul + 2 * w->ffma) / 2 +
                       (w->hadd + w->hmul + 2 * w->hfma) / 4 + 2 * (w->tensor_fp16 / 16 + w->tensor_fp64 / 2);
  const double t_flops = flops / (usable * FAKE_CUDA_FP64_GFLOPS_PER_SM);
  const double hbm = std::min(usable * FAKE_CUDA_GBS_PER_SM, FAKE_CUDA_HBM_GBS);
  const double t_dram = (w->bytes_dram_read + w->bytes_dram_write) / hbm;
  const double t_l2 = w->bytes_l2 / (usable * FAKE_CUDA_L2_GBS_PER_SM);
  return std::max({t_flops, t_dram, t_l2}) + FAKE_CUDA_LAUNCH_NS;
}

// ------------------------------------------------------------ driver API
CUresult cuInit(unsigned int) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_initialized) return CUDA_SUCCESS;
    g_initialized = true;
    if (const int sms = std::atoi(env("FAKE_CUDA_SMS").c_str()); sms > 0) g_device_sms = sms;
    g_under_mps = connect_mps();
    const int pct = std::atoi(env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").c_str());
    g_mps_sms = mps_sms(pct > 0 ? pct : 100, g_device_sms);
  }
  inject();  // outside the lock: the tool calls back into the driver
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* n) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *n = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice) {
  std::snprintf(name, static_cast<std::size_t>(len), "Fake H100 (test double, not a GPU)");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  switch (a) {
    // An MPS client sees its share of the SMs.
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = g_under_mps ? g_mps_sms : g_device_sms; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = std::atoi(env("FAKE_CUDA_COMPUTE_MODE").c_str()); break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice) {
  api_enter(386, "cuDevicePrimaryCtxRetain");
  bool created = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device_unavailable()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    *pctx = retain_primary(created);
  }
  if (created) notify_created(*pctx);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice) {
  CUcontext gone = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_primary) return CUDA_ERROR_INVALID_CONTEXT;
    if (--g_primary->refs == 0) {
      gone = g_primary;
      g_primary = nullptr;
    }
  }
  if (gone) {
    notify_destroying(gone);
    if (t_current == gone) t_current = nullptr;
    delete gone;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate(CUcontext* pctx, CUctxCreateParams*, unsigned int, CUdevice) {
  api_enter(757, "cuCtxCreate_v4");
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (device_unavailable()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    *pctx = new_context(false);
  }
  make_current(*pctx);
  notify_created(*pctx);
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy(CUcontext ctx) {
  if (!ctx || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  notify_destroying(ctx);
  if (t_current == ctx) t_current = nullptr;
  delete ctx;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  api_enter(303, "cuCtxSetCurrent");
  return make_current(ctx);
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  *ctx = t_current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  api_enter(17, "cuCtxSynchronize");
  return t_current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  api_enter(19, "cuModuleLoadData");
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  if (!t_current) return CUDA_ERROR_INVALID_CONTEXT;
  static std::atomic<std::uint32_t> next{1};
  *module = new CUmod_st{next++};
  const char* bytes = static_cast<const char*>(image);
  notify_module((*module)->id, bytes, std::strlen(bytes));
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
  api_enter(23, "cuModuleGetFunction");
  if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
  *f = new CUfunc_st{name};
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int, CUstream, void** params, void**) {
  api_enter(307, "cuLaunchKernel");
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(t_current, f->name, grid, block, work_of(params), false);
}

CUresult cuGraphCreate(CUgraph* g, unsigned int) {
  *g = new CUgraph_st;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode(CUgraphNode* node, CUgraph g, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS* p) {
  if (!g || !p || !p->func) return CUDA_ERROR_INVALID_VALUE;
  FakeNode n{p->func, {p->gridDimX, p->gridDimY, p->gridDimZ}, {p->blockDimX, p->blockDimY, p->blockDimZ},
             work_of(p->kernelParams)};
  g->nodes.push_back(n);
  *node = new CUgraphNode_st{static_cast<int>(g->nodes.size() - 1)};
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph g, unsigned long long) {
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  *exec = new CUgraphExec_st{g->nodes};
  return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  api_enter(514, "cuGraphLaunch");
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& n : exec->nodes) {
    if (CUresult r = launch(t_current, n.function->name, n.grid, n.block, n.work, true); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  delete exec;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
  delete g;
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------ green contexts
CUresult cuDeviceGetDevResource(CUdevice, CUdevResource* r, CUdevResourceType type) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (type != CU_DEV_RESOURCE_TYPE_SM || !r) return CUDA_ERROR_INVALID_VALUE;
  if (env("FAKE_CUDA_NO_GREEN") == "1") return CUDA_ERROR_NOT_SUPPORTED;  // a driver without green contexts
  *r = CUdevResource{};
  r->type = CU_DEV_RESOURCE_TYPE_SM;
  r->sm.smCount = static_cast<unsigned>(g_device_sms);
  r->sm.minSmPartitionSize = 8;
  r->sm.smCoscheduledAlignment = 8;
  return CUDA_SUCCESS;
}

CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* groups, const CUdevResource* input,
                                     CUdevResource* remaining, unsigned int, unsigned int min_count) {
  if (!result || !groups || !input) return CUDA_ERROR_INVALID_VALUE;
  const unsigned count = std::max(8u, (min_count + 7) / 8 * 8);  // whole groups of 8, at least 8
  if (count > input->sm.smCount) return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
  *result = *input;
  result->sm.smCount = count;
  *groups = 1;
  if (remaining) {
    *remaining = *input;
    remaining->sm.smCount = input->sm.smCount - count;
  }
  return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* desc, CUdevResource* resources, unsigned int n) {
  if (!desc || !resources || n != 1) return CUDA_ERROR_INVALID_VALUE;
  *desc = new CUdevResourceDesc_st{static_cast<int>(resources[0].sm.smCount)};
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx* g, CUdevResourceDesc desc, CUdevice, unsigned int) {
  if (!g || !desc) return CUDA_ERROR_INVALID_VALUE;
  CUcontext c, primary;
  bool primary_created = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_under_mps) return CUDA_ERROR_NOT_SUPPORTED;  // green contexts are not for MPS clients here
    if (device_unavailable()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    // cuda.h: "This API will retain the primary context on device dev".
    primary = retain_primary(primary_created);
    c = new_context(false);
    c->sms = desc->sms;
    c->green = true;
  }
  if (primary_created) notify_created(primary);
  *g = new CUgreenCtx_st{desc->sms, c};
  notify_created(c);
  return CUDA_SUCCESS;
}

CUresult cuGreenCtxDestroy(CUgreenCtx g) {
  if (!g) return CUDA_ERROR_INVALID_VALUE;
  notify_destroying(g->ctx);
  if (t_current == g->ctx) t_current = nullptr;
  delete g->ctx;
  delete g;
  return cuDevicePrimaryCtxRelease(0);  // the retain of cuGreenCtxCreate
}

CUresult cuCtxFromGreenCtx(CUcontext* ctx, CUgreenCtx g) {
  if (!ctx || !g) return CUDA_ERROR_INVALID_VALUE;
  *ctx = g->ctx;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char** s) {
  *s = r == CUDA_SUCCESS ? "CUDA_SUCCESS" : "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult r, const char** s) {
  *s = r == CUDA_SUCCESS ? "no error" : "error in the fake CUDA driver";
  return CUDA_SUCCESS;
}

}  // extern "C"
