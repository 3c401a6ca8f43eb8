// Synthetic ERT samples and a small cache hierarchy for the ceiling tests.
#pragma once

#include "rtrace/ert/ceilings.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace rtrace::ert::test {

// One FP64 F=1 bandwidth sample at working set `ws` that moved `gbs` GB/s.
inline Sample bw_sample(double ws, int repeat, double gbs) {
  Sample s;
  s.series = Series::Bandwidth;
  s.kernel = {Precision::FP64, Variant::Fma, 1};
  s.working_set_bytes = std::int64_t(ws);
  s.repeat = repeat;
  s.seconds = 1e-3;
  s.bytes = gbs * 1e9 * s.seconds;
  return s;
}

// One FLOP sample of kernel (p, v, f) that ran at `gflops` GFLOP/s.
inline Sample flop_sample(Precision p, Variant v, int f, int repeat, double gflops) {
  Sample s;
  s.series = Series::Flops;
  s.kernel = {p, v, f};
  s.repeat = repeat;
  s.seconds = 1e-3;
  s.flops = gflops * 1e9 * s.seconds;
  return s;
}

// The same, as the one-worker reference of a larger partition measured it.
inline Sample one_worker(Sample s) {
  s.one_worker = true;
  s.workers = 1;
  s.ranks = 1;
  return s;
}

// A ceiling row with its repeats' median, min and max.
inline store::CeilingRow ceiling_row(const char* name, const char* kind, double value, double min, double max,
                                     const char* precision = "", const char* variant = "") {
  store::CeilingRow r{};
  store::set_str(r.name, name);
  store::set_str(r.kind, kind);
  store::set_str(r.precision, precision);
  store::set_str(r.variant, variant);
  store::set_str(r.unit, std::string(kind) == "bandwidth" ? "GB/s" : "GFLOP/s");
  r.value = value;
  r.min = min;
  r.max = max;
  r.repeats = 3;
  return r;
}

// L1d 64 KiB (2 x 32 KiB), L2 2 MiB (2 x 1 MiB), DRAM.
inline std::vector<MemoryLevel> two_cache_levels() {
  return {{"L1d", 64 * 1024.0, 32 * 1024}, {"L2", 2 * 1048576.0, 1048576}, {"DRAM", INFINITY, -1}};
}

// The same hierarchy as one worker sees it: L1d 32 KiB, L2 1 MiB, DRAM.
inline std::vector<MemoryLevel> two_cache_levels_one_worker() {
  return {{"L1d", 32 * 1024.0, 32 * 1024}, {"L2", 1048576.0, 1048576}, {"DRAM", INFINITY, -1}};
}

}  // namespace rtrace::ert::test
