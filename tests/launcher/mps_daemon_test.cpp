// The MPS daemon lifecycle of an `sms` sweep, end to end on CPU: the real
// rtrace binary, a fake nvidia-cuda-mps-control first on PATH (it daemonizes
// like the real one and records every start, client and quit), and the
// RTRACE_TEST_FAKE_GPU seam for the device. A fake never proves a GPU run; it
// proves that rtrace keeps one daemon alive for the whole sweep (ERT, probe
// and app of every point reach it) and stops it exactly once, also when
// interrupted or killed.
#include "fake_mps_sweep.hpp"

namespace fs = std::filesystem;
using namespace rtrace;
using rtrace::test::alive;
using rtrace::test::fields;
using rtrace::test::kFake;
using rtrace::test::kTracerLib;
using rtrace::test::now_s;

namespace {

class mps_daemon : public rtrace::test::FakeMpsSweep {};

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

TEST_F(mps_daemon, TheDaemonServesOneDeviceItsClientsAddressAsZero) {
  // The user's CUDA_VISIBLE_DEVICES is not simply inherited: the daemon gets
  // its first device, every client (probe, app, ERT) device 0 of the daemon's.
  const pid_t pid = spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"CUDA_VISIBLE_DEVICES=3,1"});
  ASSERT_EQ(wait_for(pid, 60), 0) << err_text();
  const auto starts = lines_starting("start daemon=");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(fields(starts[0])["cvd"], "3") << starts[0];
  int clients = 0;
  for (const auto& l : lines_starting("client ")) {
    ++clients;
    EXPECT_EQ(fields(l)["cvd"], "0") << l;
  }
  EXPECT_EQ(clients, 2);  // the probe and the app
}

TEST_F(mps_daemon, WithoutTheMpsControlProgramTheSweepSaysSoInOneLine) {
  fs::create_directories(dir_ / "nobin");
  const pid_t pid = spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"PATH=" + path("nobin") + ":/usr/bin:/bin"});
  EXPECT_EQ(wait_for(pid, 60), 2) << err_text();
  const std::string err = err_text();
  EXPECT_NE(err.find("MPS control daemon not available"), std::string::npos) << err;
  EXPECT_NE(err.find("nvidia-cuda-mps-control"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(path("run.h5")));
}

TEST_F(mps_daemon, TheProbeIsSizedAsOneWaveOnTheGrant) {
  const pid_t pid = spawn({"--sweep", "sms=15,40", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--",
                           kFake, "--client"});
  ASSERT_EQ(wait_for(pid, 60), 0) << err_text();
  const auto probes = lines_starting("client role=probe");
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_NE(probes[0].find("args=[--sms 16]"), std::string::npos) << probes[0];  // 15 -> 16 granted
  EXPECT_NE(probes[1].find("args=[--sms 40]"), std::string::npos) << probes[1];
}

// Issue 31: a long TMPDIR made the daemon's socket path exceed sockaddr_un's
// 108 bytes (the daemon then fails obscurely, or serves nothing): refused in
// one line before anything starts.
TEST_F(mps_daemon, ATooLongTmpdirIsRefusedInOneLine) {
  const fs::path deep = dir_ / "tmp" / std::string(90, 'd');
  fs::create_directories(deep);
  const pid_t pid = spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run.h5"), "--", kFake,
                           "--client"},
                          {"TMPDIR=" + deep.string()});
  EXPECT_EQ(wait_for(pid, 60), 2) << err_text();
  const std::string err = err_text();
  EXPECT_NE(err.find("the MPS pipe directory would be"), std::string::npos) << err;
  EXPECT_NE(err.find("set TMPDIR to a shorter directory"), std::string::npos) << err;
  EXPECT_TRUE(lines_starting("launch -d").empty());  // nothing was started
}

// Issue 31: MPS servers not of this rtrace were never looked for. In
// EXCLUSIVE_PROCESS compute mode one holds the device (rtrace's own server
// could not get it): refused up front; in DEFAULT mode, a warning. A
// PROHIBITED device gives no context at all: refused. (The process table is
// a fake one through RTRACE_TEST_PROC_ROOT, honoured with a fake GPU only.)
TEST_F(mps_daemon, ForeignMpsServersAndTheComputeModeAreCheckedUpFront) {
  const fs::path proc = dir_ / "proc";
  fs::create_directories(proc / "4242");
  std::ofstream(proc / "4242" / "comm") << "nvidia-cuda-mps\n";
  {
    std::ofstream cmd(proc / "4242" / "cmdline", std::ios::binary);
    const char argv0[] = "/usr/bin/nvidia-cuda-mps-server";
    cmd.write(argv0, sizeof argv0);
  }
  std::ofstream(proc / "4242" / "stat") << "4242 (nvidia-cuda-mps) S 1";
  const std::string gpu = "RTRACE_TEST_FAKE_GPU=sms=132,ert=" + kFake + ",probe=" + path("rtrace-smid-probe");
  auto sweep = [&](const std::string& mode) {
    return spawn({"--sweep", "sms=16", "--ert", "none", "--tracer", "none", "-o", path("run-" + mode + ".h5"), "--",
                  kFake, "--client"},
                 {gpu + ",mode=" + mode, "RTRACE_TEST_PROC_ROOT=" + proc.string()});
  };
  EXPECT_EQ(wait_for(sweep("3"), 60), 2) << err_text();
  std::string err = err_text();
  EXPECT_NE(err.find("an MPS server is running: nvidia-cuda-mps-server (pid 4242) not started by this rtrace"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("EXCLUSIVE_PROCESS compute mode, so rtrace's own MPS server could not get the device"),
            std::string::npos)
      << err;
  EXPECT_TRUE(lines_starting("launch -d").empty());
  ASSERT_EQ(wait_for(sweep("0"), 60), 0) << err_text();
  err = err_text();
  EXPECT_NE(err.find("warning: an MPS server is running: nvidia-cuda-mps-server (pid 4242)"), std::string::npos) << err;
  fs::remove_all(proc / "4242");
  EXPECT_EQ(wait_for(sweep("2"), 60), 2) << err_text();
  EXPECT_NE(err_text().find("is in compute mode PROHIBITED"), std::string::npos) << err_text();
}

}  // namespace
