// rtrace-fake-cuda-app: an unannotated "CUDA application" for machines
// without a GPU (tests only). It uses the driver API of whatever libcuda.so.1
// it loads, the fake one of tests/gpu/fake_cuda in the tests, and knows
// nothing of rtrace: no annotations, no rtrace API. Each launch hands the fake
// driver what the kernel does (FakeCudaWork, as kernelParams[0]), so the fake
// CUPTI has counts to report and the fake driver a time that depends on SMs.
//
//   rtrace-fake-cuda-app [--iters N] [--size N] [--graph] [--second-context]
//                        [--release] [--threads N] [--tensor] [--cdp]
//                        [--grid-scale X] [--expect FILE]
//
// Kernels per iteration: triad (memory bound, 2 FLOPs and 24 bytes per
// element), stencil (more FLOPs, cache reuse), reduce (64 blocks: stops
// scaling past 64 SMs). --graph adds a CUDA graph of two kernels launched
// every iteration; --second-context interleaves the launches with a second
// context's own kernel; --release releases the primary context before exit
// (its kernels are then flushed at context destruction, not at exit).
// --threads N launches each iteration's triad from N threads (the primary
// context made current on each); --tensor adds an HGEMM with an FFMA epilogue
// (FP16 tensor ops) and a DMMA kernel (FP64 tensor ops) per iteration; --cdp
// loads a module that uses dynamic parallelism; --grid-scale X multiplies the
// triad's grid (another launch configuration, as a library may pick on fewer SMs).
// --expect writes "kernel<TAB>launches<TAB>fp64 FLOPs<TAB>DRAM bytes" per
// kernel name: what the counters should sum to. Prints check=ok.
#include "fake_cuda.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const char* what, CUresult r) {
  std::fprintf(stderr, "rtrace-fake-cuda-app: %s failed (CUDA error %d)\n", what, static_cast<int>(r));
  std::exit(2);
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) die(what, r);
}

struct Totals {
  long long launches = 0;
  double flops = 0, dram = 0;
};
std::map<std::string, Totals> g_expect;

std::mutex g_expect_mutex;

void count(const char* name, const FakeCudaWork& w) {
  std::lock_guard<std::mutex> lock(g_expect_mutex);
  Totals& t = g_expect[name];
  ++t.launches;
  t.flops += w.dadd + w.dmul + 2 * w.dfma;
  t.dram += w.bytes_dram_read + w.bytes_dram_write;
}

void launch(CUfunction f, const char* name, const FakeCudaWork& w, unsigned blocks) {
  void* params[] = {const_cast<FakeCudaWork*>(&w)};
  check(cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), name);
  count(name, w);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 3;
  double n = 1 << 24;
  bool graph = false, second = false, release = false, tensor = false, cdp = false;
  int threads = 0;
  double grid_scale = 1;
  std::string expect;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "rtrace-fake-cuda-app: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--iters") iters = std::atoi(value().c_str());
    else if (a == "--size") n = std::atof(value().c_str());
    else if (a == "--graph") graph = true;
    else if (a == "--second-context") second = true;
    else if (a == "--release") release = true;
    else if (a == "--threads") threads = std::atoi(value().c_str());
    else if (a == "--tensor") tensor = true;
    else if (a == "--cdp") cdp = true;
    else if (a == "--grid-scale") grid_scale = std::atof(value().c_str());
    else if (a == "--expect") expect = value();
    else {
      std::fprintf(stderr, "rtrace-fake-cuda-app: unknown argument `%s`\n", a.c_str());
      return 2;
    }
  }
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext primary;
  check(cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");

  const char* kTriad = "_Z10fake_triadPdPKdS1_dl";
  const char* kStencil = "_Z13fake_stencil7PdPKdi";
  const char* kReduce = "_Z11fake_reducePKdPdi";
  const char* kGraphA = "_Z12fake_graph_aPd";
  const char* kGraphB = "_Z12fake_graph_bPd";
  const char* kOther = "_Z16fake_other_ctx_kPd";
  const char* kHgemm = "_Z10fake_hgemmPK6__halfS1_Pf";
  const char* kDmma = "_Z9fake_dmmaPKdS0_Pd";
  if (cdp) {
    // What a module with device-side launches carries (nvcc -rdc, CUDA 12+).
    static const char kCdpImage[] = "\x7f" "ELF fake cubin .text.__cudaCDP2LaunchDeviceV2 __cudaCDP2GetParameterBufferV2";
    CUmodule m;
    check(cuModuleLoadData(&m, kCdpImage), "cuModuleLoadData");
  }
  CUfunction triad, stencil, reduce, ga, gb, other, hgemm, dmma;
  check(cuModuleGetFunction(&triad, nullptr, kTriad), "cuModuleGetFunction");
  check(cuModuleGetFunction(&stencil, nullptr, kStencil), "cuModuleGetFunction");
  check(cuModuleGetFunction(&reduce, nullptr, kReduce), "cuModuleGetFunction");
  check(cuModuleGetFunction(&ga, nullptr, kGraphA), "cuModuleGetFunction");
  check(cuModuleGetFunction(&gb, nullptr, kGraphB), "cuModuleGetFunction");
  check(cuModuleGetFunction(&other, nullptr, kOther), "cuModuleGetFunction");
  check(cuModuleGetFunction(&hgemm, nullptr, kHgemm), "cuModuleGetFunction");
  check(cuModuleGetFunction(&dmma, nullptr, kDmma), "cuModuleGetFunction");

  FakeCudaWork wt{};  // a[i] = b[i] + s * c[i]
  wt.dfma = n;
  wt.bytes_l1 = wt.bytes_l2 = 24 * n;
  wt.bytes_dram_read = 16 * n;
  wt.bytes_dram_write = 8 * n;
  FakeCudaWork ws{};  // 7-point stencil: 8 FLOPs per point, neighbours from cache
  ws.dadd = 6 * n;
  ws.dmul = 2 * n;
  ws.bytes_l1 = 64 * n;
  ws.bytes_l2 = 24 * n;
  ws.bytes_dram_read = 8 * n;
  ws.bytes_dram_write = 8 * n;
  FakeCudaWork wr{};  // 64 blocks: at most 64 SMs work
  wr.dadd = n / 4;
  wr.bytes_l1 = wr.bytes_l2 = 2 * n;
  wr.bytes_dram_read = 2 * n;
  wr.blocks_needed = 64;
  FakeCudaWork wh{};  // HGEMM: FP16 tensor ops, an FFMA epilogue (alpha * acc + beta * c)
  wh.tensor_fp16 = 64 * n;
  wh.ffma = n / 4;
  wh.bytes_l1 = wh.bytes_l2 = 4 * n;
  wh.bytes_dram_read = wh.bytes_dram_write = n;
  FakeCudaWork wd{};  // DMMA: FP64 tensor ops only
  wd.tensor_fp64 = 16 * n;
  wd.bytes_l1 = wd.bytes_l2 = 8 * n;
  wd.bytes_dram_read = wd.bytes_dram_write = n;
  FakeCudaWork wg{};
  wg.dfma = n / 16;
  wg.bytes_l1 = wg.bytes_l2 = n;
  wg.bytes_dram_read = wg.bytes_dram_write = n / 2;

  CUgraphExec exec = nullptr;
  CUgraph g = nullptr;
  if (graph) {
    check(cuGraphCreate(&g, 0), "cuGraphCreate");
    CUgraphNode node;
    void* pa[] = {&wg};
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = ga;
    p.gridDimX = 1024;
    p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 256;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = pa;
    check(cuGraphAddKernelNode(&node, g, nullptr, 0, &p), "cuGraphAddKernelNode");
    p.func = gb;
    check(cuGraphAddKernelNode(&node, g, nullptr, 0, &p), "cuGraphAddKernelNode");
    check(cuGraphInstantiate(&exec, g, 0), "cuGraphInstantiate");
  }
  CUcontext ctx2 = nullptr;
  if (second) {
    check(cuCtxCreate(&ctx2, nullptr, 0, dev), "cuCtxCreate");
    check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
  }
  const unsigned blocks = static_cast<unsigned>(n / 256 > 1e6 ? 1e6 : n / 256);
  const unsigned triad_blocks = static_cast<unsigned>(blocks * grid_scale);
  for (int it = 0; it < iters; ++it) {
    if (threads > 0) {  // the triad from several threads at once, each in the primary context
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&] {
          check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
          launch(triad, kTriad, wt, triad_blocks);
        });
      for (auto& t : pool) t.join();
    } else {
      launch(triad, kTriad, wt, triad_blocks);
    }
    if (second) {  // interleaved: one launch in the other context between the primary's
      check(cuCtxSetCurrent(ctx2), "cuCtxSetCurrent");
      launch(other, kOther, wg, blocks);
      check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");
    }
    launch(stencil, kStencil, ws, blocks);
    if (graph) {
      check(cuGraphLaunch(exec, nullptr), "cuGraphLaunch");
      count(kGraphA, wg);
      count(kGraphB, wg);
    }
    launch(reduce, kReduce, wr, 64);
    if (tensor) {
      launch(hgemm, kHgemm, wh, 132);
      launch(dmma, kDmma, wd, 132);
    }
  }
  check(cuCtxSynchronize(), "cuCtxSynchronize");
  if (graph) {
    cuGraphExecDestroy(exec);
    cuGraphDestroy(g);
  }
  if (ctx2) check(cuCtxDestroy(ctx2), "cuCtxDestroy");
  if (release) check(cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
  if (!expect.empty()) {
    std::ofstream out(expect);
    for (const auto& [name, t] : g_expect) out << name << '\t' << t.launches << '\t' << t.flops << '\t' << t.dram << '\n';
  }
  std::printf("fake cuda app: %d iterations of %.0f elements check=ok\n", iters, n);
  return 0;
}
