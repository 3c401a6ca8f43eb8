// `rtrace merge`: unions part files into one run (or trace) file.
//
// Two kinds of parts:
//  * point files: run files (file_kind "run") of the same sweep, each holding
//    some committed points (Slurm array tasks, resubmitted tasks, resumed
//    runs). Their complete points are copied into the output, which starts as
//    the common plan with every point pending when it does not exist yet.
//  * rank files: trace files (file_kind "trace", /ranks/rNNNNNN) written by
//    the tracer. With `--point ID` their rank groups go into that committed
//    point of a run file; without it the output is one trace file holding all
//    their ranks (the per-node aggregation step).
//
// Protocol: pass 1 opens every part read-only, checks it against the output
// (schema major, file kind, app argv, sweep, plan) and decides what to copy,
// touching nothing; pass 2 applies all copies in ONE store::transaction, so a
// merge of thousands of parts costs one copy+fsync+rename of the output.
// Inputs are only ever opened read-only. Merging a part twice is a no-op
// reported as duplicates (idempotent).
#include "../../cli/subcommands.hpp"
#include "rtrace/store/run_file.hpp"

#include <boost/program_options.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::store {
namespace {

namespace po = boost::program_options;

// A bad command line or an input that cannot be merged: exit 2, one line.
class MergeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr std::size_t kMaxListed = 10;  // duplicates/missing listed before "... and N more"

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

std::string quote_argv(const std::vector<std::string>& argv) {
  std::string s = join(argv, " ");
  if (s.size() > 120) s = s.substr(0, 117) + "...";
  return "`" + s + "`";
}

// Lists at most kMaxListed items, then "... and N more".
std::string list_some(const std::vector<std::string>& items) {
  std::vector<std::string> shown(items.begin(), items.begin() + std::min(items.size(), kMaxListed));
  std::string s = join(shown, ", ");
  if (items.size() > kMaxListed) s += ", ... and " + std::to_string(items.size() - kMaxListed) + " more";
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Identity of a file on disk, to notice the output among the inputs.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId& o) const { return dev == o.dev && ino == o.ino; }
};
std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// PART arguments: files as given; directories expand to their *.h5 files
// (sorted, hidden and temp files skipped) so thousands of parts need no glob.
std::vector<std::string> expand_parts(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    struct stat st {};
    if (::stat(a.c_str(), &st) != 0)
      throw MergeError(a + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
      out.push_back(a);
      continue;
    }
    DIR* d = ::opendir(a.c_str());
    if (!d) throw MergeError(a + ": cannot list directory: " + std::strerror(errno));
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.empty() || n[0] == '.' || !ends_with(n, ".h5")) continue;
      names.push_back(n);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    if (names.empty()) throw MergeError(a + ": no *.h5 part files in this directory");
    std::string prefix = ends_with(a, "/") ? a : a + "/";
    for (const auto& n : names) out.push_back(prefix + n);
  }
  return out;
}

std::string file_kind_of(const File& f) {
  return f.root().has_attr("file_kind") ? f.root().attr_string("file_kind") : std::string();
}

File open_part(const std::string& path) {
  File f = File::open(path, Access::ReadOnly);
  check_schema(f);
  return f;
}

// ---------------------------------------------------------------- point files

// What makes two run files parts of the same sweep.
struct SweepIdentity {
  std::vector<std::string> app_argv;
  std::string sweep_spec;
  std::vector<SweepAxisRow> axes;
  std::vector<SweepPointRow> plan;
};

SweepIdentity read_identity(const File& f) {
  RunMetadata meta = read_run_metadata(f.root());
  return SweepIdentity{meta.app_argv, meta.sweep_spec, read_axes(f), read_points(f)};
}

// Throws MergeError naming `part` when it is not a part of `ref`'s sweep.
void check_same_sweep(const SweepIdentity& ref, const std::string& ref_name, const SweepIdentity& part,
                      const std::string& part_name) {
  const std::string head = part_name + ": not part of the same sweep as " + ref_name + ": ";
  if (part.app_argv != ref.app_argv)
    throw MergeError(head + "different app " + quote_argv(part.app_argv) + " vs " + quote_argv(ref.app_argv));
  if (part.sweep_spec != ref.sweep_spec)
    throw MergeError(head + "different sweep `" + part.sweep_spec + "` vs `" + ref.sweep_spec + "`");
  if (part.axes.size() != ref.axes.size())
    throw MergeError(head + "different sweep axes (" + std::to_string(part.axes.size()) + " vs " +
                     std::to_string(ref.axes.size()) + ")");
  for (std::size_t i = 0; i < ref.axes.size(); ++i) {
    if (get_str(part.axes[i].name) != get_str(ref.axes[i].name) || get_str(part.axes[i].spec) != get_str(ref.axes[i].spec))
      throw MergeError(head + "different sweep axis " + std::to_string(i) + " `" + get_str(part.axes[i].name) + "=" +
                       get_str(part.axes[i].spec) + "` vs `" + get_str(ref.axes[i].name) + "=" +
                       get_str(ref.axes[i].spec) + "`");
  }
  if (part.plan.size() != ref.plan.size())
    throw MergeError(head + "different plan (" + std::to_string(part.plan.size()) + " points vs " +
                     std::to_string(ref.plan.size()) + ")");
  for (std::size_t i = 0; i < ref.plan.size(); ++i) {
    const SweepPointRow& a = part.plan[i];
    const SweepPointRow& b = ref.plan[i];
    if (a.point_id != b.point_id || a.repeat != b.repeat || get_str(a.label) != get_str(b.label) ||
        a.threads != b.threads || a.ranks != b.ranks || a.nodes != b.nodes || a.sms_requested != b.sms_requested)
      throw MergeError(head + "different plan: point " + std::to_string(b.point_id) + " is `" + get_str(a.label) +
                       "` here, `" + get_str(b.label) + "` there");
  }
}

bool is_ok(const SweepPointRow& r) { return get_str(r.status) == "ok"; }

// A new output is built in a sibling temp file ("skeleton") and renamed into
// place only after the merge succeeded.
std::string skeleton_name(const std::string& output) {
  std::string skeleton = output + ".merge-" + std::to_string(::getpid()) + ".tmp";
  report_temp_file(skeleton);
  report_temp_file(skeleton + ".rtrace-tmp");
  return skeleton;
}

// Runs `copy` (which writes into the skeleton, or into the existing output
// when there is none), then renames the skeleton into place; a failure
// removes the skeleton and leaves the output as it was.
void copy_then_place(const std::string& skeleton, const std::string& output, const std::function<void()>& copy) {
  try {
    copy();
    if (!skeleton.empty() && ::rename(skeleton.c_str(), output.c_str()) != 0)
      throw MergeError(output + ": cannot rename " + skeleton + " into place: " + std::strerror(errno));
  } catch (...) {
    if (!skeleton.empty()) {
      ::unlink(skeleton.c_str());
      // The new output's points directory, when nothing is left in it.
      const auto slash = output.rfind('/');
      const std::string dir = (slash == std::string::npos ? "" : output.substr(0, slash + 1)) + default_points_dir(output);
      ::rmdir(dir.c_str());
    }
    throw;
  }
}

// Copy indices sorted by the part they come from (stable), so each part is
// opened once.
template <class Copy>
std::vector<std::size_t> order_by_part(const std::vector<Copy>& copies) {
  std::vector<std::size_t> order(copies.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return copies[a].part < copies[b].part; });
  return order;
}

// The part file being copied from, reopened only when the part changes.
class PartCursor {
 public:
  PartCursor(const std::vector<std::string>& parts, const char* group) : parts_(parts), group_name_(group) {}
  const Group& group_of(std::size_t part_index) {
    if (part_index != index_) {
      file_ = File::open(parts_[part_index], Access::ReadOnly);
      group_ = file_.root().open_group(group_name_);
      index_ = part_index;
    }
    return group_;
  }

 private:
  const std::vector<std::string>& parts_;
  const char* group_name_;
  std::size_t index_ = static_cast<std::size_t>(-1);
  File file_;
  Group group_;
};

std::string describe_point(const SweepPointRow& r) {
  std::string label = get_str(r.label);
  return std::to_string(r.point_id) + (label.empty() ? "" : " (" + label + ")");
}

// The plan with every point pending, for a new output.
std::vector<SweepPointRow> pending_plan(std::vector<SweepPointRow> plan) {
  for (auto& r : plan) {
    set_str(r.status, to_string(PointStatus::Pending));
    r.sms_achieved = -1;
    r.sms_granted = -1;
    set_str(r.partition_method, "");
    r.exit_code = -1;
    r.signal = 0;
    r.start_time = r.end_time = r.wall_s = kUnavailable;
    r.complete = 0;
  }
  return plan;
}

struct PointCopy {
  std::size_t part;       // index into parts
  std::size_t row;        // row index in /sweep/points
  SweepPointRow new_row;  // the part's row
  bool replaces = false;  // the output holds a non-ok result for this point
};

struct MergeReport {
  std::size_t inputs = 0;
  std::vector<std::string> notes;        // printed before the summary
  std::vector<std::string> duplicates;   // "3 (threads=2) in a.h5"
  std::size_t added = 0, replaced = 0;
};

// Points mode: returns the exit status (0 all ok, 1 missing or not-ok points).
int merge_points(const std::vector<std::string>& parts, const std::string& output, const std::string& command_line,
                 bool quiet) {
  const bool output_exists = ::access(output.c_str(), F_OK) == 0;
  SweepIdentity ref;
  std::string ref_name;
  std::vector<SweepPointRow> rows;  // output's rows as they will be after the merge
  std::optional<RunMetadata> skeleton_meta;
  std::optional<MachineInfo> skeleton_machine;

  if (output_exists) {
    File out = File::open(output, Access::ReadOnly);
    check_schema(out);
    if (file_kind_of(out) != "run")
      throw MergeError(output + ": the output exists but is a `" + file_kind_of(out) +
                       "` file; point files merge into a run file");
    ref = read_identity(out);
    ref_name = output;
    rows = ref.plan;
  }

  // Pass 1: check every part and decide which of its points to copy.
  std::vector<PointCopy> copies;
  std::map<std::int64_t, std::size_t> row_of;  // point_id -> row index
  std::map<std::size_t, std::size_t> copy_of;  // row index -> index into copies
  MergeReport report;
  for (std::size_t pi = 0; pi < parts.size(); ++pi) {
    const std::string& path = parts[pi];
    File f = open_part(path);
    std::string kind = file_kind_of(f);
    if (kind != "run")
      throw MergeError(path + ": a `" + kind + "` file among run files (rank files merge with --point ID)");
    SweepIdentity id = read_identity(f);
    if (ref_name.empty()) {
      ref = id;
      ref_name = path;
      rows = pending_plan(id.plan);
      skeleton_meta = read_run_metadata(f.root());
      skeleton_machine = read_machine(f.root());
    } else {
      check_same_sweep(ref, ref_name, id, path);
    }
    if (row_of.empty())
      for (std::size_t i = 0; i < rows.size(); ++i) row_of[rows[i].point_id] = i;
    ++report.inputs;
    for (const SweepPointRow& r : id.plan) {
      if (!r.complete) continue;
      const std::size_t row = row_of.at(r.point_id);
      SweepPointRow& current = rows[row];
      if (current.complete) {
        // Prefer an ok result over a failed one (a resubmitted task); else keep the first.
        if (!is_ok(current) && is_ok(r)) {
          auto it = copy_of.find(row);
          if (it != copy_of.end()) {
            copies[it->second] = PointCopy{pi, row, r, copies[it->second].replaces};
          } else {
            copy_of[row] = copies.size();
            copies.push_back(PointCopy{pi, row, r, true});
          }
          report.notes.push_back("point " + describe_point(r) + ": ok result from " + path + " replaces the `" +
                                 get_str(current.status) + "` one");
          current = r;
          continue;
        }
        report.duplicates.push_back(describe_point(r) + " in " + path);
        continue;
      }
      copy_of[row] = copies.size();
      copies.push_back(PointCopy{pi, row, r, false});
      current = r;
    }
  }
  if (ref_name.empty()) throw MergeError("no part files to merge");

  for (const auto& c : copies) (c.replaces ? report.replaced : report.added) += 1;

  // A new output starts as the plan with every point pending.
  std::string target = output;
  std::string skeleton;
  if (!output_exists) {
    skeleton = skeleton_name(output);
    // /run keeps the sweep's own command line (what reproduces it); the root's
    // command_line says the file was made by this merge.
    // Its point files go straight into the output's points directory: only
    // the small index is renamed at the end.
    RunFile::create(skeleton, *skeleton_meta, *skeleton_machine, ref.axes, pending_plan(ref.plan), /*overwrite=*/true,
                    default_points_dir(output));
    {
      File f = File::open(skeleton, Access::ReadWrite);
      f.root().set_attr("command_line", command_line);
      f.close();
    }
    target = skeleton;
  }

  copy_then_place(skeleton, output, [&] {
    if (copies.empty()) return;
    // Pass 2: one commit for all copies, grouped by part (one open per part):
    // each point is copied once into its own file, then one index update.
    const auto order = order_by_part(copies);
    std::vector<SweepPointRow> new_rows;
    for (std::size_t i : order) new_rows.push_back(copies[i].new_row);
    RunFile run = RunFile::open(target);
    PartCursor part(parts, "points");
    run.commit_points(new_rows, [&](std::size_t k, Group& points_out, const std::string& name) {
      points_out.copy_from(part.group_of(copies[order[k]].part), name, name);
    });
  });

  // Report.
  std::vector<std::string> missing, not_ok;
  std::size_t present = 0;
  for (const auto& r : rows) {
    if (!r.complete) {
      missing.push_back(describe_point(r));
      continue;
    }
    ++present;
    if (!is_ok(r)) not_ok.push_back(describe_point(r) + " " + get_str(r.status));
  }
  if (!quiet) {
    for (const auto& n : report.notes) std::cout << "rtrace merge: " << n << "\n";
    if (!report.duplicates.empty())
      std::cout << "rtrace merge: " << report.duplicates.size() << " duplicate point"
                << (report.duplicates.size() == 1 ? "" : "s") << " ignored (kept the first): "
                << list_some(report.duplicates) << "\n";
    std::cout << "rtrace merge: " << output << ": merged " << present << " of " << rows.size() << " points ("
              << report.added << " new, " << report.replaced << " replaced, from " << report.inputs << " part"
              << (report.inputs == 1 ? "" : "s") << ")";
    if (!missing.empty()) std::cout << "; missing: " << list_some(missing);
    if (!not_ok.empty()) std::cout << "; not ok: " << list_some(not_ok);
    std::cout << "\n";
    std::cout.flush();
  }
  return missing.empty() && not_ok.empty() ? 0 : 1;
}

// ---------------------------------------------------------------- rank files

// "r000123" -> 123, or -1 for a name that is not a rank group.
std::int64_t rank_of(const std::string& name) {
  if (name.size() < 2 || name[0] != 'r') return -1;
  std::int64_t v = 0;
  for (std::size_t i = 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (std::int64_t{1} << 40)) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

bool rank_complete(const Group& ranks, const std::string& name) {
  try {
    auto info = ranks.open_group(name).read_table<RankInfoRow>("info");
    return !info.empty() && info[0].complete;
  } catch (const Error&) {
    return false;
  }
}

struct RankCopy {
  std::size_t part;
  std::string name;
  bool known_complete = false;  // checked on a conflict: never replaced again
};

// Rank mode: trace files into point `point_id` of a run file, or (point_id < 0)
// into one trace file. Returns the exit status (1 when ranks are missing).
int merge_ranks(const std::vector<std::string>& parts, const std::string& output, std::int64_t point_id,
                const std::string& command_line, bool quiet) {
  const bool into_point = point_id >= 0;
  const bool output_exists = ::access(output.c_str(), F_OK) == 0;
  const std::string point_name = into_point ? point_group_name(point_id) : std::string();
  std::int64_t expected_ranks = -1;          // from the point's row, when known
  std::map<std::string, bool> present;       // rank groups in the output after the merge

  if (into_point) {
    if (!output_exists)
      throw MergeError(output + ": no such run file (--point adds rank files to a point of an existing run file)");
    File out = File::open(output, Access::ReadOnly);
    check_schema(out);
    if (file_kind_of(out) != "run")
      throw MergeError(output + ": --point needs a run file, this is a `" + file_kind_of(out) + "` file");
    auto rows = read_points(out);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const SweepPointRow& r) { return r.point_id == point_id; });
    if (it == rows.end())
      throw MergeError(output + ": the plan has no point " + std::to_string(point_id) + " (it has " +
                       std::to_string(rows.size()) + " points)");
    if (!it->complete || !out.root().exists("points") || !out.root().open_group("points").exists(point_name))
      throw MergeError(output + ": point " + describe_point(*it) +
                       " is not committed; rank files can only be added to a committed point");
    expected_ranks = it->ranks > 0 ? it->ranks : -1;
    Group point = out.root().open_group("points").open_group(point_name);
    if (point.exists("ranks")) {
      Group ranks = point.open_group("ranks");
      for (const auto& n : ranks.children()) present[n] = true;  // existing ranks are kept as they are
    }
  } else if (output_exists) {
    File out = File::open(output, Access::ReadOnly);
    check_schema(out);
    if (file_kind_of(out) != "trace")
      throw MergeError(output + ": rank files merge into a trace file or, with --point ID, into a run file; this is a `" +
                       file_kind_of(out) + "` file");
    if (out.root().exists("ranks"))
      for (const auto& n : out.root().open_group("ranks").children()) present[n] = true;
  }

  // Pass 1: list every part's rank groups and decide what to copy. Rank
  // records are only read on a conflict (reading 4096 info tables would cost
  // more than the listing).
  std::vector<RankCopy> copies;
  std::map<std::string, std::size_t> copy_of;  // rank group -> index into copies
  std::vector<std::string> duplicates, notes;
  for (std::size_t pi = 0; pi < parts.size(); ++pi) {
    const std::string& path = parts[pi];
    File f = open_part(path);
    std::string kind = file_kind_of(f);
    if (kind != "trace")
      throw MergeError(path + ": a `" + kind + "` file among rank files (only trace files hold /ranks)");
    if (!f.root().exists("ranks")) {
      notes.push_back(path + ": holds no ranks");
      continue;
    }
    Group ranks = f.root().open_group("ranks");
    for (const auto& name : ranks.children()) {
      if (rank_of(name) < 0) throw MergeError(path + ": /ranks/" + name + " is not a rank group (rNNNNNN)");
      if (!present.count(name)) {
        present[name] = false;
        copy_of[name] = copies.size();
        copies.push_back(RankCopy{pi, name, false});
        continue;
      }
      // A rank seen before: a complete record replaces an incomplete one that
      // is not yet in the output; otherwise the first one wins.
      auto pending = copy_of.find(name);
      if (pending != copy_of.end() && !copies[pending->second].known_complete && rank_complete(ranks, name)) {
        RankCopy& first = copies[pending->second];
        bool first_complete = true;
        {
          File other = File::open(parts[first.part], Access::ReadOnly);
          first_complete = rank_complete(other.root().open_group("ranks"), name);
        }
        if (!first_complete) {
          notes.push_back("rank " + std::to_string(rank_of(name)) + ": complete record from " + path +
                          " replaces the incomplete one from " + parts[first.part]);
          first = RankCopy{pi, name, true};
          continue;
        }
        first.known_complete = true;
      }
      duplicates.push_back("rank " + std::to_string(rank_of(name)) + " in " + path);
    }
  }

  // The output for a new trace file: built next to it, renamed into place at the end.
  std::string target = output;
  std::string skeleton;
  if (!into_point && !output_exists) {
    skeleton = skeleton_name(output);
    File f = File::create(skeleton, /*overwrite=*/true);
    write_root_attributes(f.root(), "trace", command_line);
    f.root().create_group("ranks");
    f.close();
    target = skeleton;
  }

  copy_then_place(skeleton, output, [&] {
    if (copies.empty()) return;
    const auto order = order_by_part(copies);
    PartCursor part(parts, "ranks");
    // One copy loop for both destinations (a trace file's /ranks, a point's ranks).
    const auto copy_ranks = [&](Group& dest) {
      for (std::size_t i : order) dest.copy_from(part.group_of(copies[i].part), copies[i].name, copies[i].name);
    };
    if (!into_point) {
      transaction(target, [&](File& out) {
        Group dest = out.root().require_group("ranks");
        copy_ranks(dest);
      });
      return;
    }
    // A committed point is never changed in place: the point is rewritten
    // with the new ranks added (its own file in the point-file layout) and
    // replaces the old one in one commit.
    RunFile run = RunFile::open(target);
    const auto row = std::find_if(run.points().begin(), run.points().end(),
                                  [&](const SweepPointRow& r) { return r.point_id == point_id; });
    run.commit_points({*row}, [&](std::size_t, Group& points_out, const std::string& name) {
      {
        File current = File::open(target, Access::ReadOnly);
        points_out.copy_from(current.root().open_group("points"), name, name);
      }
      Group dest = points_out.open_group(name).require_group("ranks");
      copy_ranks(dest);
    });
  });

  // Missing ranks: 0..N-1 for the point's rank count, else 0..highest seen.
  std::set<std::int64_t> have;
  std::int64_t highest = -1;
  for (const auto& [name, complete] : present) {
    std::int64_t r = rank_of(name);
    have.insert(r);
    highest = std::max(highest, r);
  }
  const std::int64_t expected = expected_ranks > 0 ? std::max(expected_ranks, highest + 1) : highest + 1;
  std::vector<std::string> missing;
  for (std::int64_t r = 0; r < expected; ++r)
    if (!have.count(r)) missing.push_back(std::to_string(r));

  if (!quiet) {
    for (const auto& n : notes) std::cout << "rtrace merge: " << n << "\n";
    if (!duplicates.empty())
      std::cout << "rtrace merge: " << duplicates.size() << " duplicate rank" << (duplicates.size() == 1 ? "" : "s")
                << " ignored (kept the first): " << list_some(duplicates) << "\n";
    std::cout << "rtrace merge: " << output << (into_point ? " point " + std::to_string(point_id) : std::string())
              << ": merged " << have.size() << " of " << expected << " ranks (" << copies.size() << " new, from "
              << parts.size() << " file" << (parts.size() == 1 ? "" : "s") << ")";
    if (!missing.empty()) std::cout << "; missing: " << list_some(missing);
    std::cout << "\n";
    std::cout.flush();
  }
  return missing.empty() ? 0 : 1;
}

std::string command_line_of(int argc, char** argv) {
  std::vector<std::string> words;
  for (int i = 0; i < argc; ++i) words.emplace_back(argv[i]);
  return join(words, " ");
}

}  // namespace
}  // namespace rtrace::store

namespace rtrace::cli {

int merge_main(int argc, char** argv) {
  using namespace rtrace::store;
  namespace po = boost::program_options;

  std::string output;
  std::vector<std::string> part_args;
  std::int64_t point_id = -1;
  bool quiet = false, help = false;

  po::options_description opts("Options");
  opts.add_options()
      ("output,o", po::value<std::string>(&output)->value_name("FILE"),
       "the run (or trace) file to create, or to merge into when it exists")
      ("point", po::value<std::int64_t>(&point_id)->value_name("ID"),
       "merge rank (trace) files into the committed point ID of the run file FILE")
      ("quiet,q", po::bool_switch(&quiet), "print nothing but errors")
      ("help,h", po::bool_switch(&help), "show this help");
  po::options_description hidden;
  hidden.add_options()("part", po::value<std::vector<std::string>>(&part_args));
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description positional;
  positional.add("part", -1);

  const char* usage =
      "usage: rtrace merge PARTS... -o run.h5\n"
      "       rtrace merge --point ID RANKFILES... -o run.h5\n"
      "       rtrace merge RANKFILES... -o ranks.h5\n\n"
      "Merges part files into one file without modifying them. PARTS are run files of\n"
      "the same sweep (e.g. one per Slurm array task) or directories of them; their\n"
      "complete points are added to run.h5, which is created or, when it exists,\n"
      "extended (merge resubmitted tasks later). Rank files (trace files written by\n"
      "the tracer) go into a committed point with --point, or into one trace file.\n"
      "Merging a part twice changes nothing (reported as duplicates); an ok result\n"
      "replaces a failed one.\n\n";
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv)
                  .options(all)
                  .positional(positional)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    if (help) {
      std::cout << usage << opts << "\nExit status: 0 every planned point (rank) present and ok, 1 some missing\n"
                << "or not ok, 2 bad usage or inputs that cannot be merged (nothing written).\n";
      return 0;
    }
    if (vm.count("point") && point_id < 0) throw MergeError("--point must be a point id >= 0");
    if (output.empty()) throw MergeError("missing -o FILE (the merged output)");
    if (part_args.empty()) throw MergeError("no part files given");

    std::vector<std::string> parts = expand_parts(part_args);
    // The output may sit among the parts (a directory of parts): skip it.
    auto out_id = file_id(output);
    std::vector<std::string> inputs;
    for (const auto& p : parts) {
      if (out_id && file_id(p) == out_id) continue;
      inputs.push_back(p);
    }
    if (inputs.empty()) throw MergeError("no part files to merge (only the output itself was given)");

    // The kind of the first input decides the mode; the others must match.
    std::string first_kind;
    {
      File f = File::open(inputs.front(), Access::ReadOnly);
      check_schema(f);
      first_kind = f.root().has_attr("file_kind") ? f.root().attr_string("file_kind") : "";
    }
    const std::string cmd = command_line_of(argc, argv);
    if (first_kind == "run") {
      if (point_id >= 0) throw MergeError(inputs.front() + ": --point takes rank (trace) files, this is a run file");
      return merge_points(inputs, output, cmd, quiet);
    }
    if (first_kind == "trace") return merge_ranks(inputs, output, point_id, cmd, quiet);
    throw MergeError(inputs.front() + ": cannot merge a `" + first_kind + "` file (only run and trace files)");
  } catch (const po::error& e) {
    std::cerr << "rtrace merge: " << e.what() << " (see `rtrace merge --help`)\n";
    return 2;
  } catch (const MergeError& e) {
    std::cerr << "rtrace merge: " << e.what() << "\n";
    return 2;
  } catch (const rtrace::store::Error& e) {
    std::cerr << "rtrace merge: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rtrace merge: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace rtrace::cli
