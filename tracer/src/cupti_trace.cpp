// Trace mode: CUPTI activity records for kernels (CONCURRENT_KERNEL, so
// kernels are not serialised), memcpy, memset and synchronisation, delivered
// in buffers; drops counted per buffer. Flushed at context destruction and at
// exit (or MPI_Finalize).
//
// Exit order: the final flush is an exit handler registered AFTER libcupti
// was loaded and set up (register_gpu_exit_flush), so it runs before any exit
// handler CUPTI registered for its own teardown (handlers run last-registered
// first). The tracer's file-writing exit handler, registered in its
// constructor before CUDA existed, runs later and finds the data flushed.

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cupti_gpu.hpp"
#include "cupti_loader.hpp"
#include "metric_join.hpp"
#include "metric_list.hpp"
#include "tracer.hpp"

namespace rtrace::tracer {

namespace {

constexpr std::size_t kBufferBytes = 8 * 1024 * 1024;
std::atomic<bool> g_started{false};
std::atomic<bool> g_finished{false};  // the final flush ran: CUPTI may be torn down after it
std::atomic<CUpti_SubscriberHandle> g_subscriber{nullptr};
std::atomic<std::int64_t> g_sync_count{0};
std::atomic<std::int64_t> g_sync_ns{0};

// Per thread: CUPTI may complete buffers on threads of its own.
thread_local KernelNameCache t_names;

// A memcpy or memset activity record as a row (both have the same fields).
template <class Activity>
store::MemcpyRow transfer_row(const char* kind, const Activity& a) {
  store::MemcpyRow r{};
  store::set_str(r.kind, kind);
  r.bytes = static_cast<std::int64_t>(a.bytes);
  r.start_ns = static_cast<std::int64_t>(a.start);
  r.end_ns = static_cast<std::int64_t>(a.end);
  r.device = static_cast<std::int32_t>(a.deviceId);
  r.stream = static_cast<std::int32_t>(a.streamId);
  r.correlation_id = a.correlationId;
  return r;
}

const char* copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  RankState* s = state();
  CuptiApi& api = cupti_api();
  if (s && buffer) {
    try {
      std::vector<GpuKernel> kernels;
      std::vector<store::MemcpyRow> copies;
      std::int64_t incomplete = 0;
      CUpti_Activity* record = nullptr;
      while (api.activity_next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
          case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
          case CUPTI_ACTIVITY_KIND_KERNEL: {
            auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
            GpuKernel g;
            g.names = t_names.lookup(k->name);
            g.context_id = k->contextId;
            g.from_graph = k->graphId != 0;
            store::KernelRow& r = g.row;
            r.correlation_id = k->correlationId;
            r.device = static_cast<std::int32_t>(k->deviceId);
            r.context = static_cast<std::int32_t>(k->contextId);
            r.stream = static_cast<std::int32_t>(k->streamId);
            r.grid_x = k->gridX;
            r.grid_y = k->gridY;
            r.grid_z = k->gridZ;
            r.block_x = k->blockX;
            r.block_y = k->blockY;
            r.block_z = k->blockZ;
            r.registers = k->registersPerThread;
            r.shared_static = k->staticSharedMemory;
            r.shared_dynamic = k->dynamicSharedMemory;
            r.start_ns = static_cast<std::int64_t>(k->start);
            r.end_ns = static_cast<std::int64_t>(k->end);
            // A forced flush (context destruction, exit) may hand back a record
            // whose kernel had not finished: start or end is 0.
            g.incomplete = k->start == 0 || k->end == 0 || k->end < k->start;
            if (g.incomplete) ++incomplete;
            clear_metrics(r);
            kernels.push_back(std::move(g));
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMCPY: {
            auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
            copies.push_back(transfer_row(copy_kind(m->copyKind), *m));
            break;
          }
          case CUPTI_ACTIVITY_KIND_MEMSET: {
            copies.push_back(transfer_row("memset", *reinterpret_cast<CUpti_ActivityMemset4*>(record)));
            break;
          }
          case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
            auto* y = reinterpret_cast<CUpti_ActivitySynchronization2*>(record);
            g_sync_count.fetch_add(1);
            g_sync_ns.fetch_add(static_cast<std::int64_t>(y->end - y->start));
            break;
          }
          default:
            break;
        }
      }
      if (incomplete > 0) {
        s->add_dropped(incomplete);
        s->log(LogLevel::Warn, std::to_string(incomplete) +
                                   " incomplete kernel record(s) (start or end 0, from a forced flush) skipped");
      }
      size_t dropped = 0;
      if (api.activity_dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
        s->add_dropped(static_cast<std::int64_t>(dropped));
        s->log(LogLevel::Warn, std::to_string(dropped) + " CUPTI activity record(s) dropped (buffer full)");
      }
      s->add_kernels(std::move(kernels));
      s->add_memcpy(std::move(copies));
    } catch (...) {
      s->error("processing a CUPTI activity buffer failed");
    }
  }
  std::free(buffer);
}

void flush() {
  RankState* s = state();
  CuptiApi& api = cupti_api();
  if (!s || !g_started.load() || g_finished.load()) return;
  if (s->config().mode == TracerMode::CudaMetrics) metrics_flush_all(*s);
  if (CUptiResult r = api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); r != CUPTI_SUCCESS)
    s->error("cuptiActivityFlushAll: " + api.result(r));
  if (std::int64_t n = g_sync_count.exchange(0); n > 0)
    s->log(LogLevel::Info, "synchronization: " + std::to_string(n) + " waits, " +
                               std::to_string(static_cast<double>(g_sync_ns.exchange(0)) * 1e-9) + " s");
}

// The last flush of the process, from the exit handler(s) registered after
// CUPTI was set up; later flushes (the file-writing exit handler's) do nothing.
void final_flush() {
  if (!g_started.load() || g_finished.load()) return;
  InternalScope internal;
  flush();
  g_finished.store(true);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  RankState* s = state();
  if (!s || g_finished.load()) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* call = static_cast<const CUpti_CallbackData*>(data);
    green_on_driver_api(*s, id, call);  // first: it may make the green context current for this call
    if (s->config().mode == TracerMode::CudaMetrics && call && call->callbackSite == CUPTI_API_ENTER &&
        is_kernel_launch(id)) {
      InternalScope internal;
      // The context the kernel will run in: the green one where the tracer
      // made it current (CUPTI read call->context before that).
      CUcontext green = green_context_of_this_thread();
      metrics_before_launch(*s, green ? green : call->context);
    }
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  InternalScope internal;
  auto* res = static_cast<const CUpti_ResourceData*>(data);
  if (id == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
    green_on_module_loaded(*s, res);
  } else if (id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    s->set_gpu_available(true);
    if (s->config().mode == TracerMode::CudaMetrics) metrics_context_created(*s, res->context);
  } else if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    if (s->config().mode == TracerMode::CudaMetrics) metrics_context_destroying(*s, res->context);
    CuptiApi& api = cupti_api();
    api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
}

}  // namespace

void register_gpu_exit_flush() noexcept { std::atexit(final_flush); }

bool is_kernel_launch(CUpti_CallbackId cbid) noexcept {
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
      return true;
    default:
      return false;
  }
}

CUpti_SubscriberHandle subscriber_handle() noexcept { return g_subscriber.load(); }

bool start_cupti(RankState& s) noexcept {
  if (g_started.load()) return true;
  auto fail = [&](GpuStatus status, const std::string& line) {
    s.error("GPU tracing off: " + line);
    s.set_gpu_status(status, line);
    return false;
  };
  try {
    CuptiApi& api = cupti_api();
    if (!api.loaded()) {
      for (const auto& t : api.tried) s.log(LogLevel::Info, "libcupti candidate " + t);
      return fail(GpuStatus::NoCupti, api.error);
    }
    if (!api.has_trace_api()) return fail(GpuStatus::TraceFailed, api.path + " lacks the activity API");
    CUpti_SubscriberHandle subscriber;
    if (CUptiResult r = api.subscribe(&subscriber, on_callback, nullptr); r != CUPTI_SUCCESS)
      // Another tool (nsys, ncu) already holds the one CUPTI subscriber slot.
      return fail(GpuStatus::TraceFailed, "cuptiSubscribe (" + api.path + "): " + api.result(r));
    g_subscriber.store(subscriber);
    api.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    api.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    // Metrics: launches are counted per context (the range buffer's limit,
    // one profiled context per device); the runtime's launches reach these too.
    if (s.config().mode == TracerMode::CudaMetrics)
      for (CUpti_CallbackId cbid = 0; cbid < static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE); ++cbid)
        if (is_kernel_launch(cbid)) api.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    if (CUptiResult r = api.activity_register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
      return fail(GpuStatus::TraceFailed, "cuptiActivityRegisterCallbacks (" + api.path + "): " + api.result(r));
    for (auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}) {
      if (CUptiResult r = api.activity_enable(kind); r != CUPTI_SUCCESS) {
        if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
          return fail(GpuStatus::TraceFailed,
                      "cuptiActivityEnable(CONCURRENT_KERNEL) (" + api.path + "): " + api.result(r));
        s.error("cuptiActivityEnable(" + std::to_string(static_cast<int>(kind)) + "): " + api.result(r));
      }
    }
    g_started.store(true);
    set_gpu_flush(flush);
    // After every CUPTI call of the set-up: CUPTI's own exit handlers are
    // registered by now, so this flush runs before them.
    register_gpu_exit_flush();
    s.set_gpu_status(GpuStatus::Traced, "CUPTI activity trace (" + api.path + ")");
    s.log(LogLevel::Info, "CUPTI activity tracing on (" + api.path + ")");
    return true;
  } catch (...) {
    return fail(GpuStatus::TraceFailed, "starting CUPTI failed");
  }
}

}  // namespace rtrace::tracer
