// The roofline metric set of metrics mode and its validation with the CUPTI
// Profiler Host API, which works without a GPU (it only needs a chip name),
// so the list is checked in CI for GH100 and GA100.
#pragma once

#include "rtrace/store/records.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#ifdef RTRACE_TRACER_HAVE_CUPTI
#include <cupti_profiler_host.h>
#include <cupti_result.h>
#endif

namespace rtrace::tracer {

// Which KernelRow field a metric feeds, and with what weight (FMA = 2 FLOPs).
enum class MetricTarget {
  DurationNs, SmClockHz, FlopsFp64, FlopsFp32, FlopsFp16,
  // Tensor-core math ops by source type; each also adds to KernelRow::tensor_ops (their sum).
  TensorFp16, TensorBf16, TensorTf32, TensorFp64, TensorFp8,
  BytesL1, BytesL2, BytesDramRead,
  BytesDramWrite, WarpInstructions, ThreadInstructions, GlobalLd, GlobalSt, SharedLd, SharedSt,
  GlobalTransactions, SharedTransactions
};

struct MetricSpec {
  std::string name;       // "sm__sass_thread_inst_executed_op_dfma_pred_on.sum"
  MetricTarget target;
  double weight;          // value * weight is added to the target field
  // Non-empty: this metric stands in for `fallback_for` on chips that lack it
  // (GA100 splits sm__ops_path_tensor_src_fp16 by destination type). Kept only
  // when that metric is unavailable, so the same work is never counted twice.
  std::string fallback_for = {};
};

// The full list (time, clock, FLOPs by precision, tensor ops, L1/L2/DRAM
// bytes, instruction-roofline counters).
const std::vector<MetricSpec>& roofline_metrics();

// Sets every metric field of `row` to NaN (not measured) / has_metrics = 0.
void clear_metrics(store::KernelRow& row) noexcept;
// Adds value * weight to the metric's field (a NaN field starts at 0).
void apply_metric(store::KernelRow& row, const MetricSpec& spec, double value) noexcept;

#ifdef RTRACE_TRACER_HAVE_CUPTI
// The Host API entry points (from a dlopen'd libcupti in the tracer, linked
// directly in the unit test).
struct HostApi {
  decltype(&cuptiProfilerHostInitialize) initialize = nullptr;
  decltype(&cuptiProfilerHostDeinitialize) deinitialize = nullptr;
  decltype(&cuptiProfilerHostGetMetricProperties) metric_properties = nullptr;
  decltype(&cuptiProfilerHostConfigAddMetrics) add_metrics = nullptr;
  decltype(&cuptiProfilerHostGetConfigImageSize) config_image_size = nullptr;
  decltype(&cuptiProfilerHostGetConfigImage) config_image = nullptr;
  decltype(&cuptiProfilerHostGetNumOfPasses) num_passes = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  bool complete() const noexcept;
};

struct MetricPlan {
  bool ok = false;
  std::string error;                    // why not ok (host init failed, nothing valid)
  std::vector<MetricSpec> metrics;      // kept, in list order
  std::vector<std::string> warnings;    // "metric X not available on GA100: dropped"
  std::vector<std::string> notes;       // "metric X not available on GA100: counted as A + B"
  std::vector<std::uint8_t> config_image;
  std::size_t passes = 0;               // replay passes the kept set needs
  CUpti_Profiler_Host_Object* host = nullptr;  // kept alive for evaluation; release with release_plan
};

// Validates `wanted` for `chip` (counter availability image optional) and
// builds the configuration image. Never throws.
MetricPlan plan_metrics(const HostApi& api, const std::string& chip, const std::uint8_t* counter_availability,
                        const std::vector<MetricSpec>& wanted);
void release_plan(const HostApi& api, MetricPlan& plan) noexcept;
#endif

}  // namespace rtrace::tracer
