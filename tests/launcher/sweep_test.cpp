#include "rtrace/launcher/sweep.hpp"

#include <gtest/gtest.h>

using namespace rtrace::launcher;

namespace {

std::vector<std::string> values(const std::string& text) { return parse_sweep_axis(text).values; }

std::string error_of(const std::string& text) {
  try {
    parse_sweep_axis(text);
  } catch (const SweepSpecError& e) {
    return e.what();
  }
  return "(no error)";
}

using V = std::vector<std::string>;

}  // namespace

TEST(LauncherSweepAxis, RangesStepsGeometricListsAndMixtures) {
  EXPECT_EQ(values("threads=1..4"), (V{"1", "2", "3", "4"}));
  EXPECT_EQ(values("threads=2..10:4"), (V{"2", "6", "10"}));
  EXPECT_EQ(values("threads=1..64:x2"), (V{"1", "2", "4", "8", "16", "32", "64"}));
  EXPECT_EQ(values("threads=3..100:x3"), (V{"3", "9", "27", "81"}));
  EXPECT_EQ(values("ranks=1,2,4,8"), (V{"1", "2", "4", "8"}));
  EXPECT_EQ(values("sms=1,2,4..16:4"), (V{"1", "2", "4", "8", "12", "16"}));
  EXPECT_EQ(values("threads=5"), (V{"5"}));
  EXPECT_EQ(values("threads=4..4"), (V{"4"}));
  // Repeats are dropped, first occurrence kept, and listed.
  EXPECT_EQ(values("threads=4,1..4"), (V{"4", "1", "2", "3"}));
  EXPECT_EQ(parse_sweep_axis("threads=4,1..4,2").repeated, (V{"4", "2"}));
  EXPECT_EQ(parse_sweep_axis("threads=4,1..4", /*keep_repeats=*/true).values, (V{"4", "1", "2", "3", "4"}));
  EXPECT_TRUE(parse_sweep_axis("threads=1..4").repeated.empty());
}

TEST(LauncherSweepPlan, RepeatedValuesAreMeasuredOnceAndSaidSo) {
  auto plan = make_sweep_plan({"threads=1,2,1"}, false, 1);
  EXPECT_EQ(plan.points.size(), 2u);
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_EQ(plan.warnings[0],
            "sweep axis `threads=1,2,1`: 1 is given more than once; measured once (--repeat N measures every point N "
            "times)");
  EXPECT_TRUE(make_sweep_plan({"threads=1,2"}, false, 1).warnings.empty());
  // Zipped: a value may repeat on one axis (weak scaling); a whole point given twice is measured once.
  auto weak = make_sweep_plan({"threads=1,2,4", "env:N=64,64,128"}, true, 1);
  EXPECT_EQ(weak.points.size(), 3u);
  EXPECT_TRUE(weak.warnings.empty());
  auto twice = make_sweep_plan({"threads=1,2,1", "env:N=64,128,64"}, true, 1);
  EXPECT_EQ(twice.points.size(), 2u);
  ASSERT_EQ(twice.warnings.size(), 1u);
  EXPECT_NE(twice.warnings[0].find("`threads=1 env:N=64` is given more than once"), std::string::npos);
}

TEST(LauncherSweepAxis, KindsAndEnvAxes) {
  auto a = parse_sweep_axis("env:N=1000,2000");
  EXPECT_EQ(a.kind, AxisKind::Env);
  EXPECT_EQ(a.env_name, "N");
  EXPECT_EQ(a.name, "env:N");
  EXPECT_TRUE(a.numeric());
  EXPECT_EQ(a.numbers, (std::vector<std::int64_t>{1000, 2000}));
  auto s = parse_sweep_axis("env:OMP_SCHEDULE=static,dynamic");
  EXPECT_EQ(s.values, (V{"static", "dynamic"}));
  EXPECT_FALSE(s.numeric());
  EXPECT_EQ(parse_sweep_axis("env:N=0..2").values, (V{"0", "1", "2"}));  // env values may be 0
  EXPECT_EQ(parse_sweep_axis("nodes=1,2").kind, AxisKind::Nodes);
  EXPECT_EQ(parse_sweep_axis("sms=8").kind, AxisKind::Sms);
  EXPECT_EQ(parse_sweep_axis("ranks=2").text(), "ranks=2");
}

TEST(LauncherSweepAxis, ErrorsNameTheAxisAndTheBadPart) {
  EXPECT_EQ(error_of("sms=10..x"), "sweep axis `sms=10..x`: expected a number after '..'");
  EXPECT_EQ(error_of("threads=..4"), "sweep axis `threads=..4`: expected a number before '..'");
  EXPECT_EQ(error_of("threads=1..4:"), "sweep axis `threads=1..4:`: expected a step after ':' in `1..4:`");
  EXPECT_EQ(error_of("threads=1..4:y"), "sweep axis `threads=1..4:y`: expected a number after ':'");
  EXPECT_EQ(error_of("threads=1..4:0"), "sweep axis `threads=1..4:0`: step in `1..4:0` must be at least 1");
  EXPECT_EQ(error_of("threads=1..64:x1"),
            "sweep axis `threads=1..64:x1`: geometric factor in `1..64:x1` must be at least 2");
  EXPECT_EQ(error_of("threads=1..64:x"), "sweep axis `threads=1..64:x`: expected a number after ':x'");
  EXPECT_EQ(error_of("threads=8..1"),
            "sweep axis `threads=8..1`: range `8..1` is empty (its start is greater than its end)");
  EXPECT_EQ(error_of("threads=0..4"), "sweep axis `threads=0..4`: threads must be at least 1 (got 0)");
  EXPECT_EQ(error_of("threads=abc"), "sweep axis `threads=abc`: expected a number, got `abc`");
  EXPECT_EQ(error_of("threads=1,,2"),
            "sweep axis `threads=1,,2`: empty value in the list (two commas in a row, or a comma at either end)");
  EXPECT_EQ(error_of("threads=1,"),
            "sweep axis `threads=1,`: empty value in the list (two commas in a row, or a comma at either end)");
  EXPECT_EQ(error_of("threads="), "sweep axis `threads=`: no values after '='");
  EXPECT_EQ(error_of("threads"), "sweep axis `threads`: expected AXIS=SPEC, e.g. threads=1..8");
  EXPECT_EQ(error_of("=4"), "sweep axis `=4`: missing axis name before '='");
  EXPECT_EQ(error_of("cores=4"),
            "sweep axis `cores=4`: unknown axis `cores` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME)");
  EXPECT_EQ(error_of("env:=4"), "sweep axis `env:=4`: missing variable name after 'env:'");
  // Did you mean: aliases, slips, environment variables.
  EXPECT_EQ(error_of("rank=1,2"),
            "sweep axis `rank=1,2`: unknown axis `rank` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME); "
            "did you mean `ranks`?");
  EXPECT_EQ(error_of("omp=1,2"),
            "sweep axis `omp=1,2`: unknown axis `omp` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME); "
            "did you mean `threads` or `env:OMP_NUM_THREADS`?");
  EXPECT_EQ(error_of("OMP_NUM_THREADS=1,2"),
            "sweep axis `OMP_NUM_THREADS=1,2`: unknown axis `OMP_NUM_THREADS` (expected threads, ranks, ranks-per-node, nodes, sms "
            "or env:NAME); did you mean `threads` or `env:OMP_NUM_THREADS`?");
  EXPECT_EQ(error_of("Threads=1"),
            "sweep axis `Threads=1`: unknown axis `Threads` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME); "
            "did you mean `threads`?");
  EXPECT_EQ(error_of("rnaks=2"),
            "sweep axis `rnaks=2`: unknown axis `rnaks` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME); "
            "did you mean `ranks`?");
  EXPECT_EQ(error_of("node=2"),
            "sweep axis `node=2`: unknown axis `node` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME); "
            "did you mean `nodes`?");
  EXPECT_EQ(error_of("SIZE=10,20"),
            "sweep axis `SIZE=10,20`: unknown axis `SIZE` (expected threads, ranks, ranks-per-node, nodes, sms or env:NAME); "
            "did you mean `env:SIZE`?");
  EXPECT_EQ(error_of("env:1N=4"), "sweep axis `env:1N=4`: `1N` is not a valid environment variable name");
  EXPECT_EQ(error_of("threads=99999999999"), "sweep axis `threads=99999999999`: number `99999999999` is too large");
  EXPECT_EQ(error_of("threads=1..1000000"), "sweep axis `threads=1..1000000`: more than 100000 values");
  EXPECT_EQ(error_of("env:N=a..b"), "sweep axis `env:N=a..b`: expected a number before '..'");
}

TEST(LauncherSweepPlan, CartesianFirstAxisOutermost) {
  auto plan = make_sweep_plan({"threads=1..2", "env:N=10,20,30"}, false, 1);
  ASSERT_EQ(plan.points.size(), 6u);
  EXPECT_EQ(plan.points[0].label(), "threads=1 env:N=10");
  EXPECT_EQ(plan.points[1].label(), "threads=1 env:N=20");
  EXPECT_EQ(plan.points[3].label(), "threads=2 env:N=10");
  EXPECT_EQ(plan.points[5].threads, 2);
  EXPECT_EQ(plan.points[5].env, (std::vector<std::pair<std::string, std::string>>{{"N", "30"}}));
  EXPECT_EQ(plan.points[5].ranks, -1);
  for (std::size_t i = 0; i < plan.points.size(); ++i) EXPECT_EQ(plan.points[i].id, static_cast<std::int64_t>(i));
  EXPECT_EQ(plan.describe(), "threads=1..2 x env:N=10,20,30 (repeat 1)");
}

TEST(LauncherSweepPlan, ZipPairsAxesAndRequiresEqualLengths) {
  auto plan = make_sweep_plan({"ranks=1,2,4", "threads=4,2,1"}, true, 1);
  ASSERT_EQ(plan.points.size(), 3u);
  EXPECT_EQ(plan.points[2].ranks, 4);
  EXPECT_EQ(plan.points[2].threads, 1);
  EXPECT_EQ(plan.describe(), "ranks=1,2,4 zip threads=4,2,1 (repeat 1)");
  try {
    make_sweep_plan({"ranks=1,2,4", "threads=1..2"}, true, 1);
    FAIL() << "expected an error";
  } catch (const SweepSpecError& e) {
    EXPECT_STREQ(e.what(),
                 "--zip: every axis needs the same number of values, but `ranks=1,2,4` has 3 and `threads=1..2` has 2");
  }
}

TEST(LauncherSweepPlan, RepeatsAreSeparateConsecutivePoints) {
  auto plan = make_sweep_plan({"threads=1,2"}, false, 3);
  ASSERT_EQ(plan.points.size(), 6u);
  EXPECT_EQ(plan.points[2].repeat, 2);
  EXPECT_EQ(plan.points[2].threads, 1);
  EXPECT_EQ(plan.points[3].repeat, 0);
  EXPECT_EQ(plan.points[3].threads, 2);
}

TEST(LauncherSweepPlan, NoAxesIsOneRunAndDuplicateAxesAreRefused) {
  auto plan = make_sweep_plan({}, false, 1);
  ASSERT_EQ(plan.points.size(), 1u);
  EXPECT_EQ(plan.points[0].label(), "(single run)");
  try {
    make_sweep_plan({"threads=1", "threads=2"}, false, 1);
    FAIL();
  } catch (const SweepSpecError& e) {
    EXPECT_STREQ(e.what(), "sweep axis `threads=2`: axis `threads` is given twice");
  }
  EXPECT_THROW(make_sweep_plan({"threads=1..1000", "env:N=1..1000"}, false, 1), SweepSpecError);
}

TEST(LauncherSweepPlan, RanksPerNodeGoesWithNodesAndNotWithRanks) {
  EXPECT_EQ(parse_sweep_axis("ranks-per-node=1,2").kind, AxisKind::RanksPerNode);
  auto plan = make_sweep_plan({"nodes=1,2,4", "ranks-per-node=2"}, false, 1);
  ASSERT_EQ(plan.points.size(), 3u);
  EXPECT_EQ(plan.points[2].nodes, 4);
  EXPECT_EQ(plan.points[2].ranks_per_node, 2);
  EXPECT_EQ(plan.points[2].ranks, -1);  // the partition multiplies (point_command)
  EXPECT_EQ(plan.points[2].label(), "nodes=4 ranks-per-node=2");
  auto error = [](std::vector<std::string> axes) {
    try {
      make_sweep_plan(axes, false, 1);
    } catch (const SweepSpecError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error({"ranks-per-node=2"}),
            "sweep axis `ranks-per-node=2`: needs a `nodes` axis (a point's ranks are nodes x ranks-per-node)");
  EXPECT_EQ(error({"nodes=2", "ranks=4", "ranks-per-node=2"}),
            "sweep axis `ranks-per-node=2`: cannot be combined with a `ranks` axis (a point's ranks are nodes x "
            "ranks-per-node); sweep one of them");
  EXPECT_EQ(error_of("ppn=2"), "sweep axis `ppn=2`: unknown axis `ppn` (expected threads, ranks, ranks-per-node, "
                               "nodes, sms or env:NAME); did you mean `ranks-per-node`?");
}
