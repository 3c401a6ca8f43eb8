#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sys/stat.h>

#include "synthetic_points.hpp"
#include "test_util.hpp"

using namespace rtrace::store;

TEST(RunFile, CreateCommitReadBack) {
  TempDir d;
  const auto path = d.file("run.h5");
  SweepAxisRow axis{};
  set_str(axis.name, "threads");
  set_str(axis.spec, "1..3");
  RunFile run = RunFile::create(path, synth::metadata(), describe_this_machine(), {axis}, synth::plan(3));
  ASSERT_EQ(run.points().size(), 3u);
  EXPECT_EQ(run.points()[0].complete, 0);
  run.commit_point(synth::finished(run.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  EXPECT_EQ(run.points()[1].complete, 1);

  File f = File::open(path);
  check_schema(f);
  EXPECT_EQ(f.root().attr_string("schema_name"), "rtrace");
  EXPECT_EQ(f.root().attr_string("schema_version"), schema_version());
  EXPECT_EQ(f.root().attr_string("file_kind"), "run");
  EXPECT_EQ(f.root().attr_string("created").size(), 20u);  // 2026-11-21T12:00:00Z
  EXPECT_TRUE(f.root().has_attr("hostname"));
  auto rows = read_points(f);
  EXPECT_EQ(rows[1].complete, 1);
  EXPECT_EQ(get_str(rows[1].status), "ok");
  EXPECT_EQ(rows[0].complete, 0);
  EXPECT_EQ(synth::check_point(f, 1), "");
  auto meta = read_run_metadata(f.root());
  EXPECT_EQ(meta.app_argv, (std::vector<std::string>{"./app", "--size", "1000"}));
  EXPECT_EQ(meta.environment.at(0).first, "OMP_PROC_BIND");
  EXPECT_EQ(read_axes(f).at(0).spec, std::string("1..3"));
  auto m = read_machine(f.root());
  EXPECT_GT(m.pus, 0);
  EXPECT_GT(m.memory_bytes, 0);
  EXPECT_FALSE(m.caches.empty());
}

TEST(RunFile, RefusesToClobberAndRecommitReplaces) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2));
  EXPECT_THROW(RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2)), FileError);
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  File f = File::open(path);
  EXPECT_EQ(synth::check_point(f, 0), "");
}

TEST(RunFile, FailedFillLeavesFileUntouched) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2));
  EXPECT_THROW(run.commit_point(synth::finished(run.points()[0]),
                                [](Group& g) {
                                  synth::fill_point(g, 0);
                                  throw std::runtime_error("disk on fire");
                                }),
               std::runtime_error);
  File f = File::open(path);
  EXPECT_EQ(read_points(f)[0].complete, 0);
  EXPECT_FALSE(f.root().open_group("points").exists(point_group_name(0)));
  struct stat st {};
  EXPECT_NE(stat((path + ".rtrace-tmp").c_str(), &st), 0) << "temp file left behind";
}

TEST(RunFile, UnknownPointAndNewerMajorAreRejected) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(1));
  SweepPointRow bogus = run.points()[0];
  bogus.point_id = 99;
  EXPECT_THROW(run.commit_point(bogus, [](Group&) {}), SchemaError);
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "2.0.0"); });
  try {
    RunFile::open(path);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(e.detail().find("2.0.0"), std::string::npos);
  }
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.7.3"); });
  EXPECT_NO_THROW(RunFile::open(path));  // newer minor is fine
}

TEST(RunFile, TransactionFailsCleanlyOnUnwritableDirectory) {
  if (geteuid() == 0) {
    // root ignores directory permissions; use a path under a non-directory instead.
    EXPECT_THROW(transaction("/proc/version/x.h5", [](File&) {}), FileError);
    return;
  }
  TempDir d;
  EXPECT_THROW(transaction(d.file("missing.h5"), [](File&) {}), FileError);
}

TEST(RunFile, PointAndRankNames) {
  EXPECT_EQ(point_group_name(3), "p000003");
  EXPECT_EQ(rank_group_name(1234567), "r1234567");
  EXPECT_EQ(point_status_from_string("timeout"), PointStatus::Timeout);
  EXPECT_THROW(point_status_from_string("bogus"), std::invalid_argument);
}
