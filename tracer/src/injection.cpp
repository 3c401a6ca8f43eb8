// CUDA_INJECTION64_PATH entry: the driver calls InitializeInjection during
// cuInit. The same library is usually LD_PRELOADed too (one instance).
#include "tracer.hpp"

#ifdef RTRACE_TRACER_HAVE_CUPTI
#include "cupti_gpu.hpp"
#endif

extern "C" RTRACE_EXPORT int InitializeInjection(void) {
  using namespace rtrace::tracer;
  RankState* s = state();
  if (!s) return 1;  // inert process: nothing to do, never fail the app's cuInit
#ifdef RTRACE_TRACER_HAVE_CUPTI
  if (s->config().mode == TracerMode::Cpu && s->config().mode_set) {
    s->log(LogLevel::Info, "CUDA injection in cpu mode: GPU activity not traced");
    return 1;
  }
  if (s->config().mode == TracerMode::Cpu) s->set_mode(TracerMode::CudaTrace);
  InternalScope internal;
  if (start_cupti(*s) && s->config().green_ctx_sms > 0) start_green_partition(*s, s->config().green_ctx_sms);
#else
  s->log(LogLevel::Warn, "CUDA injection: this tracer was built without CUPTI");
#endif
  return 1;
}
