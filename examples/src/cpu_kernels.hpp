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

// Checks a rank's z-slab of an n^3 grid (local plane l = global k0 + l,
// planes of (n+2)^2 with ghosts) against the serial reference at the sample
// points of grid_sample_points. The reference of a point after k sweeps costs
// O(k^4): past a budget, the values are taken after the first k sweeps that
// fit it (capture() after every sweep, outside any timing that matters: it
// copies at most 12 values once), so the check of a long run costs well under
// a second instead of growing to most of the run. The kernel code is the same
// in every sweep, so the first k test it.
class SlabCheck {
 public:
  using Reference = double (*)(std::int64_t n, int iters, const std::array<std::int64_t, 3>& p);
  using Cost = double (*)(std::int64_t n, int iters);
  SlabCheck(std::int64_t n, std::int64_t k0, std::int64_t nz, int iters, Reference reference, Cost cost);
  // After how many sweeps the samples are taken (iters when affordable).
  int checked_sweeps() const { return sweeps_; }
  // Call with the slab after `done` sweeps (0 before the first one).
  void capture(const double* slab, int done);
  // "" when the captured values match to 1e-12, else the first mismatch as
  // "name(i,j,k) = got, reference want (after K sweeps)". `inject_error`
  // perturbs the first sample first (the tests of the check itself use it).
  std::string verify(const char* name, bool inject_error) const;

 private:
  std::int64_t n_, k0_, nx_;
  int sweeps_;
  Reference reference_;
  std::vector<std::array<std::int64_t, 3>> samples_;
  std::vector<double> values_;  // empty until captured
};

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
