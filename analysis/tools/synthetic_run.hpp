// Builds synthetic run files through the store API (RunFile::create +
// commit_point + write_rank), for tests with known answers, demos and the
// scale benchmark. Header-only so tests and rtrace-synth share it.
#pragma once

#include <rtrace/store/file.hpp>
#include <rtrace/store/records.hpp>
#include <rtrace/store/run_file.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace rtrace::synth {

struct SynthPoint {
  store::SweepPointRow row{};
  std::vector<store::CeilingRow> ceilings;
  std::vector<store::RankRecords> ranks;
  std::vector<store::MachineLoadRow> machine_load;  // the launcher's one row, or none
};

// The launcher's measurement of other processes during a point: `other_cpu_s`
// of `cpus` CPUs over `interval_s` (run-file 1.7 machine_load).
inline store::MachineLoadRow machine_load(int cpus, double interval_s, double other_cpu_s) {
  store::MachineLoadRow m{};
  store::set_str(m.source, "proc-stat");
  store::set_str(m.status, "ok");
  m.interval_s = interval_s;
  m.cpus = cpus;
  m.tree_cpu_s = 0;
  m.other_cpu_s = other_cpu_s;
  m.busy_cpu_s = other_cpu_s;
  m.steal_s = 0;
  m.idle_s = cpus * interval_s - other_cpu_s;
  m.load_avg_start = m.load_avg_end = 1;
  return m;
}

inline store::SweepPointRow point_row(std::int64_t id, const std::string& label, int threads, int ranks = 1,
                                      int nodes = 1, int sms = -1, int repeat = 0) {
  store::SweepPointRow r{};
  r.point_id = id;
  r.repeat = repeat;
  store::set_str(r.label, label);
  r.threads = threads;
  r.ranks = ranks;
  r.nodes = nodes;
  r.sms_requested = sms;
  r.sms_achieved = sms;
  store::set_str(r.partition_method, sms > 0 ? "green_ctx" : "");
  store::set_str(r.status, "ok");
  r.exit_code = 0;
  r.signal = 0;
  r.start_time = 1.7e9;
  r.end_time = 1.7e9 + 1;
  r.wall_s = 1;
  r.complete = 1;
  return r;
}

inline store::CeilingRow bandwidth(const std::string& name, double gbs) {
  store::CeilingRow c{};
  store::set_str(c.name, name);
  store::set_str(c.kind, "bandwidth");
  c.value = c.max = c.min = gbs;
  c.repeats = 1;
  store::set_str(c.unit, "GB/s");
  c.level_bytes = -1;
  return c;
}

inline store::CeilingRow compute(const std::string& name, const std::string& precision, const std::string& variant,
                                 double gflops) {
  store::CeilingRow c{};
  store::set_str(c.name, name);
  store::set_str(c.kind, "compute");
  store::set_str(c.precision, precision);
  store::set_str(c.variant, variant);
  c.value = c.max = c.min = gflops;
  c.repeats = 1;
  store::set_str(c.unit, "GFLOP/s");
  c.level_bytes = -1;
  return c;
}

inline store::RankRecords rank(std::int64_t id, double wall_s, const char* mode = "cpu") {
  store::RankRecords r;
  r.info = store::RankInfoRow{};
  r.info.rank = id;
  r.info.pid = 1000 + id;
  store::set_str(r.info.host, "synthetic");
  store::set_str(r.info.tracer_mode, mode);
  r.info.start_time = 1.7e9;
  r.info.wall_s = wall_s;
  r.info.user_s = wall_s;
  r.info.exit_status = 0;
  r.info.complete = 1;
  r.info.omp_threads = 1;
  r.info.gpu_available = std::string(mode).rfind("cuda", 0) == 0 ? 1 : 0;
  return r;
}

inline std::int64_t name_id(store::RankRecords& r, const std::string& name) {
  for (std::size_t i = 0; i < r.names.size(); ++i)
    if (r.names[i] == name) return static_cast<std::int64_t>(i);
  r.names.push_back(name);
  return static_cast<std::int64_t>(r.names.size() - 1);
}

// A region with declared FP64 FLOPs and bytes per level (NaN = not declared).
inline void region(store::RankRecords& r, const std::string& name, double time_s, double flops_fp64,
                   double bytes_l1, double bytes_l2, double bytes_l3, double bytes_dram, std::int64_t calls = 1) {
  const double nan = std::nan("");
  store::RegionRow row{};
  row.name_id = name_id(r, name);
  row.calls = calls;
  row.time_s = time_s;
  row.flops_fp64 = flops_fp64;
  row.flops_fp32 = nan;
  row.flops_fp16 = nan;
  row.bytes_l1 = bytes_l1;
  row.bytes_l2 = bytes_l2;
  row.bytes_l3 = bytes_l3;
  row.bytes_dram = bytes_dram;
  row.hw_instructions = row.hw_cycles = row.hw_fp64_ops = row.hw_fp32_ops = nan;
  r.regions.push_back(row);
}

// One GPU kernel launch; metrics are NaN when has_metrics is false.
inline store::KernelRow kernel_launch(store::RankRecords& r, const std::string& name, std::int64_t launch_index,
                                      std::int64_t start_ns, std::int64_t duration_ns, int grid_blocks,
                                      bool has_metrics) {
  const double nan = std::nan("");
  store::KernelRow k{};
  k.name_id = name_id(r, name);
  k.launch_index = launch_index;
  k.correlation_id = launch_index + 1;
  k.grid_x = grid_blocks;
  k.grid_y = k.grid_z = 1;
  k.block_x = 256;
  k.block_y = k.block_z = 1;
  k.registers = 32;
  k.start_ns = start_ns;
  k.end_ns = start_ns + duration_ns;
  k.has_metrics = has_metrics ? 1 : 0;
  k.metric_duration_ns = has_metrics ? static_cast<double>(duration_ns) : nan;
  k.sm_clock_hz = has_metrics ? 1.7e9 : nan;
  k.flops_fp64 = k.flops_fp32 = k.flops_fp16 = k.tensor_ops = nan;
  k.tensor_ops_fp16 = k.tensor_ops_bf16 = k.tensor_ops_tf32 = k.tensor_ops_fp64 = k.tensor_ops_fp8 = nan;
  k.bytes_l1 = k.bytes_l2 = k.bytes_dram_read = k.bytes_dram_write = nan;
  k.warp_instructions = k.thread_instructions = nan;
  k.global_ld_instructions = k.global_st_instructions = k.shared_ld_instructions = k.shared_st_instructions = nan;
  k.global_transactions = k.shared_transactions = nan;
  return k;
}

inline void mpi(store::RankRecords& r, const std::string& fn, std::int64_t calls, double time_s) {
  store::MpiRow m{};
  m.name_id = name_id(r, fn);
  m.calls = calls;
  m.time_s = time_s;
  r.mpi.push_back(m);
}

// The counting pass's info row for one rank (run-file schema 1.7).
inline void counts_info(store::RankRecords& r, const std::string& source, const std::string& status = "ok",
                        const std::string& note = "", int threads = 1, bool serialised = false) {
  store::CountInfoRow info{};
  store::set_str(info.source, source);
  store::set_str(info.status, status);
  store::set_str(info.note, note);
  info.threads = threads;
  info.serialised = serialised ? 1 : 0;
  info.wall_s = std::nan("");
  info.exit_code = 0;
  r.counts_info = {info};
}

// A simulated cache level of a rank's counts (its share under the point's partition).
inline void count_level(store::RankRecords& r, const std::string& name, std::int64_t share_bytes,
                        std::int64_t full_bytes, int sharers) {
  store::CountLevelRow l{};
  store::set_str(l.name, name);
  l.size_bytes = share_bytes;
  l.full_size_bytes = full_bytes;
  l.line_bytes = 64;
  l.associativity = 16;
  l.sharers = sharers;
  r.count_levels.push_back(l);
}

// One counted (thread, function) row: FP64 FLOPs as 256-bit vector FLOPs,
// other precisions 0; each level's bytes split 3:1 into reads (fills) and
// write-backs (NaN: the source cannot see the level). function "" = not
// attributed (-1); module "" = unknown (-1).
inline store::CountRow count_row(store::RankRecords& r, int thread, const std::string& function, double flops_fp64,
                                 double l1, double l2, double l3, double dram, double instructions = std::nan(""),
                                 const std::string& module = "") {
  store::CountRow c{};
  c.thread = thread;
  c.function_id = function.empty() ? -1 : name_id(r, function);
  c.module_id = module.empty() ? -1 : name_id(r, module);
  c.instructions = instructions;
  c.flops_fp64_v256 = flops_fp64;
  const double bytes[4] = {l1, l2, l3, dram};
  double* reads[4] = {&c.bytes_l1_read, &c.bytes_l2_read, &c.bytes_l3_read, &c.bytes_dram_read};
  double* writes[4] = {&c.bytes_l1_write, &c.bytes_l2_write, &c.bytes_l3_write, &c.bytes_dram_write};
  for (int i = 0; i < 4; ++i) {
    *reads[i] = 0.75 * bytes[i];
    *writes[i] = 0.25 * bytes[i];
  }
  r.counts.push_back(c);
  return c;
}

// Sampled time of `function` on `thread`: a one-frame call path with
// `samples` self samples (period 1 ms), the sampling row created once; in
// `module`, of `category` (store/code_category.hpp).
inline void sampled(store::RankRecords& r, int thread, const std::string& function, std::int64_t samples,
                    const std::string& module = "app", const std::string& category = "app") {
  if (r.sampling.empty()) {
    store::SamplingRow s{};
    s.rate_hz = 1000;
    s.period_s = 1e-3;
    store::set_str(s.clock, "thread-cputime");
    store::set_str(s.unwinder, "libunwind");
    s.threads = 1;
    s.max_depth = 64;
    store::set_str(s.status, "ok");
    r.sampling.push_back(s);
  }
  r.sampling[0].samples += samples;
  store::CallPathRow c{};
  c.node_id = static_cast<std::int64_t>(r.callpaths.size());
  c.parent_id = -1;
  c.thread = thread;
  c.function_id = name_id(r, function);
  c.module_id = name_id(r, module);
  c.file_id = -1;
  c.line = -1;
  store::set_str(c.category, category);
  c.self_samples = c.inclusive_samples = samples;
  r.callpaths.push_back(c);
}

// Creates `path` with the given axes and points (planned pending, then each committed).
inline void write_run(const std::string& path, const std::vector<std::pair<std::string, std::string>>& axes,
                      const std::vector<SynthPoint>& points) {
  store::RunMetadata meta;
  meta.command_line = "rtrace-synth";
  meta.app_argv = {"synthetic"};
  meta.sweep_spec = "synthetic";
  meta.options_json = "{}";
  meta.launcher = "none";
  store::MachineInfo machine;
  machine.hostname = "synthetic";
  machine.cpu_model = "synthetic";
  machine.os = "Linux";
  machine.sockets = 1;
  machine.cores = 64;
  machine.pus = 64;
  machine.vector_bits = 512;  // a synthetic AVX-512 machine
  std::vector<store::SweepAxisRow> axis_rows;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    store::SweepAxisRow a{};
    a.index = static_cast<std::int32_t>(i);
    store::set_str(a.name, axes[i].first);
    store::set_str(a.spec, axes[i].second);
    axis_rows.push_back(a);
  }
  std::vector<store::SweepPointRow> plan;
  for (const auto& p : points) {
    store::SweepPointRow r = p.row;
    store::set_str(r.status, "pending");
    r.complete = 0;
    plan.push_back(r);
  }
  store::RunFile run = store::RunFile::create(path, meta, machine, axis_rows, plan, true);
  for (const auto& p : points) {
    run.commit_point(p.row, [&](store::Group& g) {
      if (!p.ceilings.empty()) g.write_table("ceilings", p.ceilings, "synthetic roofline");
      if (!p.machine_load.empty()) g.write_table("machine_load", p.machine_load, "synthetic machine load");
      store::Group ranks = g.require_group("ranks");
      for (const auto& r : p.ranks) store::write_rank(ranks, r);
    });
  }
}

}  // namespace rtrace::synth
