// The OpenMP demo kernels. Each runs its timed loop inside an rtrace region,
// declares its FLOPs and compulsory DRAM bytes, and checks its result against
// a reference. With a ProcessGroup of several ranks (the MPI demo) each rank
// works on its share and the results are combined.
#pragma once

#include "demo_common.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rtrace::demo {

KernelResult run_triad(const KernelConfig& cfg, ProcessGroup& group);
KernelResult run_stencil7(const KernelConfig& cfg, ProcessGroup& group);
KernelResult run_gsrb(const KernelConfig& cfg, ProcessGroup& group);
KernelResult run_spmv(const KernelConfig& cfg, ProcessGroup& group);
KernelResult run_gpp(const KernelConfig& cfg, ProcessGroup& group);
KernelResult run_dgemm(const KernelConfig& cfg, ProcessGroup& group);

// Dispatch by cfg.kernel.
KernelResult run_cpu_kernel(const KernelConfig& cfg, ProcessGroup& group);

// Default --size / --iters of a kernel on the CPU (examples/README.md explains them).
std::int64_t default_cpu_size(const std::string& kernel);
int default_cpu_iters(const std::string& kernel);
// The kernels `all` runs, in order.
const std::vector<std::string>& all_cpu_kernels();

// Combines the ranks' local numbers into r (time = max, counts = sum, ok = all).
void combine_ranks(KernelResult& r, ProcessGroup& group, double local_seconds, double local_flops,
                   double local_bytes, bool local_ok, const std::string& local_problem);

// Compares a rank's z-slab of an n^3 grid (local plane l = global k0 + l,
// planes of (n+2)^2 with ghosts) with the serial reference at the sample
// points of grid_sample_points; "" when all match to 1e-12, else the first
// mismatch as "name(i,j,k) = got, reference want". `inject_error` perturbs
// the first sample first (the tests of the check itself use it).
std::string check_slab_samples(const char* name, double* slab, std::int64_t n, std::int64_t k0, std::int64_t nz,
                               int iters, double reference_cost,
                               double (*reference)(std::int64_t n, int iters, const std::array<std::int64_t, 3>& p),
                               bool inject_error);

// 64-byte aligned, uninitialised array (first touch happens in parallel loops).
class AlignedArray {
 public:
  AlignedArray() = default;
  explicit AlignedArray(std::size_t count);
  ~AlignedArray();
  AlignedArray(AlignedArray&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; o.size_ = 0; }
  AlignedArray& operator=(AlignedArray&& o) noexcept;
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  double* data() { return data_; }
  const double* data() const { return data_; }
  double& operator[](std::size_t i) { return data_[i]; }
  const double& operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return size_; }
  void swap(AlignedArray& o) noexcept { std::swap(data_, o.data_); std::swap(size_, o.size_); }

 private:
  double* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rtrace::demo
