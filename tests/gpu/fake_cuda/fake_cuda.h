/* The seam between the test fakes of the CUDA driver (fake_driver.cpp, built
 * as libcuda.so.1) and of CUPTI (fake_cupti.cpp, built as libcupti.so.13).
 * Tests only: on machines without a GPU they let an unmodified "CUDA app"
 * (fake_cuda_app.cpp) run under rtrace's tracer through the same dlopen
 * paths as on a GPU node (the driver loads CUDA_INJECTION64_PATH in cuInit,
 * the tracer dlopens libcupti.so.13). Nothing they report is a measurement.
 *
 * The fake driver models one device of FAKE_CUDA_SMS SMs (default 132); a
 * context runs on all of them, on a green context's share, or under MPS on
 * the share CUDA_MPS_ACTIVE_THREAD_PERCENTAGE grants (whole TPCs of 2), when
 * it reached an MPS control daemon (the test's fake nvidia-cuda-mps-control)
 * through CUDA_MPS_PIPE_DIRECTORY; green contexts split the SMs in multiples
 * of 8 (at least 8), as on Hopper (FAKE_CUDA_NO_GREEN=1: none). A kernel's duration follows from its work
 * and the context's SMs (fake_kernel_ns), so times fall with SMs.
 *
 * As strict as cuda.h where rtrace depends on it (issue 31):
 *  - cuGreenCtxCreate retains the primary context (creating it: a context
 *    created callback) and cuGreenCtxDestroy releases it;
 *  - a green context can be current to one thread at a time: making it current
 *    on a second thread fails (CUDA_ERROR_INVALID_CONTEXT) and says so on stderr
 *    ("fake libcuda: green context N made current on a second thread");
 *  - FAKE_CUDA_COMPUTE_MODE=3 (EXCLUSIVE_PROCESS): a process that is not an MPS
 *    client gets no context (CUDA_ERROR_DEVICE_UNAVAILABLE) while an MPS server
 *    is alive, which the fake MPS daemon says by the file $FAKE_MPS_SERVER_FILE;
 *    the attribute reports the mode;
 *  - an MPS client sees its share of the SMs as the device's SM count.
 * Modules: cuModuleLoadData(image) reports the image (a string) to CUPTI as
 * the module's cubin (CUPTI_CBID_RESOURCE_MODULE_LOADED).
 */
#ifndef RTRACE_TESTS_FAKE_CUDA_H
#define RTRACE_TESTS_FAKE_CUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one launch does, as the hardware counters would count it (thread
 * instructions per op class, bytes per level). The fake app passes it as
 * kernelParams[0]; the fake CUPTI turns it into metric values. */
typedef struct FakeCudaWork {
  double dadd, dmul, dfma;     /* FP64 thread instructions */
  double fadd, fmul, ffma;     /* FP32 */
  double hadd, hmul, hfma;     /* FP16 (as the counter counts them) */
  double tensor_fp16, tensor_fp64; /* math ops, by source type */
  double tensor_bf16, tensor_tf32, tensor_fp8;
  double bytes_l1, bytes_l2, bytes_dram_read, bytes_dram_write;
  double blocks_needed;        /* SMs the kernel can use at most (its grid) */
} FakeCudaWork;

typedef struct FakeCudaLaunch {
  const char* name;            /* mangled, as the driver knows it */
  CUcontext context;
  uint32_t context_id;
  uint32_t device;
  uint32_t stream_id;
  uint32_t correlation_id;
  uint32_t grid[3], block[3];
  uint64_t start_ns, end_ns;   /* GPU timestamps (a virtual clock per context) */
  int from_graph;              /* launched as a node of a CUDA graph */
  const FakeCudaWork* work;
} FakeCudaLaunch;

/* CUPTI's side: called synchronously by the driver. launch_begin returns the
 * kernel-replay factor the launch is run with (1 = not profiled); the driver
 * stretches the recorded duration by it, as replay does on a GPU. */
typedef struct FakeCudaObserver {
  void (*context_created)(CUcontext ctx);
  void (*context_destroying)(CUcontext ctx);
  int (*launch_begin)(const FakeCudaLaunch* launch);
  void (*launch_end)(const FakeCudaLaunch* launch);
  /* The entry of a driver API call (its CUPTI_DRIVER_TRACE_CBID_*), before the
   * driver looks at the current context: CUPTI's driver-API callback. */
  void (*api_enter)(int cbid, const char* name);
  /* A module was loaded: its image (the fake's cubin). */
  void (*module_loaded)(uint32_t module_id, const char* image, size_t size);
} FakeCudaObserver;

void fakecuda_set_observer(const FakeCudaObserver* observer);
uint32_t fakecuda_context_id(CUcontext ctx);
int fakecuda_context_device(CUcontext ctx);
int fakecuda_context_sms(CUcontext ctx);
/* The context current on the calling thread (CUPTI's callback data). */
CUcontext fakecuda_current_context(void);
/* 1 when this process reached an MPS control daemon in cuInit. */
int fakecuda_under_mps(void);
int fakecuda_device_sms(void);
/* The modelled duration of `work` on `sms` SMs. */
double fakecuda_kernel_ns(const FakeCudaWork* work, int sms);

/* The device model, shared with the fake ERT so that its ceilings and the
 * kernels' times describe the same machine. */
#define FAKE_CUDA_FP64_GFLOPS_PER_SM 500.0
#define FAKE_CUDA_GBS_PER_SM 40.0
#define FAKE_CUDA_HBM_GBS 3000.0
#define FAKE_CUDA_L2_GBS_PER_SM 100.0
#define FAKE_CUDA_LAUNCH_NS 3000.0

#ifdef __cplusplus
}
#endif

#endif
