// rtrace-smid-probe: how many SMs does a CUDA process get HERE, in this
// environment? `rtrace run` starts it before each `sms` point with exactly the
// point's partition environment (the MPS client variables and percentage) and
// records what it prints as the point's sms_achieved: a measurement, where
// the percentage -> SM rule is only a prediction (MPS's percentage "does not
// reserve dedicated resources").
//
// Method: one resident wave sized for the SMs granted (`--sms G`, default the
// whole device): G x (blocks of the probe kernel one SM holds at once), each
// block recording the SM it ran on (%smid) and spinning long enough that all
// of them are resident together; the count of distinct ids is the answer.
// Not more: blocks of later waves may be scheduled on other SMs under MPS
// (its percentage limits how many SMs a client uses at a time, not which),
// and a multi-wave count could then exceed the grant. A context that gets
// more SMs than granted spreads the one wave over them (the block scheduler
// fills SMs breadth first), so an over-grant is still seen. Output, one line:
//   sms_achieved=N device_sms=M
// Exit 0 on success; 2 (with one line on stderr) when no GPU is usable.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
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

// One resident wave on `granted_sms` SMs.
int wave_blocks(int granted_sms, int resident_per_sm) {
  return (granted_sms > 0 ? granted_sms : 1) * (resident_per_sm > 0 ? resident_per_sm : 1);
}

constexpr int kThreads = 128;

}  // namespace

int main(int argc, char** argv) {
  int granted = 0;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--sms") granted = std::atoi(argv[i + 1]);
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess) return fail("no GPU found", e);
  if (devices < 1) {
    std::fprintf(stderr, "rtrace-smid-probe: no GPU found\n");
    return 2;
  }
  int sms = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0); e != cudaSuccess)
    return fail("cudaDeviceGetAttribute", e);
  int resident = 0;
  if (cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, record_smid, kThreads, 0);
      e != cudaSuccess)
    return fail("cudaOccupancyMaxActiveBlocksPerMultiprocessor", e);
  const int blocks = wave_blocks(granted > 0 && granted <= sms ? granted : sms, resident);
  unsigned* ids = nullptr;
  if (cudaError_t e = cudaMalloc(&ids, sizeof(unsigned) * blocks); e != cudaSuccess) return fail("cudaMalloc", e);
  cudaMemset(ids, 0xff, sizeof(unsigned) * blocks);
  record_smid<<<blocks, kThreads>>>(ids, 2000000);  // ~1 ms: every block of the wave is resident together
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
