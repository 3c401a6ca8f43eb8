#include "rtrace/launcher/ceilings.hpp"

#include "rtrace/launcher/process.hpp"
#include "rtrace/store/run_file.hpp"
#include "rtrace/store/validate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace fs = std::filesystem;

namespace rtrace::launcher {

std::string cache_dir(const Environment& env) {
  // The rule ERT uses for the machines' references (store::cache_dir).
  return store::cache_dir(env.get("RTRACE_CACHE_DIR").c_str(), env.get("XDG_CACHE_HOME").c_str(),
                          env.get("HOME").c_str());
}

std::string ert_cache_file(const Environment& env, const Partition& p, bool quick,
                           const std::vector<std::string>& hosts) {
  std::string host = store::hostname();
  if (hosts.size() > 1) {
    // FNV-1a of the node list: the same partition on other nodes is another entry.
    std::uint64_t h = 1469598103934665603ull;
    for (const auto& n : hosts)
      for (char c : n + ",") h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    host = hosts.front() + "+" + std::string(hex, 8);
  }
  return cache_dir(env) + "/ert/" + host + "-" + p.name() + "-" + store::ert_cache_version() + (quick ? "-quick" : "") +
         ".h5";
}

std::vector<store::CeilingRow> read_ceilings_from(const std::string& path, const Partition& p, std::string& detail,
                                                  std::vector<store::CeilingRow>* node_rows) {
  auto f = store::File::open(path);
  store::check_schema(f);
  const auto& root = f.root();
  if (root.exists("ert")) {
    detail = path;
    const auto ert = root.open_group("ert");
    if (node_rows && ert.exists("node_ceilings")) *node_rows = ert.read_table<store::CeilingRow>("node_ceilings");
    return store::read_ceilings(ert);
  }
  if (!root.exists("points")) throw store::SchemaError("read", path, "/", "neither /ert nor /points: no ceilings here");
  const auto points_group = root.open_group("points");
  std::vector<store::CeilingRow> fallback;
  std::string fallback_name;
  std::vector<store::SweepPointRow> rows;
  try {
    rows = store::read_points(f);
  } catch (const store::Error&) {
  }
  for (const auto& row : rows) {
    const auto name = store::point_group_name(row.point_id);
    if (!row.complete || !points_group.exists(name)) continue;
    const auto g = points_group.open_group(name);
    if (!g.exists("ceilings")) continue;
    auto c = store::read_ceilings(g);
    if (c.empty()) continue;
    const bool same = (row.threads == p.threads || (row.threads < 0 && p.threads <= 0)) &&
                      std::max(1, row.ranks) == p.ranks && std::max(0, row.sms_requested) == p.sms;
    if (same) {
      detail = path + ":/points/" + name;
      if (node_rows && g.exists("node_ceilings")) *node_rows = g.read_table<store::CeilingRow>("node_ceilings");
      return c;
    }
    if (fallback.empty()) {
      fallback = std::move(c);
      fallback_name = name;
    }
  }
  if (fallback.empty()) throw store::SchemaError("read", path, "/points", "no point with ceilings");
  detail = path + ":/points/" + fallback_name + " (no point of partition " + p.name() + ")";
  return fallback;
}

int ert_sms_achieved(const std::string& path) {
  try {
    auto f = store::File::open(path);
    if (!f.root().exists("ert")) return -1;
    const auto ert = f.root().open_group("ert");
    return ert.has_attr("sms_achieved") ? static_cast<int>(ert.attr_int("sms_achieved")) : -1;
  } catch (const std::exception&) {
    return -1;
  }
}

CeilingProvider::CeilingProvider(const RunOptions& o, const Environment& env, bool verbose, const LaunchSetup* launch)
    : opts_(o), env_(env), launch_(launch), verbose_(verbose) {}

std::vector<std::string> ert_command(const std::string& self, const Partition& p, bool quick, const std::string& out,
                                     const RunOptions& o, const LaunchSetup* launch, std::string& path, Environment& env) {
  std::vector<std::string> ert{"rtrace", "ert"};
  if (p.sms > 0) {
    ert.insert(ert.end(), {"--sms", std::to_string(p.sms)});  // a GPU partition: no --threads/--ranks
    // Under MPS the ERT is an MPS client with the app's percentage (no green
    // context): the same SMs by the same mechanism as the app.
    if (p.sm_method == "mps") ert.push_back("--mps");
  } else {
    ert.insert(ert.end(), {"--threads", std::to_string(p.threads)});
    if (p.ranks > 1) ert.insert(ert.end(), {"--ranks", std::to_string(p.ranks)});
    // Several nodes: each measures its own slice, all at once (per-node ceilings).
    if (p.nodes > 1) ert.push_back("--per-node");
  }
  if (quick) ert.push_back("--quick");
  ert.insert(ert.end(), {"-o", out, "--quiet"});
  path = self;
  if (p.sms > 0 && launch) {
    if (launch->mps) launch->mps->apply_percentage(env, p.sm_percentage);
    if (launch->gpu.fake && !launch->gpu.fake_ert.empty()) path = launch->gpu.fake_ert;  // the test seam
  }
  if (p.sms > 0 || p.ranks <= 1 || !launch) return ert;
  // Several ranks: started the way the app's ranks are.
  ert[0] = self;
  std::vector<std::string> argv;
  const bool srun = (o.launcher == LauncherChoice::Srun || (o.launcher == LauncherChoice::Auto && launch->in_slurm)) &&
                    !launch->srun_path.empty();
  if (srun) {
    path = launch->srun_path;
    argv = {"srun"};
    const auto placement = srun_placement(p, *launch);
    argv.insert(argv.end(), placement.begin(), placement.end());
    if (o.srun_mpi != "none") argv.push_back("--mpi=" + o.srun_mpi);
    argv.push_back("--cpus-per-task=" + std::to_string(p.threads));
    argv.push_back("--kill-on-bad-exit=1");
  } else if (!launch->mpirun_path.empty()) {
    path = launch->mpirun_path;
    argv = {"mpirun", "-np", std::to_string(p.ranks)};
    if (p.ranks > launch->cores) argv.push_back("--oversubscribe");
    argv.insert(argv.end(), {"--bind-to", "none"});
    if (launch->root) {
      env.set("OMPI_ALLOW_RUN_AS_ROOT", "1");
      env.set("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
  } else {
    ert[0] = "rtrace";
    return ert;  // ERT itself will explain that it needs an MPI launch
  }
  argv.insert(argv.end(), o.mpi_args.begin(), o.mpi_args.end());
  argv.insert(argv.end(), ert.begin(), ert.end());
  return argv;
}

std::vector<std::string> CeilingProvider::hosts_of(const Partition& p) const {
  return launch_ ? partition_hosts(p, *launch_) : std::vector<std::string>{};
}

bool CeilingProvider::needs_measurement(const Partition& p) const {
  if (opts_.ert != ErtMode::Auto && opts_.ert != ErtMode::Quick) return false;
  if (memo_.count(p)) return false;
  return !fs::exists(ert_cache_file(env_, p, opts_.ert == ErtMode::Quick, hosts_of(p)));
}

const PartitionCeilings& CeilingProvider::get(const Partition& p) {
  auto it = memo_.find(p);
  if (it != memo_.end()) return it->second;
  PartitionCeilings c;
  switch (opts_.ert) {
    case ErtMode::None: break;
    case ErtMode::File: c = import_file(p); break;
    case ErtMode::Auto:
    case ErtMode::Quick: c = measure(p); break;
  }
  if (c.interrupted) {  // not memoized: a resumed run measures again
    static PartitionCeilings last;
    last = c;
    return last;
  }
  return memo_.emplace(p, std::move(c)).first->second;
}

PartitionCeilings CeilingProvider::import_file(const Partition& p) const {
  PartitionCeilings c;
  try {
    c.rows = read_ceilings_from(opts_.ert_file, p, c.source, &c.node_rows);
    // The report says these came from the user's file, whatever the file
    // said of them (it keeps `measured` and any reference date).
    for (auto* rows : {&c.rows, &c.node_rows})
      for (auto& r : *rows) store::set_str(r.source, "file");
  } catch (const std::exception& e) {
    c.error = std::string("--ert ") + opts_.ert_file + ": " + e.what();
  }
  return c;
}

namespace {

bool any_unreliable(const std::vector<store::CeilingRow>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const store::CeilingRow& r) { return r.unreliable > 0; });
}

std::string fmt1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

bool smaller_partition_of_same_kind(const Partition& a, const Partition& b) {
  if ((a.sms > 0) != (b.sms > 0)) return false;
  if (a.sms > 0) return a.sms < b.sms;
  return a.nodes == b.nodes && a.threads <= b.threads && a.ranks <= b.ranks && a.threads * a.ranks < b.threads * b.ranks;
}

int partition_workers(const Partition& p) { return p.sms > 0 ? p.sms : std::max(1, p.threads) * std::max(1, p.ranks); }

std::vector<std::string> compare_with_smaller_partition(std::vector<store::CeilingRow>& larger,
                                                        const std::vector<store::CeilingRow>& smaller,
                                                        const std::string& smaller_name, double worker_ratio) {
  std::vector<std::string> found;
  for (auto& l : larger) {
    const std::string name = store::get_str(l.name);
    for (const auto& s : smaller) {
      if (store::get_str(s.name) != name || !(s.value > 0) || !(l.value > 0) || s.unreliable > 0) continue;
      const double tol = store::ceiling_noise_tolerance(l, s);  // the tolerance rule of ERT's own checks
      const std::string unit = store::get_str(l.unit);
      if (l.value < s.value * (1 - tol))
        found.push_back(name + " " + fmt1(l.value) + " " + unit + " below " + fmt1(s.value) +
                        " on the smaller partition " + smaller_name);
      else if (worker_ratio > 0 && l.value > worker_ratio * s.value * (1 + tol))
        found.push_back(name + " " + fmt1(l.value) + " " + unit + " above " + fmt1(worker_ratio) + " x " +
                        fmt1(s.value) + " on the smaller partition " + smaller_name);
    }
  }
  return found;
}

void mark_unreliable(std::vector<store::CeilingRow>& rows, const std::vector<std::string>& reasons) {
  for (auto& r : rows) {
    const std::string name = store::get_str(r.name) + " ";
    for (const auto& why : reasons) {
      if (why.rfind(name, 0) != 0) continue;
      std::string text = store::get_str(r.unreliable_reason);
      text += (text.empty() ? "" : "; ") + why;
      r.unreliable = 1;
      store::set_text(r.unreliable_reason, text);
    }
  }
}

std::string unreliable_summary(const std::vector<store::CeilingRow>& rows) {
  // One reason often covers every ceiling (a busy machine): said once.
  std::vector<std::string> said;
  std::string s;
  for (const auto& r : rows) {
    if (r.unreliable <= 0) continue;
    const std::string why = store::get_str(r.unreliable_reason);
    if (std::find(said.begin(), said.end(), why) != said.end()) continue;
    said.push_back(why);
    s += (s.empty() ? "" : "; ") + why;
  }
  return s;
}

std::vector<std::string> unreliable_names(const std::vector<store::CeilingRow>& rows) {
  std::vector<std::string> names;
  for (const auto& r : rows)
    if (r.unreliable > 0) names.push_back(store::get_str(r.name));
  return names;
}

std::vector<std::string> CeilingProvider::check_against_smaller(const Partition& p,
                                                                std::vector<store::CeilingRow>& rows) const {
  std::vector<std::string> found;
  auto compare = [&](const Partition& other, const std::vector<store::CeilingRow>& other_rows) {
    auto v = compare_with_smaller_partition(rows, other_rows, other.name(),
                                            double(partition_workers(p)) / partition_workers(other));
    found.insert(found.end(), v.begin(), v.end());
  };
  for (const auto& [other, c] : memo_)
    if (smaller_partition_of_same_kind(other, p) && !c.rows.empty()) compare(other, c.rows);
  // One worker (t1) not measured in this run: its cached result, reliable
  // only, the same sweep kind first (a quick and a full ERT agree within
  // their noise).
  const Partition one;
  if (p.sms == 0 && p.nodes <= 1 && smaller_partition_of_same_kind(one, p) && !memo_.count(one)) {
    const bool quick = opts_.ert == ErtMode::Quick;
    for (const bool q : {quick, !quick}) {
      const std::string cached = ert_cache_file(env_, one, q);
      if (!fs::exists(cached) || store::hdf5_failure(cached)) continue;
      try {
        std::string detail;
        auto one_rows = read_ceilings_from(cached, one, detail);
        if (one_rows.empty() || any_unreliable(one_rows)) continue;
        compare(one, one_rows);
        break;
      } catch (const std::exception&) {
      }
    }
  }
  return found;
}

PartitionCeilings CeilingProvider::run_ert(const Partition& p, bool quick, const std::string& out) {
  PartitionCeilings c;
  ProcessSpec spec;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string self_path = n > 0 ? std::string(self, static_cast<std::size_t>(n)) : "/proc/self/exe";
  Environment ert_env = env_;
  spec.argv = ert_command(self_path, p, quick, out, opts_, launch_, spec.path, ert_env);
  spec.env = ert_env.to_envp();
  spec.echo = verbose_;
  spec.grace_s = opts_.grace_s;
  spec.timeout_s = opts_.ert_timeout_s;
  const auto r = run_process(spec);
  std::error_code ec;
  if (r.kind == ExitKind::Interrupted) {
    fs::remove(out, ec);
    c.interrupted = true;
    c.error = "interrupted";
    return c;
  }
  if (r.kind != ExitKind::Exited || r.exit_code != 0) {
    fs::remove(out, ec);
    std::string tail = r.stderr_tail;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
    if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
    char limit[32];
    std::snprintf(limit, sizeof limit, "%g", opts_.ert_timeout_s);
    c.error = "`" + join_quoted(spec.argv) + "` " +
              (r.kind == ExitKind::TimedOut ? std::string("timed out after ") + limit + " s (--ert-timeout)"
                                            : "failed (" +
                                                  (r.kind == ExitKind::LaunchError ? r.launch_error
                                                   : r.kind == ExitKind::Exited    ? "exit " + std::to_string(r.exit_code)
                                                                                   : "signal " + std::to_string(r.signal)) +
                                                  ")") +
              (tail.empty() ? "" : ": " + tail);
    return c;
  }
  try {
    c.rows = read_ceilings_from(out, p, c.source, &c.node_rows);
  } catch (const std::exception& e) {
    fs::remove(out, ec);
    c.error = std::string("ERT result unreadable: ") + e.what();
  }
  return c;
}

PartitionCeilings CeilingProvider::measure(const Partition& p) {
  PartitionCeilings c;
  const bool quick = opts_.ert == ErtMode::Quick;
  const std::string cached = ert_cache_file(env_, p, quick, hosts_of(p));
  // A cached file is used when it reads back, holds no unreliable ceiling
  // and, for an SM partition, was measured on the SMs this partition grants;
  // a damaged, untrustworthy or mismatched one is measured again.
  // It must also hold against the smaller partitions known now (an entry
  // cached before those checks existed, e.g. FLOP ceilings 100x low).
  if (fs::exists(cached) && !store::hdf5_failure(cached)) {
    try {
      c.rows = read_ceilings_from(cached, p, c.source, &c.node_rows);
      c.source = cached;
      const bool same_sms = p.sms <= 0 || ert_sms_achieved(cached) == p.sms;
      if (!same_sms && verbose_)
        std::fprintf(stderr, "rtrace: %s: the cached ERT ran on %d SMs, the partition grants %d: measuring again\n",
                     p.name().c_str(), ert_sms_achieved(cached), p.sms);
      if (!c.rows.empty() && !any_unreliable(c.rows) && same_sms) {
        const auto implausible = check_against_smaller(p, c.rows);
        if (implausible.empty()) return c;
        if (verbose_)
          std::fprintf(stderr, "rtrace: %s: cached ceilings not used (%s): measuring again\n", p.name().c_str(),
                       implausible.front().c_str());
      }
    } catch (const std::exception&) {
    }
    c = PartitionCeilings{};
  }
  std::error_code ec;
  fs::create_directories(fs::path(cached).parent_path(), ec);
  if (ec) {
    c.error = "cannot create the ERT cache directory " + fs::path(cached).parent_path().string() + ": " + ec.message();
    return c;
  }
  // ERT writes a temp name that is renamed into place only when complete, so
  // concurrent sweeps on one host never read half a file.
  const std::string tmp = cached + ".tmp." + std::to_string(getpid());
  // An SM partition's ceilings are only its own when the ERT's %smid probe saw
  // the granted SMs (MPS: a limit, not a reservation).
  auto mark_other_sms = [&](PartitionCeilings& measured) {
    if (p.sms <= 0) return;
    const int got = ert_sms_achieved(tmp);
    if (got == p.sms) return;
    const std::string why = "the ERT ran on " + (got < 0 ? std::string("an unknown number of") : std::to_string(got)) +
                            " SMs (%smid), the partition grants " + std::to_string(p.sms);
    for (auto& r : measured.rows) {
      std::string text = store::get_str(r.unreliable_reason);
      r.unreliable = 1;
      store::set_text(r.unreliable_reason, text + (text.empty() ? "" : "; ") + why);
    }
  };
  c = run_ert(p, quick, tmp);
  if (!c.error.empty()) return c;
  mark_other_sms(c);
  // A larger partition below a smaller one of the same kind, or above its
  // workers' ratio times it: marked unreliable, not measured again. A
  // partition is measured at most once per sweep: on a busy machine the
  // second ERT was as disturbed as the first, and counted sweeps of real
  // codes spent 1-3.5 minutes re-measuring a 2-rank partition (issue 29).
  // ERT itself re-measures a violating series (at most twice), on a quiet
  // machine only.
  mark_unreliable(c.rows, check_against_smaller(p, c.rows));
  // Unreliable results never enter the cache: they are kept beside it for
  // the record (the point's ceilings_source) and measured again next time.
  const std::string target = any_unreliable(c.rows) ? cached.substr(0, cached.size() - 3) + ".unreliable.h5" : cached;
  fs::rename(tmp, target, ec);
  if (ec) {
    c.error = "cannot move the ERT result into the cache (" + target + "): " + ec.message();
    fs::remove(tmp, ec);
    return c;
  }
  if (target != cached) fs::remove(cached, ec);  // an older reliable entry would now contradict this one
  c.source = target;
  return c;
}

}  // namespace rtrace::launcher
