// End-to-end tests of `rtrace [run]`: the real binary, real child processes,
// real run files (checked with the store API and `rtrace validate`).
#include "rtrace/launcher/environment.hpp"
#include "rtrace/launcher/process.hpp"
#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

namespace fs = std::filesystem;
using namespace rtrace;
using namespace rtrace::launcher;

namespace {

const std::string kRtrace = RTRACE_BINARY_DIR "/bin/rtrace";
const std::string kApp = RTRACE_LAUNCHER_TEST_APP;
const std::string kTracerLib = RTRACE_BINARY_DIR "/lib/librtrace_tracer.so";

// The machine's answer, not rtrace's: an NVIDIA device node and a loadable
// driver library. Without them rtrace must refuse GPU work; a test that
// skipped whenever rtrace said yes could not catch rtrace inventing a GPU.
bool machine_has_nvidia_gpu() {
  if (!fs::exists("/dev/nvidiactl") && !fs::exists("/dev/nvidia0")) return false;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib) dlclose(lib);
  return lib != nullptr;
}

struct Outcome {
  int status = -1;
  std::string out, err;
};

class LauncherCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("rtrace-launcher-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::vector<std::string> environment(const std::vector<std::string>& extra) const {
    Environment e = Environment::current();
    e.set("RTRACE_CACHE_DIR", path("cache"));
    for (const auto& kv : extra) e.set(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
    return e.to_envp();
  }

  Outcome rtrace(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) const {
    ProcessSpec s;
    s.path = kRtrace;
    s.argv = {"rtrace"};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.env = environment(extra_env);
    s.timeout_s = 240;
    auto r = run_process(s);
    Outcome o;
    o.status = r.kind == ExitKind::Exited ? r.exit_code : 128 + r.signal;
    o.out = r.stdout_tail;
    o.err = r.stderr_tail;
    return o;
  }

  // Starts rtrace in the background with stderr to a file (for signal tests).
  pid_t spawn(const std::vector<std::string>& args, const std::string& err_file) const {
    std::vector<std::string> argv{"rtrace"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto envs = environment({});
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : envs) e.push_back(s.data());
    e.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      execve(kRtrace.c_str(), a.data(), e.data());
      _exit(127);
    }
    return pid;
  }

  static bool wait_for_text(const std::string& file, const std::string& text, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      std::ifstream in(file);
      std::string all((std::istreambuf_iterator<char>(in)), {});
      if (all.find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  static int wait_status(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

  void expect_valid(const std::string& file) const {
    auto v = rtrace({"validate", file});
    EXPECT_EQ(v.status, 0) << v.out << v.err;
  }

  fs::path dir_;
};

std::vector<store::SweepPointRow> points_of(const std::string& file) {
  auto f = store::File::open(file);
  return store::read_points(f);
}

store::Group point_group(store::File& f, std::int64_t id) {
  return f.root().open_group("points").open_group(store::point_group_name(id));
}

int complete_count(const std::string& file) {
  int n = 0;
  for (const auto& p : points_of(file)) n += p.complete;
  return n;
}

bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return false;
  std::string all((std::istreambuf_iterator<char>(in)), {});
  auto rp = all.rfind(')');
  return rp != std::string::npos && all.size() > rp + 2 && all[rp + 2] != 'Z';
}

// A minimal ert file (what `rtrace ert` writes) holding two ceilings.
void write_fake_ert(const std::string& file, double dram, bool unreliable = false, double fp64_fma = 100) {
  fs::create_directories(fs::path(file).parent_path());
  auto f = store::File::create(file, true);
  store::write_root_attributes(f.root(), "ert", "test");
  auto ert = f.root().create_group("ert");
  std::vector<store::CeilingRow> rows(2);
  for (auto& r : rows) r = store::CeilingRow{};
  store::set_str(rows[0].name, "DRAM");
  store::set_str(rows[0].kind, "bandwidth");
  store::set_str(rows[0].unit, "GB/s");
  rows[0].value = rows[0].max = rows[0].min = dram;
  rows[0].repeats = 1;
  rows[0].level_bytes = -1;
  if (unreliable) {
    rows[0].unreliable = 1;
    store::set_str(rows[0].unreliable_reason, "DRAM 1.0 GB/s below 2.0 on the smaller partition t0");
  }
  store::set_str(rows[1].name, "FP64 FMA");
  store::set_str(rows[1].kind, "compute");
  store::set_str(rows[1].precision, "fp64");
  store::set_str(rows[1].variant, "fma");
  store::set_str(rows[1].unit, "GFLOP/s");
  rows[1].value = rows[1].max = rows[1].min = fp64_fma;
  rows[1].repeats = 1;
  rows[1].level_bytes = -1;
  ert.write_table<store::CeilingRow>("ceilings", rows);
  f.close();
}

}  // namespace

TEST_F(LauncherCli, TwoAxisSweepRecordsEveryPoint) {
  const auto out = path("t.h5");
  auto r = rtrace({"--sweep", "threads=1..2", "--sweep", "env:N=10,20", "--ert", "none", "--tracer", "none", "-o", out,
                   "--", kApp, "env", "N", "OMP_NUM_THREADS", "OMP_PROC_BIND"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto pts = points_of(out);
  ASSERT_EQ(pts.size(), 4u);
  auto f = store::File::open(out);
  for (const auto& p : pts) {
    EXPECT_EQ(p.complete, 1);
    EXPECT_EQ(store::get_str(p.status), "ok");
    EXPECT_EQ(p.exit_code, 0);
    EXPECT_GT(p.wall_s, 0);
    EXPECT_GE(p.end_time, p.start_time);
  }
  EXPECT_EQ(store::get_str(pts[3].label), "threads=2 env:N=20");
  EXPECT_EQ(pts[3].threads, 2);
  EXPECT_EQ(pts[3].ranks, 1);
  auto g = point_group(f, 3);
  auto o = store::read_output(g);
  EXPECT_EQ(o.stdout_tail, "N=20\nOMP_NUM_THREADS=2\nOMP_PROC_BIND=close\n");
  auto rank = store::read_rank(g.open_group("ranks").open_group("r000000"));
  EXPECT_EQ(store::get_str(rank.info.tracer_mode), "none");
  EXPECT_EQ(rank.info.exit_status, 0);
  EXPECT_GE(rank.info.user_s, 0);
  EXPECT_GT(rank.info.max_rss_kib, 0);
  auto meta = store::read_run_metadata(f.root());
  EXPECT_EQ(meta.sweep_spec, "threads=1..2 x env:N=10,20 (repeat 1)");
  EXPECT_EQ(meta.app_argv.back(), "OMP_PROC_BIND");
  EXPECT_EQ(meta.launcher, "none");
}

TEST_F(LauncherCli, CrashAndNonZeroExitAreRecordedAndTheSweepGoesOn) {
  const auto crash = path("crash.h5");
  auto r = rtrace({"--sweep", "threads=1,2", "--ert", "none", "-o", crash, "--", kApp, "segv"});
  EXPECT_EQ(r.status, 1) << r.err;
  expect_valid(crash);
  for (const auto& p : points_of(crash)) {  // both points ran: no fail-fast
    EXPECT_EQ(store::get_str(p.status), "signalled");
    EXPECT_EQ(p.signal, SIGSEGV);
    EXPECT_EQ(p.exit_code, -1);
  }
  const auto failed = path("failed.h5");
  r = rtrace({"--sweep", "threads=1,2", "--ert", "none", "--fail-fast", "-o", failed, "--", kApp, "exit", "3"});
  EXPECT_EQ(r.status, 1);
  auto pts = points_of(failed);
  EXPECT_EQ(store::get_str(pts[0].status), "failed");
  EXPECT_EQ(pts[0].exit_code, 3);
  EXPECT_EQ(pts[1].complete, 0);  // --fail-fast stopped before it
  expect_valid(failed);
}

TEST_F(LauncherCli, AFailedPointShowsTheAppsLastStderrLine) {
  const auto out = path("fail.h5");
  auto r = rtrace({"--sweep", "threads=1", "--ert", "none", "-o", out, "--", kApp, "fail", "4",
                   "error: cannot open input.dat"});
  EXPECT_EQ(r.status, 1);
  // Not a terminal: one line per point.
  EXPECT_NE(r.err.find("rtrace: [1/1] threads=1: failed (exit 4) ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" s): error: cannot open input.dat\n"), std::string::npos) << r.err;
  auto ok = rtrace({"--sweep", "threads=1", "--ert", "none", "-o", path("ok.h5"), "--", kApp, "close-stdout"});
  EXPECT_EQ(ok.status, 0);
  EXPECT_EQ(ok.err.find("still here"), std::string::npos) << ok.err;  // only failures say why
}

TEST_F(LauncherCli, PlaceholdersAreExpandedPerPointAndRecorded) {
  const auto out = path("ph.h5");
  const std::vector<std::string> sweep{"--sweep", "threads=1,2", "--sweep", "env:N=10,20", "--zip", "--ert", "none"};
  auto args = sweep;
  args.insert(args.end(), {"-o", out, "--", kApp, "args", "--size={env:N}", "t{threads}", "{{raw}}", "p{point}"});
  auto r = rtrace(args);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto f = store::File::open(out);
  for (int id : {0, 1}) {
    auto g = point_group(f, id);
    const std::string n = id == 0 ? "10" : "20", t = std::to_string(id + 1);
    EXPECT_EQ(store::read_output(g).stdout_tail,
              "arg --size=" + n + "\narg t" + t + "\narg {raw}\narg p" + std::to_string(id) + "\n");
    EXPECT_NE(g.attr_string("command").find("--size=" + n + " t" + t), std::string::npos) << g.attr_string("command");
  }
  // The file keeps the template: --resume compares it, and re-expands per point.
  EXPECT_EQ(store::read_run_metadata(f.root()).app_argv[2], "--size={env:N}");
  // --dry-run shows the expanded commands; a bad placeholder is one line, exit 2, nothing run.
  args = sweep;
  args.insert(args.end(), {"--dry-run", "-o", path("dry.h5"), "--", kApp, "args", "--size={env:N}"});
  auto dry = rtrace(args);
  EXPECT_EQ(dry.status, 0) << dry.err;
  EXPECT_NE(dry.out.find("args --size=20"), std::string::npos) << dry.out;
  auto bad = rtrace({"--sweep", "threads=1", "-o", path("bad.h5"), "--", kApp, "args", "{thread}"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err,
            "rtrace run: app argument `{thread}`: unknown placeholder `{thread}` (did you mean `{threads}` or "
            "`{env:OMP_NUM_THREADS}`? known: {threads}, {ranks}, {nodes}, {sms}, {point}, {env:NAME}; write {{ and }} "
            "for literal braces)\n");
  EXPECT_FALSE(fs::exists(path("bad.h5")));
}

TEST_F(LauncherCli, AnAppWithoutDashesGetsAHint) {
  auto r = rtrace({"./app", "--size", "10"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "rtrace: unknown subcommand `./app`: to run an app, put it after `--`, as in "
                   "`rtrace [options] -- ./app` (try `rtrace --help`)\n");
  r = rtrace({"--sweep", "rank=1,2", "--", kApp, "exit", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "rtrace run: sweep axis `rank=1,2`: unknown axis `rank` (expected threads, ranks, "
                   "ranks-per-node, nodes, sms or env:NAME); did you mean `ranks`?\n");
  r = rtrace({"--sweep", "threads=1", kApp, "--size", "10"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "rtrace run: unrecognised option '--size' after `" + kApp +
                       "`: the app and its arguments go after `--`, as in `rtrace [options] -- " + kApp + " --size 10`\n");
}

TEST_F(LauncherCli, MissingAppAndExistingOutputAreRefusedBeforeAnythingRuns) {
  auto r = rtrace({"--ert", "none", "-o", path("x.h5"), "--", "no-such-app-rtrace"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "rtrace run: cannot run the app: `no-such-app-rtrace` was not found in PATH\n");
  EXPECT_FALSE(fs::exists(path("x.h5")));

  const auto precious = path("precious.h5");
  std::ofstream(precious) << "keep me";
  r = rtrace({"--ert", "none", "-o", precious, "--", kApp, "exit", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("exists; pass --resume"), std::string::npos) << r.err;
  std::ifstream in(precious);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "keep me");

  std::ofstream(path("not-ert.txt")) << "hello";
  r = rtrace({"--ert", path("not-ert.txt"), "-o", path("z.h5"), "--", kApp, "exit", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no ceilings to import"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("z.h5")));

  r = rtrace({"--sweep", "sms=10..x", "-o", path("y.h5"), "--", kApp});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "rtrace run: sweep axis `sms=10..x`: expected a number after '..'\n");
}

TEST_F(LauncherCli, SmsAxisWithoutGpuFailsBeforeAnythingRuns) {
  auto r = rtrace({"--sweep", "sms=16..32:16", "-o", path("g.h5"), "--", kApp, "exit", "0"});
  if (machine_has_nvidia_gpu()) GTEST_SKIP() << "an NVIDIA device and libcuda.so.1 are present";
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("sweep axis `sms=16..32:16`: needs a GPU, but no GPU found"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("g.h5")));
}

TEST_F(LauncherCli, TimeoutKillsTheTreeAndLeavesNoOrphans) {
  const auto out = path("hang.h5");
  const auto pidfile = path("pids");
  auto r = rtrace({"--timeout", "1", "--grace", "1", "--ert", "none", "-o", out, "--", kApp, "hang", pidfile});
  EXPECT_EQ(r.status, 1) << r.err;
  auto pts = points_of(out);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(store::get_str(pts[0].status), "timeout");
  EXPECT_LT(pts[0].wall_s, 3);
  std::ifstream in(pidfile);
  std::vector<pid_t> pids;
  for (long p; in >> p;) pids.push_back(static_cast<pid_t>(p));
  ASSERT_EQ(pids.size(), 3u);  // the app, a child in its group, a child that left it with setsid()
  for (pid_t p : pids) EXPECT_FALSE(alive(p)) << "pid " << p << " survived the timeout";
  EXPECT_TRUE(members_of_group(pids[0]).empty());
  expect_valid(out);
}

TEST_F(LauncherCli, HugeOutputIsBounded) {
  const auto out = path("flood.h5");
  auto r = rtrace({"--ert", "none", "-o", out, "--", kApp, "flood", "256"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto f = store::File::open(out);
  auto o = store::read_output(point_group(f, 0));
  EXPECT_EQ(o.stdout_bytes, 256LL << 20);
  EXPECT_EQ(o.stdout_tail.size(), 64u * 1024u);
}

TEST_F(LauncherCli, SigintThenResumeCompletesTheSamePoints) {
  const auto out = path("int.h5");
  const auto err = path("int.err");
  const std::vector<std::string> cmd{"--sweep", "env:I=1..4", "--ert", "none", "-o", out, "--", kApp, "sleep", "300"};
  pid_t pid = spawn(cmd, err);
  ASSERT_TRUE(wait_for_text(err, "[2/4]", 30));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_status(pid), 130);
  expect_valid(out);
  const int before = complete_count(out);
  EXPECT_GE(before, 2);
  EXPECT_LT(before, 4);
  auto first = points_of(out);

  auto r = rtrace({"--resume", "-o", out});  // the app and sweep come from the file
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("resuming"), std::string::npos);
  expect_valid(out);
  auto after = points_of(out);
  ASSERT_EQ(after.size(), 4u);
  std::set<std::string> labels;
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].complete, 1);
    EXPECT_EQ(store::get_str(after[i].status), "ok");
    labels.insert(store::get_str(after[i].label));
    if (first[i].complete) {
      EXPECT_EQ(after[i].start_time, first[i].start_time) << "point " << i << " ran twice";
    }
  }
  EXPECT_EQ(labels, (std::set<std::string>{"env:I=1", "env:I=2", "env:I=3", "env:I=4"}));
}

TEST_F(LauncherCli, SigkillThenResumeWithTheSameCommand) {
  const auto out = path("kill.h5");
  const auto err = path("kill.err");
  const std::vector<std::string> cmd{"--sweep", "env:I=1..4", "--ert", "none", "-o", out, "--", kApp, "sleep", "300"};
  pid_t pid = spawn(cmd, err);
  ASSERT_TRUE(wait_for_text(err, "[1/4]", 30));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_status(pid), 128 + SIGKILL);
  expect_valid(out);
  EXPECT_GE(complete_count(out), 1);

  // A different sweep is refused; the same command resumes.
  auto bad = rtrace({"--resume", "--sweep", "env:I=1..5", "--ert", "none", "-o", out, "--", kApp, "sleep", "300"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("holds another sweep"), std::string::npos) << bad.err;
  std::vector<std::string> again{"--resume"};
  again.insert(again.end(), cmd.begin(), cmd.end());
  auto r = rtrace(again);
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  EXPECT_EQ(complete_count(out), 4);
}

TEST_F(LauncherCli, CeilingsFromAFileAndFromTheCache) {
  const auto ert = path("machine-ert.h5");
  write_fake_ert(ert, 42);
  const auto out = path("c.h5");
  auto r = rtrace({"--sweep", "threads=1..2", "--ert", ert, "-o", out, "--", kApp, "exit", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  {
    auto f = store::File::open(out);
    for (int id : {0, 1}) {
      auto c = store::read_ceilings(point_group(f, id));
      ASSERT_EQ(c.size(), 2u);
      EXPECT_EQ(store::get_str(c[0].name), "DRAM");
      EXPECT_EQ(c[0].value, 42);
      EXPECT_EQ(store::get_str(c[0].source), "file");  // issue 32: the report says where each ceiling came from
    }
  }
  // --ert FILE also takes a run file: a point of the same partition.
  const auto out2 = path("c2.h5");
  r = rtrace({"--sweep", "threads=2", "--ert", out, "-o", out2, "--", kApp, "exit", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  {
    auto f = store::File::open(out2);
    EXPECT_EQ(store::read_ceilings(point_group(f, 0)).size(), 2u);
  }
  // A cached ERT result for partition t1 is reused by a point that has counts
  // to place on a roofline: no `rtrace ert` runs.
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "an annotated point needs " << kTracerLib;
  const auto cached = path("cache") + "/ert/" + store::hostname() + "-t1-" + store::ert_cache_version() + "-quick.h5";
  write_fake_ert(cached, 7);
  const auto out3 = path("c3.h5");
  r = rtrace({"--sweep", "threads=1", "--ert", "quick", "-o", out3, "--", kApp, "annotated"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto f = store::File::open(out3);
  auto g = point_group(f, 0);
  auto c = store::read_ceilings(g);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].value, 7);
  EXPECT_EQ(g.attr_string("ceilings_source"), cached);
}

// Issue 23: a cached result of the larger partition that fails against the
// cached one-worker result (here FP64 FMA 1.0 GFLOP/s at 2 threads, 100 at
// one, as an ERT that timed a worker's wake-up cached it) is not reused: the
// partition is measured again.
TEST_F(LauncherCli, ACachedCeilingBelowTheCachedOneWorkerIsMeasuredAgain) {
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "an annotated point needs " << kTracerLib;
  const auto cache = path("cache") + "/ert/" + store::hostname();
  write_fake_ert(cache + "-t1-" + store::ert_cache_version() + "-quick.h5", 7);
  const auto bogus = cache + "-t2-" + store::ert_cache_version() + "-quick.h5";
  write_fake_ert(bogus, 7, false, 1.0);  // FP64 FMA 1.0 GFLOP/s, marked reliable
  const auto out = path("t2.h5");
  auto r = rtrace({"--sweep", "threads=2", "--ert", "quick", "-v", "-o", out, "--", kApp, "annotated"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("t2: cached ceilings not used (FP64 FMA 1.0 GFLOP/s below 100.0 on the smaller partition t1)"),
            std::string::npos)
      << r.err;
  auto f = store::File::open(out);
  auto g = point_group(f, 0);
  for (const auto& c : store::read_ceilings(g)) {
    if (store::get_str(c.name) != "FP64 FMA") continue;
    EXPECT_GT(c.value, 1.0) << "the bogus cache entry was used";
  }
  EXPECT_NE(g.attr_string("ceilings_source"), bogus);
}

// Issue 29: a partition's ceilings are measured at most once per sweep. A
// fresh measurement that fails against a smaller partition (here the cached
// t1 claims 1e6 GFLOP/s and 1e5 GB/s, so the real t2 is below it) is marked
// unreliable with the reason, not measured again (a busy machine made counted
// sweeps re-measure a 2-rank partition for minutes).
TEST_F(LauncherCli, AFreshCeilingBelowASmallerPartitionIsMarkedNotMeasuredAgain) {
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "an annotated point needs " << kTracerLib;
  if (rtrace({"ert", "--help"}).status != 0) GTEST_SKIP() << "this rtrace has no `ert`";
  write_fake_ert(path("cache") + "/ert/" + store::hostname() + "-t1-" + store::ert_cache_version() + "-quick.h5", 1e5,
                 false, 1e6);
  const auto out = path("t2.h5");
  auto r = rtrace({"--sweep", "threads=2", "--ert", "quick", "-v", "-o", out, "--", kApp, "annotated"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("re-measuring"), std::string::npos) << r.err;
  auto f = store::File::open(out);
  bool marked = false;
  for (const auto& c : store::read_ceilings(point_group(f, 0)))
    if (store::get_str(c.name) == "FP64 FMA") {
      marked = true;
      EXPECT_EQ(c.unreliable, 1);
      EXPECT_NE(store::get_str(c.unreliable_reason).find("below 1000000.0 on the smaller partition t1"),
                std::string::npos)
          << store::get_str(c.unreliable_reason);
    }
  EXPECT_TRUE(marked);
}

// --ert auto measures a partition only for points with counts to place on a
// roofline: an unannotated sweep runs no ERT (nothing lands in the cache) and
// says so once; an annotated point of the same partition gets its ceilings.
TEST_F(LauncherCli, CeilingsOnlyForPointsWithRooflineCounts) {
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "annotated points need " << kTracerLib;
  const auto out = path("plain.h5");
  auto r = rtrace({"--sweep", "env:I=1..3", "--sweep", "threads=1", "--ert", "auto", "-o", out, "--", kApp, "exit",
                   "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  EXPECT_FALSE(fs::exists(path("cache") + "/ert")) << "an ERT ran for an unannotated sweep";
  std::size_t notes = 0;
  for (auto at = r.err.find("nothing to place on a roofline"); at != std::string::npos;
       at = r.err.find("nothing to place on a roofline", at + 1))
    ++notes;
  EXPECT_EQ(notes, 1u) << r.err;
  {
    auto f = store::File::open(out);
    for (int id : {0, 1, 2}) {
      auto g = point_group(f, id);
      EXPECT_FALSE(g.exists("ceilings")) << "point " << id;
      const auto log = g.attr_strings("log");
      EXPECT_TRUE(std::any_of(log.begin(), log.end(), [](const std::string& l) {
        return l.find("no ceilings measured") != std::string::npos;
      })) << "point " << id;
    }
  }
  // The same partition with an annotated app: the (cached) ceilings are used.
  write_fake_ert(path("cache") + "/ert/" + store::hostname() + "-t1-" + store::ert_cache_version() + ".h5", 9);
  const auto annotated = path("annotated.h5");
  r = rtrace({"--sweep", "threads=1", "--ert", "auto", "-o", annotated, "--", kApp, "annotated"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto f = store::File::open(annotated);
  const auto c = store::read_ceilings(point_group(f, 0));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].value, 9);
  // The unannotated app with that cache present still gets none.
  r = rtrace({"--sweep", "threads=1", "--ert", "auto", "-o", path("plain2.h5"), "--", kApp, "exit", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto f2 = store::File::open(path("plain2.h5"));
  EXPECT_FALSE(point_group(f2, 0).exists("ceilings"));
}

// `rtrace run --resume --ert auto` adds the ceilings that complete points lack.
TEST_F(LauncherCli, ResumeAddsMissingCeilings) {
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "annotated points need " << kTracerLib;
  const auto out = path("later.h5");
  auto r = rtrace({"--sweep", "env:I=1,2", "--sweep", "threads=1", "--ert", "none", "-o", out, "--", kApp,
                   "annotated"});
  ASSERT_EQ(r.status, 0) << r.err;
  {
    auto f = store::File::open(out);
    EXPECT_FALSE(point_group(f, 0).exists("ceilings"));
  }
  write_fake_ert(path("cache") + "/ert/" + store::hostname() + "-t1-" + store::ert_cache_version() + ".h5", 11);
  r = rtrace({"--resume", "--ert", "auto", "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto f = store::File::open(out);
  for (int id : {0, 1}) {
    auto g = point_group(f, id);
    ASSERT_TRUE(g.exists("ceilings")) << "point " << id << ": " << r.err;
    EXPECT_EQ(store::read_ceilings(g)[0].value, 11);
    const auto log = g.attr_strings("log");
    EXPECT_NE(log.back().find("added by --resume"), std::string::npos) << log.back();
  }
}

// An unreliable cache entry is never reused: the partition is measured again
// (a real `rtrace ert --quick` of t1 here).
TEST_F(LauncherCli, UnreliableCachedCeilingsAreMeasuredAgain) {
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "an annotated point needs " << kTracerLib;
  if (rtrace({"ert", "--help"}).status != 0) GTEST_SKIP() << "this rtrace has no `ert`";
  const auto cached = path("cache") + "/ert/" + store::hostname() + "-t1-" + store::ert_cache_version() + "-quick.h5";
  write_fake_ert(cached, 13, /*unreliable=*/true);
  const auto out = path("u.h5");
  auto r = rtrace({"--sweep", "threads=1", "--ert", "quick", "-o", out, "--", kApp, "annotated"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto f = store::File::open(out);
  auto g = point_group(f, 0);
  const auto c = store::read_ceilings(g);
  ASSERT_FALSE(c.empty());
  for (const auto& row : c) EXPECT_NE(row.value, 13) << "the unreliable cached DRAM ceiling was reused";
  EXPECT_GT(c.size(), 2u) << "a real ERT has more than the fake file's two ceilings";
}

TEST_F(LauncherCli, PointsSelectionRunsASubsetForArrayTasks) {
  const auto out = path("part.h5");
  auto r = rtrace({"--sweep", "env:I=1..4", "--points", "1,3", "--ert", "none", "-o", out, "--", kApp, "exit", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto pts = points_of(out);
  ASSERT_EQ(pts.size(), 4u);  // the whole plan, for `rtrace merge`
  EXPECT_EQ((std::vector<int>{pts[0].complete, pts[1].complete, pts[2].complete, pts[3].complete}),
            (std::vector<int>{0, 1, 0, 1}));
  r = rtrace({"--resume", "--points", "0", "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(complete_count(out), 3);
  r = rtrace({"--sweep", "env:I=1..4", "--points", "9", "-o", path("bad.h5"), "--", kApp, "exit", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "rtrace run: --points `9`: point 9 is not in the plan (ids 0..3)\n");
}

TEST_F(LauncherCli, DryRunPrintsThePlanAndRunsNothing) {
  auto r = rtrace({"--sweep", "threads=1,2", "--sweep", "ranks=1,2", "--dry-run", "-o", path("d.h5"), "--", kApp,
                   "exit", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[4/4] threads=2 ranks=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("partition r2t2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("env  OMP_NUM_THREADS=2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run  mpirun -np 2"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(path("d.h5")));
}

TEST_F(LauncherCli, SecretsAreNotRecorded) {
  const auto out = path("s.h5");
  auto r = rtrace({"--ert", "none", "--env", "DB_PASSWORD=hunter2", "--env-deny", "OMP_SCHED*", "-o", out, "--", kApp,
                   "env", "DB_PASSWORD"},
                  {"MY_API_TOKEN=abc123", "OMP_SCHEDULE=static", "OMP_DYNAMIC=false"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto f = store::File::open(out);
  auto meta = store::read_run_metadata(f.root());
  for (const auto& [k, v] : meta.environment) {
    EXPECT_NE(k, "MY_API_TOKEN");
    EXPECT_NE(k, "OMP_SCHEDULE");
  }
  bool has_omp_dynamic = false;
  for (const auto& kv : meta.environment) has_omp_dynamic |= kv.first == "OMP_DYNAMIC";
  EXPECT_TRUE(has_omp_dynamic);
  EXPECT_EQ(meta.command_line.find("hunter2"), std::string::npos) << meta.command_line;
  EXPECT_EQ(meta.options_json.find("hunter2"), std::string::npos) << meta.options_json;
  // The app itself still gets the value.
  EXPECT_EQ(store::read_output(point_group(f, 0)).stdout_tail, "DB_PASSWORD=hunter2\n");
}

#ifdef RTRACE_LAUNCHER_DEMO
// The acceptance run: `rtrace --sweep threads=1..2 -o t.h5 -- <demo app>` with
// ceilings from `rtrace ert --quick` and the tracer's data when it is built.
TEST_F(LauncherCli, DemoThreadsSweepWithCeilingsAndTracer) {
  const std::string demo = RTRACE_LAUNCHER_DEMO;
  if (!fs::exists(demo)) GTEST_SKIP() << demo << " not built";
#ifdef RTRACE_LAUNCHER_TEST_HAVE_ERT
  ASSERT_EQ(rtrace({"ert", "--help"}).status, 0) << "rtrace was built with ERT, but `rtrace ert --help` fails";
#else
  GTEST_SKIP() << "this build has no ERT component";
#endif
  const auto out = path("t.h5");
  auto r = rtrace({"--sweep", "threads=1..2", "--ert", "quick", "--timeout", "120", "-o", out, "--", demo, "triad",
                   "--size", "200000", "--iters", "3"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto pts = points_of(out);
  ASSERT_EQ(pts.size(), 2u);
  auto f = store::File::open(out);
  for (int id : {0, 1}) {
    EXPECT_EQ(pts[id].complete, 1);
    EXPECT_EQ(store::get_str(pts[id].status), "ok");
    auto g = point_group(f, id);
    auto c = store::read_ceilings(g);
    EXPECT_FALSE(c.empty()) << "point " << id << " has no ceilings";
    if (fs::exists(kTracerLib)) {
      auto rank = store::read_rank(g.open_group("ranks").open_group("r000000"));
      EXPECT_EQ(store::get_str(rank.info.tracer_mode), "cpu");
      EXPECT_FALSE(rank.regions.empty()) << "no regions traced";
      EXPECT_EQ(rank.info.omp_threads, id + 1);
    }
  }
  // The cache serves the next sweep: no new ERT run, same ceilings source.
  // An unreliable result (a busy machine: threads=2 below threads=1 twice) is
  // kept beside the cache and never served: the next sweep measures again,
  // which replaces that file or writes the reliable entry.
  const std::string first_source = point_group(f, 0).attr_string("ceilings_source");
  const std::string kUnreliable = ".unreliable.h5";
  const bool first_unreliable = first_source.size() > kUnreliable.size() &&
                                first_source.compare(first_source.size() - kUnreliable.size(), std::string::npos,
                                                     kUnreliable) == 0;
  struct stat before {};
  if (first_unreliable) {
    ASSERT_EQ(::stat(first_source.c_str(), &before), 0) << first_source;
  }
  auto again = rtrace({"--sweep", "threads=1", "--ert", "quick", "-o", path("t2.h5"), "--", demo, "triad", "--size",
                       "1000", "--iters", "1"});
  ASSERT_EQ(again.status, 0) << again.err;
  auto f2 = store::File::open(path("t2.h5"));
  const std::string second_source = point_group(f2, 0).attr_string("ceilings_source");
  if (!first_unreliable) {
    EXPECT_EQ(second_source, first_source);
  } else if (second_source == first_source) {
    struct stat after {};
    ASSERT_EQ(::stat(second_source.c_str(), &after), 0) << second_source;
    EXPECT_NE(after.st_ino, before.st_ino) << "an unreliable ERT result was served from the cache";
  } else {
    EXPECT_EQ(second_source, first_source.substr(0, first_source.size() - kUnreliable.size()) + ".h5");
  }
  if (!fs::exists(kTracerLib)) GTEST_SKIP() << "tracer data checks need " << kTracerLib;
}

TEST_F(LauncherCli, DemoTwoAxisSweepThreadsByEnv) {
  const std::string demo = RTRACE_LAUNCHER_DEMO;
  if (!fs::exists(demo)) GTEST_SKIP() << demo << " not built";
  const auto out = path("two.h5");
  auto r = rtrace({"--sweep", "threads=1,2", "--sweep", "env:N=1000,2000", "--ert", "none", "--timeout", "60", "-o",
                   out, "--", demo, "triad", "--size", "100000", "--iters", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  EXPECT_EQ(complete_count(out), 4);
}

// Weak scaling: the problem grows with the threads, zipped, through a
// placeholder (the demo sizes itself from --size).
TEST_F(LauncherCli, DemoZippedWeakScalingSweep) {
  const std::string demo = RTRACE_LAUNCHER_DEMO;
  if (!fs::exists(demo)) GTEST_SKIP() << demo << " not built";
  const auto out = path("weak.h5");
  auto r = rtrace({"--sweep", "threads=1,2", "--sweep", "env:N=100000,200000", "--zip", "--ert", "none", "--timeout",
                   "60", "-o", out, "--", demo, "triad", "--size", "{env:N}", "--iters", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto f = store::File::open(out);
  for (int id : {0, 1}) {
    const std::string out_text = store::read_output(point_group(f, id)).stdout_tail;
    const std::string size = id == 0 ? "size=100000 " : "size=200000 ";
    EXPECT_NE(out_text.find(size), std::string::npos) << out_text;
    EXPECT_NE(out_text.find("threads=" + std::to_string(id + 1)), std::string::npos) << out_text;
  }
}
#endif

#ifdef RTRACE_LAUNCHER_TEST_MPI
// Issue 25: "ranks=2: failed (exit 1)" showed mpirun's last notice, and
// analyze only "has status failed"; the app's ERROR line was stored but
// printed nowhere. And --resume could not rerun a failed point.
TEST_F(LauncherCli, AFailedMpiPointSaysWhyAndRetryFailedRerunsIt) {
  const auto out = path("abort.h5");
  const auto fixed = path("grid-fixed");
  const std::string reason = "ERROR: cannot decompose the grid over 2 ranks";
  auto r = rtrace({"--sweep", "ranks=1,2", "--ert", "none", "--timeout", "120", "-o", out, "--",
                   RTRACE_LAUNCHER_TEST_MPI, "abort-unless", fixed});
  ASSERT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("ranks=2: failed (exit 1) ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" s): " + reason + "\n"), std::string::npos) << r.err;
  const auto before = points_of(out);
  ASSERT_EQ(store::get_str(before[1].status), "failed");

  // analyze: text, JSON and HTML carry the reason.
  auto a = rtrace({"analyze", out, "--json", path("a.json"), "--html", path("a.html")});
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_NE(a.out.find("point 1 (ranks=2): failed, exit 1: " + reason), std::string::npos) << a.out;
  std::ifstream js(path("a.json"));
  const std::string json((std::istreambuf_iterator<char>(js)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"reason\": \"" + reason + "\""), std::string::npos) << json;
  std::ifstream hs(path("a.html"));
  const std::string html((std::istreambuf_iterator<char>(hs)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find(reason), std::string::npos);

  // --resume alone keeps the failed point and says how to rerun it.
  r = rtrace({"--resume", "-o", out});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("0 of 2 points left; 1 point not ok, kept as committed: ranks=2 (rerun with --resume "
                       "--retry-failed)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(points_of(out)[1].start_time, before[1].start_time);
  r = rtrace({"--retry-failed", "-o", out});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("use it with --resume"), std::string::npos) << r.err;

  // The user fixes the input; --resume --retry-failed reruns only that point.
  std::ofstream(fixed) << "ok\n";
  r = rtrace({"--resume", "--retry-failed", "-o", out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("1 of 2 points left (1 not-ok point to retry: ranks=2)"), std::string::npos) << r.err;
  expect_valid(out);
  const auto after = points_of(out);
  EXPECT_EQ(after[0].start_time, before[0].start_time) << "the ok point ran again";
  EXPECT_NE(after[1].start_time, before[1].start_time);
  EXPECT_EQ(store::get_str(after[1].status), "ok");
  auto f = store::File::open(out);
  EXPECT_NE(store::read_output(point_group(f, 1)).stdout_tail.find("rank 1 of 2 sum 1"), std::string::npos);
}

// Issue 30: LAMMPS at 2 ranks with `processors 1 1 1` prints its ERROR on
// stdout and exits 1 (stderr: only mpirun's notice). The failed point's
// reason was empty and the report said only "failed, exit 1".
TEST_F(LauncherCli, AFailedPointWithItsErrorOnStdoutSaysWhy) {
  const auto out = path("stdout-error.h5");
  const std::string reason = "ERROR: Specified processors != physical processors (src/comm.cpp:313)";
  auto r = rtrace({"--sweep", "ranks=1,2", "--ert", "none", "--timeout", "120", "-o", out, "--",
                   RTRACE_LAUNCHER_TEST_MPI, "stdout-error-unless", path("never")});
  ASSERT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(" s): " + reason + "\n"), std::string::npos) << r.err;
  ASSERT_EQ(store::get_str(points_of(out)[1].status), "failed");
  auto a = rtrace({"analyze", out, "--json", path("stdout-error.json")});
  ASSERT_EQ(a.status, 0) << a.err;
  std::string flat;  // the report's wrapped lines as one
  for (char ch : a.out)
    if (!(ch == ' ' || ch == '\n') || (!flat.empty() && flat.back() != ' ')) flat += ch == '\n' ? ' ' : ch;
  EXPECT_NE(flat.find("point 1 (ranks=2): failed, exit 1: " + reason), std::string::npos) << a.out;
  std::ifstream js(path("stdout-error.json"));
  const std::string json((std::istreambuf_iterator<char>(js)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"reason\": \"" + reason + "\""), std::string::npos) << json;
}

TEST_F(LauncherCli, MpiRanksRunUnderMpirun) {
  const auto out = path("mpi.h5");
  auto r = rtrace({"--sweep", "ranks=1,2", "--ert", "none", "--timeout", "120", "-o", out, "--",
                   RTRACE_LAUNCHER_TEST_MPI});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_valid(out);
  auto f = store::File::open(out);
  auto p1 = point_group(f, 1);
  EXPECT_EQ(p1.attr_string("launcher"), "mpirun");
  auto o = store::read_output(p1);
  EXPECT_NE(o.stdout_tail.find("rank 0 of 2 sum 1"), std::string::npos) << o.stdout_tail << o.stderr_tail;
  EXPECT_NE(o.stdout_tail.find("rank 1 of 2 sum 1"), std::string::npos) << o.stdout_tail;
  EXPECT_EQ(points_of(out)[1].ranks, 2);
  auto ranks = p1.open_group("ranks").children();
  if (!fs::exists(kTracerLib)) {
    EXPECT_EQ(ranks, (std::vector<std::string>{"r000000"}));  // rusage of the tree only
    GTEST_SKIP() << "per-rank tracer records need " << kTracerLib;
  }
  EXPECT_EQ(ranks, (std::vector<std::string>{"r000000", "r000001"}));
  for (const auto& name : ranks) {
    auto rec = store::read_rank(p1.open_group("ranks").open_group(name));
    EXPECT_EQ(store::get_str(rec.info.tracer_mode), "cpu");
    EXPECT_GT(rec.info.wall_s, 0);
  }
}
#endif
