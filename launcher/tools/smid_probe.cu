// rtrace-smid-probe: how many SMs does a CUDA process get HERE, in this
// environment? `rtrace run` starts it before each `sms` point with exactly the
// point's partition environment (the MPS client variables and percentage) and
// records what it prints as the point's sms_achieved: a measurement, where
// the percentage -> SM rule is only a prediction (MPS's percentage "does not
// reserve dedicated resources").
//
// Method: many more blocks than can be resident at once, each recording the
// SM it ran on (%smid) and spinning long enough for the scheduler to spread
// them over every SM the context may use; the count of distinct ids is the
// answer. Output, one line on stdout:
//   sms_achieved=N device_sms=M
// Exit 0 on success; 2 (with one line on stderr) when no GPU is usable.
#include <cuda_runtime.h>

#include <cstdio>
#include <set>
#include <vector>

namespace {

__global__ void record_smid(unsigned* out, long long spin_cycles) {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  if (threadIdx.x == 0) out[blockIdx.x] = id;
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
}

int fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "rtrace-smid-probe: %s: %s\n", what, cudaGetErrorString(e));
  return 2;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess) return fail("no GPU found", e);
  if (devices < 1) {
    std::fprintf(stderr, "rtrace-smid-probe: no GPU found\n");
    return 2;
  }
  int sms = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); e != cudaSuccess)
    return fail("cudaDeviceGetAttribute", e);
  // 8 blocks per SM of the whole device, 2 rounds of spinning: a context
  // limited to fewer SMs still gets every block, on its own SMs only.
  const int blocks = sms * 8;
  unsigned* ids = nullptr;
  if (cudaError_t e = cudaMalloc(&ids, sizeof(unsigned) * blocks); e != cudaSuccess) return fail("cudaMalloc", e);
  cudaMemset(ids, 0xff, sizeof(unsigned) * blocks);
  record_smid<<<blocks, 128>>>(ids, 200000);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return fail("probe kernel launch", e);
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return fail("probe kernel", e);
  std::vector<unsigned> host(static_cast<size_t>(blocks));
  if (cudaError_t e = cudaMemcpy(host.data(), ids, sizeof(unsigned) * blocks, cudaMemcpyDeviceToHost); e != cudaSuccess)
    return fail("cudaMemcpy", e);
  cudaFree(ids);
  std::set<unsigned> distinct;
  for (unsigned id : host)
    if (id != 0xffffffffu) distinct.insert(id);
  std::printf("sms_achieved=%zu device_sms=%d\n", distinct.size(), sms);
  return 0;
}
