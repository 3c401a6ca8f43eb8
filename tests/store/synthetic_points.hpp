// Deterministic point contents, so a reader can check a committed point bit for bit.
#pragma once
#include "rtrace/store/run_file.hpp"

#include <string>
#include <vector>

namespace synth {
using namespace rtrace::store;

inline std::vector<SweepPointRow> plan(int n) {
  std::vector<SweepPointRow> rows;
  for (int i = 0; i < n; ++i) {
    SweepPointRow r{};
    r.point_id = i;
    r.repeat = 0;
    set_str(r.label, "threads=" + std::to_string(i + 1));
    r.threads = i + 1;
    r.ranks = 1;
    r.nodes = 1;
    r.sms_requested = -1;
    r.sms_achieved = -1;
    set_str(r.status, "pending");
    r.exit_code = -1;
    r.start_time = r.end_time = r.wall_s = kUnavailable;
    rows.push_back(r);
  }
  return rows;
}

inline RunMetadata metadata() {
  RunMetadata m;
  m.command_line = "rtrace --sweep threads=1..N -- ./app";
  m.app_argv = {"./app", "--size", "1000"};
  m.sweep_spec = "threads=1..N";
  m.options_json = R"({"repeat":1})";
  m.environment = {{"OMP_PROC_BIND", "close"}};
  m.launcher = "none";
  return m;
}

inline CeilingRow ceiling(const std::string& name, double v, const char* unit) {
  CeilingRow c{};
  set_str(c.name, name);
  set_str(c.kind, std::string(unit) == "GB/s" ? "bandwidth" : "compute");
  set_str(c.unit, unit);
  c.value = c.max = c.min = v;
  c.repeats = 1;
  c.level_bytes = -1;
  return c;
}

inline std::vector<CeilingRow> ceilings(std::int64_t p) {
  return {ceiling("DRAM", 10.0 + p, "GB/s"), ceiling("L1d", 100.0 + p, "GB/s"), ceiling("FP64 FMA", 50.0 + p, "GFLOP/s")};
}

inline RankRecords rank(std::int64_t p, std::int64_t r, int regions = 64) {
  RankRecords rec;
  rec.info.rank = r;
  rec.info.pid = 1000 + r;
  set_str(rec.info.host, "node" + std::to_string(r));
  set_str(rec.info.tracer_mode, "cpu");
  rec.info.wall_s = 1.0 + p + r / 10.0;
  rec.info.max_rss_kib = 1234;
  rec.info.exit_status = 0;
  rec.info.complete = 1;
  rec.info.omp_threads = static_cast<std::int32_t>(p + 1);
  for (int i = 0; i < regions; ++i) {
    rec.names.push_back("region_" + std::to_string(i));
    RegionRow row{};
    row.name_id = i;
    row.calls = p * 1000 + r * 100 + i;
    row.time_s = 0.5 * i;
    row.flops_fp64 = 1e9 * (p + 1);
    row.flops_fp32 = kUnavailable;
    row.flops_fp16 = kUnavailable;
    row.bytes_dram = 2e9;
    row.bytes_l1 = row.bytes_l2 = row.bytes_l3 = kUnavailable;
    row.hw_instructions = row.hw_cycles = row.hw_fp64_ops = row.hw_fp32_ops = kUnavailable;
    rec.regions.push_back(row);
  }
  MpiRow m{};
  m.name_id = static_cast<std::int64_t>(rec.names.size());
  rec.names.push_back("MPI_Allreduce");
  m.calls = 10;
  m.time_s = 0.01 * (r + 1);
  m.bytes_sent = m.bytes_received = 800;
  rec.mpi.push_back(m);
  rec.log.push_back("warning: counters unavailable: no PMU");
  return rec;
}

inline void fill_point(Group& g, std::int64_t p, int ranks = 2) {
  g.write_table("ceilings", ceilings(p), "roofline ceilings");
  CapturedOutput out;
  out.stdout_tail = "point " + std::to_string(p) + " ok\n";
  out.stdout_bytes = static_cast<std::int64_t>(out.stdout_tail.size());
  write_output(g, out);
  Group rg = g.open_group("ranks");
  for (int r = 0; r < ranks; ++r) write_rank(rg, rank(p, r));
}

inline SweepPointRow finished(SweepPointRow row) {
  set_str(row.status, "ok");
  row.exit_code = 0;
  row.signal = 0;
  row.start_time = 1.7e9;
  row.end_time = 1.7e9 + 1;
  row.wall_s = 1;
  return row;
}

// Returns "" when point p in the file holds exactly the synthetic data.
inline std::string check_point(const File& f, std::int64_t p, int ranks = 2) {
  Group g = f.root().open_group("points").open_group(point_group_name(p));
  auto c = read_ceilings(g);
  auto want = ceilings(p);
  if (c.size() != want.size()) return "ceiling count";
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i].value != want[i].value || get_str(c[i].name) != get_str(want[i].name)) return "ceiling value";
  if (read_output(g).stdout_tail != "point " + std::to_string(p) + " ok\n") return "stdout";
  Group rg = g.open_group("ranks");
  if (rg.children().size() != static_cast<std::size_t>(ranks)) return "rank count";
  for (int r = 0; r < ranks; ++r) {
    auto got = read_rank(rg.open_group(rank_group_name(r)));
    auto exp = rank(p, r);
    if (got.regions.size() != exp.regions.size() || got.names != exp.names || got.log != exp.log) return "rank shape";
    for (std::size_t i = 0; i < got.regions.size(); ++i)
      if (got.regions[i].calls != exp.regions[i].calls || got.regions[i].time_s != exp.regions[i].time_s) return "region row";
    if (got.info.wall_s != exp.info.wall_s || got.mpi.size() != 1 || got.mpi[0].time_s != exp.mpi[0].time_s) return "rank info";
  }
  return "";
}
}  // namespace synth
