// Device facts from the driver (cuDeviceGetAttribute through the dlopen'd
// libcuda): `rtrace ert --list-gpus` and the GPU row of every ERT file.
#include "cuda_driver.hpp"
#include "rtrace/ert/gpu.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace rtrace::ert {
namespace cuda {

namespace {
int attribute(const Driver& drv, CUdevice dev, CUdevice_attribute a) {
  int v = -1;
  if (drv.cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS) return -1;
  return v;
}
}  // namespace

GpuDeviceInfo describe_device(const Driver& drv, int ordinal) {
  CUdevice dev = 0;
  drv.check(drv.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  GpuDeviceInfo info;
  info.driver_version = drv.version;
  store::GpuRow& g = info.row;
  g.index = ordinal;
  char name[256] = {};
  if (drv.cuDeviceGetName) drv.cuDeviceGetName(name, sizeof name, dev);
  store::set_str(g.name, name);
  g.cc_major = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  g.cc_minor = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  g.sm_count = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  g.l2_bytes = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  size_t mem = 0;
  g.memory_bytes = drv.cuDeviceTotalMem && drv.cuDeviceTotalMem(&mem, dev) == CUDA_SUCCESS ? std::int64_t(mem) : -1;
  const int sm_khz = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  const int mem_khz = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  g.sm_clock_khz = sm_khz > 0 ? sm_khz : std::nan("");
  g.memory_clock_khz = mem_khz > 0 ? mem_khz : std::nan("");
  g.memory_bus_bits = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // Double data rate: two transfers per memory clock (HBM and GDDR as the driver reports them).
  g.spec_bandwidth_gbs = mem_khz > 0 && g.memory_bus_bits > 0 ? 2.0 * mem_khz * 1e3 * g.memory_bus_bits / 8 / 1e9
                                                              : std::nan("");
  info.shared_per_sm = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.compute_mode = attribute(drv, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_MODE);
  if (drv.cuDeviceGetDevResource) {
    CUdevResource sm{};
    if (drv.cuDeviceGetDevResource(dev, &sm, CU_DEV_RESOURCE_TYPE_SM) == CUDA_SUCCESS) {
      info.sm_partition_min = int(sm.sm.minSmPartitionSize);
      info.sm_partition_align = int(sm.sm.smCoscheduledAlignment);
    }
  }
  return info;
}

}  // namespace cuda

std::vector<GpuDeviceInfo> list_gpus() {
  const cuda::Driver& drv = cuda::Driver::get();
  int n = 0;
  drv.check(drv.cuDeviceGetCount(&n), "cuDeviceGetCount");
  std::vector<GpuDeviceInfo> out;
  for (int i = 0; i < n; ++i) out.push_back(cuda::describe_device(drv, i));
  return out;
}

}  // namespace rtrace::ert
