#include "rtrace/store/validate.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "synthetic_points.hpp"
#include "test_util.hpp"

using namespace rtrace::store;
using V = ValidationReport::Verdict;

namespace {
std::string make_run(const TempDir& d, const std::string& name = "run.h5") {
  const auto path = d.file(name);
  RunFile run = RunFile::create(path, synth::metadata(), describe_this_machine(), {}, synth::plan(2));
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  return path;
}
bool mentions(const ValidationReport& r, const std::string& what) {
  for (const auto& d : r.deviations)
    if (d.find(what) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(Validate, GoodRunFile) {
  TempDir d;
  auto r = validate_file(make_run(d));
  EXPECT_EQ(r.verdict, V::Valid) << (r.deviations.empty() ? r.fatal : r.deviations[0]);
  EXPECT_EQ(r.points_total, 2u);
  EXPECT_EQ(r.points_complete, 1u);
  EXPECT_EQ(r.file_kind, "run");
}

TEST(Validate, UnreadableInputsAreExitTwo) {
  TempDir d;
  EXPECT_EQ(validate_file(d.file("missing.h5")).verdict, V::Unreadable);
  std::ofstream(d.file("text.txt")) << "hello\n";
  auto r = validate_file(d.file("text.txt"));
  EXPECT_EQ(r.verdict, V::Unreadable);
  EXPECT_EQ(r.fatal, "not an HDF5 file");
  std::ofstream(d.file("empty.h5")).close();
  EXPECT_EQ(validate_file(d.file("empty.h5")).verdict, V::Unreadable);
  // Truncated HDF5
  auto good = make_run(d);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(d.file("trunc.h5"), std::ios::binary) << bytes.substr(0, 3000);
  EXPECT_NE(validate_file(d.file("trunc.h5")).verdict, V::Valid);
  // Plain HDF5 that is not ours
  { File f = File::create(d.file("other.h5")); }
  EXPECT_EQ(validate_file(d.file("other.h5")).verdict, V::Unreadable);
}

TEST(Validate, NewerMajorIsUnreadableNewerMinorIsFine) {
  TempDir d;
  auto path = make_run(d);
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "2.0.0"); });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Unreadable);
  EXPECT_NE(r.fatal.find("2.0.0"), std::string::npos);
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.3.0"); });
  EXPECT_EQ(validate_file(path).verdict, V::Valid);
}

// A 1.0.0 file has no rank_info.mpi_init_end/mpi_finalize_start (added in
// 1.1.0): valid as what it is; a file claiming 1.1.0 without them is not.
TEST(Validate, OlderMinorWithoutLaterFieldsIsValid) {
  TempDir d;
  auto path = make_run(d);
  auto drop_window_fields = [](File& f) {
    Group ranks = f.root().open_group("points").open_group(point_group_name(0)).open_group("ranks");
    for (const auto& name : ranks.children()) {
      Group r = ranks.open_group(name);
      struct OldInfo {
        std::int64_t rank;
        double wall_s;
        static const RowLayout& layout() {
          static const RowLayout l = RowLayout("rank_info", sizeof(OldInfo))
                                         .add("rank", &OldInfo::rank)
                                         .add("wall_s", &OldInfo::wall_s, "s");
          return l;
        }
      };
      auto old = r.read_table<OldInfo>("info");
      r.remove("info");
      r.write_table<OldInfo>("info", old);
    }
  };
  transaction(path, drop_window_fields);
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.0.0"); });
  auto r = validate_file(path);
  EXPECT_FALSE(mentions(r, "mpi_init_end")) << (r.deviations.empty() ? "" : r.deviations[0]);
  EXPECT_TRUE(mentions(r, "missing field `pid`"));  // a 1.0 field is still required
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.1.0"); });
  EXPECT_TRUE(mentions(validate_file(path), "missing field `mpi_init_end`"));
}

// kernel.tensor_ops: always math ops, labelled FLOP before 1.2.0 and math_op
// since. An older file with the old label is valid; a 1.2.0 file is not.
TEST(Validate, TensorOpsFormerUnitIsValidOnlyInOlderMinors) {
  TempDir d;
  auto path = make_run(d);
  auto relabel = [](File& f) {
    Group ranks = f.root().open_group("points").open_group(point_group_name(0)).open_group("ranks");
    for (const auto& name : ranks.children()) {
      Group r = ranks.open_group(name);
      Group kernels(Id(H5Oopen(r.id(), "kernels", H5P_DEFAULT)), r.file(), r.path() + "/kernels");
      std::vector<std::string> units = kernels.attr_strings("units");
      const auto& fields = KernelRow::layout().fields();
      for (std::size_t i = 0; i < fields.size(); ++i)
        if (fields[i].name == "tensor_ops") {
          ASSERT_EQ(units.at(i), "math_op");
          units[i] = "FLOP";
        }
      kernels.set_attr("units", units);
    }
  };
  EXPECT_FALSE(mentions(validate_file(path), "tensor_ops"));
  transaction(path, relabel);
  auto now = validate_file(path);
  EXPECT_TRUE(mentions(now, "field `tensor_ops` has unit `FLOP`, schema says `math_op`"));
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.1.0"); });
  EXPECT_FALSE(mentions(validate_file(path), "tensor_ops"));
}

TEST(Validate, ListsEveryDeviation) {
  TempDir d;
  auto path = make_run(d);
  transaction(path, [](File& f) {
    f.root().open_group("run").remove("app_argv");
    f.root().create_group("junk");
    Group p = f.root().open_group("points").open_group(point_group_name(0));
    p.open_group("ranks").open_group(rank_group_name(1)).remove("mpi");
    p.remove("ceilings");
    p.write_strings("ceilings", {"not a table"});
    f.root().open_group("points").create_group(point_group_name(1));  // not marked complete
  });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, "/run/app_argv: missing")) << r.deviations.size();
  EXPECT_TRUE(mentions(r, "/junk: unexpected object"));
  EXPECT_TRUE(mentions(r, "r000001/mpi: missing"));
  EXPECT_TRUE(mentions(r, "ceilings: expected a 1-D compound table"));
  EXPECT_TRUE(mentions(r, "p000001: group of a point that /sweep/points does not mark complete"));
  EXPECT_GE(r.deviations.size(), 5u);
}

TEST(Validate, CompletePointWithoutGroup) {
  TempDir d;
  auto path = make_run(d);
  transaction(path, [](File& f) { f.root().open_group("points").remove(point_group_name(0)); });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, "missing although point 0 is complete"));
}

TEST(Validate, AnalysisGroupIsOpen) {
  TempDir d;
  auto path = make_run(d);
  transaction(path, [](File& f) { f.root().create_group("analysis").create_group("anything").write_strings("x", {"y"}); });
  EXPECT_EQ(validate_file(path).verdict, V::Valid);
}

// Validate streams through the rank groups with precompiled path patterns
// and a conversion buffer of its own (bench/ingest_scale.sh measures its
// time at 16k-64k ranks): every rank group is still checked in full, the
// last as the first, and a table larger than one conversion buffer and one
// read block (40,000 region rows of 112 bytes, 4.5 MB) is read to its end.
TEST(Validate, EveryRankOfAManyRankPointIsCheckedToItsLastRow) {
  TempDir d;
  const auto path = d.file("run.h5");
  constexpr int kRanks = 300;
  {
    RunFile run = RunFile::create(path, synth::metadata(), describe_this_machine(), {}, synth::plan(2));
    run.commit_point(synth::finished(run.points()[0]), [](Group& g) {
      synth::fill_point(g, 0, 0);
      Group rg = g.open_group("ranks");
      write_rank(rg, synth::rank(0, 0, 40000));
      for (int r = 1; r < kRanks; ++r) write_rank(rg, synth::rank(0, r, 4));
    });
  }
  auto good = validate_file(path);
  EXPECT_EQ(good.verdict, V::Valid) << (good.deviations.empty() ? good.fatal : good.deviations[0]);
  transaction(path, [](File& f) {
    Group last = f.root().open_group("points").open_group(point_group_name(0)).open_group("ranks").open_group(
        rank_group_name(kRanks - 1));
    last.remove("log");
    last.write_strings("extra", {"not in the schema"});
    f.root().create_group("analysis").create_group("deep").create_group("er").write_strings("x", {"open"});
  });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, rank_group_name(kRanks - 1) + "/log: missing (strings)"));
  EXPECT_TRUE(mentions(r, rank_group_name(kRanks - 1) + "/extra: unexpected object"));
  EXPECT_EQ(r.deviations.size(), 2u) << r.deviations.back();
}

// A table written without one of its schema fields (here `mpi` without
// `time_s`, as a writer that forgot a column would leave it) is a deviation
// naming the field, and the file is invalid.
TEST(Validate, MissingTableFieldIsADeviation) {
  TempDir d;
  auto path = make_run(d);
  transaction(path, [](File& f) {
    Group rank = f.root().open_group("points").open_group(point_group_name(0)).open_group("ranks").open_group(
        rank_group_name(0));
    rank.remove("mpi");
    RowLayout without_time("mpi", sizeof(MpiRow));
    without_time.add("name_id", &MpiRow::name_id)
        .add("calls", &MpiRow::calls, "1")
        .add("bytes_sent", &MpiRow::bytes_sent, "B")
        .add("bytes_received", &MpiRow::bytes_received, "B");
    MpiRow row{};
    row.calls = 3;
    RawTable::create(rank, "mpi", without_time).append(&row, 1);
  });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, "r000000/mpi: missing field `time_s`")) << (r.deviations.empty() ? "" : r.deviations[0]);
}

TEST(Validate, PointFileLayoutAndItsDamage) {
  TempDir d;
  auto path = make_run(d);
  // A point file on its own is a valid rtrace file of kind "point".
  auto pf = validate_file(d.file("run.h5.d/p000000.h5"));
  EXPECT_EQ(pf.verdict, V::Valid) << (pf.deviations.empty() ? pf.fatal : pf.deviations[0]);
  EXPECT_EQ(pf.file_kind, "point");
  // The index without its point file names the missing file.
  ASSERT_EQ(std::rename(d.file("run.h5.d/p000000.h5").c_str(), d.file("moved.h5").c_str()), 0);
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, "point file `run.h5.d/p000000.h5` is missing")) << (r.deviations.empty() ? "" : r.deviations[0]);
  // A link out of the points directory is refused, even when it resolves.
  transaction(path, [](File& f) {
    Group points = f.root().open_group("points");
    points.remove("p000000");
    points.create_external_link("p000000", "moved.h5", "/points/p000000");
  });
  r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, "outside the run's points directory"));
}

TEST(Validate, SingleFileLayoutIsValid) {
  TempDir d;
  const auto path = d.file("legacy.h5");
  RunFile run = RunFile::create(path, synth::metadata(), describe_this_machine(), {}, synth::plan(2), false, std::string());
  run.commit_point(synth::finished(run.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  // As schema 1.0.0 wrote it.
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.0.0"); });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Valid) << (r.deviations.empty() ? r.fatal : r.deviations[0]);
  EXPECT_EQ(r.points_complete, 1u);
}

// A run whose ranks carry the count tables (schema 1.7: here a PMU's, per
// thread) validates; a count table without one of its fields does not.
TEST(Validate, CountTablesAreValidAndCheckedFieldByField) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), describe_this_machine(), {}, synth::plan(1));
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) {
    g.write_table("ceilings", synth::ceilings(0), "ceilings");
    Group ranks = g.require_group("ranks");
    RankRecords rec = synth::rank(0, 0, 1);
    CountInfoRow info{};
    set_str(info.source, "pmu:skl FP_ARITH_INST_RETIRED,L1D,L2_LINES_IN,L2_LINES_OUT,LONGEST_LAT_CACHE");
    set_str(info.status, "ok");
    set_str(info.note, "not seen by the core PMU: L1 bytes, L1 write-backs, DRAM writes");
    info.threads = 2;
    info.wall_s = kUnavailable;
    info.exit_code = -1;
    rec.counts_info.push_back(info);
    for (int t = 0; t < 2; ++t) {
      CountRow c{};
      c.thread = t;
      c.function_id = -1;
      c.module_id = -1;
      c.instructions = 1e6;
      c.flops_fp64_v256 = 4e6;
      c.bytes_l1_read = c.bytes_l1_write = kUnavailable;
      c.bytes_l2_read = 6.4e5;
      rec.counts.push_back(c);
    }
    write_rank(ranks, rec);
  });
  auto r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Valid) << (r.deviations.empty() ? r.fatal : r.deviations[0]);
  transaction(path, [](File& f) {
    Group rank = f.root().open_group("points").open_group(point_group_name(0)).open_group("ranks").open_group(
        rank_group_name(0));
    rank.remove("counts");
    RowLayout without_flops("count", sizeof(CountRow));
    without_flops.add("thread", &CountRow::thread).add("function_id", &CountRow::function_id);
    CountRow row{};
    RawTable::create(rank, "counts", without_flops).append(&row, 1);
  });
  r = validate_file(path);
  EXPECT_EQ(r.verdict, V::Invalid);
  EXPECT_TRUE(mentions(r, "r000000/counts: missing field `flops_fp64_scalar`"))
      << (r.deviations.empty() ? "" : r.deviations[0]);
}
