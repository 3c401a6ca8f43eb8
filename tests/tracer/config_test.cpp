#include "config.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace rtrace::tracer;

namespace {
GetEnv env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}
}  // namespace

TEST(TracerConfig, RankComesFromTheFirstLauncherVariableSet) {
  std::string source;
  EXPECT_EQ(detect_rank(env_of({{"PMI_RANK", "5"}, {"SLURM_PROCID", "9"}}), &source), 5);
  EXPECT_EQ(source, "PMI_RANK");
  EXPECT_EQ(detect_rank(env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"PMIX_RANK", "4"}}), &source), 3);
  EXPECT_EQ(detect_rank(env_of({{"SLURM_PROCID", "12"}}), &source), 12);
  EXPECT_EQ(source, "SLURM_PROCID");
  EXPECT_EQ(detect_rank(env_of({}), &source), 0);
  EXPECT_EQ(source, "default");
  // Garbage is skipped, not trusted.
  EXPECT_EQ(detect_rank(env_of({{"OMPI_COMM_WORLD_RANK", "x1"}, {"PMIX_RANK", "2"}}), &source), 2);
}

TEST(TracerConfig, LaunchersAreInert) {
  for (const char* name : {"mpirun", "mpiexec", "orterun", "orted", "prted", "prterun", "srun", "slurmstepd",
                           "hydra_pmi_proxy"})
    EXPECT_TRUE(is_launcher_process(name)) << name;
  EXPECT_FALSE(is_launcher_process("rtrace-demo"));
  auto c = read_config(env_of({{"RTRACE_TRACE_DIR", "/tmp/x"}}), "orted", "orted");
  EXPECT_FALSE(c.active);
  EXPECT_NE(c.inactive_reason.find("orted"), std::string::npos);
}

TEST(TracerConfig, InactiveWithoutTraceDir) {
  auto c = read_config(env_of({{"OMPI_COMM_WORLD_RANK", "1"}}), "app", "app");
  EXPECT_FALSE(c.active);
  EXPECT_EQ(c.inactive_reason, "RTRACE_TRACE_DIR is not set");
}

TEST(TracerConfig, ReadsModeLogAndRank) {
  auto c = read_config(env_of({{"RTRACE_TRACE_DIR", "/d"}, {"RTRACE_TRACER_MODE", "cuda-metrics"},
                               {"RTRACE_LOG", "debug"}, {"PMIX_RANK", "7"}, {"RTRACE_POINT_ID", "3"}}),
                       "app", "app");
  EXPECT_TRUE(c.active);
  EXPECT_EQ(c.trace_dir, "/d");
  EXPECT_EQ(c.mode, TracerMode::CudaMetrics);
  EXPECT_TRUE(c.mode_set);
  EXPECT_EQ(c.log_level, LogLevel::Debug);
  EXPECT_EQ(c.rank, 7);
  EXPECT_EQ(c.point_id, "3");
}

TEST(TracerConfig, UnknownModeFallsBackToCpuWithAWarning) {
  auto c = read_config(env_of({{"RTRACE_TRACE_DIR", "/d"}, {"RTRACE_TRACER_MODE", "gpu"}}), "app", "app");
  EXPECT_TRUE(c.active);
  EXPECT_EQ(c.mode, TracerMode::Cpu);
  EXPECT_NE(c.mode_warning.find("`gpu`"), std::string::npos);
  EXPECT_EQ(parse_log_level("nonsense"), LogLevel::Warn);
}

// RTRACE_TRACER_COLLECTIVE picks ranks.h5's writer: 1/parallel = MPI-IO, gather
// (and the default) = gathered to rank 0, 0 = one file per rank.
TEST(TracerConfig, CollectiveVariableSelectsTheWriter) {
  struct Case {
    const char* value;  // nullptr: unset
    bool collective, gather;
    bool warns;
  };
  for (const Case& k : {Case{nullptr, true, true, false}, Case{"1", true, false, false},
                        Case{"parallel", true, false, false}, Case{"gather", true, true, false},
                        Case{"0", false, true, false}, Case{"yes", true, true, true}}) {
    std::map<std::string, std::string> vars{{"RTRACE_TRACE_DIR", "/d"}};
    if (k.value) vars["RTRACE_TRACER_COLLECTIVE"] = k.value;
    auto c = read_config(env_of(vars), "app", "app");
    SCOPED_TRACE(k.value ? k.value : "(unset)");
    EXPECT_EQ(c.collective, k.collective);
    if (k.collective) EXPECT_EQ(c.gather_to_root, k.gather);
    EXPECT_EQ(!c.collective_warning.empty(), k.warns) << c.collective_warning;
  }
}
