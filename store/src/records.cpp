#include "rtrace/store/records.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace rtrace::store {

const char* to_string(PointStatus s) noexcept {
  switch (s) {
    case PointStatus::Pending: return "pending";
    case PointStatus::Ok: return "ok";
    case PointStatus::Failed: return "failed";
    case PointStatus::Timeout: return "timeout";
    case PointStatus::Signalled: return "signalled";
    case PointStatus::LaunchError: return "launch_error";
  }
  return "pending";
}

PointStatus point_status_from_string(const std::string& s) {
  for (auto st : {PointStatus::Pending, PointStatus::Ok, PointStatus::Failed, PointStatus::Timeout,
                  PointStatus::Signalled, PointStatus::LaunchError})
    if (s == to_string(st)) return st;
  throw std::invalid_argument("unknown point status `" + s + "`");
}

double ceiling_relative_spread(const CeilingRow& c) noexcept {
  if (!(c.value > 0) || !(c.max >= c.min) || !std::isfinite(c.max - c.min)) return 0;
  return (c.max - c.min) / c.value;
}

double ceiling_noise_tolerance(const CeilingRow& a, const CeilingRow& b, double floor, double cap) noexcept {
  return std::min(cap, floor + ceiling_relative_spread(a) + ceiling_relative_spread(b));
}

// Layouts: names and units here must match schemas/rtrace-v1.json (checked by
// tests/store/schema_test.cpp).

const RowLayout& SweepAxisRow::layout() {
  using R = SweepAxisRow;
  static const RowLayout l = RowLayout("sweep_axis", sizeof(R))
                                 .add("index", &R::index)
                                 .add("name", &R::name)
                                 .add("spec", &R::spec);
  return l;
}

const RowLayout& SweepPointRow::layout() {
  using R = SweepPointRow;
  static const RowLayout l = RowLayout("sweep_point", sizeof(R))
                                 .add("point_id", &R::point_id)
                                 .add("repeat", &R::repeat)
                                 .add("label", &R::label)
                                 .add("threads", &R::threads, "1")
                                 .add("ranks", &R::ranks, "1")
                                 .add("nodes", &R::nodes, "1")
                                 .add("sms_requested", &R::sms_requested, "1")
                                 .add("sms_achieved", &R::sms_achieved, "1")
                                 .add("partition_method", &R::partition_method)
                                 .add("status", &R::status)
                                 .add("exit_code", &R::exit_code)
                                 .add("signal", &R::signal)
                                 .add("start_time", &R::start_time, "s")
                                 .add("end_time", &R::end_time, "s")
                                 .add("wall_s", &R::wall_s, "s")
                                 .add("complete", &R::complete)
                                 .add_optional("sms_granted", &R::sms_granted, "1");
  return l;
}

const RowLayout& CeilingRow::layout() {
  using R = CeilingRow;
  static const RowLayout l = RowLayout("ceiling", sizeof(R))
                                 .add("name", &R::name)
                                 .add("kind", &R::kind)
                                 .add("precision", &R::precision)
                                 .add("variant", &R::variant)
                                 .add("value", &R::value, "@unit")
                                 .add("max", &R::max, "@unit")
                                 .add("min", &R::min, "@unit")
                                 .add("repeats", &R::repeats, "1")
                                 .add("unit", &R::unit)
                                 .add("level_bytes", &R::level_bytes, "B")
                                 .add_optional("unreliable", &R::unreliable, "1")
                                 .add_optional("unreliable_reason", &R::unreliable_reason)
                                 .add_optional("host", &R::host)
                                 .add_optional("source", &R::source)
                                 .add_optional("measured", &R::measured, "@unit")
                                 .add_optional("reference_date", &R::reference_date);
  return l;
}

const RowLayout& HostRow::layout() {
  using R = HostRow;
  static const RowLayout l = RowLayout("host", sizeof(R))
                                 .add("host", &R::host)
                                 .add("ranks", &R::ranks, "1")
                                 .add("rank_list", &R::rank_list)
                                 .add("placed", &R::placed)
                                 .add("state", &R::state);
  return l;
}

const RowLayout& ErtSampleRow::layout() {
  using R = ErtSampleRow;
  static const RowLayout l = RowLayout("ert_sample", sizeof(R))
                                 .add("precision", &R::precision)
                                 .add("variant", &R::variant)
                                 .add("flops_per_element", &R::flops_per_element, "FLOP")
                                 .add("working_set_bytes", &R::working_set_bytes, "B")
                                 .add("trials", &R::trials, "1")
                                 .add("threads", &R::threads, "1")
                                 .add("ranks", &R::ranks, "1")
                                 .add("repeat", &R::repeat)
                                 .add("seconds", &R::seconds, "s")
                                 .add("bytes", &R::bytes, "B")
                                 .add("flops", &R::flops, "FLOP")
                                 .add("gbytes_per_s", &R::gbytes_per_s, "GB/s")
                                 .add("gflops_per_s", &R::gflops_per_s, "GFLOP/s");
  return l;
}

const RowLayout& CacheRow::layout() {
  using R = CacheRow;
  static const RowLayout l = RowLayout("cache", sizeof(R))
                                 .add("name", &R::name)
                                 .add("depth", &R::depth)
                                 .add("size_bytes", &R::size_bytes, "B")
                                 .add("line_bytes", &R::line_bytes, "B")
                                 .add("instances", &R::instances, "1")
                                 .add("shared_by", &R::shared_by, "1");
  return l;
}

const RowLayout& GpuRow::layout() {
  using R = GpuRow;
  static const RowLayout l = RowLayout("gpu", sizeof(R))
                                 .add("index", &R::index)
                                 .add("name", &R::name)
                                 .add("uuid", &R::uuid)
                                 .add("chip", &R::chip)
                                 .add("cc_major", &R::cc_major)
                                 .add("cc_minor", &R::cc_minor)
                                 .add("sm_count", &R::sm_count, "1")
                                 .add("l2_bytes", &R::l2_bytes, "B")
                                 .add("memory_bytes", &R::memory_bytes, "B")
                                 .add("sm_clock_khz", &R::sm_clock_khz, "kHz")
                                 .add("memory_clock_khz", &R::memory_clock_khz, "kHz")
                                 .add("memory_bus_bits", &R::memory_bus_bits, "bit")
                                 .add("spec_bandwidth_gbs", &R::spec_bandwidth_gbs, "GB/s");
  return l;
}

const RowLayout& RankInfoRow::layout() {
  using R = RankInfoRow;
  static const RowLayout l = RowLayout("rank_info", sizeof(R))
                                 .add("rank", &R::rank)
                                 .add("pid", &R::pid)
                                 .add("host", &R::host)
                                 .add("tracer_mode", &R::tracer_mode)
                                 .add("start_time", &R::start_time, "s")
                                 .add("wall_s", &R::wall_s, "s")
                                 .add("user_s", &R::user_s, "s")
                                 .add("system_s", &R::system_s, "s")
                                 .add("max_rss_kib", &R::max_rss_kib, "KiB")
                                 .add("voluntary_ctxsw", &R::voluntary_ctxsw, "1")
                                 .add("involuntary_ctxsw", &R::involuntary_ctxsw, "1")
                                 .add("exit_status", &R::exit_status)
                                 .add("complete", &R::complete)
                                 .add("tracer_errors", &R::tracer_errors, "1")
                                 .add("dropped_records", &R::dropped_records, "1")
                                 .add("counters_available", &R::counters_available)
                                 .add("gpu_available", &R::gpu_available)
                                 .add("omp_threads", &R::omp_threads, "1")
                                 .add_optional("mpi_init_end", &R::mpi_init_end, "s")
                                 .add_optional("mpi_finalize_start", &R::mpi_finalize_start, "s")
                                 .add_optional("gpu_status", &R::gpu_status)
                                 .add_optional("gpu_status_detail", &R::gpu_status_detail)
                                 .add_optional("metrics_unmatched_launches", &R::metrics_unmatched_launches, "1")
                                 .add_optional("metrics_unmatched_ranges", &R::metrics_unmatched_ranges, "1")
                                 .add_optional("tracer_wrapper_s", &R::tracer_wrapper_s, "s")
                                 .add_optional("tracer_sampler_s", &R::tracer_sampler_s, "s")
                                 .add_optional("tracer_code_s", &R::tracer_code_s, "s")
                                 .add_optional("tracer_exit_s", &R::tracer_exit_s, "s")
                                 .add_optional("tracer_outside_mpi_s", &R::tracer_outside_mpi_s, "s")
                                 .add_optional("cpu_at_mpi_init_end", &R::cpu_at_mpi_init_end, "s")
                                 .add_optional("cpu_at_mpi_finalize_start", &R::cpu_at_mpi_finalize_start, "s");
  return l;
}

const RowLayout& RegionRow::layout() {
  using R = RegionRow;
  static const RowLayout l = RowLayout("region", sizeof(R))
                                 .add("name_id", &R::name_id)
                                 .add("calls", &R::calls, "1")
                                 .add("time_s", &R::time_s, "s")
                                 .add("flops_fp64", &R::flops_fp64, "FLOP")
                                 .add("flops_fp32", &R::flops_fp32, "FLOP")
                                 .add("flops_fp16", &R::flops_fp16, "FLOP")
                                 .add("bytes_l1", &R::bytes_l1, "B")
                                 .add("bytes_l2", &R::bytes_l2, "B")
                                 .add("bytes_l3", &R::bytes_l3, "B")
                                 .add("bytes_dram", &R::bytes_dram, "B")
                                 .add("hw_instructions", &R::hw_instructions, "1")
                                 .add("hw_cycles", &R::hw_cycles, "cycle")
                                 .add("hw_fp64_ops", &R::hw_fp64_ops, "FLOP")
                                 .add("hw_fp32_ops", &R::hw_fp32_ops, "FLOP");
  return l;
}

const RowLayout& KernelRow::layout() {
  using R = KernelRow;
  static const RowLayout l = RowLayout("kernel", sizeof(R))
                                 .add("name_id", &R::name_id)
                                 .add("launch_index", &R::launch_index)
                                 .add("correlation_id", &R::correlation_id)
                                 .add("device", &R::device)
                                 .add("context", &R::context)
                                 .add("stream", &R::stream)
                                 .add("grid_x", &R::grid_x, "1")
                                 .add("grid_y", &R::grid_y, "1")
                                 .add("grid_z", &R::grid_z, "1")
                                 .add("block_x", &R::block_x, "1")
                                 .add("block_y", &R::block_y, "1")
                                 .add("block_z", &R::block_z, "1")
                                 .add("registers", &R::registers, "1")
                                 .add("shared_static", &R::shared_static, "B")
                                 .add("shared_dynamic", &R::shared_dynamic, "B")
                                 .add("start_ns", &R::start_ns, "ns")
                                 .add("end_ns", &R::end_ns, "ns")
                                 .add("has_metrics", &R::has_metrics)
                                 .add("metric_duration_ns", &R::metric_duration_ns, "ns")
                                 .add("sm_clock_hz", &R::sm_clock_hz, "Hz")
                                 .add("flops_fp64", &R::flops_fp64, "FLOP")
                                 .add("flops_fp32", &R::flops_fp32, "FLOP")
                                 .add("flops_fp16", &R::flops_fp16, "FLOP")
                                 .add("tensor_ops", &R::tensor_ops, "math_op")
                                 .add("bytes_l1", &R::bytes_l1, "B")
                                 .add("bytes_l2", &R::bytes_l2, "B")
                                 .add("bytes_dram_read", &R::bytes_dram_read, "B")
                                 .add("bytes_dram_write", &R::bytes_dram_write, "B")
                                 .add("warp_instructions", &R::warp_instructions, "1")
                                 .add("thread_instructions", &R::thread_instructions, "1")
                                 .add("global_ld_instructions", &R::global_ld_instructions, "1")
                                 .add("global_st_instructions", &R::global_st_instructions, "1")
                                 .add("shared_ld_instructions", &R::shared_ld_instructions, "1")
                                 .add("shared_st_instructions", &R::shared_st_instructions, "1")
                                 .add("global_transactions", &R::global_transactions, "1")
                                 .add("shared_transactions", &R::shared_transactions, "1")
                                 .add_optional("metrics_provenance", &R::metrics_provenance)
                                 .add_optional("tensor_ops_fp16", &R::tensor_ops_fp16, "math_op")
                                 .add_optional("tensor_ops_bf16", &R::tensor_ops_bf16, "math_op")
                                 .add_optional("tensor_ops_tf32", &R::tensor_ops_tf32, "math_op")
                                 .add_optional("tensor_ops_fp64", &R::tensor_ops_fp64, "math_op")
                                 .add_optional("tensor_ops_fp8", &R::tensor_ops_fp8, "math_op");
  return l;
}

const RowLayout& MemcpyRow::layout() {
  using R = MemcpyRow;
  static const RowLayout l = RowLayout("memcpy", sizeof(R))
                                 .add("kind", &R::kind)
                                 .add("bytes", &R::bytes, "B")
                                 .add("start_ns", &R::start_ns, "ns")
                                 .add("end_ns", &R::end_ns, "ns")
                                 .add("device", &R::device)
                                 .add("stream", &R::stream)
                                 .add("correlation_id", &R::correlation_id);
  return l;
}

const RowLayout& MpiRow::layout() {
  using R = MpiRow;
  static const RowLayout l = RowLayout("mpi", sizeof(R))
                                 .add("name_id", &R::name_id)
                                 .add("calls", &R::calls, "1")
                                 .add("time_s", &R::time_s, "s")
                                 .add("bytes_sent", &R::bytes_sent, "B")
                                 .add("bytes_received", &R::bytes_received, "B")
                                 .add_optional("time_method", &R::time_method)
                                 .add_optional("run_calls", &R::run_calls, "1")
                                 .add_optional("estimated_calls", &R::estimated_calls, "1");
  return l;
}

const RowLayout& SamplingRow::layout() {
  using R = SamplingRow;
  static const RowLayout l = RowLayout("sampling", sizeof(R))
                                 .add("rate_hz", &R::rate_hz, "Hz")
                                 .add("period_s", &R::period_s, "s")
                                 .add("clock", &R::clock)
                                 .add("unwinder", &R::unwinder)
                                 .add("signal", &R::signal)
                                 .add("threads", &R::threads, "1")
                                 .add("samples", &R::samples, "1")
                                 .add("dropped", &R::dropped, "1")
                                 .add("max_depth", &R::max_depth, "1")
                                 .add("status", &R::status);
  return l;
}

const RowLayout& CallPathRow::layout() {
  using R = CallPathRow;
  static const RowLayout l = RowLayout("callpath", sizeof(R))
                                 .add("node_id", &R::node_id)
                                 .add("parent_id", &R::parent_id)
                                 .add("thread", &R::thread)
                                 .add("function_id", &R::function_id)
                                 .add("module_id", &R::module_id)
                                 .add("file_id", &R::file_id)
                                 .add("line", &R::line)
                                 .add("offset", &R::offset, "B")
                                 .add("category", &R::category)
                                 .add("inlined", &R::inlined)
                                 .add("self_samples", &R::self_samples, "1")
                                 .add("inclusive_samples", &R::inclusive_samples, "1");
  return l;
}

const RowLayout& MachineLoadRow::layout() {
  using R = MachineLoadRow;
  static const RowLayout l = RowLayout("machine_load", sizeof(R))
                                 .add("source", &R::source)
                                 .add("status", &R::status)
                                 .add("note", &R::note)
                                 .add("interval_s", &R::interval_s, "s")
                                 .add("cpus", &R::cpus, "1")
                                 .add("busy_cpu_s", &R::busy_cpu_s, "s")
                                 .add("tree_cpu_s", &R::tree_cpu_s, "s")
                                 .add("other_cpu_s", &R::other_cpu_s, "s")
                                 .add("steal_s", &R::steal_s, "s")
                                 .add("idle_s", &R::idle_s, "s")
                                 .add("load_avg_start", &R::load_avg_start, "1")
                                 .add("load_avg_end", &R::load_avg_end, "1");
  return l;
}

const RowLayout& CountInfoRow::layout() {
  using R = CountInfoRow;
  static const RowLayout l = RowLayout("count_info", sizeof(R))
                                 .add("source", &R::source)
                                 .add("status", &R::status)
                                 .add("threads", &R::threads, "1")
                                 .add("serialised", &R::serialised)
                                 .add("wall_s", &R::wall_s, "s")
                                 .add("exit_code", &R::exit_code)
                                 .add("note", &R::note)
                                 .add_optional("cache_geometry", &R::cache_geometry)
                                 .add_optional("cache_threads", &R::cache_threads, "1")
                                 .add_optional("cache_threads_assumed", &R::cache_threads_assumed)
                                 .add_optional("window", &R::window)
                                 .add_optional("steered", &R::steered)
                                 .add_optional("not_steered", &R::not_steered);
  return l;
}

const RowLayout& DispatchRow::layout() {
  using R = DispatchRow;
  static const RowLayout l = RowLayout("dispatch", sizeof(R))
                                 .add("library", &R::library)
                                 .add("item", &R::item)
                                 .add("choice", &R::choice)
                                 .add("detail", &R::detail);
  return l;
}

const RowLayout& CountLevelRow::layout() {
  using R = CountLevelRow;
  static const RowLayout l = RowLayout("count_level", sizeof(R))
                                 .add("name", &R::name)
                                 .add("size_bytes", &R::size_bytes, "B")
                                 .add("full_size_bytes", &R::full_size_bytes, "B")
                                 .add("line_bytes", &R::line_bytes, "B")
                                 .add("associativity", &R::associativity, "1")
                                 .add("sharers", &R::sharers, "1")
                                 .add_optional("threads_sharing", &R::threads_sharing, "1")
                                 .add_optional("copies", &R::copies, "1");
  return l;
}

const RowLayout& CountRow::layout() {
  using R = CountRow;
  static const RowLayout l = RowLayout("count", sizeof(R))
                                 .add("thread", &R::thread)
                                 .add("function_id", &R::function_id)
                                 .add("module_id", &R::module_id)
                                 .add("instructions", &R::instructions, "1")
                                 .add("flops_fp64_scalar", &R::flops_fp64_scalar, "FLOP")
                                 .add("flops_fp64_v128", &R::flops_fp64_v128, "FLOP")
                                 .add("flops_fp64_v256", &R::flops_fp64_v256, "FLOP")
                                 .add("flops_fp64_v512", &R::flops_fp64_v512, "FLOP")
                                 .add("flops_fp32_scalar", &R::flops_fp32_scalar, "FLOP")
                                 .add("flops_fp32_v128", &R::flops_fp32_v128, "FLOP")
                                 .add("flops_fp32_v256", &R::flops_fp32_v256, "FLOP")
                                 .add("flops_fp32_v512", &R::flops_fp32_v512, "FLOP")
                                 .add("flops_fp16_scalar", &R::flops_fp16_scalar, "FLOP")
                                 .add("flops_fp16_v128", &R::flops_fp16_v128, "FLOP")
                                 .add("flops_fp16_v256", &R::flops_fp16_v256, "FLOP")
                                 .add("flops_fp16_v512", &R::flops_fp16_v512, "FLOP")
                                 .add("bytes_l1_read", &R::bytes_l1_read, "B")
                                 .add("bytes_l1_write", &R::bytes_l1_write, "B")
                                 .add("bytes_l2_read", &R::bytes_l2_read, "B")
                                 .add("bytes_l2_write", &R::bytes_l2_write, "B")
                                 .add("bytes_l3_read", &R::bytes_l3_read, "B")
                                 .add("bytes_l3_write", &R::bytes_l3_write, "B")
                                 .add("bytes_dram_read", &R::bytes_dram_read, "B")
                                 .add("bytes_dram_write", &R::bytes_dram_write, "B")
                                 .add_optional("flops_unsplit", &R::flops_unsplit, "FLOP")
                                 .add_optional("window", &R::window);
  return l;
}

}  // namespace rtrace::store
