#include "rtrace/launcher/options.hpp"

#include <gtest/gtest.h>

using namespace rtrace::launcher;

namespace {

RunOptions parse(std::vector<std::string> args) {
  args.insert(args.begin(), "rtrace run");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_run_options(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(LauncherRunOptions, EverythingAfterDashesIsTheAppVerbatim) {
  auto o = parse({"--sweep", "threads=1..2", "--sweep=env:N=1,2", "--zip", "--repeat", "2", "--timeout", "1.5",
                  "-o", "x.h5", "--ert", "quick", "--env", "A=1=2", "--", "./app", "--sweep", "-o", ""});
  EXPECT_EQ(o.sweep, (std::vector<std::string>{"threads=1..2", "env:N=1,2"}));
  EXPECT_TRUE(o.zip);
  EXPECT_EQ(o.repeat, 2);
  EXPECT_DOUBLE_EQ(o.timeout_s, 1.5);
  EXPECT_EQ(o.output, "x.h5");
  EXPECT_EQ(o.ert, ErtMode::Quick);
  EXPECT_EQ(o.env, (std::vector<std::pair<std::string, std::string>>{{"A", "1=2"}}));
  EXPECT_EQ(o.app_argv, (std::vector<std::string>{"./app", "--sweep", "-o", ""}));
}

TEST(LauncherRunOptions, ModesAndDefaults) {
  auto o = parse({"--", "app"});
  EXPECT_EQ(o.output, "run.h5");
  EXPECT_EQ(o.ert, ErtMode::Auto);
  EXPECT_EQ(o.launcher, LauncherChoice::Auto);
  EXPECT_EQ(o.tracer, TracerChoice::Auto);
  EXPECT_EQ(o.srun_mpi, "pmix");
  auto f = parse({"--ert", "ceil.h5", "--tracer", "cuda", "--launcher", "srun", "--srun-mpi", "pmi2", "--mpi-args",
                  "--mca btl self", "--", "app"});
  EXPECT_EQ(f.ert, ErtMode::File);
  EXPECT_EQ(f.ert_file, "ceil.h5");
  EXPECT_EQ(f.tracer, TracerChoice::CudaTrace);
  EXPECT_EQ(f.launcher, LauncherChoice::Srun);
  EXPECT_EQ(f.mpi_args, (std::vector<std::string>{"--mca", "btl", "self"}));
  EXPECT_TRUE(parse({"--help"}).help);
  EXPECT_NE(parse({"--help"}).help_text.find("--sweep AXIS=SPEC"), std::string::npos);
  EXPECT_NE(parse({"--help"}).help_text.find("{env:NAME}"), std::string::npos);
  EXPECT_TRUE(parse({"--resume", "-o", "x.h5"}).resume);  // the app may come from the file
  EXPECT_EQ(o.sample_hz, -1);  // the tracer's default
  EXPECT_EQ(parse({"--sample", "0", "--", "app"}).sample_hz, 0);
  EXPECT_EQ(parse({"--sample", "1000", "--", "app"}).sample_hz, 1000);
}

TEST(LauncherRunOptions, BadInputIsOneClearLine) {
  EXPECT_EQ(error_of({"--sweep", "threads=1"}), "missing `-- APP [ARGS...]`: the app to run goes after `--`");
  EXPECT_EQ(error_of({"--launcher", "ssh", "--", "a"}), "--launcher `ssh`: expected auto, mpirun, srun or none");
  EXPECT_EQ(error_of({"--tracer", "gpu", "--", "a"}), "--tracer `gpu`: expected auto, cpu, cuda, cuda-metrics or none");
  EXPECT_EQ(error_of({"--env", "NOVALUE", "--", "a"}), "--env `NOVALUE`: expected NAME=VALUE");
  EXPECT_EQ(error_of({"--repeat", "0", "--", "a"}), "--repeat must be at least 1 (got 0)");
  EXPECT_EQ(error_of({"--sample", "-5", "--", "a"}), "--sample must be a rate in 0..10000 Hz (0: off)");
  EXPECT_EQ(error_of({"--quiet", "--verbose", "--", "a"}), "--quiet and --verbose exclude each other");
  EXPECT_NE(error_of({"--bogus", "--", "a"}).find("unrecognised option '--bogus'"), std::string::npos);
  EXPECT_NE(error_of({"--timeout", "soon", "--", "a"}).find("timeout"), std::string::npos);
}

TEST(LauncherRunOptions, AnAppWithoutDashesGetsAHint) {
  EXPECT_EQ(error_of({"--sweep", "threads=1,2", "./app", "--size", "10"}),
            "unrecognised option '--size' after `./app`: the app and its arguments go after `--`, as in "
            "`rtrace [options] -- ./app --size 10`");
  EXPECT_EQ(error_of({"--sweep", "threads=1,2", "-o", "x.h5", "--zip", "./app", "in.dat"}),
            "`./app` is not an option of rtrace run: the app and its arguments go after `--`, as in "
            "`rtrace [options] -- ./app in.dat`");
  // An option's value is not the app; an unknown option before any word gets no hint.
  EXPECT_EQ(error_of({"--sweep", "threads=1", "--bogus", "--", "a"}),
            "unrecognised option '--bogus' (see `rtrace run --help`)");
}

TEST(LauncherRunOptions, UnknownPlaceholdersAreRefusedBeforeAnythingRuns) {
  EXPECT_EQ(parse({"--", "app", "{threads}", "{{x}}", "{env:N}"}).app_argv,
            (std::vector<std::string>{"app", "{threads}", "{{x}}", "{env:N}"}));  // expanded per point, later
  EXPECT_EQ(error_of({"--", "app", "--size", "{n}"}),
            "app argument `{n}`: unknown placeholder `{n}` (known: {threads}, {ranks}, {nodes}, {sms}, {point}, "
            "{env:NAME}; write {{ and }} for literal braces)");
  // A slip gets a hint: the rank count, a placeholder name, an environment variable.
  EXPECT_NE(error_of({"--", "app", "{rank}"}).find("(did you mean `{ranks}`? known:"), std::string::npos);
  EXPECT_NE(error_of({"--", "app", "{Point}"}).find("(did you mean `{point}`? known:"), std::string::npos);
  EXPECT_NE(error_of({"--", "app", "{GRID_N}"}).find("(did you mean `{env:GRID_N}`? known:"), std::string::npos);
  EXPECT_EQ(error_of({"--", "app", "--size={env:N"}),
            "app argument `--size={env:N`: `{` without a closing `}` (known: {threads}, {ranks}, {nodes}, {sms}, "
            "{point}, {env:NAME}; write {{ and }} for literal braces)");
  EXPECT_EQ(error_of({"--", "app", "a}b"}), "app argument `a}b`: a lone `}` (write }} for a literal brace)");
  EXPECT_EQ(error_of({"--", "app", "{env:A-B}"}),
            "app argument `{env:A-B}`: unknown placeholder `{env:A-B}` (known: {threads}, {ranks}, {nodes}, {sms}, "
            "{point}, {env:NAME}; write {{ and }} for literal braces)");
  EXPECT_EQ(parse({"--", "{threads}"}).app_argv[0], "{threads}");  // APP itself is never expanded
}

TEST(LauncherRunOptions, JsonRoundTripRestoresThePlan) {
  auto o = parse({"--sweep", "threads=1,2", "--zip", "--repeat", "3", "--env", "X=1", "--ert", "none", "--timeout",
                  "9", "--tracer", "none", "--", "app", "a b"});
  RunOptions back = parse({"--resume", "--timeout", "5"});
  back.fill_from_json(o.to_json());
  EXPECT_EQ(back.ert, ErtMode::None);
  EXPECT_EQ(back.tracer, TracerChoice::None);
  EXPECT_DOUBLE_EQ(back.timeout_s, 5);  // given now: wins
  EXPECT_EQ(back.sweep, o.sweep);
  EXPECT_EQ(back.zip, true);
  EXPECT_EQ(back.repeat, 3);
  EXPECT_EQ(back.env, o.env);
  EXPECT_EQ(back.app_argv, o.app_argv);
}

TEST(LauncherRunOptions, CountsModesAndResume) {
  EXPECT_EQ(parse({"--", "a"}).counts, CountsChoice::Auto);
  EXPECT_EQ(parse({"--counts", "sim", "--", "a"}).counts, CountsChoice::Sim);
  EXPECT_EQ(parse({"--counts", "pmu", "--", "a"}).counts, CountsChoice::Pmu);
  EXPECT_EQ(parse({"--counts", "none", "--", "a"}).counts, CountsChoice::None);
  EXPECT_EQ(error_of({"--counts", "valgrind", "--", "a"}), "--counts `valgrind`: expected auto, sim, pmu or none");
  // --resume keeps how the run counted unless told otherwise.
  auto o = parse({"--sweep", "threads=1,2", "--counts", "sim", "--", "app"});
  RunOptions back = parse({"--resume"});
  back.fill_from_json(o.to_json());
  EXPECT_EQ(back.counts, CountsChoice::Sim);
  RunOptions now = parse({"--resume", "--counts", "none"});
  now.fill_from_json(o.to_json());
  EXPECT_EQ(now.counts, CountsChoice::None);
}
