#include "rtrace/store/validate.hpp"

#include "rtrace/store/run_file.hpp"
#include "../../cli/subcommands.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fnmatch.h>
#include <map>
#include <set>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace rtrace::store {

extern const char* const kSchemaV1Json;
const char* schema_v1_json() noexcept { return kSchemaV1Json; }

namespace {

struct ObjectSpec {
  std::string path;  // glob per segment: /points/p*/ranks/r*
  std::string kind;  // group | table | strings | text
  std::string table;
  std::vector<std::string> kinds;  // file kinds where a top-level object applies
  bool required = true;
  bool open = false;               // contents not checked
  std::map<std::string, std::string> attributes;
  std::map<std::string, std::string> optional_attributes;  // type-checked when present
  // The path split once at load: validate matches every object of the file
  // against every spec, 10^6 objects in a run of 10^5 ranks.
  std::vector<std::string> segments;
};

struct TableSpec {
  // since: minor version that added it ("" = 1.0); former_unit: the unit files
  // before unit_since label the field with (same values, relabelled).
  struct F { std::string name, type, unit, since, unit_since, former_unit; };
  std::vector<F> fields;
};

struct Schema {
  std::vector<ObjectSpec> objects;
  std::map<std::string, TableSpec> tables;
  std::map<std::string, std::string> root_attributes;
};

std::vector<std::string> split_path(const std::string& p) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : p) {
    if (c == '/') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

const Schema& schema() {
  static const Schema s = [] {
    Schema out;
    auto j = nlohmann::json::parse(kSchemaV1Json);
    for (auto& [k, v] : j.at("root_attributes").items()) out.root_attributes[k] = v.get<std::string>();
    for (auto& o : j.at("objects")) {
      ObjectSpec spec;
      spec.path = o.at("path");
      spec.kind = o.at("kind");
      spec.table = o.value("table", "");
      spec.kinds = o.value("kinds", std::vector<std::string>{});
      spec.required = o.value("required", true);
      spec.open = o.value("open", false);
      if (o.contains("attributes"))
        for (auto& [k, v] : o["attributes"].items()) spec.attributes[k] = v.get<std::string>();
      if (o.contains("optional_attributes"))
        for (auto& [k, v] : o["optional_attributes"].items()) spec.optional_attributes[k] = v.get<std::string>();
      spec.segments = split_path(spec.path);
      out.objects.push_back(spec);
    }
    for (auto& [name, t] : j.at("tables").items()) {
      TableSpec ts;
      for (auto& f : t.at("fields"))
        ts.fields.push_back({f.at("name"), f.at("type"), f.at("unit"), f.value("since", ""), f.value("unit_since", ""),
                             f.value("former_unit", "")});
      out.tables[name] = ts;
    }
    return out;
  }();
  return s;
}

// Glob per segment: the first n segments of pattern (all by default) over
// the first n segments of path.
bool matches_prefix(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
                    std::size_t n = std::string::npos) {
  n = std::min(n, pattern.size());
  if (path.size() < n) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (fnmatch(pattern[i].c_str(), path[i].c_str(), 0) != 0) return false;
  return true;
}

bool matches(const std::vector<std::string>& pattern, const std::vector<std::string>& path) {
  return pattern.size() == path.size() && matches_prefix(pattern, path);
}

bool matches(const std::string& pattern, const std::string& path) { return matches(split_path(pattern), split_path(path)); }

// "1.0.0" < "1.1.0" (numeric per component; a malformed version counts as newest).
bool version_before(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) {
    std::vector<long> out;
    std::size_t i = 0;
    while (i < v.size()) {
      std::size_t j = v.find('.', i);
      if (j == std::string::npos) j = v.size();
      try {
        out.push_back(std::stol(v.substr(i, j - i)));
      } catch (...) {
        return std::vector<long>{};
      }
      i = j + 1;
    }
    return out;
  };
  auto pa = parts(a), pb = parts(b);
  if (pa.empty() || pb.empty()) return false;
  return pa < pb;
}

class Validator {
 public:
  Validator(const File& f, ValidationReport& r) : file_(f), report_(r) {}

  void run() {
    const Group& root = file_.root();
    for (auto& [name, type] : schema().root_attributes) check_attr(root, "/", name, type);
    report_.file_kind = root.has_attr("file_kind") ? root.attr_string("file_kind") : "";
    if (report_.file_kind != "run" && report_.file_kind != "ert" && report_.file_kind != "trace" &&
        report_.file_kind != "point")
      deviate("/", "file_kind `" + report_.file_kind + "` is not one of run, ert, trace, point");
    if (root.has_attr("points_dir")) {
      try {
        points_dir_ = root.attr_string("points_dir");
      } catch (const Error&) {
        deviate("/", "attribute `points_dir` is not a string");
      }
      if (points_dir_.empty() || points_dir_ == "." || points_dir_ == ".." || points_dir_.find('/') != std::string::npos)
        deviate("/", "attribute `points_dir` `" + points_dir_ + "` is not a plain directory name");
    }
    // Top-level objects required for this file kind.
    for (const auto& spec : schema().objects) {
      if (spec.kinds.empty() || !spec.required) continue;
      if (std::find(spec.kinds.begin(), spec.kinds.end(), report_.file_kind) == spec.kinds.end()) continue;
      if (spec.path.find('*') != std::string::npos) continue;
      if (!exists(spec.path)) deviate(spec.path, "missing (" + spec.kind + ")");
    }
    walk(root, "/", {});
    if (report_.file_kind == "run") check_points();
  }

 private:
  const File& file_;
  ValidationReport& report_;
  std::string points_dir_;  // root attribute points_dir: where point files may live

  // An external link is only allowed as a run's /points/pNNNNNN, to a file in
  // its points directory; a missing target is named.
  bool check_external_link(const Group& g, const std::string& name, const std::string& path) {
    auto target = g.external_link_file(name);
    if (!target) return true;
    if (report_.file_kind != "run" || !matches("/points/p*", path)) {
      deviate(path, "unexpected external link to `" + *target + "`");
      return false;
    }
    if (points_dir_.empty() || target->rfind(points_dir_ + "/", 0) != 0 ||
        target->find('/', points_dir_.size() + 1) != std::string::npos || target->find("..") != std::string::npos) {
      deviate(path, "links to `" + *target + "`, outside the run's points directory `" + points_dir_ + "`");
      return false;
    }
    if (object_type(g, name) == H5O_TYPE_UNKNOWN) {
      deviate(path, "its point file `" + *target + "` is missing or unreadable");
      return false;
    }
    return true;
  }

  void deviate(const std::string& path, const std::string& what) { report_.deviations.push_back(path + ": " + what); }

  bool exists(const std::string& path) const {
    htri_t r = H5Lexists(file_.id(), path.c_str(), H5P_DEFAULT);
    if (r < 0) {
      H5Eclear2(H5E_DEFAULT);
      // An intermediate group is missing.
      return false;
    }
    return r > 0;
  }

  const ObjectSpec* find_spec(const std::vector<std::string>& segments) const {
    for (const auto& s : schema().objects)
      if (matches(s.segments, segments)) return &s;
    return nullptr;
  }

  // Below a spec marked open (contents not checked).
  bool inside_open(const std::vector<std::string>& segments) const {
    for (const auto& s : schema().objects)
      if (s.open && segments.size() > s.segments.size() && matches_prefix(s.segments, segments)) return true;
    return false;
  }

  void check_attr(const Group& g, const std::string& path, const std::string& name, const std::string& type) {
    if (!g.has_attr(name)) {
      deviate(path, "missing attribute `" + name + "`");
      return;
    }
    try {
      if (type == "str") g.attr_string(name);
      else if (type == "int") g.attr_int(name);
      else if (type == "f64") g.attr_double(name);
    } catch (const Error&) {
      deviate(path, "attribute `" + name + "` is not of type " + type);
    }
  }

  H5O_type_t object_type(const Group& parent, const std::string& name) const {
    H5O_info_t info;
    if (H5Oget_info_by_name2(parent.id(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
      H5Eclear2(H5E_DEFAULT);
      return H5O_TYPE_UNKNOWN;
    }
    return info.type;
  }

  struct Link {
    std::string name;
    H5L_type_t type;
  };

  static herr_t collect_link(hid_t, const char* name, const H5L_info_t* info, void* out) {
    static_cast<std::vector<Link>*>(out)->push_back({name, info->type});
    return 0;
  }

  // Opens a child once (its name looked up once in its group: a point's
  // ranks group holds 10^5 links) and says what it is.
  std::pair<Id, H5O_type_t> open_child(const Group& g, const Link& link) const {
    if (link.type == H5L_TYPE_EXTERNAL) {  // a point file: through the store, which names it to a crash guard
      const H5O_type_t t = object_type(g, link.name);
      if (t != H5O_TYPE_GROUP) return {Id(), t};
      Group sub = g.open_group(link.name);
      return {Id(H5Iinc_ref(sub.id()) >= 0 ? sub.id() : H5I_INVALID_HID), t};
    }
    Id obj(H5Oopen(g.id(), link.name.c_str(), H5P_DEFAULT));
    if (!obj.valid()) {
      H5Eclear2(H5E_DEFAULT);
      return {Id(), H5O_TYPE_UNKNOWN};
    }
    const H5I_type_t it = H5Iget_type(obj.get());
    const H5O_type_t t = it == H5I_GROUP ? H5O_TYPE_GROUP : it == H5I_DATASET ? H5O_TYPE_DATASET : H5O_TYPE_NAMED_DATATYPE;
    return {std::move(obj), t};
  }

  void walk(const Group& g, const std::string& path, const std::vector<std::string>& segments) {
    std::vector<Link> links;
    hsize_t idx = 0;
    if (H5Literate(g.id(), H5_INDEX_NAME, H5_ITER_INC, &idx, collect_link, &links) < 0) {
      const std::string why = hdf5_error_message();
      H5Eclear2(H5E_DEFAULT);
      deviate(path, "cannot list: " + why);
      return;
    }
    std::sort(links.begin(), links.end(), [](const Link& a, const Link& b) { return a.name < b.name; });
    for (const auto& link : links) {
      const std::string& name = link.name;
      const std::string child = path == "/" ? "/" + name : path + "/" + name;
      if (link.type == H5L_TYPE_EXTERNAL && !check_external_link(g, name, child)) continue;
      std::vector<std::string> child_segments = segments;
      child_segments.push_back(name);
      const ObjectSpec* spec = find_spec(child_segments);
      if (!spec) {
        if (!inside_open(child_segments)) deviate(child, "unexpected object (not in schema v1)");
        continue;
      }
      auto [obj, t] = open_child(g, link);
      if (spec->kind == "group") {
        if (t != H5O_TYPE_GROUP || !obj.valid()) {
          deviate(child, "expected a group");
          continue;
        }
        Group sub(std::move(obj), g.file(), child);
        for (auto& [an, at] : spec->attributes) check_attr(sub, child, an, at);
        for (auto& [an, at] : spec->optional_attributes)
          if (sub.has_attr(an)) check_attr(sub, child, an, at);
        check_required_children(sub, child, child_segments);
        if (!spec->open) walk(sub, child, child_segments);
      } else {
        if (t != H5O_TYPE_DATASET || !obj.valid()) {
          deviate(child, "expected a dataset (" + spec->kind + ")");
          continue;
        }
        check_dataset(g, name, std::move(obj), child, *spec);
      }
    }
  }

  void check_required_children(const Group& g, const std::string& path, const std::vector<std::string>& segments) {
    for (const auto& s : schema().objects) {
      if (!s.required || !s.kinds.empty() || s.segments.empty()) continue;
      const std::string& last = s.segments.back();
      if (last.find('*') != std::string::npos) continue;
      // The spec's parent is this group.
      if (s.segments.size() != segments.size() + 1 || !matches_prefix(s.segments, segments, segments.size()))
        continue;
      if (!g.exists(last)) deviate(path + "/" + last, "missing (" + s.kind + ")");
    }
  }

  void check_dataset(const Group& parent, const std::string& name, Id d, const std::string& path, const ObjectSpec& spec) {
    Id type(H5Dget_type(d.get()));
    Id space(H5Dget_space(d.get()));
    int ndims = H5Sget_simple_extent_ndims(space.get());
    H5T_class_t cls = H5Tget_class(type.get());
    if (spec.kind == "strings" || spec.kind == "text") {
      if (cls != H5T_STRING) deviate(path, "expected string data");
      if (spec.kind == "strings" && ndims != 1) deviate(path, "expected a 1-D string list");
      if (spec.kind == "text" && ndims != 0) deviate(path, "expected a scalar string");
      // Read it: catches damaged data.
      try {
        if (spec.kind == "text") parent.read_text(name);
        else parent.read_strings(name);
      } catch (const Error& e) {
        deviate(path, "unreadable: " + e.detail());
      }
      return;
    }
    // table
    if (cls != H5T_COMPOUND || ndims != 1) {
      deviate(path, "expected a 1-D compound table");
      return;
    }
    auto it = schema().tables.find(spec.table);
    if (it == schema().tables.end()) return;
    const TableSpec& ts = it->second;
    std::vector<std::string> units;
    // The attributes through the open dataset: a second H5Oopen by name
    // would look the name up in its group and decode the header again.
    Group obj(Id(H5Iinc_ref(d.get()) >= 0 ? d.get() : H5I_INVALID_HID), parent.file(), path);
    if (!obj.has_attr("units")) deviate(path, "missing attribute `units`");
    else {
      try {
        units = obj.attr_strings("units");
      } catch (const Error&) {
        deviate(path, "attribute `units` is not a string list");
      }
    }
    int nmembers = H5Tget_nmembers(type.get());
    std::map<std::string, int> member_index;
    for (int i = 0; i < nmembers; ++i) {
      char* n = H5Tget_member_name(type.get(), static_cast<unsigned>(i));
      if (n) {
        member_index[n] = i;
        H5free_memory(n);
      }
    }
    if (!units.empty() && static_cast<int>(units.size()) != nmembers)
      deviate(path, "attribute `units` has " + std::to_string(units.size()) + " entries for " +
                        std::to_string(nmembers) + " fields");
    for (const auto& f : ts.fields) {
      auto m = member_index.find(f.name);
      if (m == member_index.end()) {
        // A file of an older minor version lacks the fields added after it.
        if (f.since.empty() || !version_before(report_.schema_version, f.since))
          deviate(path, "missing field `" + f.name + "` (" + f.type + ")");
        continue;
      }
      Id mt(H5Tget_member_type(type.get(), static_cast<unsigned>(m->second)));
      H5T_class_t mc = H5Tget_class(mt.get());
      bool ok = f.type == "str" ? mc == H5T_STRING : f.type == "f64" ? mc == H5T_FLOAT : mc == H5T_INTEGER;
      if (ok && f.type != "str" && H5Tget_size(mt.get()) != (f.type == "i32" ? 4u : f.type == "u8" ? 1u : 8u)) ok = false;
      if (!ok) deviate(path, "field `" + f.name + "` is not " + f.type);
      if (!units.empty() && static_cast<int>(units.size()) == nmembers) {
        const std::string& unit = units[static_cast<std::size_t>(m->second)];
        const bool former = !f.former_unit.empty() && unit == f.former_unit &&
                            version_before(report_.schema_version, f.unit_since);
        if (unit != f.unit && !former)
          deviate(path, "field `" + f.name + "` has unit `" + unit + "`, schema says `" + f.unit + "`");
      }
    }
    read_every_row(d.get(), type.get(), space.get(), path);
  }

  // Reads the whole table in blocks, as the file stores it: damaged data (a
  // corrupted variable-length string, a truncated chunk) shows up here, and
  // every reader that the isolated check guards reads no more than this.
  void read_every_row(hid_t dataset, hid_t file_type, hid_t file_space, const std::string& path) {
    hsize_t rows = 0;
    if (H5Sget_simple_extent_dims(file_space, &rows, nullptr) != 1 || rows == 0) return;
    Id native(H5Tget_native_type(file_type, H5T_DIR_DEFAULT));
    const std::size_t row_size = native.valid() ? H5Tget_size(native.get()) : 0;
    if (row_size == 0) {
      H5Eclear2(H5E_DEFAULT);
      deviate(path, "row type has no native equivalent");
      return;
    }
    const hsize_t block = std::max<hsize_t>(1, (4u << 20) / row_size);
    std::vector<unsigned char> buf(static_cast<std::size_t>(std::min(block, rows)) * row_size);
    // A conversion buffer sized to the block, as the analysis readers do:
    // HDF5's default zeroes a fresh 1 MiB (and a background buffer) for
    // every read, most of validate's time on a run of small rank tables.
    const Id dxpl = transfer_list(2 * static_cast<std::size_t>(std::min(block, rows)) * row_size);
    for (hsize_t start = 0; start < rows; start += block) {
      hsize_t count = std::min(block, rows - start);
      Id fspace(H5Scopy(file_space));
      Id mspace(H5Screate_simple(1, &count, nullptr));
      bool ok = fspace.valid() && mspace.valid() &&
                H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) >= 0 &&
                H5Dread(dataset, native.get(), mspace.get(), fspace.get(), dxpl.get(), buf.data()) >= 0;
      if (!ok) {
        const std::string why = hdf5_error_message();
        H5Eclear2(H5E_DEFAULT);
        deviate(path, "rows " + std::to_string(start) + ".." + std::to_string(start + count - 1) + " unreadable" +
                          (why.empty() ? "" : ": " + why));
        return;
      }
      (void)H5Dvlen_reclaim(native.get(), mspace.get(), H5P_DEFAULT, buf.data());
    }
  }

  void check_points() {
    if (!exists("/sweep/points") || !exists("/points")) return;
    std::vector<SweepPointRow> rows;
    try {
      rows = read_points(file_);
    } catch (const Error& e) {
      deviate("/sweep/points", std::string("unreadable: ") + e.detail());
      return;
    }
    report_.points_total = rows.size();
    Group points = file_.root().open_group("points");
    std::set<std::int64_t> ids;
    std::set<std::string> expected_groups;
    for (const auto& r : rows) {
      if (!ids.insert(r.point_id).second) deviate("/sweep/points", "duplicate point_id " + std::to_string(r.point_id));
      std::string status = get_str(r.status);
      try {
        point_status_from_string(status);
      } catch (const std::exception&) {
        deviate("/sweep/points", "point " + std::to_string(r.point_id) + " has unknown status `" + status + "`");
      }
      if (r.complete) {
        ++report_.points_complete;
        std::string g = point_group_name(r.point_id);
        expected_groups.insert(g);
        if (!points.exists(g)) deviate("/points/" + g, "missing although point " + std::to_string(r.point_id) + " is complete");
        if (status == "pending") deviate("/sweep/points", "point " + std::to_string(r.point_id) + " is complete but pending");
      }
    }
    for (const auto& name : points.children())
      if (!expected_groups.count(name))
        deviate("/points/" + name, "group of a point that /sweep/points does not mark complete");
  }
};

}  // namespace

ValidationReport validate_file(const std::string& path) {
  ValidationReport r;
  try {
    File f = File::open(path);
    try {
      check_schema(f);
    } catch (const FormatError& e) {
      r.verdict = ValidationReport::Verdict::Unreadable;
      r.fatal = e.detail();
      return r;
    }
    r.schema_version = f.root().attr_string("schema_version");
    Validator(f, r).run();
  } catch (const FileError& e) {
    r.verdict = ValidationReport::Verdict::Unreadable;
    r.fatal = e.detail();
    return r;
  } catch (const Error& e) {
    r.deviations.push_back(std::string(e.what()));
  } catch (const std::exception& e) {
    r.verdict = ValidationReport::Verdict::Unreadable;
    r.fatal = e.what();
    return r;
  }
  r.verdict = r.deviations.empty() ? ValidationReport::Verdict::Valid : ValidationReport::Verdict::Invalid;
  return r;
}

int isolated_read_timeout() {
  const char* t = std::getenv("RTRACE_VALIDATE_TIMEOUT");
  return t && *t ? std::max(1, std::atoi(t)) : 600;
}

// libhdf5 1.10.8 itself can crash or loop forever on some damaged files (its
// global heap; found by fuzzing). `rtrace validate` is the tool users point at
// suspicious files, so it checks each file in a child process: a crash or a
// hang becomes one line and exit 2 instead of taking the validator down.
ValidationReport validate_isolated(const std::string& path, int timeout_s) {
  if (timeout_s <= 0) timeout_s = isolated_read_timeout();
  int fds[2];
  if (pipe(fds) != 0) return validate_file(path);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return validate_file(path);
  }
  if (pid == 0) {
    close(fds[0]);
    // The child reports through the pipe only: whatever a crashing HDF5 (or a
    // sanitizer) prints must not reach the user's terminal.
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    ValidationReport r = validate_file(path);
    std::string out = std::to_string(static_cast<int>(r.verdict)) + "\n" + r.file_kind + "\n" + r.schema_version +
                      "\n" + std::to_string(r.points_total) + "\n" + std::to_string(r.points_complete) + "\n" +
                      r.fatal + "\n";
    for (const auto& d : r.deviations) out += d + "\n";
    for (std::size_t done = 0; done < out.size();) {
      ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string data;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    int pr = poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ValidationReport r;
  if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    r.verdict = ValidationReport::Verdict::Unreadable;
    r.library_failure = true;
    r.fatal = timed_out ? "damaged file: reading it did not finish within " + std::to_string(timeout_s) + " s"
                        : std::string("damaged file: the HDF5 library crashed reading it (") +
                              (WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "abnormal exit") + ")";
    return r;
  }
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < data.size(); ++i)
    if (data[i] == '\n') {
      lines.push_back(data.substr(start, i - start));
      start = i + 1;
    }
  if (lines.size() < 6) return validate_file(path);  // should not happen; fall back
  r.verdict = static_cast<ValidationReport::Verdict>(std::atoi(lines[0].c_str()));
  r.file_kind = lines[1];
  r.schema_version = lines[2];
  r.points_total = std::strtoull(lines[3].c_str(), nullptr, 10);
  r.points_complete = std::strtoull(lines[4].c_str(), nullptr, 10);
  r.fatal = lines[5];
  r.deviations.assign(lines.begin() + 6, lines.end());
  return r;
}

std::optional<std::string> hdf5_failure(const std::string& path, int timeout_s) {
  // Only an existing regular file can hurt; the caller reports the others.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  ValidationReport r = validate_isolated(path, timeout_s);
  if (r.verdict == ValidationReport::Verdict::Unreadable && r.library_failure) return r.fatal;
  return std::nullopt;
}

}  // namespace rtrace::store

namespace rtrace::cli {

int validate_main(int argc, char** argv) {
  std::vector<std::string> files;
  bool quiet = false;
  int timeout_s = store::isolated_read_timeout();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: rtrace validate [--quiet] [--timeout SECONDS] FILE...\n\n"
          "Checks each file against the rtrace schema v%s and lists every deviation.\n"
          "Exit status: 0 all valid, 1 some invalid, 2 some unreadable (missing, not HDF5,\n"
          "not an rtrace file, unsupported schema major version, or a file so damaged\n"
          "that the HDF5 library crashes or hangs on it; each file is read whole, every\n"
          "table row included, in a child process limited to --timeout seconds, default\n"
          "$RTRACE_VALIDATE_TIMEOUT or 600).\n",
          store::schema_version());
      return 0;
    }
    if (a == "-q" || a == "--quiet") quiet = true;
    else if (a == "--timeout" || a.rfind("--timeout=", 0) == 0) {
      std::string v;
      if (a == "--timeout") {
        if (i + 1 >= argc) {
          std::fprintf(stderr, "rtrace validate: --timeout needs a number of seconds\n");
          return 2;
        }
        v = argv[++i];
      } else v = a.substr(10);
      char* end = nullptr;
      const long t = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || t < 1 || t > 86400) {
        std::fprintf(stderr, "rtrace validate: --timeout `%s`: expected whole seconds between 1 and 86400\n", v.c_str());
        return 2;
      }
      timeout_s = static_cast<int>(t);
    }
    else if (!a.empty() && a[0] == '-' && a != "-") {
      std::fprintf(stderr, "rtrace validate: unknown option `%s`\n", a.c_str());
      return 2;
    } else files.push_back(a);
  }
  if (files.empty()) {
    std::fprintf(stderr, "rtrace validate: no file given (usage: rtrace validate FILE...)\n");
    return 2;
  }
  int worst = 0;
  for (const auto& f : files) {
    auto r = store::validate_isolated(f, timeout_s);
    switch (r.verdict) {
      case store::ValidationReport::Verdict::Unreadable:
        std::fprintf(stderr, "rtrace validate: %s: %s\n", f.c_str(), r.fatal.c_str());
        worst = 2;
        break;
      case store::ValidationReport::Verdict::Invalid:
        for (const auto& d : r.deviations) std::printf("%s: %s\n", f.c_str(), d.c_str());
        std::printf("%s: INVALID (%zu deviation%s)\n", f.c_str(), r.deviations.size(), r.deviations.size() == 1 ? "" : "s");
        worst = std::max(worst, 1);
        break;
      case store::ValidationReport::Verdict::Valid:
        if (!quiet) {
          if (r.file_kind == "run")
            std::printf("%s: valid rtrace %s file (schema %s, %zu of %zu points complete)\n", f.c_str(), r.file_kind.c_str(),
                        r.schema_version.c_str(), r.points_complete, r.points_total);
          else
            std::printf("%s: valid rtrace %s file (schema %s)\n", f.c_str(), r.file_kind.c_str(), r.schema_version.c_str());
        }
        break;
    }
  }
  return worst;
}

}  // namespace rtrace::cli
