// How a GPU ERT block walks its chunk: shared by the CUDA kernels
// (gpu_runner.cu) and the CPU test that proves every element is visited
// exactly once (tests/ert/gpu_test.cpp), so the FLOP and byte accounting of
// kernel_spec.hpp holds for the kernels as written.
//
// A thread owns `chains` elements per round, `threads` apart (coalesced:
// round r of thread t covers base = t + r*threads*chains, then base +
// c*threads for c < chains); the rounds that fit whole run with all chains in
// flight (independent FMA chains, several loads outstanding), the rest of the
// chunk one element at a time from the first base that did not fit.
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define RTRACE_HD __host__ __device__ __forceinline__
#else
#define RTRACE_HD inline
#endif

namespace rtrace::ert::layout {

// Independent chains per thread in the FMA kernels; 16-byte loads in flight
// per thread in the bandwidth kernel.
constexpr int kFmaChains = 4;
constexpr int kStreamLoads = 4;

// True when the round starting at `base` has all `chains` elements in the chunk.
RTRACE_HD bool whole_round(std::size_t base, std::size_t threads, int chains, std::size_t chunk) {
  return base + static_cast<std::size_t>(chains - 1) * threads < chunk;
}
RTRACE_HD std::size_t round_step(std::size_t threads, int chains) { return threads * static_cast<std::size_t>(chains); }
RTRACE_HD std::size_t chain_element(std::size_t base, std::size_t threads, int chain) {
  return base + static_cast<std::size_t>(chain) * threads;
}

}  // namespace rtrace::ert::layout
