#include "rtrace/ert/report.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace rtrace::ert {

namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string temp_name(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void publish(const std::string& tmp, const std::string& path) {
  fsync_path(tmp);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    throw OutputError("cannot write `" + path + "`: rename failed: " + err);
  }
  fsync_path(dir_of(path));
}

std::string human_bytes(std::int64_t b) {
  char buf[32];
  if (b < 0) return "-";
  if (b >= (std::int64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.0f GiB", double(b) / (1 << 30));
  else if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.0f MiB", double(b) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.0f KiB", double(b) / (1 << 10));
  return buf;
}

}  // namespace

store::ErtSampleRow to_row(const Sample& s) {
  store::ErtSampleRow r{};
  store::set_str(r.precision, to_string(s.kernel.precision));
  store::set_str(r.variant, to_string(s.kernel.variant));
  r.flops_per_element = s.kernel.flops_per_element;
  r.working_set_bytes = s.working_set_bytes;
  r.trials = s.trials;
  r.threads = s.workers;
  r.ranks = s.ranks;
  r.repeat = s.repeat;
  r.seconds = s.seconds;
  r.bytes = s.bytes;
  r.flops = s.flops;
  r.gbytes_per_s = s.gbytes_per_s();
  r.gflops_per_s = s.gflops_per_s();
  return r;
}

void check_output_writable(const std::string& path, const char* what) {
  if (path.empty()) throw OutputError(std::string(what) + ": empty file name");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw OutputError(std::string(what) + " `" + path + "` is a directory");
  const std::string probe = temp_name(path);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw OutputError(std::string("cannot write ") + what + " `" + path + "`: " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_ert_file(const std::string& path, const ErtReport& report) {
  const std::string tmp = temp_name(path);
  try {
    {
      store::File file = store::File::create(tmp, /*overwrite=*/true);
      store::Group& root = file.root();
      store::write_root_attributes(root, "ert", report.command_line);
      store::write_machine(root, report.machine);
      store::Group ert = root.create_group("ert");
      ert.set_attr("threads", std::int64_t(report.threads));
      ert.set_attr("ranks", std::int64_t(report.ranks));
      ert.set_attr("sms_requested", std::int64_t(report.sms_requested));
      ert.set_attr("sms_achieved", std::int64_t(report.sms_achieved));
      ert.set_attr("quick", std::int64_t(report.quick ? 1 : 0));
      ert.set_attr("device", report.device);
      ert.set_attr("wall_seconds", report.wall_seconds);
      for (const auto& [k, v] : report.text_attributes) ert.set_attr(k, v);
      for (const auto& [k, v] : report.number_attributes) ert.set_attr(k, v);
      if (!report.analysis.notes.empty()) ert.set_attr("notes", report.analysis.notes);
      ert.write_table<store::CeilingRow>("ceilings", report.analysis.ceilings,
                                         report.node_ceilings.empty()
                                             ? "roofline ceilings of this partition (value: bandwidth the median over "
                                               "repeats, compute the median of the high-F runs; source says where it comes from)"
                                             : "roofline ceilings of this partition: per ceiling the slowest node's "
                                               "(host) times the nodes");
      if (!report.one_worker.empty())
        ert.write_table<store::CeilingRow>("one_worker_ceilings", report.one_worker,
                                           "the same ceilings of one worker (thread 0 of rank 0 alone), measured in "
                                           "the same run: the plausibility bound of the partition's");
      if (!report.node_ceilings.empty())
        ert.write_table<store::CeilingRow>("node_ceilings", report.node_ceilings,
                                           "every node's own ceilings of its slice of the partition (host)");
      std::vector<store::ErtSampleRow> rows;
      rows.reserve(report.samples.size());
      for (const Sample& s : report.samples) rows.push_back(to_row(s));
      ert.write_table<store::ErtSampleRow>("samples", rows, "every timed ERT run (warm-ups excluded)");
      if (report.ranks > 1) {
        // Per-rank times, one entry per sample row: "s_rank0,s_rank1,...".
        std::vector<std::string> per_rank;
        per_rank.reserve(report.samples.size());
        for (const Sample& s : report.samples) {
          std::ostringstream os;
          os.precision(9);
          for (std::size_t i = 0; i < s.rank_seconds.size(); ++i) os << (i ? "," : "") << s.rank_seconds[i];
          per_rank.push_back(os.str());
        }
        ert.set_attr("rank_seconds", per_rank);
      }
      file.close();
    }
    publish(tmp, path);
  } catch (const store::Error& e) {
    std::remove(tmp.c_str());
    throw OutputError("cannot write `" + path + "`: " + e.what());
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

nlohmann::json roofline_json(const ErtReport& report) {
  using nlohmann::json;
  json gflops = json::array(), gbytes = json::array(), ceilings = json::array();
  for (const auto& c : report.analysis.ceilings) {
    const std::string name = store::get_str(c.name);
    const std::string kind = store::get_str(c.kind);
    (kind == "bandwidth" ? gbytes : gflops).push_back(json::array({name, c.value}));
    ceilings.push_back({{"name", name},
                        {"kind", kind},
                        {"precision", store::get_str(c.precision)},
                        {"variant", store::get_str(c.variant)},
                        {"value", c.value},
                        {"max", c.max},
                        {"min", c.min},
                        {"repeats", c.repeats},
                        {"unit", store::get_str(c.unit)},
                        {"level_bytes", c.level_bytes},
                        {"unreliable", c.unreliable < 0 ? json(nullptr) : json(c.unreliable > 0)},  // null: not checked
                        {"unreliable_reason", c.unreliable > 0 ? json(store::get_str(c.unreliable_reason)) : json(nullptr)},
                        // Where value comes from: this run ("measured") or the machine's reference
                        // ("reference", of reference_date; this run's own value in measured).
                        {"source", store::get_str(c.source).empty() ? "measured" : store::get_str(c.source)},
                        {"measured", std::isfinite(c.measured) && c.measured > 0 ? json(c.measured) : json(c.value)},
                        {"reference_date", store::get_str(c.reference_date).empty()
                                               ? json(nullptr)
                                               : json(store::get_str(c.reference_date))}});
  }
  json meta = {{"TIMESTAMP_DATA", store::iso8601_utc_now()},
               {"TOOL", "rtrace ert"},
               {"RTRACE_VERSION", store::rtrace_version()},
               {"HOSTNAME", report.machine.hostname},
               {"CPU_MODEL", report.machine.cpu_model},
               {"DEVICE", report.device},
               {"THREADS", report.threads},
               {"RANKS", report.ranks},
               {"SMS_REQUESTED", report.sms_requested},
               {"SMS_ACHIEVED", report.sms_achieved},
               {"QUICK", report.quick},
               {"COMMAND_LINE", report.command_line},
               {"wall_seconds", report.wall_seconds}};  // the measurement itself (not a launcher's start)
  for (const auto& [k, v] : report.text_attributes) meta[k] = v;
  for (const auto& [k, v] : report.number_attributes) meta[k] = std::isnan(v) ? json(nullptr) : json(v);
  json doc;
  doc["empirical"] = {{"metadata", meta},
                      {"gflops", {{"data", gflops}, {"metadata", {{"UNIT", "GFLOP/s"}}}}},
                      {"gbytes", {{"data", gbytes}, {"metadata", {{"UNIT", "GB/s"}}}}}};
  doc["spec"] = {{"gflops", {{"data", json::array()}}}, {"gbytes", {{"data", json::array()}}}};
  json one_worker = json::array();
  for (const auto& c : report.one_worker)
    one_worker.push_back({{"name", store::get_str(c.name)}, {"value", c.value}, {"max", c.max}, {"min", c.min},
                          {"repeats", c.repeats}, {"unit", store::get_str(c.unit)}});
  doc["rtrace"] = {{"ceilings", ceilings},
                   {"one_worker_ceilings", one_worker},
                   {"notes", report.analysis.notes},
                   {"samples", report.samples.size()}};
  return doc;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = temp_name(path);
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) throw OutputError("cannot write `" + path + "`: " + std::strerror(errno));
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed) {
    std::remove(tmp.c_str());
    throw OutputError("cannot write `" + path + "`: write failed");
  }
  publish(tmp, path);
}

std::string format_summary(const ErtReport& report) {
  std::ostringstream os;
  char line[256];
  if (report.device == "gpu")
    std::snprintf(line, sizeof line, "rtrace ert: GPU, %d SMs (requested %d), %zu samples in %.1f s\n",
                  report.sms_achieved, report.sms_requested, report.samples.size(), report.wall_seconds);
  else
    std::snprintf(line, sizeof line, "rtrace ert: CPU, %d thread%s x %d rank%s, %zu samples in %.1f s%s\n",
                  report.threads, report.threads == 1 ? "" : "s", report.ranks, report.ranks == 1 ? "" : "s",
                  report.samples.size(), report.wall_seconds, report.quick ? " (quick)" : "");
  os << line;
  std::snprintf(line, sizeof line, "  %-16s %10s %10s %10s  %-8s %s\n", "ceiling", "value", "min", "max", "unit",
                "level size");
  os << line;
  for (const auto& c : report.analysis.ceilings) {
    // A marked ceiling that took the machine's reference says so, with what this run measured.
    std::string from;
    if (store::get_str(c.source) == "reference") {
      char ref[96];
      std::snprintf(ref, sizeof ref, "  (reference of %s; measured %.1f)", store::get_str(c.reference_date).c_str(),
                    c.measured);
      from = ref;
    }
    std::snprintf(line, sizeof line, "  %-16s %10.1f %10.1f %10.1f  %-8s %s%s%s\n", store::get_str(c.name).c_str(),
                  c.value, c.min, c.max, store::get_str(c.unit).c_str(), human_bytes(c.level_bytes).c_str(),
                  c.unreliable > 0 ? "  unreliable" : "", from.c_str());
    os << line;
  }
  if (!report.one_worker.empty()) {
    std::string ref;
    for (const auto& c : report.one_worker) {
      std::snprintf(line, sizeof line, "%s%s %.1f", ref.empty() ? "" : ", ", store::get_str(c.name).c_str(), c.value);
      ref += line;
    }
    os << "  one worker: " << ref << "\n";
  }
  for (const auto& n : report.analysis.notes) os << "  note: " << n << "\n";
  return os.str();
}

}  // namespace rtrace::ert
