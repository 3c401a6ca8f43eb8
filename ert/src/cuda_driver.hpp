// The CUDA driver API reached only through dlopen("libcuda.so.1") and
// cuGetProcAddress: nothing links -lcuda, so binaries start without a GPU.
// Private to rtrace_ert (CUDA builds only).
#pragma once

#include <cuda.h>

#include "rtrace/ert/gpu.hpp"

#include <string>

namespace rtrace::ert::cuda {

struct Driver {
  // Loads libcuda.so.1, calls cuInit; throws GpuUnavailable when impossible.
  static const Driver& get();

  // Throws GpuError("<call>: <driver's error name and string>") unless CUDA_SUCCESS.
  void check(CUresult rc, const char* call) const;
  std::string error_text(CUresult rc) const;

  int version = 0;  // cuDriverGetVersion: 13000 = CUDA 13.0
  CUresult (*cuInit)(unsigned int) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*cuDeviceGetCount)(int*) = nullptr;
  CUresult (*cuDeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*cuDeviceTotalMem)(size_t*, CUdevice) = nullptr;
  CUresult (*cuGetErrorName)(CUresult, const char**) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char**) = nullptr;
  CUresult (*cuCtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice) = nullptr;
  CUresult (*cuMemGetInfo)(size_t*, size_t*) = nullptr;
  // Green contexts (CUDA 12.4+, cuGreenCtxStreamCreate 12.5+); null when the driver is older.
  CUresult (*cuDeviceGetDevResource)(CUdevice, CUdevResource*, CUdevResourceType) = nullptr;
  CUresult (*cuDevSmResourceSplitByCount)(CUdevResource*, unsigned int*, const CUdevResource*, CUdevResource*,
                                          unsigned int, unsigned int) = nullptr;
  CUresult (*cuDevResourceGenerateDesc)(CUdevResourceDesc*, CUdevResource*, unsigned int) = nullptr;
  CUresult (*cuGreenCtxCreate)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned int) = nullptr;
  CUresult (*cuGreenCtxDestroy)(CUgreenCtx) = nullptr;
  CUresult (*cuCtxFromGreenCtx)(CUcontext*, CUgreenCtx) = nullptr;
  CUresult (*cuGreenCtxStreamCreate)(CUstream*, CUgreenCtx, unsigned int, int) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;

  bool has_green_contexts() const {
    return cuDeviceGetDevResource && cuDevSmResourceSplitByCount && cuDevResourceGenerateDesc && cuGreenCtxCreate &&
           cuGreenCtxDestroy && cuCtxFromGreenCtx && cuGreenCtxStreamCreate;
  }
};

// The driver's facts about device `ordinal` (gpu_devices.cpp).
GpuDeviceInfo describe_device(const Driver& drv, int ordinal);

}  // namespace rtrace::ert::cuda
