#include "rtrace/launcher/environment.hpp"
#include "rtrace/launcher/process.hpp"
#include "rtrace/launcher/progress.hpp"

#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <set>
#include <filesystem>
#include <fstream>
#include <thread>

using namespace rtrace::launcher;

namespace {

const std::string kApp = RTRACE_LAUNCHER_TEST_APP;

ProcessResult run_app(std::vector<std::string> args, double timeout = 0, double grace = 5) {
  ProcessSpec s;
  s.path = kApp;
  s.argv = {"test_app"};
  s.argv.insert(s.argv.end(), args.begin(), args.end());
  s.env = Environment::current().to_envp();
  s.timeout_s = timeout;
  s.grace_s = grace;
  return run_process(s);
}

std::vector<pid_t> read_pids(const std::string& file) {
  std::vector<pid_t> pids;
  for (int i = 0; i < 200 && !std::filesystem::exists(file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::ifstream in(file);
  for (long p; in >> p;) pids.push_back(static_cast<pid_t>(p));
  return pids;
}

// Gone, or a zombie nobody owns any more.
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return false;
  std::string all((std::istreambuf_iterator<char>(in)), {});
  auto rp = all.rfind(')');
  return rp != std::string::npos && all.size() > rp + 2 && all[rp + 2] != 'Z';
}

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
}

}  // namespace

TEST(LauncherProcess, ExitCodeAndOutput) {
  auto r = run_app({"exit", "3"});
  EXPECT_EQ(r.kind, ExitKind::Exited);
  EXPECT_EQ(r.exit_code, 3);
  auto ok = run_app({"sleep", "10"});
  EXPECT_EQ(ok.kind, ExitKind::Exited);
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.stdout_tail, "slept 10 ms\n");
  EXPECT_EQ(ok.stdout_bytes, 12);
  EXPECT_GE(ok.wall_s, 0.01);
  EXPECT_GT(ok.start_time, 1.6e9);
  EXPECT_EQ(ok.leftover, 0);
}

TEST(LauncherProcess, CrashIsSignalled) {
  auto r = run_app({"segv"});
  EXPECT_EQ(r.kind, ExitKind::Signalled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.stdout_tail, "about to crash\n");
}

TEST(LauncherProcess, ArgvIsVerbatimNoShell) {
  ProcessSpec s;
  s.path = kApp;
  s.argv = {"test_app", "env", "A"};
  s.env = {"A=$(echo pwned) ; `x` * '\"'"};
  auto r = run_process(s);
  EXPECT_EQ(r.stdout_tail, "A=$(echo pwned) ; `x` * '\"'\n");
}

TEST(LauncherProcess, TimeoutKillsTheWholeTreeIncludingEscapees) {
  const std::string pidfile = temp_file("rtrace-hang");
  std::filesystem::remove(pidfile);
  auto r = run_app({"hang", pidfile}, 0.5, 2);
  EXPECT_EQ(r.kind, ExitKind::TimedOut);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_LT(r.wall_s, 3.0);
  EXPECT_EQ(r.leftover, 0);
  auto pids = read_pids(pidfile);
  ASSERT_EQ(pids.size(), 3u);
  for (pid_t p : pids) EXPECT_FALSE(alive(p)) << "pid " << p << " survived";
  EXPECT_TRUE(members_of_group(r.pid).empty());
  std::filesystem::remove(pidfile);
}

TEST(LauncherProcess, SigtermIgnoredEscalatesToSigkill) {
  const std::string pidfile = temp_file("rtrace-ignore");
  std::filesystem::remove(pidfile);
  auto r = run_app({"ignore-term", pidfile}, 0.3, 0.5);
  EXPECT_EQ(r.kind, ExitKind::TimedOut);
  EXPECT_EQ(r.signal, SIGKILL);
  for (pid_t p : read_pids(pidfile)) EXPECT_FALSE(alive(p)) << "pid " << p << " survived";
  std::filesystem::remove(pidfile);
}

TEST(LauncherProcess, HugeOutputIsBoundedAndCounted) {
  auto r = run_app({"flood", "64"});
  EXPECT_EQ(r.kind, ExitKind::Exited);
  EXPECT_EQ(r.stdout_bytes, 64LL << 20);
  EXPECT_EQ(r.stdout_tail.size(), 64u * 1024u);
  EXPECT_EQ(r.stderr_tail, "flood done\n");
}

TEST(LauncherProcess, AppClosingStdoutEarlyIsFine) {
  auto r = run_app({"close-stdout"});
  EXPECT_EQ(r.kind, ExitKind::Exited);
  EXPECT_EQ(r.stdout_tail, "early\n");
  EXPECT_EQ(r.stderr_tail, "still here\n");
}

namespace {
std::string make_file(const std::string& name, const char* content, std::filesystem::perms mode) {
  const std::string p = temp_file(name);
  std::ofstream(p) << content;
  std::filesystem::permissions(p, mode);
  return p;
}
}  // namespace

TEST(LauncherProcess, ExecFailureIsALaunchError) {
  const auto garbage = make_file("rtrace-garbage", "\x01\x02 not a program", std::filesystem::perms::owner_all);
  ProcessSpec s;
  s.path = garbage;  // executable bit, but no known format
  s.argv = {"x"};
  auto r = run_process(s);
  EXPECT_EQ(r.kind, ExitKind::LaunchError);
  EXPECT_EQ(r.launch_error, "cannot execute `" + garbage + "`: Exec format error");
  std::filesystem::remove(garbage);
}

TEST(LauncherProcess, ResolveExecutable) {
  std::string why;
  EXPECT_EQ(resolve_executable("sh", "/nonexistent:/bin", why).value_or(""), "/bin/sh");
  EXPECT_FALSE(resolve_executable("no-such-app-xyz", "/bin:/usr/bin", why));
  EXPECT_EQ(why, "`no-such-app-xyz` was not found in PATH");
  EXPECT_FALSE(resolve_executable("./no/such", "", why));
  EXPECT_EQ(why, "`./no/such`: No such file or directory");
  const auto data = make_file("rtrace-data", "data", std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_FALSE(resolve_executable(data, "", why));
  EXPECT_EQ(why, "`" + data + "` is not executable (Permission denied)");
  std::filesystem::remove(data);
  EXPECT_FALSE(resolve_executable("/tmp", "", why));
  EXPECT_EQ(why, "`/tmp` is a directory");
}

TEST(LauncherOutputTail, KeepsTheLastBytes) {
  OutputTail t(4);
  t.append("abc", 3);
  t.append("defgh", 5);
  EXPECT_EQ(t.str(), "efgh");
  t.append("i", 1);
  EXPECT_EQ(t.str(), "fghi");
  EXPECT_EQ(t.total(), 9);
}

// Issue 30: LAMMPS prints its error on stdout and exits 1; stderr holds only
// mpirun's notice. The reason comes from stdout's last error-like line.
TEST(LauncherProgress, FailureLineFallsBackToTheErrorOnStdout) {
  const std::string mpirun_notice =
      "--------------------------------------------------------------------------\n"
      "prterun detected that one or more processes exited with non-zero status,\n"
      "thus causing the job to be terminated.\n"
      "--------------------------------------------------------------------------\n";
  const std::string lammps_stdout =
      "LAMMPS (2 Aug 2023)\nERROR: Specified processors != physical processors (src/comm.cpp:313)\n"
      "Last command: processors 1 1 1\n";
  EXPECT_EQ(failure_line(mpirun_notice, lammps_stdout),
            "ERROR: Specified processors != physical processors (src/comm.cpp:313)");
  EXPECT_EQ(failure_line("", lammps_stdout), "ERROR: Specified processors != physical processors (src/comm.cpp:313)");
  // stderr's error wins; stdout's ordinary output is never a reason.
  EXPECT_EQ(failure_line("error: no file x\n", lammps_stdout), "error: no file x");
  EXPECT_EQ(failure_line("", "step 1 energy -3.2\nstep 2 energy -3.3\n"), "");
  EXPECT_EQ(failure_line("warning: slow\n", "step 1 energy -3.2\n"), "warning: slow");
}

// A reason longer than 200 characters ends between words (issue 30: "(threads )").
TEST(LauncherProgress, LongReasonsEndBetweenWords) {
  std::string line = "ERROR:";
  while (line.size() < 300) line += " disturbed by other processes (threads preempted)";
  const std::string got = last_stderr_line(line);
  ASSERT_LE(got.size(), 200u);
  ASSERT_GE(got.size(), 150u);
  EXPECT_EQ(got.substr(got.size() - 3), "...");
  const std::string kept = got.substr(0, got.size() - 3);
  EXPECT_EQ(line.compare(0, kept.size(), kept), 0);
  EXPECT_TRUE(line[kept.size()] == ' ' || line[kept.size()] == '(') << got;  // the next word was not cut
}

TEST(LauncherProgress, LastStderrLineSkipsBlanksRulesAndMpirunNotices) {
  EXPECT_EQ(last_stderr_line(""), "");
  EXPECT_EQ(last_stderr_line("\n\n  \n"), "");
  EXPECT_EQ(last_stderr_line("reading\nerror: no file x\n\n"), "error: no file x");
  EXPECT_EQ(last_stderr_line("only line, no newline"), "only line, no newline");
  EXPECT_EQ(last_stderr_line("  indented\r\n"), "indented");
  EXPECT_EQ(last_stderr_line("bad\x1b[31mred\n"), "bad?[31mred");
  EXPECT_EQ(last_stderr_line(std::string(300, 'x')), std::string(197, 'x') + "...");
  // What mpirun appends after a rank failed: the app's line comes before it.
  const std::string mpirun_tail =
      "app: matrix is singular\n"
      "--------------------------------------------------------------------------\n"
      "Primary job  terminated normally, but 1 process returned\n"
      "a non-zero exit code. Per user-direction, the job has been aborted.\n"
      "--------------------------------------------------------------------------\n"
      "--------------------------------------------------------------------------\n"
      "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
      "\n"
      "  Process name: [[52437,1],0]\n"
      "  Exit code:    3\n"
      "--------------------------------------------------------------------------\n";
  EXPECT_EQ(last_stderr_line(mpirun_tail), "app: matrix is singular");
  EXPECT_EQ(last_stderr_line("real reason\nrtrace tracer[pid 7]: warning: x\n"), "real reason");
  // Open MPI 4's tail after MPI_Abort (issue 25): its `[host:pid]` notices come
  // last, outside any rule block; the app's ERROR line is the reason.
  const std::string abort_tail =
      "ERROR: cannot decompose the grid over 2 ranks\n"
      "--------------------------------------------------------------------------\n"
      "MPI_ABORT was invoked on rank 1 in communicator MPI_COMM_WORLD\n"
      "with errorcode 1.\n"
      "--------------------------------------------------------------------------\n"
      "[vm:11647] 1 more process has sent help message help-mpi-api.txt / mpi-abort\n"
      "[vm:11647] Set MCA parameter \"orte_base_help_aggregate\" to 0 to see all help / error messages\n";
  EXPECT_EQ(last_stderr_line(abort_tail), "ERROR: cannot decompose the grid over 2 ranks");
  // The error line wins over later chatter; "error" in a progress line does not.
  EXPECT_EQ(last_stderr_line("step 9 max error 1e-3\nFatal: matrix is singular\ncleaning up\n"),
            "Fatal: matrix is singular");
  EXPECT_EQ(last_stderr_line("step 9 max error 1e-3\nstopping early\n"), "stopping early");
  // A tail cut inside a notice block: the rules at the end still pair up.
  EXPECT_EQ(last_stderr_line("with errorcode 1.\n-----\nERROR: x\n"), "ERROR: x");
}

TEST(LauncherEnvironment, DenyListAndRecording) {
  EXPECT_TRUE(is_denied("GITHUB_TOKEN", {}));
  EXPECT_TRUE(is_denied("aws_secret_access_key", {}));
  EXPECT_TRUE(is_denied("DB_PASSWORD", {}));
  EXPECT_TRUE(is_denied("SLURM_JOB_KEY", {}));
  EXPECT_FALSE(is_denied("OMP_NUM_THREADS", {}));
  EXPECT_TRUE(is_denied("SLURM_JOB_ACCOUNT", {"SLURM_JOB_ACC*"}));
  Environment e;
  e.set("OMP_NUM_THREADS", "4");
  e.set("SLURM_JOB_ID", "7");
  e.set("RTRACE_API_TOKEN", "s3cret");
  e.set("HOME", "/root");
  e.set("CUDA_VISIBLE_DEVICES", "0");
  auto rec = recorded_environment(e, {});
  EXPECT_EQ(rec, (std::vector<std::pair<std::string, std::string>>{
                     {"CUDA_VISIBLE_DEVICES", "0"}, {"OMP_NUM_THREADS", "4"}, {"SLURM_JOB_ID", "7"}}));
  e.prepend_list("LD_PRELOAD", "/a.so");
  e.prepend_list("LD_PRELOAD", "/b.so");
  e.prepend_list("LD_PRELOAD", "/a.so");
  EXPECT_EQ(e.get("LD_PRELOAD"), "/b.so:/a.so");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote("plain-1.0"), "plain-1.0");
}

// Every app tree carries its own RTRACE_TREE_TOKEN (the keeper's mark), even
// when rtrace itself runs inside another rtrace's tree.
TEST(LauncherProcess, AppTreeCarriesItsOwnToken) {
  auto run_env = [](const std::vector<std::string>& env) {
    ProcessSpec s;
    s.path = "/usr/bin/env";
    s.argv = {"env"};
    s.env = env;
    return run_process(s);
  };
  auto tokens = [](const std::string& out) {
    std::vector<std::string> found;
    std::size_t pos = 0;
    while ((pos = out.find("RTRACE_TREE_TOKEN=", pos)) != std::string::npos) {
      auto end = out.find('\n', pos);
      found.push_back(out.substr(pos, end - pos));
      pos = end;
    }
    return found;
  };
  auto a = run_env({"PATH=/usr/bin:/bin", "RTRACE_TREE_TOKEN=outer"});
  auto b = run_env({"PATH=/usr/bin:/bin"});
  ASSERT_EQ(a.kind, ExitKind::Exited);
  const auto ta = tokens(a.stdout_tail), tb = tokens(b.stdout_tail);
  ASSERT_EQ(ta.size(), 1u) << a.stdout_tail;
  ASSERT_EQ(tb.size(), 1u) << b.stdout_tail;
  EXPECT_NE(ta[0], "RTRACE_TREE_TOKEN=outer");
  EXPECT_NE(ta[0], tb[0]);
  EXPECT_EQ(a.orphans_reaped, 0);  // the keeper is not part of the app's tree
  EXPECT_EQ(a.leftover, 0);
}

// ---- the machine's load besides the tree (machine_load.hpp)

TEST(LauncherMachineLoad, ParsesProcStat) {
  const std::string text =
      "cpu  100 20 30 1000 50 5 5 40 0 0\n"
      "cpu0 50 10 15 500 25 2 3 20 0 0\n"
      "cpu1 50 10 15 500 25 3 2 20 0 0\n"
      "intr 12345\nctxt 999\n";
  auto t = parse_proc_stat(text, 100);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->cpus, 2);
  EXPECT_DOUBLE_EQ(t->busy_s, (100 + 20 + 30 + 5 + 5) / 100.0);  // user nice system irq softirq
  EXPECT_DOUBLE_EQ(t->idle_s, (1000 + 50) / 100.0);               // idle + iowait
  EXPECT_DOUBLE_EQ(t->steal_s, 0.4);
  // An old kernel's four fields still parse (no steal); garbage does not.
  auto old = parse_proc_stat("cpu 1 2 3 4\ncpu0 1 2 3 4\n", 100);
  ASSERT_TRUE(old.has_value());
  EXPECT_DOUBLE_EQ(old->steal_s, 0);
  EXPECT_FALSE(parse_proc_stat("cpu x y\ncpu0 1 2 3 4\n", 100).has_value());
  EXPECT_FALSE(parse_proc_stat("intr 1\n", 100).has_value());
  EXPECT_FALSE(parse_proc_stat("cpu 1 2 3 4\n", 100).has_value());  // no cpuN line: no CPU count
  // Only the CPUs the app may run on (the launcher's affinity).
  const std::set<int> cpu1{1};
  auto one = parse_proc_stat(text, 100, &cpu1);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->cpus, 1);
  EXPECT_DOUBLE_EQ(one->busy_s, (50 + 10 + 15 + 3 + 2) / 100.0);
  EXPECT_DOUBLE_EQ(one->steal_s, 0.2);
  const std::set<int> none{7};
  EXPECT_FALSE(parse_proc_stat(text, 100, &none).has_value());
  EXPECT_DOUBLE_EQ(parse_load_average("0.52 0.58 0.59 1/123 4567\n"), 0.52);
  EXPECT_TRUE(std::isnan(parse_load_average("")));
}

TEST(LauncherMachineLoad, OtherCpuIsTheNodesBusyTimeLessTheTree) {
  MachineLoad m;
  m.measured = true;
  m.interval_s = 2;
  m.start = CpuTimes{10, 100, 1, 2};
  m.end = CpuTimes{13.5, 100.4, 1.1, 2};
  m.tree_cpu_s = 2.0;
  auto row = machine_load_row(m);
  EXPECT_EQ(rtrace::store::get_str(row.status), "ok");
  EXPECT_EQ(row.cpus, 2);
  EXPECT_NEAR(row.busy_cpu_s, 3.5, 1e-12);
  EXPECT_NEAR(row.other_cpu_s, 1.5, 1e-12);
  EXPECT_NEAR(row.steal_s, 0.1, 1e-12);
  m.tree_cpu_s = 4.0;  // rusage is precise, ticks are not: never negative
  EXPECT_EQ(machine_load_row(m).other_cpu_s, 0.0);
  MachineLoad off;
  off.note = "ranks ran under srun";
  auto none = machine_load_row(off);
  EXPECT_EQ(rtrace::store::get_str(none.status), "unavailable");
  EXPECT_EQ(rtrace::store::get_str(none.note), "ranks ran under srun");
  EXPECT_TRUE(std::isnan(none.other_cpu_s));
}

TEST(LauncherMachineLoad, TreeCpuCountsEveryReapedProcess) {
  // Parent and child burn 0.3 s of CPU each: the tree's CPU time has both,
  // and the node's busy time (which includes the tree) is not below it.
  auto r = run_app({"burn-tree", "0.3"}, 60);
  ASSERT_EQ(r.kind, ExitKind::Exited);
  ASSERT_TRUE(r.machine_load.measured) << r.machine_load.note;
  EXPECT_GE(r.machine_load.tree_cpu_s, 0.6 * 0.95);
  EXPECT_GE(r.user_s + r.system_s, 0.6 * 0.95);
  auto row = machine_load_row(r.machine_load);
  EXPECT_GE(row.busy_cpu_s, row.tree_cpu_s * 0.8) << "busy " << row.busy_cpu_s << " tree " << row.tree_cpu_s;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  EXPECT_EQ(row.cpus, CPU_COUNT(&allowed));
  EXPECT_NEAR(row.interval_s, r.wall_s, 0.2);
  EXPECT_TRUE(row.load_avg_start >= 0);
}
