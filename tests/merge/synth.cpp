#include "synth.hpp"

#include "rtrace/store/run_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace rtrace::synth {
namespace store = rtrace::store;

namespace {

store::MachineInfo small_machine() {
  store::MachineInfo m;
  m.hostname = "synth-node";
  m.cpu_model = "synthetic CPU";
  m.os = "Linux";
  m.sockets = 1;
  m.cores = 2;
  m.pus = 2;
  m.memory_bytes = std::int64_t{24} << 30;
  store::CacheRow l1{};
  store::set_str(l1.name, "L1d");
  l1.depth = 1;
  l1.size_bytes = 48 << 10;
  l1.line_bytes = 64;
  l1.instances = 2;
  l1.shared_by = 1;
  m.caches.push_back(l1);
  return m;
}

store::CeilingRow ceiling(const char* name, const char* kind, const char* precision, const char* variant, double v,
                          const char* unit) {
  store::CeilingRow c{};
  store::set_str(c.name, name);
  store::set_str(c.kind, kind);
  store::set_str(c.precision, precision);
  store::set_str(c.variant, variant);
  c.value = v;
  c.max = v * 1.02;
  c.min = v * 0.97;
  c.repeats = 3;
  store::set_str(c.unit, unit);
  c.level_bytes = -1;
  return c;
}

store::RankRecords rank_records(std::int64_t rank, const RankSpec& spec) {
  store::RankRecords r;
  r.info.rank = rank;
  r.info.pid = 10000 + rank;
  store::set_str(r.info.host, "synth-node-" + std::to_string(rank / 8));
  store::set_str(r.info.tracer_mode, spec.kernels > 0 ? "cuda-trace" : "cpu");
  r.info.start_time = 1.7e9;
  r.info.wall_s = 1.5 + 0.001 * static_cast<double>(rank % 97);
  r.info.user_s = 1.4;
  r.info.system_s = 0.05;
  r.info.max_rss_kib = 123456;
  r.info.voluntary_ctxsw = 10;
  r.info.involuntary_ctxsw = 2;
  r.info.exit_status = spec.complete ? 0 : -1;
  r.info.complete = spec.complete ? 1 : 0;
  r.info.tracer_errors = 0;
  r.info.dropped_records = 0;
  r.info.counters_available = 0;
  r.info.gpu_available = spec.kernels > 0 ? 1 : 0;
  r.info.omp_threads = 1;
  for (int i = 0; i < spec.regions; ++i) {
    r.names.push_back("region_" + std::to_string(i));
    store::RegionRow g{};
    g.name_id = static_cast<std::int64_t>(r.names.size() - 1);
    g.calls = 10 + i;
    g.time_s = 0.1 * (i + 1);
    g.flops_fp64 = 1e9 * (i + 1);
    g.flops_fp32 = g.flops_fp16 = store::kUnavailable;
    g.bytes_l1 = g.bytes_l2 = g.bytes_l3 = store::kUnavailable;
    g.bytes_dram = 4e8 * (i + 1);
    g.hw_instructions = g.hw_cycles = g.hw_fp64_ops = g.hw_fp32_ops = store::kUnavailable;
    r.regions.push_back(g);
  }
  static const char* kMpi[] = {"MPI_Allreduce", "MPI_Send", "MPI_Recv", "MPI_Barrier", "MPI_Bcast", "MPI_Wait"};
  for (int i = 0; i < spec.mpi_functions; ++i) {
    r.names.push_back(kMpi[i % 6] + (i >= 6 ? std::to_string(i) : std::string()));
    store::MpiRow m{};
    m.name_id = static_cast<std::int64_t>(r.names.size() - 1);
    m.calls = 100;
    m.time_s = 0.01 * (i + 1);
    m.bytes_sent = 8192 * i;
    m.bytes_received = 8192 * i;
    r.mpi.push_back(m);
  }
  if (spec.kernels > 0) {
    r.names.push_back("gpp_kernel");
    const std::int64_t kname = static_cast<std::int64_t>(r.names.size() - 1);
    for (int i = 0; i < spec.kernels; ++i) {
      store::KernelRow k{};
      k.name_id = kname;
      k.launch_index = i;
      k.correlation_id = 1000 + i;
      k.device = static_cast<std::int32_t>(rank % 8);
      k.context = 1;
      k.stream = 7;
      k.grid_x = 1320;
      k.grid_y = k.grid_z = 1;
      k.block_x = 256;
      k.block_y = k.block_z = 1;
      k.registers = 64;
      k.start_ns = 1000000LL * i;
      k.end_ns = k.start_ns + 500000;
      k.has_metrics = 0;
      k.metric_duration_ns = k.sm_clock_hz = k.flops_fp64 = k.flops_fp32 = k.flops_fp16 = k.tensor_ops =
          store::kUnavailable;
      k.tensor_ops_fp16 = k.tensor_ops_bf16 = k.tensor_ops_tf32 = k.tensor_ops_fp64 = k.tensor_ops_fp8 =
          store::kUnavailable;
      k.bytes_l1 = k.bytes_l2 = k.bytes_dram_read = k.bytes_dram_write = store::kUnavailable;
      k.warp_instructions = k.thread_instructions = k.global_ld_instructions = k.global_st_instructions =
          store::kUnavailable;
      k.shared_ld_instructions = k.shared_st_instructions = k.global_transactions = k.shared_transactions =
          store::kUnavailable;
      r.kernels.push_back(k);
    }
  }
  for (int i = 0; i < spec.memcpys; ++i) {
    store::MemcpyRow m{};
    store::set_str(m.kind, i % 2 ? "DtoH" : "HtoD");
    m.bytes = 1 << 20;
    m.start_ns = 100000LL * i;
    m.end_ns = m.start_ns + 40000;
    m.device = static_cast<std::int32_t>(rank % 8);
    m.stream = 7;
    m.correlation_id = 5000 + i;
    r.memcpy.push_back(m);
  }
  if (!spec.complete) r.log.push_back("warning: rank exited before the tracer could flush");
  return r;
}

}  // namespace

void write_run(const std::string& path, const RunSpec& spec) {
  store::RunMetadata meta;
  meta.command_line = "rtrace --sweep threads=1.." + std::to_string(spec.points) + " -- ./app";
  meta.app_argv = spec.app_argv;
  std::string ranks_values;
  for (int v : spec.ranks_axis) ranks_values += (ranks_values.empty() ? "" : ",") + std::to_string(v);
  meta.sweep_spec = !spec.ranks_axis.empty() ? "ranks=" + ranks_values
                    : spec.sweep_spec.empty() ? "threads=1.." + std::to_string(spec.points)
                                              : spec.sweep_spec;
  meta.options_json = "{}";
  meta.environment = {{"OMP_PROC_BIND", "close"}};
  meta.launcher = "none";

  std::vector<store::SweepAxisRow> axes(1);
  axes[0].index = 0;
  store::set_str(axes[0].name, spec.ranks_axis.empty() ? "threads" : "ranks");
  store::set_str(axes[0].spec, meta.sweep_spec.substr(meta.sweep_spec.find('=') + 1));

  std::vector<store::SweepPointRow> plan;
  for (int p = 0; p < spec.points; ++p) {
    store::SweepPointRow r{};
    r.point_id = p;
    r.repeat = 0;
    const bool by_ranks = static_cast<std::size_t>(p) < spec.ranks_axis.size();
    store::set_str(r.label, by_ranks ? "ranks=" + std::to_string(spec.ranks_axis[static_cast<std::size_t>(p)])
                                     : "threads=" + std::to_string(p + 1));
    r.threads = by_ranks ? 1 : p + 1;
    r.ranks = by_ranks ? spec.ranks_axis[static_cast<std::size_t>(p)] : spec.ranks_per_point;
    r.nodes = 1;
    r.sms_requested = -1;
    r.sms_achieved = -1;
    store::set_str(r.partition_method, "");
    store::set_str(r.status, "pending");
    r.exit_code = -1;
    r.signal = 0;
    r.start_time = r.end_time = r.wall_s = store::kUnavailable;
    r.complete = 0;
    plan.push_back(r);
  }
  ::unlink(path.c_str());
  store::RunFile run = store::RunFile::create(path, meta, small_machine(), axes, plan, /*overwrite=*/true);
  for (int p : spec.complete) {
    store::SweepPointRow row = plan.at(static_cast<std::size_t>(p));
    const bool failed = std::find(spec.failed.begin(), spec.failed.end(), p) != spec.failed.end();
    store::set_str(row.status, failed ? "failed" : "ok");
    row.exit_code = failed ? 1 : 0;
    row.start_time = 1.7e9 + p;
    row.wall_s = 0.5 + p;
    row.end_time = row.start_time + row.wall_s;
    row.complete = 1;
    run.commit_point(row, [&](store::Group& point) {
      // More than 8 attributes, as the launcher writes: HDF5 keeps them in
      // dense storage, which H5Ocopy of HDF5 1.10 cannot copy (see merge.cpp).
      point.set_attr("command", "./app --size 64");
      point.set_attr("launcher", "none");
      point.set_attr("partition", "t" + std::to_string(p + 1));
      point.set_attr("log", "point " + std::to_string(p) + " log line");
      point.set_attr("wall_s", 0.5 + p);
      point.set_attr("tags", std::vector<std::string>{"synthetic", "merge-test"});
      point.write_table("ceilings",
                        std::vector<store::CeilingRow>{ceiling("DRAM", "bandwidth", "", "", 20.0 * (p + 1), "GB/s"),
                                                       ceiling("FP64 FMA", "compute", "fp64", "fma", 50.0 * (p + 1),
                                                               "GFLOP/s")});
      store::CapturedOutput out;
      out.stdout_tail = "point " + std::to_string(p) + (failed ? " failed\n" : " ok\n");
      out.stdout_bytes = static_cast<std::int64_t>(out.stdout_tail.size());
      store::write_output(point, out);
      store::Group ranks = point.require_group("ranks");
      for (int r = 0; r < spec.ranks_per_point; ++r) store::write_rank(ranks, rank_records(r, RankSpec{}));
    });
  }
}

void write_trace(const std::string& path, const std::vector<std::int64_t>& ranks, const RankSpec& spec) {
  store::File f = store::File::create(path, /*overwrite=*/true);
  store::write_root_attributes(f.root(), "trace", "rtrace-merge-synth");
  store::Group g = f.root().create_group("ranks");
  for (std::int64_t r : ranks) store::write_rank(g, rank_records(r, spec));
  f.close();
}

}  // namespace rtrace::synth
