#include "rtrace/store/run_file.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
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

void write_rank(Group& ranks_group, const RankRecords& r) {
  Group g = ranks_group.create_group(rank_group_name(r.info.rank));
  g.write_table("info", std::vector<RankInfoRow>{r.info}, "one row: this rank's process, rusage and tracer status");
  g.write_strings("names", r.names, "name_id -> region/kernel/MPI function name");
  g.write_table("regions", r.regions, "annotated regions, aggregated per name");
  g.write_table("kernels", r.kernels, "CUDA kernel launches");
  g.write_table("memcpy", r.memcpy, "CUDA memcpy/memset activity");
  g.write_table("mpi", r.mpi, "MPI calls per function");
  g.write_strings("log", r.log, "tracer warnings and errors");
  if (!r.sampling.empty()) {
    g.write_table("sampling", r.sampling, "one row: the sampler's rate, clock and totals");
    g.write_table("callpaths", r.callpaths, "sampled call-path tree per thread: self and inclusive samples");
  }
  if (!r.writer.empty()) g.set_attr("writer", r.writer);
}

RankRecords read_rank(const Group& g) {
  RankRecords r;
  auto info = g.read_table<RankInfoRow>("info");
  if (info.size() != 1) throw SchemaError("read rank", g.file(), g.child_path("info"), "expected exactly one row");
  r.info = info[0];
  r.names = g.read_strings("names");
  r.regions = g.read_table<RegionRow>("regions");
  r.kernels = g.read_table<KernelRow>("kernels");
  r.memcpy = g.read_table<MemcpyRow>("memcpy");
  r.mpi = g.read_table<MpiRow>("mpi");
  r.log = g.read_strings("log");
  if (g.exists("sampling")) r.sampling = g.read_table<SamplingRow>("sampling");  // schema >= 1.3
  if (g.exists("callpaths")) r.callpaths = g.read_table<CallPathRow>("callpaths");
  if (g.has_attr("writer")) r.writer = g.attr_string("writer");
  return r;
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

RunFile RunFile::create(const std::string& path, const RunMetadata& meta, const MachineInfo& machine,
                        const std::vector<SweepAxisRow>& axes, const std::vector<SweepPointRow>& plan, bool overwrite) {
  if (!overwrite && ::access(path.c_str(), F_OK) == 0)
    throw FileError("create", path, "", "file exists (use --resume to continue it, or choose another -o)");
  write_file_atomically(path, [&](const std::string& tmp) {
    File f = File::create(tmp);
    Group& root = f.root();
    write_root_attributes(root, "run", meta.command_line);
    write_run_metadata(root, meta);
    write_machine(root, machine);
    Group sweep = root.create_group("sweep");
    sweep.write_table("axes", axes, "sweep axes as given on the command line");
    std::vector<SweepPointRow> rows = plan;
    for (auto& r : rows) r.complete = 0;
    sweep.create_table<SweepPointRow>("points", "one row per planned point; complete=1 once committed", 256).append(rows);
    root.create_group("points");
    f.close();
  });
  return open(path);
}

RunFile RunFile::open(const std::string& path) {
  RunFile r;
  r.path_ = path;
  r.reload();
  return r;
}

void RunFile::reload() {
  File f = File::open(path_);
  check_schema(f);
  points_ = read_points(f);
}

void RunFile::commit_point(SweepPointRow row, const std::function<void(Group&)>& fill) {
  std::size_t index = points_.size();
  for (std::size_t i = 0; i < points_.size(); ++i)
    if (points_[i].point_id == row.point_id) index = i;
  if (index == points_.size())
    throw SchemaError("commit point", path_, "/sweep/points", "point " + std::to_string(row.point_id) + " is not in the plan");
  row.complete = std::string(row.status) == "pending" ? 0 : 1;
  transaction(path_, [&](File& f) {
    Group points = f.root().require_group("points");
    const std::string name = point_group_name(row.point_id);
    if (points.exists(name)) points.remove(name);
    Group g = points.create_group(name);
    g.set_attr("point_id", static_cast<std::int64_t>(row.point_id));
    g.set_attr("label", get_str(row.label));
    g.set_attr("status", get_str(row.status));
    g.require_group("ranks");
    fill(g);
    Group sweep = f.root().open_group("sweep");
    sweep.open_table<SweepPointRow>("points").write_at(index, row);
  });
  points_[index] = row;
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
