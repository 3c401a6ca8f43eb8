#include "rtrace/launcher/roofline_counts.hpp"

#include <cmath>
#include <filesystem>

namespace fs = std::filesystem;

namespace rtrace::launcher {

namespace {

bool counted(double v) { return std::isfinite(v) && v > 0; }

// The strongest evidence wins the description: declared counts, then counters, then GPU metrics.
void merge(RooflineCounts& into, const RooflineCounts& c) {
  if (!c.any) return;
  if (!into.any) into = c;
}

}  // namespace

RooflineCounts roofline_counts(const store::RankRecords& rank) {
  RooflineCounts out;
  bool hw = false;
  for (const auto& r : rank.regions) {
    if (counted(r.flops_fp64) || counted(r.flops_fp32) || counted(r.flops_fp16) || counted(r.bytes_l1) ||
        counted(r.bytes_l2) || counted(r.bytes_l3) || counted(r.bytes_dram))
      return RooflineCounts{true, "annotated regions with FLOPs or bytes"};
    hw = hw || counted(r.hw_fp64_ops) || counted(r.hw_fp32_ops);
  }
  if (hw) return RooflineCounts{true, "hardware counters"};
  // The count tables (schema 1.7: the counting pass or the PMU).
  for (const auto& c : rank.counts)
    if (counted(c.flops_fp64_scalar + c.flops_fp64_v128 + c.flops_fp64_v256 + c.flops_fp64_v512 + c.flops_fp32_scalar +
                c.flops_fp32_v128 + c.flops_fp32_v256 + c.flops_fp32_v512) ||
        counted(c.bytes_l1_read) || counted(c.bytes_dram_read))
      return RooflineCounts{true, "counted FLOPs and bytes"};
  for (const auto& k : rank.kernels)
    if (k.has_metrics && (counted(k.flops_fp64) || counted(k.flops_fp32) || counted(k.flops_fp16) ||
                          counted(k.tensor_ops) || counted(k.bytes_l1) || counted(k.bytes_l2) ||
                          counted(k.bytes_dram_read) || counted(k.bytes_dram_write)))
      return RooflineCounts{true, "GPU kernel metrics"};
  return out;
}

RooflineCounts roofline_counts_in_ranks(const store::Group& ranks) {
  RooflineCounts out;
  for (const auto& name : ranks.children()) {
    try {
      merge(out, roofline_counts(store::read_rank(ranks.open_group(name))));
    } catch (const std::exception&) {
      // a rank that cannot be read places nothing
    }
    if (out.any) break;
  }
  return out;
}

RooflineCounts roofline_counts_in_trace_dir(const std::string& trace_dir) {
  RooflineCounts out;
  std::error_code ec;
  if (trace_dir.empty() || !fs::is_directory(trace_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(trace_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (entry.path().extension() != ".h5" || (name != "ranks.h5" && name.rfind("rank-", 0) != 0)) continue;
    try {
      auto f = store::File::open(entry.path().string());
      if (f.root().exists("ranks")) merge(out, roofline_counts_in_ranks(f.root().open_group("ranks")));
    } catch (const std::exception&) {
    }
    if (out.any) break;
  }
  return out;
}

}  // namespace rtrace::launcher
