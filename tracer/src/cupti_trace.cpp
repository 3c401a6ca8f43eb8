// Trace mode: CUPTI activity records for kernels (CONCURRENT_KERNEL, so
// kernels are not serialised), memcpy, memset and synchronisation, delivered
// in buffers; drops counted per buffer. Flushed at context destruction and at
// exit (or MPI_Finalize).
#include <cxxabi.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cupti_gpu.hpp"
#include "cupti_loader.hpp"
#include "metric_list.hpp"
#include "tracer.hpp"

namespace rtrace::tracer {

namespace {

constexpr std::size_t kBufferBytes = 8 * 1024 * 1024;
std::atomic<bool> g_started{false};
std::atomic<std::int64_t> g_sync_count{0};
std::atomic<std::int64_t> g_sync_ns{0};

std::string demangle(const char* name) {
  if (!name) return "<unknown>";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string out(d);
    std::free(d);
    return out;
  }
  return name;
}

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
            g.name = demangle(k->name);
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
  if (!s || !g_started.load()) return;
  if (s->config().mode == TracerMode::CudaMetrics) metrics_flush_all(*s);
  if (CUptiResult r = api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); r != CUPTI_SUCCESS)
    s->error("cuptiActivityFlushAll: " + api.result(r));
  if (std::int64_t n = g_sync_count.exchange(0); n > 0)
    s->log(LogLevel::Info, "synchronization: " + std::to_string(n) + " waits, " +
                               std::to_string(static_cast<double>(g_sync_ns.exchange(0)) * 1e-9) + " s");
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  RankState* s = state();
  if (!s || domain != CUPTI_CB_DOMAIN_RESOURCE) return;
  InternalScope internal;
  auto* res = static_cast<const CUpti_ResourceData*>(data);
  if (id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    s->set_gpu_available(true);
    if (s->config().mode == TracerMode::CudaMetrics) metrics_context_created(*s, res->context);
  } else if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    if (s->config().mode == TracerMode::CudaMetrics) metrics_context_destroying(*s, res->context);
    CuptiApi& api = cupti_api();
    api.activity_flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
}

}  // namespace

bool start_cupti(RankState& s) noexcept {
  if (g_started.load()) return true;
  try {
    CuptiApi& api = cupti_api();
    if (!api.loaded()) {
      s.log(LogLevel::Warn, "GPU tracing off: " + api.error);
      return false;
    }
    if (!api.has_trace_api()) {
      s.error("GPU tracing off: " + api.path + " lacks the activity API");
      return false;
    }
    CUpti_SubscriberHandle subscriber;
    if (CUptiResult r = api.subscribe(&subscriber, on_callback, nullptr); r != CUPTI_SUCCESS) {
      // Another tool (nsys, ncu) already holds the one CUPTI subscriber slot.
      s.error("GPU tracing off: cuptiSubscribe: " + api.result(r));
      return false;
    }
    api.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    api.enable_callback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (CUptiResult r = api.activity_register_callbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS) {
      s.error("GPU tracing off: cuptiActivityRegisterCallbacks: " + api.result(r));
      return false;
    }
    for (auto kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}) {
      if (CUptiResult r = api.activity_enable(kind); r != CUPTI_SUCCESS)
        s.error("cuptiActivityEnable(" + std::to_string(static_cast<int>(kind)) + "): " + api.result(r));
    }
    g_started.store(true);
    set_gpu_flush(flush);
    s.log(LogLevel::Info, "CUPTI activity tracing on (" + api.path + ")");
    return true;
  } catch (...) {
    s.error("starting CUPTI failed");
    return false;
  }
}

}  // namespace rtrace::tracer
