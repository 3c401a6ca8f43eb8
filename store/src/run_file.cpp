#include "rtrace/store/run_file.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <cerrno>
#include <cmath>
#include <map>
#include <dirent.h>
#include <set>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rtrace::store {

const char* schema_version() noexcept { return RTRACE_SCHEMA_VERSION_STRING; }
int schema_major() noexcept { return std::atoi(RTRACE_SCHEMA_VERSION_STRING); }
const char* rtrace_version() noexcept { return RTRACE_VERSION_STRING; }
// 1: up to 2026-11-29; 2: the bandwidth kernel unrolled, a level = the upper median of its plateau.
const char* ert_method() noexcept { return "3"; }
std::string ert_cache_version() { return std::string(rtrace_version()) + "-ert" + ert_method(); }

std::string iso8601_utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cache_dir(const char* rtrace_cache_dir, const char* xdg_cache_home, const char* home) {
  auto set = [](const char* v) { return v && *v; };
  if (set(rtrace_cache_dir)) return rtrace_cache_dir;
  if (set(xdg_cache_home)) return std::string(xdg_cache_home) + "/rtrace";
  if (set(home)) return std::string(home) + "/.cache/rtrace";
  return (std::filesystem::temp_directory_path() / "rtrace-cache").string();
}

void write_root_attributes(Group& root, const std::string& file_kind, const std::string& command_line) {
  root.set_attr("schema_name", kSchemaName);
  root.set_attr("schema_version", schema_version());
  root.set_attr("rtrace_version", rtrace_version());
  root.set_attr("created", iso8601_utc_now());
  root.set_attr("command_line", command_line);
  root.set_attr("hostname", hostname());
  root.set_attr("file_kind", file_kind);
}

void check_schema(const File& file) {
  const Group& root = file.root();
  if (!root.has_attr("schema_name") || root.attr_string("schema_name") != kSchemaName)
    throw FormatError("open", file.path(), "/", "not an rtrace file (no schema_name=\"rtrace\" attribute)");
  if (!root.has_attr("schema_version")) throw FormatError("open", file.path(), "/", "no schema_version attribute");
  std::string v = root.attr_string("schema_version");
  int major = std::atoi(v.c_str());
  if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])))
    throw FormatError("open", file.path(), "/", "malformed schema_version `" + v + "`");
  if (major != schema_major())
    throw FormatError("open", file.path(), "/",
                      "schema version " + v + " is not supported by this rtrace (" + rtrace_version() + " reads " +
                          std::to_string(schema_major()) + ".x)");
}

void write_run_metadata(Group& root, const RunMetadata& meta) {
  Group run = root.require_group("run");
  run.set_attr("command_line", meta.command_line);
  run.set_attr("sweep_spec", meta.sweep_spec);
  run.set_attr("options_json", meta.options_json.empty() ? std::string("{}") : meta.options_json);
  run.set_attr("launcher", meta.launcher);
  run.set_attr("slurm_job_id", meta.slurm_job_id);
  run.set_attr("slurm_nodelist", meta.slurm_nodelist);
  run.set_attr("slurm_task_layout", meta.slurm_task_layout);
  run.set_attr("rtrace_version", rtrace_version());
  run.set_attr("hdf5_version", std::to_string(H5_VERS_MAJOR) + "." + std::to_string(H5_VERS_MINOR) + "." +
                                   std::to_string(H5_VERS_RELEASE));
  if (run.exists("app_argv")) run.remove("app_argv");
  run.write_strings("app_argv", meta.app_argv, "the application's argv, verbatim");
  std::vector<std::string> env;
  for (const auto& [k, v] : meta.environment) env.push_back(k + "=" + v);
  if (run.exists("environment")) run.remove("environment");
  run.write_strings("environment", env, "recorded environment variables (NAME=VALUE), deny-list applied");
}

RunMetadata read_run_metadata(const Group& root) {
  RunMetadata m;
  Group run = root.open_group("run");
  m.command_line = run.attr_string("command_line");
  m.sweep_spec = run.attr_string("sweep_spec");
  m.options_json = run.attr_string("options_json");
  m.launcher = run.attr_string("launcher");
  m.slurm_job_id = run.attr_string("slurm_job_id");
  m.slurm_nodelist = run.attr_string("slurm_nodelist");
  m.slurm_task_layout = run.attr_string("slurm_task_layout");
  m.app_argv = run.read_strings("app_argv");
  for (const auto& kv : run.read_strings("environment")) {
    auto eq = kv.find('=');
    m.environment.emplace_back(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
  }
  return m;
}

void write_machine(Group& root, const MachineInfo& m) {
  Group g = root.require_group("machine");
  g.set_attr("hostname", m.hostname);
  g.set_attr("cpu_model", m.cpu_model);
  g.set_attr("os", m.os);
  g.set_attr("sockets", static_cast<std::int64_t>(m.sockets));
  g.set_attr("cores", static_cast<std::int64_t>(m.cores));
  g.set_attr("pus", static_cast<std::int64_t>(m.pus));
  g.set_attr("memory_bytes", m.memory_bytes);
  if (m.vector_bits > 0) g.set_attr("vector_bits", static_cast<std::int64_t>(m.vector_bits));
  if (g.exists("caches")) g.remove("caches");
  g.write_table("caches", m.caches, "CPU caches from hwloc");
  if (g.exists("gpus")) g.remove("gpus");
  g.write_table("gpus", m.gpus, "GPUs visible to the run (CUDA device properties)");
}

MachineInfo read_machine(const Group& root) {
  MachineInfo m;
  Group g = root.open_group("machine");
  m.hostname = g.attr_string("hostname");
  m.cpu_model = g.attr_string("cpu_model");
  m.os = g.attr_string("os");
  m.sockets = static_cast<std::int32_t>(g.attr_int("sockets"));
  m.cores = static_cast<std::int32_t>(g.attr_int("cores"));
  m.pus = static_cast<std::int32_t>(g.attr_int("pus"));
  m.memory_bytes = g.attr_int("memory_bytes");
  if (g.has_attr("vector_bits")) m.vector_bits = static_cast<std::int32_t>(g.attr_int("vector_bits"));  // 1.8
  m.caches = g.read_table<CacheRow>("caches");
  m.gpus = g.read_table<GpuRow>("gpus");
  return m;
}

std::string point_group_name(std::int64_t point_id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%06lld", static_cast<long long>(point_id));
  return buf;
}

std::string rank_group_name(std::int64_t rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "r%06lld", static_cast<long long>(rank));
  return buf;
}

namespace {
constexpr const char* kNamesDescription = "name_id -> region/kernel/MPI function name";
constexpr const char* kCountsInfoDescription = "one row: where the counts come from (sim/pmu) and their status";
constexpr const char* kDispatchDescription = "code libraries chose at run time in this process (the tracer observed it)";
constexpr const char* kCountLevelsDescription = "simulated cache levels: this rank's share of each cache";
constexpr const char* kCountsDescription =
    "counted FLOPs by precision and vector width, bytes per level, per thread and function";
}  // namespace

void attach_counts(Group& g, const RankRecords& counted) {
  std::vector<std::string> names = g.exists("names") ? g.read_strings("names") : std::vector<std::string>{};
  std::map<std::string, std::int64_t> index;
  for (std::size_t i = 0; i < names.size(); ++i) index.emplace(names[i], static_cast<std::int64_t>(i));
  auto intern = [&](std::int64_t id) -> std::int64_t {
    if (id < 0 || id >= static_cast<std::int64_t>(counted.names.size())) return -1;
    const std::string& name = counted.names[static_cast<std::size_t>(id)];
    auto it = index.find(name);
    if (it != index.end()) return it->second;
    const auto fresh = static_cast<std::int64_t>(names.size());
    names.push_back(name);
    index.emplace(name, fresh);
    return fresh;
  };
  std::vector<CountRow> rows = counted.counts;
  for (auto& r : rows) {
    r.function_id = intern(r.function_id);
    r.module_id = intern(r.module_id);
  }
  if (g.exists("names")) g.remove("names");
  g.write_strings("names", names, kNamesDescription);
  for (const char* table : {"counts_info", "count_levels", "counts"})
    if (g.exists(table)) g.remove(table);
  g.write_table("counts_info", counted.counts_info, kCountsInfoDescription);
  g.write_table("count_levels", counted.count_levels, kCountLevelsDescription);
  g.write_table("counts", rows, kCountsDescription);
}

void write_rank(Group& ranks_group, const RankRecords& r) {
  Group g = ranks_group.create_group(rank_group_name(r.info.rank));
  g.write_table("info", std::vector<RankInfoRow>{r.info}, "one row: this rank's process, rusage and tracer status");
  g.write_strings("names", r.names, kNamesDescription);
  g.write_table("regions", r.regions, "annotated regions, aggregated per name");
  g.write_table("kernels", r.kernels, "CUDA kernel launches");
  g.write_table("memcpy", r.memcpy, "CUDA memcpy/memset activity");
  g.write_table("mpi", r.mpi, "MPI calls per function");
  g.write_strings("log", r.log, "tracer warnings and errors");
  if (!r.sampling.empty()) {
    g.write_table("sampling", r.sampling, "one row: the sampler's rate, clock and totals");
    g.write_table("callpaths", r.callpaths, "sampled call-path tree per thread: self and inclusive samples");
  }
  if (!r.counts_info.empty()) {
    g.write_table("counts_info", r.counts_info, kCountsInfoDescription);
    g.write_table("count_levels", r.count_levels, kCountLevelsDescription);
    g.write_table("counts", r.counts, kCountsDescription);
  }
  if (!r.dispatch.empty()) g.write_table("dispatch", r.dispatch, kDispatchDescription);
  if (!r.writer.empty()) g.set_attr("writer", r.writer);
}

RankRecords read_rank(const Group& g) { return read_rank_parts(g, kRankAll); }

RankRecords read_rank_parts(const Group& g, unsigned parts) {
  RankRecords r;
  auto info = g.read_table<RankInfoRow>("info");
  if (info.size() != 1) throw SchemaError("read rank", g.file(), g.child_path("info"), "expected exactly one row");
  r.info = info[0];
  if (parts & kRankNames) r.names = g.read_strings("names");
  if (parts & kRankRegions) r.regions = g.read_table<RegionRow>("regions");
  const std::string mode = get_str(r.info.tracer_mode);
  const bool cpu_only = (mode == "cpu" || mode == "none") && r.info.gpu_available == 0;
  if ((parts & kRankKernels) || ((parts & kRankGpuKernels) && !cpu_only)) r.kernels = g.read_table<KernelRow>("kernels");
  if (parts & kRankMemcpy) r.memcpy = g.read_table<MemcpyRow>("memcpy");
  if (parts & kRankMpi) r.mpi = g.read_table<MpiRow>("mpi");
  if (parts & kRankLog) r.log = g.read_strings("log");
  if (parts & kRankSampling) {  // schema >= 1.3
    if (g.exists("sampling")) r.sampling = g.read_table<SamplingRow>("sampling");
    if (g.exists("callpaths")) r.callpaths = g.read_table<CallPathRow>("callpaths");
  }
  if ((parts & kRankCounts) && g.exists("counts_info")) {  // schema >= 1.7
    r.counts_info = g.read_table<CountInfoRow>("counts_info");
    r.count_levels = g.read_table<CountLevelRow>("count_levels");
    r.counts = g.read_table<CountRow>("counts");
  }
  if ((parts & kRankDispatch) && g.exists("dispatch")) r.dispatch = g.read_table<DispatchRow>("dispatch");  // >= 1.8
  if (g.has_attr("writer")) r.writer = g.attr_string("writer");
  return r;
}

std::string rank_ranges(std::vector<std::int64_t> ranks, std::size_t max_chars) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string s;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    std::string item = std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    // Room for the item, and for ",..." unless it is the last one.
    const std::size_t need = s.size() + (s.empty() ? 0 : 1) + item.size() + (j + 1 < ranks.size() ? 4 : 0);
    if (need > max_chars) return s + (s.empty() ? "..." : ",...");
    s += (s.empty() ? "" : ",") + item;
    i = j + 1;
  }
  return s;
}

std::vector<HostRow> hosts_of_ranks(const Group& ranks_group, const std::vector<std::string>& placed,
                                    const std::vector<std::string>& failed) {
  std::map<std::string, std::vector<std::int64_t>> by_host;
  for (const auto& name : ranks_group.children()) {
    const auto info = ranks_group.open_group(name).read_table<RankInfoRow>("info");
    if (info.size() == 1) by_host[get_str(info[0].host)].push_back(info[0].rank);
  }
  std::vector<std::string> order = placed;
  for (const auto& [host, ranks] : by_host)
    if (std::find(order.begin(), order.end(), host) == order.end()) order.push_back(host);
  std::vector<HostRow> rows;
  for (const auto& host : order) {
    HostRow row{};
    set_str(row.host, host);
    auto it = by_host.find(host);
    row.ranks = it == by_host.end() ? 0 : static_cast<std::int32_t>(it->second.size());
    set_str(row.rank_list, it == by_host.end() ? std::string() : rank_ranges(it->second, sizeof row.rank_list - 1));
    const bool is_placed = std::find(placed.begin(), placed.end(), host) != placed.end();
    row.placed = placed.empty() ? -1 : (is_placed ? 1 : 0);
    const bool is_failed = std::find(failed.begin(), failed.end(), host) != failed.end();
    set_str(row.state, is_failed ? "failed" : (row.ranks == 0 ? "missing" : "ok"));
    rows.push_back(row);
  }
  return rows;
}

void write_output(Group& point, const CapturedOutput& out) {
  point.write_text("stdout", out.stdout_tail, "tail of the application's standard output");
  point.write_text("stderr", out.stderr_tail, "tail of the application's standard error");
  point.set_attr("stdout_bytes", out.stdout_bytes);
  point.set_attr("stderr_bytes", out.stderr_bytes);
}

CapturedOutput read_output(const Group& point) {
  CapturedOutput o;
  o.stdout_tail = point.read_text("stdout");
  o.stderr_tail = point.read_text("stderr");
  o.stdout_bytes = point.attr_int("stdout_bytes");
  o.stderr_bytes = point.attr_int("stderr_bytes");
  return o;
}

// ------------------------------------------------------------ transactions

namespace {

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// A file's fsync must succeed: on a full filesystem delayed writes fail here,
// and renaming such a file over the run file would lose data. A directory's
// fsync is best effort (some filesystems refuse it).
void fsync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) {
    if (directory) return;
    throw FileError("sync", path, "", std::strerror(errno));
  }
  if (::fsync(fd) != 0 && !directory) {
    int e = errno;
    ::close(fd);
    throw FileError("sync", path, "", std::strerror(e));
  }
  ::close(fd);
}

void copy_file(const std::string& from, const std::string& to) {
  int in = ::open(from.c_str(), O_RDONLY);
  if (in < 0) throw FileError("copy", from, "", std::strerror(errno));
  struct stat st {};
  fstat(in, &st);
  // O_EXCL | O_NOFOLLOW: never write through a file or symlink planted at the temp path.
  int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0777);
  if (out < 0) {
    int e = errno;
    ::close(in);
    throw FileError("create", to, "", std::strerror(e));
  }
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(in), ::close(out);
      throw FileError("copy", from, "", std::strerror(e));
    }
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = ::write(out, buf.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0) {
        if (errno == EINTR) continue;
        int e = errno;
        ::close(in), ::close(out);
        throw FileError("write", to, "", std::strerror(e));
      }
      done += w;
    }
  }
  ::close(in);
  if (::close(out) != 0) throw FileError("write", to, "", std::strerror(errno));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const std::string& tmp)>& make) {
  const std::string tmp = path + ".rtrace-tmp";
  ::unlink(tmp.c_str());  // a stale temp file from a killed writer
  report_temp_file(tmp);
  try {
    make(tmp);
    fsync_path(tmp, false);
    // Read the new file back before it replaces the old one: HDF5 can report
    // success for writes that a full filesystem dropped.
    {
      File check = File::open(tmp);
      check.root().children();
      if (check.root().is_group("sweep") && check.root().open_group("sweep").exists("points")) read_points(check);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw FileError("rename", tmp, "", std::strerror(errno));
    fsync_path(dir_of(path), true);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

void transaction(const std::string& path, const std::function<void(File&)>& fn) {
  write_file_atomically(path, [&](const std::string& tmp) {
    copy_file(path, tmp);
    File f = File::open(tmp, Access::ReadWrite);
    fn(f);
    f.root().set_attr("modified", iso8601_utc_now());
    f.close();
  });
}

// ------------------------------------------------------------ RunFile

namespace {

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string sibling(const std::string& path, const std::string& name) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? name : path.substr(0, slash + 1) + name;
}

// "p000003.h5" or "p000003-<k>.h5": the names a writer gives point files.
bool is_point_file_name(const std::string& n) {
  if (n.size() < 10 || n[0] != 'p' || n.compare(n.size() - 3, 3, ".h5") != 0) return false;
  for (std::size_t i = 1; i < 7; ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  const std::string rest = n.substr(7, n.size() - 10);
  if (rest.empty()) return true;
  if (rest[0] != '-' || rest.size() < 2) return false;
  for (std::size_t i = 1; i < rest.size(); ++i)
    if (rest[i] < '0' || rest[i] > '9') return false;
  return true;
}

bool is_temp_name(const std::string& n) {
  return n.size() > 11 && n.compare(n.size() - 11, 11, ".rtrace-tmp") == 0;
}

// A points directory name stored in a file must stay next to it.
void check_points_dir_name(const std::string& name, const std::string& file) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw FormatError("open", file, "/", "root attribute points_dir `" + name + "` is not a plain directory name");
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return names;
}

// Makes the points directory (or accepts an existing one holding no point
// files; with `clear`, empties it). Returns whether it was created here.
bool prepare_points_dir(const std::string& dir, bool clear) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (::mkdir(dir.c_str(), 0777) != 0) throw FileError("create", dir, "", std::strerror(errno));
    report_created_dir(dir);
    return true;
  }
  if (!S_ISDIR(st.st_mode)) throw FileError("create", dir, "", "exists and is not a directory (the run's point files go there)");
  for (const auto& n : list_dir(dir)) {
    if (is_temp_name(n)) {
      ::unlink((dir + "/" + n).c_str());
    } else if (is_point_file_name(n)) {
      if (!clear)
        throw FileError("create", dir, "",
                        "holds point files of another run (remove the directory or choose another -o)");
      ::unlink((dir + "/" + n).c_str());
    }
  }
  return false;
}

// A name in `dir` for a new file of point `id`: never the one a committed
// point uses, so the old file stays whole until the index stops naming it.
std::string fresh_point_file(const std::string& dir, std::int64_t id) {
  const std::string base = point_group_name(id);
  for (int k = 0;; ++k) {
    std::string name = k == 0 ? base + ".h5" : base + "-" + std::to_string(k) + ".h5";
    struct stat st {};
    if (::lstat((dir + "/" + name).c_str(), &st) != 0 && errno == ENOENT) return name;
  }
}

}  // namespace

std::string default_points_dir(const std::string& run_path) { return base_of(run_path) + ".d"; }

RunFile RunFile::create(const std::string& path, const RunMetadata& meta, const MachineInfo& machine,
                        const std::vector<SweepAxisRow>& axes, const std::vector<SweepPointRow>& plan, bool overwrite,
                        std::optional<std::string> points_dir) {
  if (!overwrite && ::access(path.c_str(), F_OK) == 0)
    throw FileError("create", path, "", "file exists (use --resume to continue it, or choose another file with -o)");
  const std::string dir_name = points_dir ? *points_dir : default_points_dir(path);
  bool made_dir = false;
  if (!dir_name.empty()) {
    check_points_dir_name(dir_name, path);
    // Overwriting a run discards its point files; a directory without its run file is refused.
    made_dir = prepare_points_dir(sibling(path, dir_name), overwrite && ::access(path.c_str(), F_OK) == 0);
  }
  try {
    write_file_atomically(path, [&](const std::string& tmp) {
      File f = File::create(tmp);
      Group& root = f.root();
      write_root_attributes(root, "run", meta.command_line);
      if (!dir_name.empty()) root.set_attr("points_dir", dir_name);
      write_run_metadata(root, meta);
      write_machine(root, machine);
      {
        Group sweep = root.create_group("sweep");
        sweep.write_table("axes", axes, "sweep axes as given on the command line");
        std::vector<SweepPointRow> rows = plan;
        for (auto& r : rows) r.complete = 0;
        sweep.create_table<SweepPointRow>("points", "one row per planned point; complete=1 once committed", 256).append(rows);
      }
      root.create_group("points");
      f.close();
    });
  } catch (...) {
    if (made_dir) ::rmdir(sibling(path, dir_name).c_str());
    throw;
  }
  return open(path);
}

RunFile RunFile::open(const std::string& path) {
  RunFile r;
  r.path_ = path;
  r.reload();
  if (r.points_dir_.empty()) return r;
  // Remove what a killed writer left: temp files, and point files that the
  // index does not link (written, but the index update never happened).
  const std::string dir = sibling(path, r.points_dir_);
  std::set<std::string> linked;
  {
    File f = File::open(path);
    if (f.root().exists("points")) {
      Group points = f.root().open_group("points");
      for (const auto& name : points.children())
        if (auto target = points.external_link_file(name))
          if (target->rfind(r.points_dir_ + "/", 0) == 0) linked.insert(target->substr(r.points_dir_.size() + 1));
    }
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    // No point committed yet and the file was moved alone: start the directory.
    if (linked.empty() && ::mkdir(dir.c_str(), 0777) == 0) return r;
    throw FileError("open", dir, "", "the run's points directory is missing (keep it next to the run file)");
  }
  if (!S_ISDIR(st.st_mode)) throw FileError("open", dir, "", "the run's points directory is not a directory");
  // An index copied or renamed away from its run (`cp run.h5 copy.h5`) still
  // names run.h5.d: files there that this index does not link may be the
  // other index's newer points, or a live writer's temps. Never delete them.
  if (r.points_dir_ != default_points_dir(path)) return r;
  for (const auto& n : list_dir(dir))
    if (is_temp_name(n) || (is_point_file_name(n) && !linked.count(n))) ::unlink((dir + "/" + n).c_str());
  return r;
}

void RunFile::reload() {
  File f = File::open(path_);
  check_schema(f);
  points_ = read_points(f);
  points_dir_ = f.root().has_attr("points_dir") ? f.root().attr_string("points_dir") : std::string();
  if (!points_dir_.empty()) check_points_dir_name(points_dir_, path_);
  command_line_ = f.root().has_attr("command_line") ? f.root().attr_string("command_line") : std::string();
}

std::size_t RunFile::row_index(std::int64_t point_id) const {
  for (std::size_t i = 0; i < points_.size(); ++i)
    if (points_[i].point_id == point_id) return i;
  throw SchemaError("commit point", path_, "/sweep/points", "point " + std::to_string(point_id) + " is not in the plan");
}

void RunFile::commit_point(SweepPointRow row, const std::function<void(Group&)>& fill) {
  row.complete = std::string(row.status) == "pending" ? 0 : 1;
  commit_points({row}, [&](std::size_t, Group& points, const std::string& name) {
    Group g = points.create_group(name);
    g.set_attr("point_id", static_cast<std::int64_t>(row.point_id));
    g.set_attr("label", get_str(row.label));
    g.set_attr("status", get_str(row.status));
    g.require_group("ranks");
    fill(g);
  });
}

void RunFile::commit_points(const std::vector<SweepPointRow>& rows,
                            const std::function<void(std::size_t, Group&, const std::string&)>& make) {
  std::vector<std::size_t> index;
  for (const auto& r : rows) index.push_back(row_index(r.point_id));

  if (points_dir_.empty()) {  // single file: everything in one transaction
    transaction(path_, [&](File& f) {
      Group points = f.root().require_group("points");
      Table<SweepPointRow> table = f.root().open_group("sweep").open_table<SweepPointRow>("points");
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string name = point_group_name(rows[i].point_id);
        if (points.exists(name)) points.remove(name);
        make(i, points, name);
        table.write_at(index[i], rows[i]);
      }
    });
  } else {
    // 1. Each point into a file of its own, whole and fsynced before any index names it.
    const std::string dir = sibling(path_, points_dir_);
    std::vector<std::string> written, replaced;
    try {
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::string name = point_group_name(rows[i].point_id);
        const std::string file = fresh_point_file(dir, rows[i].point_id);
        write_file_atomically(dir + "/" + file, [&](const std::string& tmp) {
          File f = File::create(tmp);
          write_root_attributes(f.root(), "point", command_line_);
          {
            Group points = f.root().create_group("points");
            make(i, points, name);
          }
          f.close();
        });
        written.push_back(file);
      }
      // 2. One index transaction links them and marks their rows complete.
      transaction(path_, [&](File& f) {
        Group points = f.root().require_group("points");
        Table<SweepPointRow> table = f.root().open_group("sweep").open_table<SweepPointRow>("points");
        for (std::size_t i = 0; i < rows.size(); ++i) {
          const std::string name = point_group_name(rows[i].point_id);
          if (points.exists(name)) {
            if (auto old = points.external_link_file(name))
              if (old->rfind(points_dir_ + "/", 0) == 0) replaced.push_back(old->substr(points_dir_.size() + 1));
            points.remove(name);
          }
          points.create_external_link(name, points_dir_ + "/" + written[i], "/points/" + name);
          table.write_at(index[i], rows[i]);
        }
      });
    } catch (...) {
      for (const auto& w : written) ::unlink((dir + "/" + w).c_str());
      throw;
    }
    // The index no longer names these: a reader holding the old index open
    // keeps an open point file readable (POSIX unlink semantics).
    for (const auto& old : replaced)
      if (std::find(written.begin(), written.end(), old) == written.end() && is_point_file_name(old))
        ::unlink((dir + "/" + old).c_str());
  }
  for (std::size_t i = 0; i < rows.size(); ++i) points_[index[i]] = rows[i];
}

void pack_run(const std::string& run, const std::string& out) {
  struct stat st {};
  if (::lstat(out.c_str(), &st) == 0) throw FileError("create", out, "", "file exists (refusing to overwrite)");
  File src = File::open(run);
  check_schema(src);
  if (!src.root().has_attr("file_kind") || src.root().attr_string("file_kind") != "run")
    throw FormatError("pack", run, "/", "not a run file (only run files have point files to pack)");
  write_file_atomically(out, [&](const std::string& tmp) {
    File dst = File::create(tmp);
    dst.root().copy_attributes_from(src.root());
    if (dst.root().has_attr("points_dir")) check_status(H5Adelete(dst.root().id(), "points_dir"), "delete attribute", tmp, "/@points_dir");
    for (const auto& child : src.root().children()) {
      if (child != "points") {
        dst.root().copy_from(src.root(), child, child);
        continue;
      }
      // Through the links: each point's group is copied out of its own file.
      Group from = src.root().open_group("points");
      Group to = dst.root().create_group("points");
      to.copy_attributes_from(from);
      for (const auto& name : from.children()) to.copy_from(from, name, name);
    }
    dst.root().set_attr("modified", iso8601_utc_now());
    dst.close();
  });
}

std::vector<SweepPointRow> read_points(const File& f) {
  return f.root().open_group("sweep").read_table<SweepPointRow>("points");
}

std::vector<SweepAxisRow> read_axes(const File& f) {
  return f.root().open_group("sweep").read_table<SweepAxisRow>("axes");
}

std::vector<CeilingRow> read_ceilings(const Group& g) {
  if (!g.exists("ceilings")) return {};
  return g.read_table<CeilingRow>("ceilings");
}

}  // namespace rtrace::store
