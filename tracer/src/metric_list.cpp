#include "metric_list.hpp"

#include <algorithm>
#include <cmath>

namespace rtrace::tracer {

const std::vector<MetricSpec>& roofline_metrics() {
  using T = MetricTarget;
  static const std::vector<MetricSpec> kList = {
      {"gpu__time_duration.sum", T::DurationNs, 1},
      {"sm__cycles_elapsed.avg.per_second", T::SmClockHz, 1},
      // FLOPs: add + mul + 2 x fma, per precision (thread-level, predicated-on).
      {"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", T::FlopsFp64, 1},
      {"sm__sass_thread_inst_executed_op_dmul_pred_on.sum", T::FlopsFp64, 1},
      {"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", T::FlopsFp64, 2},
      {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", T::FlopsFp32, 1},
      {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", T::FlopsFp32, 1},
      {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", T::FlopsFp32, 2},
      // FP16: the counters taken as counting lanes (HFMA2 = 2, scalar HFMA =
      // 1), NVIDIA's own rule (Nsight Compute, likwid FLOPS_HP): 1/1/2, so
      // scalar HFMA is 2 FLOPs and HFMA2 4, as the ERT FP16 ceiling counts it.
      // Checked on a GPU by validate.sh (fma half, fma half2); docs/tracer.md.
      {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", T::FlopsFp16, 1},
      {"sm__sass_thread_inst_executed_op_hmul_pred_on.sum", T::FlopsFp16, 1},
      {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", T::FlopsFp16, 2},
      // Tensor-core math ops (unit math_op, stored as such), kept per source
      // type (each has its own tensor ceiling: an HGEMM is judged against the
      // FP16 tensor roof, a DMMA kernel against FP64's; issue 31); chips lack
      // some: validated per chip (FP8 exists from Hopper on; GA100 and GB100
      // name FP16 by destination).
      {"sm__ops_path_tensor_src_fp16.sum", T::TensorFp16, 1},
      {"sm__ops_path_tensor_src_fp16_dst_fp16.sum", T::TensorFp16, 1, "sm__ops_path_tensor_src_fp16.sum"},
      {"sm__ops_path_tensor_src_fp16_dst_fp32.sum", T::TensorFp16, 1, "sm__ops_path_tensor_src_fp16.sum"},
      {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", T::TensorBf16, 1},
      {"sm__ops_path_tensor_src_tf32_dst_fp32.sum", T::TensorTf32, 1},
      {"sm__ops_path_tensor_src_fp64.sum", T::TensorFp64, 1},
      {"sm__ops_path_tensor_src_fp8.sum", T::TensorFp8, 1},
      // Bytes per memory level.
      {"l1tex__t_bytes.sum", T::BytesL1, 1},
      {"lts__t_bytes.sum", T::BytesL2, 1},
      {"dram__bytes_read.sum", T::BytesDramRead, 1},
      {"dram__bytes_write.sum", T::BytesDramWrite, 1},
      // Instruction roofline.
      {"smsp__inst_executed.sum", T::WarpInstructions, 1},
      {"smsp__thread_inst_executed_pred_on.sum", T::ThreadInstructions, 1},
      {"smsp__inst_executed_op_global_ld.sum", T::GlobalLd, 1},
      {"smsp__inst_executed_op_global_st.sum", T::GlobalSt, 1},
      {"smsp__inst_executed_op_shared_ld.sum", T::SharedLd, 1},
      {"smsp__inst_executed_op_shared_st.sum", T::SharedSt, 1},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", T::GlobalTransactions, 1},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", T::GlobalTransactions, 1},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", T::SharedTransactions, 1},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", T::SharedTransactions, 1},
  };
  return kList;
}

namespace {
double* field(store::KernelRow& r, MetricTarget t) noexcept {
  using T = MetricTarget;
  switch (t) {
    case T::DurationNs: return &r.metric_duration_ns;
    case T::SmClockHz: return &r.sm_clock_hz;
    case T::FlopsFp64: return &r.flops_fp64;
    case T::FlopsFp32: return &r.flops_fp32;
    case T::FlopsFp16: return &r.flops_fp16;
    case T::TensorFp16: return &r.tensor_ops_fp16;
    case T::TensorBf16: return &r.tensor_ops_bf16;
    case T::TensorTf32: return &r.tensor_ops_tf32;
    case T::TensorFp64: return &r.tensor_ops_fp64;
    case T::TensorFp8: return &r.tensor_ops_fp8;
    case T::BytesL1: return &r.bytes_l1;
    case T::BytesL2: return &r.bytes_l2;
    case T::BytesDramRead: return &r.bytes_dram_read;
    case T::BytesDramWrite: return &r.bytes_dram_write;
    case T::WarpInstructions: return &r.warp_instructions;
    case T::ThreadInstructions: return &r.thread_instructions;
    case T::GlobalLd: return &r.global_ld_instructions;
    case T::GlobalSt: return &r.global_st_instructions;
    case T::SharedLd: return &r.shared_ld_instructions;
    case T::SharedSt: return &r.shared_st_instructions;
    case T::GlobalTransactions: return &r.global_transactions;
    case T::SharedTransactions: return &r.shared_transactions;
  }
  return nullptr;
}

bool is_tensor(MetricTarget t) noexcept {
  return t == MetricTarget::TensorFp16 || t == MetricTarget::TensorBf16 || t == MetricTarget::TensorTf32 ||
         t == MetricTarget::TensorFp64 || t == MetricTarget::TensorFp8;
}

void add_to(double& f, double v) noexcept {
  if (std::isnan(f)) f = 0;
  f += v;
}
}  // namespace

void clear_metrics(store::KernelRow& r) noexcept {
  r.has_metrics = 0;
  r.tensor_ops = NAN;
  for (const auto t : {MetricTarget::DurationNs, MetricTarget::SmClockHz, MetricTarget::FlopsFp64,
                       MetricTarget::FlopsFp32, MetricTarget::FlopsFp16, MetricTarget::TensorFp16,
                       MetricTarget::TensorBf16, MetricTarget::TensorTf32, MetricTarget::TensorFp64,
                       MetricTarget::TensorFp8,
                       MetricTarget::BytesL1, MetricTarget::BytesL2, MetricTarget::BytesDramRead,
                       MetricTarget::BytesDramWrite, MetricTarget::WarpInstructions,
                       MetricTarget::ThreadInstructions, MetricTarget::GlobalLd, MetricTarget::GlobalSt,
                       MetricTarget::SharedLd, MetricTarget::SharedSt, MetricTarget::GlobalTransactions,
                       MetricTarget::SharedTransactions})
    *field(r, t) = NAN;
}

void apply_metric(store::KernelRow& r, const MetricSpec& spec, double value) noexcept {
  double* f = field(r, spec.target);
  if (!f || std::isnan(value)) return;
  add_to(*f, value * spec.weight);
  if (is_tensor(spec.target)) add_to(r.tensor_ops, value * spec.weight);
}

#ifdef RTRACE_TRACER_HAVE_CUPTI
bool HostApi::complete() const noexcept {
  return initialize && deinitialize && metric_properties && add_metrics && config_image_size && config_image &&
         num_passes && result_string;
}

namespace {
std::string result_text(const HostApi& api, CUptiResult r) {
  const char* s = nullptr;
  if (api.result_string) api.result_string(r, &s);
  return s ? s : ("CUPTI error " + std::to_string(static_cast<int>(r)));
}
}  // namespace

MetricPlan plan_metrics(const HostApi& api, const std::string& chip, const std::uint8_t* counter_availability,
                        const std::vector<MetricSpec>& wanted) {
  MetricPlan plan;
  try {
    if (!api.complete()) {
      plan.error = "the CUPTI Profiler Host API is incomplete in the loaded libcupti";
      return plan;
    }
    CUpti_Profiler_Host_Initialize_Params init{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    init.pChipName = chip.c_str();
    init.pCounterAvailabilityImage = counter_availability;
    if (CUptiResult r = api.initialize(&init); r != CUPTI_SUCCESS) {
      plan.error = "Profiler Host API for chip `" + chip + "`: " + result_text(api, r);
      return plan;
    }
    plan.host = init.pHostObject;
    // Properties first: adding an unknown metric to a config poisons it.
    std::vector<const char*> names;
    for (const auto& m : wanted) {
      CUpti_Profiler_Host_GetMetricProperties_Params p{CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE};
      p.pHostObject = plan.host;
      p.pMetricName = m.name.c_str();
      CUptiResult r = api.metric_properties(&p);
      if (r != CUPTI_SUCCESS) {
        // Silent when stand-ins exist for it, or when it is a stand-in that is
        // not needed: those outcomes are reported as notes below.
        const bool has_stand_in = std::any_of(wanted.begin(), wanted.end(),
                                              [&](const MetricSpec& w) { return w.fallback_for == m.name; });
        const bool unneeded_stand_in =
            !m.fallback_for.empty() && std::any_of(plan.metrics.begin(), plan.metrics.end(),
                                                   [&](const MetricSpec& k) { return k.name == m.fallback_for; });
        if (!has_stand_in && !unneeded_stand_in)
          plan.warnings.push_back("metric " + m.name + " not available on " + chip + " (" + result_text(api, r) +
                                  "): dropped");
        continue;
      }
      plan.metrics.push_back(m);
      names.push_back(plan.metrics.back().name.c_str());
    }
    // Stand-ins: kept only where the metric they replace is unavailable.
    std::vector<MetricSpec> kept;
    for (const auto& m : plan.metrics) {
      if (m.fallback_for.empty()) {
        kept.push_back(m);
        continue;
      }
      const bool primary_kept = std::any_of(plan.metrics.begin(), plan.metrics.end(),
                                            [&](const MetricSpec& p) { return p.name == m.fallback_for; });
      if (!primary_kept) {
        kept.push_back(m);
        plan.notes.push_back("metric " + m.fallback_for + " not available on " + chip + ": counted with " + m.name);
      }
    }
    plan.metrics = std::move(kept);
    if (plan.metrics.empty()) {
      plan.error = "no metric of the roofline set is available on " + chip;
      release_plan(api, plan);
      return plan;
    }
    // Re-point names at the vector's final storage (push_back may have moved it).
    names.clear();
    for (const auto& m : plan.metrics) names.push_back(m.name.c_str());
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = plan.host;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    if (CUptiResult r = api.add_metrics(&add); r != CUPTI_SUCCESS) {
      plan.error = "adding " + std::to_string(names.size()) + " metrics to the configuration: " + result_text(api, r);
      release_plan(api, plan);
      return plan;
    }
    CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
    size.pHostObject = plan.host;
    if (CUptiResult r = api.config_image_size(&size); r != CUPTI_SUCCESS) {
      plan.error = "config image size: " + result_text(api, r);
      release_plan(api, plan);
      return plan;
    }
    plan.config_image.resize(size.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params img{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
    img.pHostObject = plan.host;
    img.configImageSize = plan.config_image.size();
    img.pConfigImage = plan.config_image.data();
    if (CUptiResult r = api.config_image(&img); r != CUPTI_SUCCESS) {
      plan.error = "config image: " + result_text(api, r);
      release_plan(api, plan);
      return plan;
    }
    CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
    passes.configImageSize = plan.config_image.size();
    passes.pConfigImage = plan.config_image.data();
    if (CUptiResult r = api.num_passes(&passes); r != CUPTI_SUCCESS) {
      plan.error = "number of passes: " + result_text(api, r);
      release_plan(api, plan);
      return plan;
    }
    plan.passes = passes.numOfPasses;
    plan.ok = true;
  } catch (const std::exception& e) {
    plan.ok = false;
    plan.error = e.what();
  }
  return plan;
}

void release_plan(const HostApi& api, MetricPlan& plan) noexcept {
  if (plan.host && api.deinitialize) {
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
    p.pHostObject = plan.host;
    api.deinitialize(&p);
  }
  plan.host = nullptr;
}
#endif

}  // namespace rtrace::tracer
