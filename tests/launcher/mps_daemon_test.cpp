// The MPS daemon lifecycle of an `sms` sweep, end to end on CPU: the real
// rtrace binary, a fake nvidia-cuda-mps-control first on PATH (it daemonizes
// like the real one and records every start, client and quit), and the
// RTRACE_TEST_FAKE_GPU seam for the device. A fake never proves a GPU run; it
// proves that rtrace keeps one daemon alive for the whole sweep (ERT, probe
// and app of every point reach it) and stops it exactly once, also when
// interrupted or killed.
//
// The test process is deliberately NOT a child subreaper (no run_process
// here): what rtrace daemonizes must end up outside rtrace's tree on its own.
#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using namespace rtrace;

namespace {

const std::string kRtrace = RTRACE_BINARY_DIR "/bin/rtrace";
const std::string kFake = RTRACE_FAKE_MPS_CONTROL;
const std::string kTracerLib = RTRACE_BINARY_DIR "/lib/librtrace_tracer.so";

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// "key=value" fields of one record line.
std::map<std::string, std::string> fields(const std::string& line) {
  std::map<std::string, std::string> f;
  std::istringstream in(line);
  std::string w;
  while (in >> w)
    if (auto eq = w.find('='); eq != std::string::npos) f[w.substr(0, eq)] = w.substr(eq + 1);
  return f;
}

bool alive(long pid) {
  if (pid <= 0 || kill(static_cast<pid_t>(pid), 0) != 0) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto rp = s.rfind(')');
  return rp != std::string::npos && rp + 2 < s.size() && s[rp + 2] != 'Z' && s[rp + 2] != 'X';
}

class mps_daemon : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("rtrace-mps-daemon-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    // The %smid probe stand-in is the fake under the probe's name.
    fs::create_symlink(kFake, dir_ / "rtrace-smid-probe");
    template_ = ert_template();
  }
  void TearDown() override {
    if (!HasFailure() && !std::getenv("KEEP")) fs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A real (CPU) ERT file, copied by the fake ERT: made once per test binary.
  static std::string ert_template() {
    static std::string made;
    if (!made.empty()) return made;
    const std::string out = (fs::temp_directory_path() / ("rtrace-mps-ert-" + std::to_string(getpid()) + ".h5")).string();
    fs::remove(out);
    const pid_t pid = fork();
    if (pid == 0) {
      execl(kRtrace.c_str(), "rtrace", "ert", "--threads", "1", "--quick", "--quiet", "-o", out.c_str(), nullptr);
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) made = out;
    return made;
  }

  std::vector<std::string> environment(const std::vector<std::string>& extra) const {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.rfind("PATH=", 0) == 0 || kv.rfind("TMPDIR=", 0) == 0 || kv.rfind("RTRACE_", 0) == 0 ||
          kv.rfind("CUDA_MPS_", 0) == 0 || kv.rfind("FAKE_MPS_", 0) == 0)
        continue;
      env.push_back(kv);
    }
    const char* path_env = std::getenv("PATH");
    env.push_back("PATH=" + fs::path(kFake).parent_path().string() + ":" + (path_env ? path_env : "/usr/bin:/bin"));
    env.push_back("TMPDIR=" + path("tmp"));
    env.push_back("RTRACE_CACHE_DIR=" + path("cache"));
    env.push_back("RTRACE_TEST_FAKE_GPU=sms=132,name=Fake H100,cc=9.0,ert=" + kFake + ",probe=" + path("rtrace-smid-probe"));
    env.push_back("FAKE_MPS_RECORD=" + path("record.txt"));
    env.push_back("FAKE_MPS_ERT_TEMPLATE=" + template_);
    for (const auto& kv : extra) {  // an extra NAME=VALUE replaces the default
      const std::string name = kv.substr(0, kv.find('=') + 1);
      env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return e.rfind(name, 0) == 0; }),
                env.end());
      env.push_back(kv);
    }
    return env;
  }

  pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> argv{"rtrace"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto envs = environment(extra_env);
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : envs) e.push_back(s.data());
    e.push_back(nullptr);
    const std::string err = path("rtrace.err");
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      const int fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 2);
      dup2(fd, 1);
      execve(kRtrace.c_str(), a.data(), e.data());
      _exit(127);
    }
    return pid;
  }

  // Exit status (128+signal when killed); -1 when it did not end in time.
  int wait_for(pid_t pid, double timeout_s) {
    const double deadline = now_s() + timeout_s;
    int status = 0;
    while (now_s() < deadline) {
      const pid_t w = waitpid(pid, &status, WNOHANG);
      if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
  }

  std::vector<std::string> record() const {
    std::ifstream in(path("record.txt"));
    std::vector<std::string> lines;
    std::string l;
    while (std::getline(in, l)) lines.push_back(l);
    return lines;
  }
  std::vector<std::string> lines_starting(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& l : record())
      if (l.rfind(prefix, 0) == 0) out.push_back(l);
    return out;
  }
  bool wait_until(const std::function<bool()>& cond, double timeout_s) const {
    const double deadline = now_s() + timeout_s;
    while (now_s() < deadline) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return cond();
  }
  std::string err_text() const {
    std::ifstream in(path("rtrace.err"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool mps_dirs_left() const {
    for (const auto& e : fs::directory_iterator(dir_ / "tmp"))
      if (e.path().filename().string().rfind("rtrace-mps-", 0) == 0) return true;
    return false;
  }
  // The daemon: started once, by rtrace, and not rtrace's child after its double fork.
  long check_one_start(pid_t rtrace_pid) const {
    const auto launches = lines_starting("launch -d");
    const auto starts = lines_starting("start daemon=");
    EXPECT_EQ(launches.size(), 1u) << err_text();
    EXPECT_EQ(starts.size(), 1u) << err_text();
    if (starts.size() != 1 || launches.size() != 1) return -1;
    EXPECT_EQ(fields(launches[0])["by"], std::to_string(rtrace_pid));
    const auto f = fields(starts[0]);
    EXPECT_NE(f.at("ppid"), std::to_string(rtrace_pid)) << "the daemon was reparented to rtrace: " << starts[0];
    EXPECT_EQ(lines_starting("query get_server_list").size(), 1u) << "reachability not checked after start";
    return std::stol(f.at("daemon"));
  }

  fs::path dir_;
  std::string template_;
};

TEST_F(mps_daemon, ThreePointsAndErtShareOneDaemonStoppedOnce) {
  ASSERT_FALSE(template_.empty()) << "rtrace ert --threads 1 --quick failed";
  // --tracer cpu: the fake app declares FLOPs and bytes, so each partition's
  // ceilings are measured (after its point, while the daemon serves it).
  const pid_t pid = spawn({"--sweep", "sms=16,32,48", "--ert", "quick", "--tracer", "cpu", "-o", path("run.h5"),
                           "--", kFake, "--client", "0.1"},
                          {"RTRACE_TRACER_LIB=" + kTracerLib});
  ASSERT_EQ(wait_for(pid, 120), 0) << err_text();
  const long daemon = check_one_start(pid);
  ASSERT_GT(daemon, 0);
  const auto lines = record();
  // Every client of the sweep reached that one daemon, each with its point's
  // percentage; the ERT of a partition ran as an MPS client like its app.
  std::map<std::string, std::string> ert_pct_by_sms;
  std::vector<std::string> app_pcts;
  std::size_t last_client = 0, quit_at = 0;
  int quits = 0, erts = 0, apps = 0, probes = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto f = fields(lines[i]);
    if (lines[i].rfind("client ", 0) == 0) {
      last_client = i;
      EXPECT_EQ(f["daemon"], std::to_string(daemon)) << lines[i];
      if (f["role"] == "ert") {
        ++erts;
        EXPECT_NE(lines[i].find("--mps"), std::string::npos) << lines[i];
        const auto at = lines[i].find("--sms ");
        ASSERT_NE(at, std::string::npos) << lines[i];
        ert_pct_by_sms[lines[i].substr(at + 6, lines[i].find(' ', at + 6) - at - 6)] = f["pct"];
      } else if (f["role"] == "app") {
        ++apps;
        app_pcts.push_back(f["pct"]);
      } else if (f["role"] == "probe") {
        ++probes;
      }
    }
    if (lines[i].rfind("quit ", 0) == 0) {
      ++quits;
      quit_at = i;
      EXPECT_EQ(f["peer_ppid"], std::to_string(pid)) << "quit not sent by rtrace itself: " << lines[i];
    }
    if (lines[i].rfind("sigterm", 0) == 0) ADD_FAILURE() << "the daemon was signalled, not quit: " << lines[i];
  }
  EXPECT_EQ(erts, 3);
  EXPECT_EQ(apps, 3);
  EXPECT_EQ(probes, 3);  // one %smid probe per point, as an MPS client of the same daemon
  EXPECT_EQ(quits, 1);
  EXPECT_GT(quit_at, last_client) << "quit before the last client";
  // 16, 32, 48 of 132 SMs: percentages 12, 24, 36 (15.84, 31.68, 47.52 SMs,
  // rounded up to whole TPCs), the same for ERT and app.
  EXPECT_EQ(app_pcts, (std::vector<std::string>{"12", "24", "36"}));
  EXPECT_EQ(ert_pct_by_sms["16"], "12");
  EXPECT_EQ(ert_pct_by_sms["32"], "24");
  EXPECT_EQ(ert_pct_by_sms["48"], "36");
  EXPECT_FALSE(alive(daemon));
  EXPECT_EQ(lines_starting("exit daemon=").size(), 1u);
  EXPECT_FALSE(mps_dirs_left());

  auto f = store::File::open(path("run.h5"));
  const auto points = store::read_points(f);
  ASSERT_EQ(points.size(), 3u);
  for (const auto& p : points) {
    EXPECT_TRUE(p.complete);
    EXPECT_EQ(store::get_str(p.status), "ok");
    EXPECT_EQ(store::get_str(p.partition_method), "mps");
    EXPECT_EQ(p.sms_granted, p.sms_requested);   // 16, 32, 48 are whole TPCs
    EXPECT_EQ(p.sms_achieved, p.sms_granted);    // what the (fake) probe measured
    EXPECT_TRUE(f.root().open_group("points").open_group(store::point_group_name(p.point_id)).exists("ceilings"));
  }
}

TEST_F(mps_daemon, StoppedOnceAfterSigint) {
  const pid_t pid = spawn({"--sweep", "sms=16,32", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--",
                           kFake, "--client", "30"});
  ASSERT_TRUE(wait_until([&] { return !lines_starting("client role=app").empty(); }, 60)) << err_text();
  const long daemon = check_one_start(pid);
  ASSERT_TRUE(alive(daemon));
  kill(pid, SIGINT);
  EXPECT_EQ(wait_for(pid, 30), 130) << err_text();
  const auto quits = lines_starting("quit ");
  ASSERT_EQ(quits.size(), 1u) << err_text();
  EXPECT_EQ(fields(quits[0])["peer_ppid"], std::to_string(pid)) << quits[0];
  EXPECT_TRUE(lines_starting("sigterm").empty());
  EXPECT_FALSE(alive(daemon));
  EXPECT_FALSE(mps_dirs_left());
  EXPECT_EQ(lines_starting("client role=app").size(), 1u);
}

TEST_F(mps_daemon, KeeperStopsItAfterSigkill) {
  const pid_t pid = spawn({"--sweep", "sms=16,32", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--",
                           kFake, "--client", "30"});
  ASSERT_TRUE(wait_until([&] { return !lines_starting("client role=app").empty(); }, 60)) << err_text();
  const long daemon = check_one_start(pid);
  ASSERT_TRUE(alive(daemon));
  kill(pid, SIGKILL);
  EXPECT_EQ(wait_for(pid, 10), 128 + SIGKILL);
  // The keeper (not rtrace, which is gone) sends the one quit.
  ASSERT_TRUE(wait_until([&] { return !alive(daemon); }, 20)) << "the daemon outlived a SIGKILLed rtrace";
  const auto quits = lines_starting("quit ");
  ASSERT_EQ(quits.size(), 1u);
  EXPECT_NE(fields(quits[0])["peer_ppid"], std::to_string(pid)) << quits[0];
  EXPECT_TRUE(lines_starting("sigterm").empty());
  EXPECT_TRUE(wait_until([&] { return !mps_dirs_left(); }, 10)) << "the keeper left the private MPS directories";
}

TEST_F(mps_daemon, HungDaemonNeverBlocksTheEnd) {
  // A daemon that acknowledges quit but stays: rtrace waits a bounded time,
  // then SIGTERMs it, and says so.
  const double t0 = now_s();
  const pid_t pid = spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"FAKE_MPS_IGNORE_QUIT=1"});
  ASSERT_EQ(wait_for(pid, 60), 0) << err_text();
  EXPECT_LT(now_s() - t0, 40);
  const long daemon = check_one_start(pid);
  EXPECT_EQ(lines_starting("quit ").size(), 1u);
  EXPECT_EQ(lines_starting("sigterm daemon=").size(), 1u);
  EXPECT_FALSE(alive(daemon));
  EXPECT_NE(err_text().find("quit did not stop the daemon"), std::string::npos) << err_text();
  EXPECT_FALSE(mps_dirs_left());
}

TEST_F(mps_daemon, NoDaemonNoSweep) {
  // A control program that cannot start a daemon: the sweep refuses to run
  // rather than run every point on all SMs.
  fs::create_directories(dir_ / "badbin");
  {
    std::ofstream s(dir_ / "badbin" / "nvidia-cuda-mps-control");
    s << "#!/bin/sh\nexit 0\n";  // "-d" exits 0 but starts nothing
  }
  fs::permissions(dir_ / "badbin" / "nvidia-cuda-mps-control", fs::perms::owner_all);
  const char* path_env = std::getenv("PATH");
  const pid_t pid = spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"PATH=" + path("badbin") + ":" + (path_env ? path_env : "/usr/bin:/bin")});
  EXPECT_EQ(wait_for(pid, 60), 2) << err_text();
  EXPECT_NE(err_text().find("no live daemon wrote"), std::string::npos) << err_text();
  EXPECT_FALSE(mps_dirs_left());
}

TEST_F(mps_daemon, ProbeMeasuresNotPredicts) {
  // A probe that sees 2 SMs fewer than granted: the file records the
  // measurement and the point's log says so; a missing probe is "unavailable".
  const pid_t pid = spawn({"--sweep", "sms=16,32", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--",
                           kFake, "--client"},
                          {"FAKE_MPS_PROBE_OFFSET=-2"});
  ASSERT_EQ(wait_for(pid, 60), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  const auto points = store::read_points(f);
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    EXPECT_EQ(p.sms_granted, p.sms_requested);
    EXPECT_EQ(p.sms_achieved, p.sms_granted - 2);
    const auto log = f.root().open_group("points").open_group(store::point_group_name(p.point_id)).attr_strings("log");
    bool warned = false, fake_noted = false;
    for (const auto& l : log) {
      warned = warned || l.find("the %smid probe saw " + std::to_string(p.sms_granted - 2) + " SMs") != std::string::npos;
      fake_noted = fake_noted || l.find("FAKE") != std::string::npos;
    }
    EXPECT_TRUE(warned);
    EXPECT_TRUE(fake_noted) << "a file made on the fake device must say so";
  }
}

TEST_F(mps_daemon, NoProbeMeansUnavailableNotThePrediction) {
  const pid_t pid = spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"RTRACE_TEST_FAKE_GPU=sms=132,ert=" + kFake + ",probe=" + path("no-such-probe")});
  ASSERT_EQ(wait_for(pid, 60), 0) << err_text();
  auto f = store::File::open(path("run.h5"));
  const auto points = store::read_points(f);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].sms_granted, 16);
  EXPECT_EQ(points[0].sms_achieved, -1);
}

TEST_F(mps_daemon, DryRunShowsRequestedToGrantedAndMergesEqualGrants) {
  const pid_t pid = spawn({"--dry-run", "--sweep", "sms=15,16,40", "--tracer", "none", "-o", path("run.h5"), "--",
                           kFake, "--client"});
  ASSERT_EQ(wait_for(pid, 60), 0) << err_text();
  const std::string out = err_text();  // stdout and stderr share the file
  EXPECT_NE(out.find("sms=15 and sms=16 both get 16 SMs under MPS"), std::string::npos) << out;
  EXPECT_NE(out.find("2 points"), std::string::npos) << out;
  EXPECT_NE(out.find("sms  15 requested -> 16 granted by mps (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=12)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("sms  40 requested -> 40 granted by mps (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30)"), std::string::npos)
      << out;
  EXPECT_TRUE(record().empty()) << "a dry run started the MPS daemon";
}

TEST_F(mps_daemon, MetricsUnderMpsAreRefused) {
  // Finding 10: CUPTI metrics do not work under MPS; one line, exit 2, no daemon.
  const pid_t pid = spawn({"--sweep", "sms=16", "--tracer", "cuda-metrics", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"RTRACE_TRACER_LIB=" + kTracerLib});
  EXPECT_EQ(wait_for(pid, 60), 2);
  const std::string err = err_text();
  EXPECT_NE(err.find("--tracer cuda-metrics cannot be used with the sms axis"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_TRUE(record().empty());
  EXPECT_FALSE(fs::exists(path("run.h5")));
}

}  // namespace
