// Pieces shared by the demo programs: the result of one kernel run, the
// region annotation, the process-group abstraction (so kernels do not depend
// on MPI) and the summary line.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rtrace::demo {

struct KernelConfig {
  std::string kernel;
  std::string variant;       // "-" when the kernel has none
  std::int64_t size = 0;     // already resolved to the kernel's default when not given
  int iters = 0;
  bool inject_error = false;
};

struct KernelResult {
  std::string kernel, variant, region;
  std::int64_t size = 0;
  int iters = 0;
  double seconds = 0;     // wall time of the timed loop (max over ranks)
  double flops = 0;       // FP64 FLOPs of the timed loop (sum over ranks)
  double bytes_dram = 0;  // compulsory DRAM bytes of the timed loop (sum over ranks)
  bool ok = false;
  std::string check;      // "ok" or what was wrong (with the first bad value)
};

// The processes that share a problem. The default is one process; the MPI
// demo supplies an MPI implementation. Kernels split the work with begin/end.
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const { return 0; }
  virtual int size() const { return 1; }
  virtual void barrier() {}
  virtual void sum(double* values, int count) {}          // in place, over all ranks
  virtual double max(double value) { return value; }
  virtual bool all(bool value) { return value; }
  // Ends every rank after an error only this rank saw (MPI_Abort); no-op alone.
  virtual void abort(int code) {}
  // Halo exchange of z-planes between neighbouring slabs: send `first` (this
  // rank's lowest interior plane) down and `last` up; receive the lower
  // neighbour's top plane into `ghost_lo` and the upper one's bottom plane
  // into `ghost_hi`. Ranks without a neighbour on a side keep that ghost.
  virtual void exchange_planes(double* ghost_lo, const double* first, double* ghost_hi, const double* last,
                               std::size_t count) {}
  // The share [begin, end) of `total` items owned by this rank (balanced blocks).
  std::int64_t share_begin(std::int64_t total) const { return total * rank() / size(); }
  std::int64_t share_end(std::int64_t total) const { return total * (rank() + 1) / size(); }
};

// Wall-clock timer.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// An rtrace region around a kernel's timed loop: begin in the constructor,
// declared counts + end in finish() (or the destructor on an exception).
class AnnotatedRegion {
 public:
  explicit AnnotatedRegion(std::string name);
  ~AnnotatedRegion();
  AnnotatedRegion(const AnnotatedRegion&) = delete;
  AnnotatedRegion& operator=(const AnnotatedRegion&) = delete;
  // Declares FP64 FLOPs and compulsory DRAM bytes, then ends the region.
  void finish(double flops_fp64, double bytes_dram);
  // The same for FLOPs of another precision (RTRACE_FP32, RTRACE_FP16).
  void finish(double flops, int precision, double bytes_dram);
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool open_ = true;
};

// A result with the configuration filled in (kernel, variant, region, size, iters).
KernelResult start_result(const KernelConfig& cfg);

// Region name of a kernel run: "triad", "gsrb-mask", "gpp-blocked".
std::string region_name(const std::string& kernel, const std::string& variant);

// "rtrace-demo: triad        variant=-      size=... iters=.. time=... GFLOP/s=... GB/s=... check=ok"
std::string summary_line(const std::string& program, const KernelResult& r, int threads, int ranks);

// Relative difference scaled so values near zero compare absolutely.
double rel_diff(double got, double want, double scale);

}  // namespace rtrace::demo
