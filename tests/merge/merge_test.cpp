// `rtrace merge` end to end on synthetic part files (store/src/merge.cpp).
#include "../../cli/subcommands.hpp"
#include "rtrace/store/run_file.hpp"
#include "synth.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace store = rtrace::store;

namespace {

struct MergeResult {
  int rc;
  std::string out, err;
};

MergeResult run_merge(std::vector<std::string> args) {
  args.insert(args.begin(), "rtrace merge");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int rc = rtrace::cli::merge_main(static_cast<int>(argv.size() - 1), argv.data());
  MergeResult r{rc, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class MergeTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(RTRACE_BINARY_DIR) / "tests" / "merge" / "tmp" /
           testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string part(const std::string& name, std::vector<int> complete, std::vector<int> failed = {}, int points = 4) {
    rtrace::synth::RunSpec spec;
    spec.points = points;
    spec.complete = std::move(complete);
    spec.failed = std::move(failed);
    rtrace::synth::write_run(path(name), spec);
    return path(name);
  }
  std::vector<store::SweepPointRow> points_of(const std::string& file) {
    store::File f = store::File::open(file);
    return store::read_points(f);
  }
  fs::path dir_;
};

TEST_F(MergeTest, MergesPointFilesAndReportsMissing) {
  auto a = part("a.h5", {0}), b = part("b.h5", {1}), c = part("c.h5", {2});
  const std::string before = slurp(a) + slurp(b) + slurp(c);
  auto r = run_merge({a, b, c, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("merged 3 of 4 points"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing: 3 (threads=4)"), std::string::npos) << r.out;
  EXPECT_EQ(before, slurp(a) + slurp(b) + slurp(c)) << "inputs must never change";

  auto rows = points_of(path("run.h5"));
  ASSERT_EQ(rows.size(), 4u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(rows[p].complete, 1);
    EXPECT_EQ(store::get_str(rows[p].status), "ok");
  }
  EXPECT_EQ(rows[3].complete, 0);
  store::File f = store::File::open(path("run.h5"));
  EXPECT_EQ(f.root().open_group("points").children(), (std::vector<std::string>{"p000000", "p000001", "p000002"}));
  auto ranks = f.root().open_group("points").open_group("p000001").open_group("ranks");
  EXPECT_EQ(ranks.children().size(), 2u);
  auto rec = store::read_rank(ranks.open_group("r000001"));
  EXPECT_EQ(rec.info.rank, 1);
  EXPECT_EQ(rec.regions.size(), 8u);
  auto ceil = store::read_ceilings(f.root().open_group("points").open_group("p000002"));
  ASSERT_EQ(ceil.size(), 2u);
  EXPECT_DOUBLE_EQ(ceil[0].value, 60.0);
  // Attributes survive the copy, dense storage included (HDF5 1.10 workaround).
  auto p1 = f.root().open_group("points").open_group("p000001");
  EXPECT_EQ(p1.attr_string("partition"), "t2");
  EXPECT_EQ(p1.attr_string("label"), "threads=2");
  EXPECT_EQ(p1.attr_int("stdout_bytes"), 11);  // "point 1 ok\n"
  EXPECT_DOUBLE_EQ(p1.attr_double("wall_s"), 1.5);
  EXPECT_EQ(p1.attr_strings("tags"), (std::vector<std::string>{"synthetic", "merge-test"}));
  EXPECT_EQ(p1.child_attr_string("ceilings", "description"),
            store::File::open(b).root().open_group("points").open_group("p000001").child_attr_string("ceilings",
                                                                                                      "description"));
  auto meta = store::read_run_metadata(f.root());
  EXPECT_EQ(meta.app_argv, (std::vector<std::string>{"./app", "--size", "64"}));
  EXPECT_NO_THROW(store::check_schema(f));
}

TEST_F(MergeTest, IdempotentAndResubmittedPartMergedLater) {
  auto a = part("a.h5", {0, 1}), b = part("b.h5", {2});
  ASSERT_EQ(run_merge({a, b, "-o", path("run.h5")}).rc, 1);
  const std::string first = slurp(path("run.h5"));

  // The same parts again: nothing changes, everything reported as duplicate.
  auto again = run_merge({a, b, a, "-o", path("run.h5")});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.out.find("5 duplicate points ignored"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("merged 3 of 4 points (0 new"), std::string::npos) << again.out;
  EXPECT_EQ(first, slurp(path("run.h5"))) << "a merge that adds nothing must leave the file alone";

  // The resubmitted task's part, merged into the existing output.
  auto late = part("late.h5", {3});
  auto r = run_merge({late, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("merged 4 of 4 points (1 new"), std::string::npos) << r.out;
  for (const auto& row : points_of(path("run.h5"))) EXPECT_EQ(row.complete, 1);
}

TEST_F(MergeTest, OkResultReplacesFailedOne) {
  auto a = part("a.h5", {0, 1}, {1});
  ASSERT_EQ(run_merge({a, "-o", path("run.h5")}).rc, 1);
  auto rows = points_of(path("run.h5"));
  EXPECT_EQ(store::get_str(rows[1].status), "failed");

  auto retry = part("retry.h5", {1});
  auto r = run_merge({retry, "-o", path("run.h5")});
  EXPECT_NE(r.out.find("point 1 (threads=2): ok result from"), std::string::npos) << r.out;
  rows = points_of(path("run.h5"));
  EXPECT_EQ(store::get_str(rows[1].status), "ok");
  store::File f = store::File::open(path("run.h5"));
  EXPECT_EQ(store::read_output(f.root().open_group("points").open_group("p000001")).stdout_tail, "point 1 ok\n");

  // A failed result never replaces an ok one.
  auto worse = part("worse.h5", {1}, {1});
  r = run_merge({worse, "-o", path("run.h5")});
  EXPECT_NE(r.out.find("1 duplicate point ignored"), std::string::npos) << r.out;
  EXPECT_EQ(store::get_str(points_of(path("run.h5"))[1].status), "ok");
}

TEST_F(MergeTest, RefusesDifferentAppWithOneLineNamingTheFile) {
  auto a = part("a.h5", {0});
  rtrace::synth::RunSpec other;
  other.complete = {1};
  other.app_argv = {"./other"};
  rtrace::synth::write_run(path("other.h5"), other);
  auto r = run_merge({a, path("other.h5"), "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(path("other.h5") + ": not part of the same sweep as " + a + ": different app `./other`"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("run.h5")));
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos);
}

TEST_F(MergeTest, RefusesDifferentSweepAgainstExistingOutput) {
  auto a = part("a.h5", {0});
  ASSERT_EQ(run_merge({a, "-o", path("run.h5")}).rc, 1);
  const std::string before = slurp(path("run.h5"));
  auto b = part("b.h5", {0}, {}, 8);
  auto r = run_merge({b, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("b.h5: not part of the same sweep as " + path("run.h5") +
                       ": different sweep `threads=1..8` vs `threads=1..4`"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(before, slurp(path("run.h5")));
}

TEST_F(MergeTest, RefusesOtherSchemaMajor) {
  auto a = part("a.h5", {0});
  auto b = part("b.h5", {1});
  {
    store::File f = store::File::open(b, store::Access::ReadWrite);
    f.root().set_attr("schema_version", "2.0.0");
    f.close();
  }
  auto r = run_merge({a, b, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("b.h5"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("run.h5")));
}

TEST_F(MergeTest, BadInputsGiveOneLine) {
  std::ofstream(path("junk.h5")) << "not hdf5";
  auto r = run_merge({path("junk.h5"), "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("junk.h5"), std::string::npos) << r.err;

  r = run_merge({path("nope.h5"), "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("nope.h5: No such file or directory"), std::string::npos) << r.err;

  r = run_merge({path("a.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("missing -o FILE"), std::string::npos) << r.err;

  r = run_merge({"--bogus", "-o", "x.h5"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;

  auto a = part("a.h5", {0});
  rtrace::synth::write_trace(path("t.h5"), {0}, {});
  r = run_merge({a, path("t.h5"), "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("t.h5: a `trace` file among run files"), std::string::npos) << r.err;
}

TEST_F(MergeTest, DirectoryOfPartsSkipsTheOutputItself) {
  fs::create_directories(dir_ / "parts");
  part("parts/part-0.h5", {0});
  part("parts/part-1.h5", {1});
  auto r = run_merge({path("parts"), "-o", path("parts/run.h5")});
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_NE(r.out.find("merged 2 of 4 points (2 new, 0 replaced, from 2 parts)"), std::string::npos) << r.out;
  part("parts/part-2.h5", {2, 3});
  r = run_merge({path("parts"), "-o", path("parts/run.h5")});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("merged 4 of 4 points (2 new, 0 replaced, from 3 parts)"), std::string::npos) << r.out;
}

TEST_F(MergeTest, RankFilesIntoOneTraceFile) {
  rtrace::synth::write_trace(path("n0.h5"), {0, 1}, {});
  rtrace::synth::write_trace(path("n1.h5"), {2, 4}, {});
  rtrace::synth::RankSpec partial;
  partial.complete = false;
  rtrace::synth::write_trace(path("n2.h5"), {1}, partial);
  auto r = run_merge({path("n0.h5"), path("n1.h5"), path("n2.h5"), "-o", path("node.h5")});
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("merged 4 of 5 ranks (4 new"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing: 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 duplicate rank ignored"), std::string::npos) << r.out;
  store::File f = store::File::open(path("node.h5"));
  EXPECT_EQ(f.root().attr_string("file_kind"), "trace");
  EXPECT_EQ(f.root().open_group("ranks").children(),
            (std::vector<std::string>{"r000000", "r000001", "r000002", "r000004"}));
  EXPECT_EQ(store::read_rank(f.root().open_group("ranks").open_group("r000001")).info.complete, 1);
}

TEST_F(MergeTest, CompleteRankRecordReplacesIncompleteOne) {
  rtrace::synth::RankSpec partial;
  partial.complete = false;
  rtrace::synth::write_trace(path("early.h5"), {0, 1}, partial);  // e.g. per-rank fallback files
  rtrace::synth::write_trace(path("full.h5"), {1}, {});            // the collective ranks.h5
  auto r = run_merge({path("early.h5"), path("full.h5"), "-o", path("node.h5")});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("rank 1: complete record from " + path("full.h5") + " replaces the incomplete one"),
            std::string::npos)
      << r.out;
  store::File f = store::File::open(path("node.h5"));
  EXPECT_EQ(store::read_rank(f.root().open_group("ranks").open_group("r000001")).info.complete, 1);
  EXPECT_EQ(store::read_rank(f.root().open_group("ranks").open_group("r000000")).info.complete, 0);
}

TEST_F(MergeTest, RankFilesIntoACommittedPoint) {
  auto run = part("run.h5", {0});
  rtrace::synth::write_trace(path("late.h5"), {1, 2}, {});
  // The synthetic point has ranks 0 and 1 (ranks_per_point 2): rank 1 is a duplicate.
  auto r = run_merge({"--point", "0", path("late.h5"), "-o", run});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("point 0: merged 3 of 3 ranks (1 new"), std::string::npos) << r.out;
  store::File f = store::File::open(run);
  EXPECT_EQ(f.root().open_group("points").open_group("p000000").open_group("ranks").children().size(), 3u);

  r = run_merge({"--point", "2", path("late.h5"), "-o", run});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("point 2 (threads=3) is not committed"), std::string::npos) << r.err;
  r = run_merge({"--point", "9", path("late.h5"), "-o", run});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("the plan has no point 9"), std::string::npos) << r.err;
}

TEST_F(MergeTest, PointFilesOfTheOutputAreWrittenOnceAndInputsKept) {
  auto a = part("a.h5", {0}), b = part("b.h5", {1, 2});
  const std::string before = slurp(a + ".d/p000000.h5") + slurp(b + ".d/p000001.h5");
  auto r = run_merge({a, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 1) << r.err;
  struct stat p0 {};
  ASSERT_EQ(::stat(path("run.h5.d/p000000.h5").c_str(), &p0), 0) << "the output's point file";
  // A second merge into the existing output adds files and never rewrites point 0's.
  r = run_merge({b, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 1) << r.err;
  struct stat p0_after {};
  ASSERT_EQ(::stat(path("run.h5.d/p000000.h5").c_str(), &p0_after), 0);
  EXPECT_EQ(p0.st_ino, p0_after.st_ino);
  EXPECT_EQ(p0.st_mtim.tv_nsec, p0_after.st_mtim.tv_nsec);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(path("run.h5.d"))) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"p000000.h5", "p000001.h5", "p000002.h5"}));
  EXPECT_EQ(before, slurp(a + ".d/p000000.h5") + slurp(b + ".d/p000001.h5")) << "inputs must never change";
  store::File f = store::File::open(path("run.h5"));
  EXPECT_EQ(store::read_rank(f.root().open_group("points").open_group("p000002").open_group("ranks").open_group("r000001"))
                .info.rank,
            1);
  // Rank files into a committed point: the point gets a new file, the old one goes.
  rtrace::synth::write_trace(path("late.h5"), {2}, {});
  r = run_merge({"--point", "0", path("late.h5"), "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(path("run.h5.d/p000000-1.h5")));
  EXPECT_FALSE(fs::exists(path("run.h5.d/p000000.h5")));
  store::File g = store::File::open(path("run.h5"));
  EXPECT_EQ(g.root().open_group("points").open_group("p000000").open_group("ranks").children().size(), 3u);
}

TEST_F(MergeTest, NewOutputRefusesAStalePointsDirectory) {
  auto a = part("a.h5", {0});
  fs::create_directories(path("run.h5.d"));
  std::ofstream(path("run.h5.d/p000003.h5")) << "left over";
  auto r = run_merge({a, "-o", path("run.h5")});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("another run"), std::string::npos) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_FALSE(fs::exists(path("run.h5")));
  EXPECT_EQ(slurp(path("run.h5.d/p000003.h5")), "left over");
}

}  // namespace
