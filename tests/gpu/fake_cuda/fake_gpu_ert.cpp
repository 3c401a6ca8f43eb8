// A stand-in for `rtrace ert --sms G --mps` on machines without a GPU (tests
// only; RTRACE_TEST_FAKE_GPU=...,ert=<this>). Like the real ERT of an sms
// partition it is an MPS client of the sweep's daemon (the fake
// nvidia-cuda-mps-control records it) and writes an ERT file whose
// sms_achieved is what the %smid probe would see under its percentage. Its
// ceilings follow the fake driver's device model (fake_cuda.h), so the fake
// app's kernels plot under them and the roofline trajectory means something.
// FAKE_ERT_SMS_OFFSET=k reports k SMs more than the grant (a partition that
// did not hold); FAKE_ERT_RECORD=FILE appends "ert sms=G achieved=A" per run;
// FAKE_ERT_SLEEP=S sleeps S seconds first (a hung ERT).
#include "fake_cuda.h"

#include "rtrace/store/run_file.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool tell_daemon(const std::string& line) {
  const std::string dir = env("CUDA_MPS_PIPE_DIRECTORY");
  if (dir.empty()) return false;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/control";
  if (fd < 0 || path.size() >= sizeof addr.sun_path) return false;
  std::strcpy(addr.sun_path, path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return false;
  }
  const std::string msg = line + "\n";
  (void)!write(fd, msg.data(), msg.size());
  shutdown(fd, SHUT_WR);
  char buf[64];
  const bool ok = read(fd, buf, sizeof buf) > 0;
  close(fd);
  return ok;
}

rtrace::store::CeilingRow ceiling(const char* name, const char* kind, const char* precision, const char* variant,
                                  double value, std::int64_t level_bytes) {
  rtrace::store::CeilingRow r{};
  rtrace::store::set_str(r.name, name);
  rtrace::store::set_str(r.kind, kind);
  rtrace::store::set_str(r.precision, precision);
  rtrace::store::set_str(r.variant, variant);
  r.value = value;
  r.max = value * 1.01;
  r.min = value * 0.99;
  r.repeats = 3;
  rtrace::store::set_str(r.unit, std::string(kind) == "bandwidth" ? "GB/s" : "GFLOP/s");
  r.level_bytes = level_bytes;
  r.unreliable = 0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, args;
  int sms = 0;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    args += std::string(i > 1 ? " " : "") + argv[i];
    const std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) out = argv[i + 1];
    if (a == "--sms" && i + 1 < argc) sms = std::atoi(argv[i + 1]);
    if (a == "--quick") quick = true;
  }
  if (out.empty() || sms < 1 || std::string(argc > 1 ? argv[1] : "") != "ert") {
    std::fprintf(stderr, "fake ERT: expected `ert --sms G ... -o FILE`, got `%s`\n", args.c_str());
    return 2;
  }
  if (const int pause = std::atoi(env("FAKE_ERT_SLEEP").c_str()); pause > 0) sleep(static_cast<unsigned>(pause));
  const std::string pct = env("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
  const std::string cvd = env("CUDA_VISIBLE_DEVICES").empty() ? "unset" : env("CUDA_VISIBLE_DEVICES");
  if (!tell_daemon("client role=ert pct=" + (pct.empty() ? std::string("none") : pct) + " cvd=" + cvd + " args=[" + args + "]")) {
    std::fprintf(stderr, "fake ERT: no MPS control daemon reachable (CUDA_MPS_PIPE_DIRECTORY=%s)\n",
                 env("CUDA_MPS_PIPE_DIRECTORY").c_str());
    return 3;
  }
  const std::string spec = env("RTRACE_TEST_FAKE_GPU");
  const auto at = spec.find("sms=");
  const int device = at == std::string::npos ? 132 : std::atoi(spec.c_str() + at + 4);
  int granted = static_cast<int>(std::ceil((pct.empty() ? 100 : std::atoi(pct.c_str())) * device / 100.0));
  granted = std::min((granted + 1) / 2 * 2, device);
  const int achieved = granted + std::atoi(env("FAKE_ERT_SMS_OFFSET").c_str());
  if (!env("FAKE_ERT_RECORD").empty()) {
    std::ofstream rec(env("FAKE_ERT_RECORD"), std::ios::app);
    rec << "ert sms=" << sms << " achieved=" << achieved << "\n";
  }
  namespace st = rtrace::store;
  const double s = achieved;
  std::vector<st::CeilingRow> rows = {
      ceiling("L1", "bandwidth", "", "", 250.0 * s, 256 * 1024 * static_cast<std::int64_t>(achieved)),
      ceiling("L2", "bandwidth", "", "", FAKE_CUDA_L2_GBS_PER_SM * s, 50LL << 20),
      ceiling("HBM", "bandwidth", "", "", 0.95 * std::min(FAKE_CUDA_GBS_PER_SM * s, FAKE_CUDA_HBM_GBS), -1),
      ceiling("FP64 FMA", "compute", "fp64", "fma", FAKE_CUDA_FP64_GFLOPS_PER_SM * s, -1),
      ceiling("FP32 FMA", "compute", "fp32", "fma", 2 * FAKE_CUDA_FP64_GFLOPS_PER_SM * s, -1),
      ceiling("TC FP64", "compute", "fp64", "mma", 2 * FAKE_CUDA_FP64_GFLOPS_PER_SM * s, -1)};
  try {
    auto f = st::File::create(out, /*overwrite=*/true);
    st::Group& root = f.root();
    st::write_root_attributes(root, "ert", "fake-gpu-ert " + args);
    st::write_machine(root, st::describe_this_machine());
    st::Group ert = root.create_group("ert");
    ert.set_attr("threads", std::int64_t(1));
    ert.set_attr("ranks", std::int64_t(1));
    ert.set_attr("sms_requested", std::int64_t(sms));
    ert.set_attr("sms_achieved", std::int64_t(achieved));
    ert.set_attr("quick", std::int64_t(quick ? 1 : 0));
    ert.set_attr("device", std::string("gpu"));
    ert.set_attr("partition_method", std::string("FAKE MPS client (test double, not a GPU)"));
    ert.write_table<st::CeilingRow>("ceilings", rows, "fake ceilings (tests only)");
    ert.write_table<st::ErtSampleRow>("samples", {}, "none: fake");
    f.close();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake ERT: cannot write `%s`: %s\n", out.c_str(), e.what());
    return 1;
  }
  return 0;
}
