#include "cuda_driver.hpp"

#include "rtrace/ert/gpu.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

namespace rtrace::ert::cuda {

namespace {

using GetProcAddressV2 = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

template <class Fn>
void resolve(GetProcAddressV2 gpa, const char* name, Fn& fn, int version) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (gpa(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status) == CUDA_SUCCESS &&
      status == CU_GET_PROC_ADDRESS_SUCCESS)
    fn = reinterpret_cast<Fn>(p);
}

std::string cuda_version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

Driver load() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) throw GpuUnavailable("no GPU found (libcuda.so.1 not loadable)");
  // cuDriverGetVersion is an unversioned symbol in every driver: ask it first,
  // so the entry points are requested at a version the driver knows.
  using DriverGetVersion = CUresult (*)(int*);
  auto get_version = reinterpret_cast<DriverGetVersion>(dlsym(lib, "cuDriverGetVersion"));
  int driver_version = 0;
  if (!get_version || get_version(&driver_version) != CUDA_SUCCESS || driver_version <= 0)
    throw GpuUnavailable("no GPU found (libcuda.so.1 does not report its version: not an NVIDIA driver?)");
  const std::string driver = "driver for CUDA " + cuda_version_text(driver_version);
  auto gpa = reinterpret_cast<GetProcAddressV2>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!gpa)
    throw GpuUnavailable("the " + driver + " is older than CUDA 12 (no cuGetProcAddress_v2); rtrace was built with CUDA " +
                         cuda_version_text(CUDA_VERSION) + " and needs a driver for CUDA " +
                         std::to_string(CUDA_VERSION / 1000) + ".0 or newer");
  Driver d;
  d.version = driver_version;
  // Entry points as of min(driver, toolkit): a driver older than the toolkit
  // (CUDA minor-version compatibility) has no entry for a newer version, and
  // asking for one leaves every pointer null. Functions newer than the driver
  // (green contexts: 12.4, cuGreenCtxStreamCreate: 12.5) stay null and are
  // reported where they are needed.
  const int v = std::min(driver_version, CUDA_VERSION);
  resolve(gpa, "cuInit", d.cuInit, v);
  resolve(gpa, "cuDeviceGet", d.cuDeviceGet, v);
  resolve(gpa, "cuDeviceGetCount", d.cuDeviceGetCount, v);
  resolve(gpa, "cuDeviceGetName", d.cuDeviceGetName, v);
  resolve(gpa, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, v);
  resolve(gpa, "cuDeviceTotalMem", d.cuDeviceTotalMem, v);
  resolve(gpa, "cuGetErrorName", d.cuGetErrorName, v);
  resolve(gpa, "cuGetErrorString", d.cuGetErrorString, v);
  resolve(gpa, "cuCtxSetCurrent", d.cuCtxSetCurrent, v);
  resolve(gpa, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, v);
  resolve(gpa, "cuDevicePrimaryCtxRelease", d.cuDevicePrimaryCtxRelease, v);
  resolve(gpa, "cuMemGetInfo", d.cuMemGetInfo, v);
  resolve(gpa, "cuDeviceGetDevResource", d.cuDeviceGetDevResource, v);
  resolve(gpa, "cuDevSmResourceSplitByCount", d.cuDevSmResourceSplitByCount, v);
  resolve(gpa, "cuDevResourceGenerateDesc", d.cuDevResourceGenerateDesc, v);
  resolve(gpa, "cuGreenCtxCreate", d.cuGreenCtxCreate, v);
  resolve(gpa, "cuGreenCtxDestroy", d.cuGreenCtxDestroy, v);
  resolve(gpa, "cuCtxFromGreenCtx", d.cuCtxFromGreenCtx, v);
  resolve(gpa, "cuGreenCtxStreamCreate", d.cuGreenCtxStreamCreate, v);
  resolve(gpa, "cuStreamDestroy", d.cuStreamDestroy, v);
  if (!d.cuInit || !d.cuDeviceGet || !d.cuDeviceGetCount || !d.cuDeviceGetAttribute || !d.cuCtxSetCurrent)
    throw GpuUnavailable("no GPU found (the " + driver + " lacks basic entry points at version " +
                         std::to_string(v) + ")");
  const CUresult rc = d.cuInit(0);
  if (rc != CUDA_SUCCESS) throw GpuUnavailable("no GPU found (cuInit: " + d.error_text(rc) + "; " + driver + ")");
  int n = 0;
  if (d.cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1)
    throw GpuUnavailable("no GPU found (the " + driver + " reports no CUDA device)");
  // The library handle stays open for the life of the process.
  return d;
}

}  // namespace

const Driver& Driver::get() {
  static std::once_flag once;
  static Driver driver;
  static std::string failure;
  std::call_once(once, [] {
    try {
      driver = load();
    } catch (const GpuUnavailable& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw GpuUnavailable(failure);
  return driver;
}

std::string Driver::error_text(CUresult rc) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (cuGetErrorName) cuGetErrorName(rc, &name);
  if (cuGetErrorString) cuGetErrorString(rc, &text);
  std::string s = name ? name : ("CUDA error " + std::to_string(int(rc)));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void Driver::check(CUresult rc, const char* call) const {
  if (rc != CUDA_SUCCESS) throw GpuError(std::string(call) + ": " + error_text(rc));
}

}  // namespace rtrace::ert::cuda
