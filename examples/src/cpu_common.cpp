#include "cpu_kernels.hpp"

#include "demo_options.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sstream>
#include <stdexcept>

namespace rtrace::demo {

AlignedArray::AlignedArray(std::size_t count) : size_(count) {
  const std::size_t bytes = ((count * sizeof(double) + 63) / 64) * 64;
  data_ = static_cast<double*>(std::aligned_alloc(64, bytes > 0 ? bytes : 64));
  if (data_ == nullptr) throw std::bad_alloc();
}

AlignedArray::~AlignedArray() { std::free(data_); }

AlignedArray& AlignedArray::operator=(AlignedArray&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

// Defaults: on this project's 2-core developer machine (32 MiB L3) `rtrace-demo all`
// takes about 4 s on one thread; triad's 400 MB working set is far beyond any
// cache (DRAM-bound), dgemm is compute-bound. See examples/README.md.
std::int64_t default_cpu_size(const std::string& kernel) {
  if (kernel == "triad") return 1LL << 24;     // 16.8 M elements, 3 arrays = 403 MB
  if (kernel == "stencil7") return 192;        // 192^3 points, 2 grids = 116 MB
  if (kernel == "gsrb") return 160;            // 160^3 points, 2 grids = 67 MB
  if (kernel == "spmv") return 1LL << 21;      // 2.1 M rows, ~40 M non-zeros, 520 MB
  if (kernel == "gpp") return 1024;            // ncouls=1024, nbands=64, ngpown=128, nw=3
  if (kernel == "dgemm") return 1024;          // 2.1 GFLOP per iteration, 3 x 8 MB
  return 0;
}

int default_cpu_iters(const std::string& kernel) {
  if (kernel == "triad") return 20;
  if (kernel == "stencil7") return 30;
  if (kernel == "gsrb") return 16;
  if (kernel == "spmv") return 10;
  if (kernel == "gpp") return 1;
  if (kernel == "dgemm") return 2;
  return 1;
}

const std::vector<std::string>& all_cpu_kernels() {
  static const std::vector<std::string> k{"triad", "stencil7", "gsrb", "spmv", "gpp", "dgemm"};
  return k;
}

KernelResult run_cpu_kernel(const KernelConfig& cfg, ProcessGroup& group) {
  if (cfg.kernel == "triad") return run_triad(cfg, group);
  if (cfg.kernel == "stencil7") return run_stencil7(cfg, group);
  if (cfg.kernel == "gsrb") return run_gsrb(cfg, group);
  if (cfg.kernel == "spmv") return run_spmv(cfg, group);
  if (cfg.kernel == "gpp") return run_gpp(cfg, group);
  if (cfg.kernel == "dgemm") return run_dgemm(cfg, group);
  throw UsageError("unknown kernel `" + cfg.kernel + "`");
}

SlabCheck::SlabCheck(std::int64_t n, std::int64_t k0, std::int64_t nz, int iters, Reference reference, Cost cost)
    : n_(n), k0_(k0), nx_(n + 2), sweeps_(std::max(iters, 0)), reference_(reference) {
  // The most sweeps whose reference fits the budget at the minimum number of
  // sample points (the cost is monotonic in the sweeps: halve, then step up).
  while (sweeps_ > 1 && kReferenceBudget < 2.0 * cost(n, sweeps_)) sweeps_ /= 2;
  while (sweeps_ < iters && 2.0 * cost(n, sweeps_ + 1) <= kReferenceBudget) ++sweeps_;
  samples_ = grid_sample_points(n, k0 + 1, k0 + nz, cost(n, sweeps_));
}

void SlabCheck::capture(const double* slab, int done) {
  if (done != sweeps_ || !values_.empty()) return;
  values_.reserve(samples_.size());
  for (const auto& p : samples_) values_.push_back(slab[((p[2] - k0_) * nx_ + p[1]) * nx_ + p[0]]);
}

std::string SlabCheck::verify(const char* name, bool inject_error) const {
  if (values_.size() != samples_.size())
    return std::string(name) + ": no values captured after " + std::to_string(sweeps_) + " sweeps";
  for (std::size_t s = 0; s < samples_.size(); ++s) {
    const auto& p = samples_[s];
    const double want = reference_(n_, sweeps_, p), got = values_[s] + (inject_error && s == 0 ? 1.0 : 0.0);
    if (!(std::fabs(got - want) <= 1e-12 * (1.0 + std::fabs(want)))) {
      std::ostringstream os;
      os.precision(17);
      os << name << "(" << p[0] << "," << p[1] << "," << p[2] << ") = " << got << ", reference " << want << " (after "
         << sweeps_ << " sweeps)";
      return os.str();
    }
  }
  return "";
}

void combine_ranks(KernelResult& r, ProcessGroup& group, double local_seconds, double local_flops,
                   double local_bytes, bool local_ok, const std::string& local_problem) {
  if (!local_ok)
    std::fprintf(stderr, "rank %d: %s: wrong result: %s\n", group.rank(), r.region.c_str(),
                 local_problem.c_str());
  double counts[2] = {local_flops, local_bytes};
  group.sum(counts, 2);
  r.seconds = group.max(local_seconds);
  r.flops = counts[0];
  r.bytes_dram = counts[1];
  r.ok = group.all(local_ok);
  r.check = r.ok ? "ok" : (local_ok ? "wrong result on another rank" : local_problem);
}

}  // namespace rtrace::demo
