#include "rtrace/launcher/rank_collector.hpp"

#include "rtrace/store/run_file.hpp"

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>

namespace fs = std::filesystem;

namespace rtrace::launcher {

namespace {

struct Candidate {
  std::string file;
  std::string group;  // "r000003"
  std::int64_t pid = -1;
  double wall_s = -1;
};

std::int64_t rank_of(const std::string& group_name) {
  if (group_name.size() < 2 || group_name[0] != 'r') return -1;
  try {
    return std::stoll(group_name.substr(1));
  } catch (...) {
    return -1;
  }
}

}  // namespace

CollectedRanks collect_tracer_ranks(const std::string& trace_dir, store::Group& ranks_group, int expected_ranks) {
  CollectedRanks out;
  std::error_code ec;
  if (trace_dir.empty() || !fs::is_directory(trace_dir, ec)) {
    for (int r = 0; r < expected_ranks; ++r) out.log.push_back("rank " + std::to_string(r) + ": no tracer data (missing)");
    return out;
  }
  // 1. The collective file written at MPI_Finalize wins.
  const std::string collective = trace_dir + "/ranks.h5";
  if (fs::exists(collective, ec)) {
    try {
      auto f = store::File::open(collective);
      const auto& root = f.root();
      if (root.exists("ranks")) {
        const auto src = root.open_group("ranks");
        for (const auto& name : src.children()) {
          const auto r = rank_of(name);
          if (r < 0 || out.ranks.count(r)) continue;
          ranks_group.copy_from(src, name, store::rank_group_name(r));
          out.ranks.insert(r);
        }
      }
    } catch (const std::exception& e) {
      out.log.push_back(std::string("warning: ranks.h5 unreadable, using per-process files: ") + e.what());
    }
  }
  // 2. Per-process fallback files: rank-<rank>-<pid>.h5.
  std::map<std::int64_t, std::vector<Candidate>> by_rank;
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(trace_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && entry.path().extension() == ".h5") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    try {
      auto f = store::File::open(path);
      const auto& root = f.root();
      if (!root.exists("ranks")) continue;
      const auto src = root.open_group("ranks");
      for (const auto& name : src.children()) {
        const auto r = rank_of(name);
        if (r < 0) continue;
        Candidate c{path, name};
        try {
          const auto info = src.open_group(name).read_table<store::RankInfoRow>("info");
          if (!info.empty()) {
            c.pid = info.front().pid;
            c.wall_s = std::isnan(info.front().wall_s) ? -1 : info.front().wall_s;
          }
        } catch (const std::exception&) {
        }
        by_rank[r].push_back(c);
      }
    } catch (const std::exception& e) {
      out.log.push_back("warning: trace file " + fs::path(path).filename().string() + " unreadable: " + e.what());
    }
  }
  for (auto& [r, cands] : by_rank) {
    if (out.ranks.count(r)) {
      for (const auto& c : cands)
        out.log.push_back("rank " + std::to_string(r) + ": ignored " + fs::path(c.file).filename().string() +
                          " (ranks.h5 has this rank)");
      continue;
    }
    std::stable_sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) { return a.wall_s > b.wall_s; });
    for (const auto& c : cands) {
      try {
        auto f = store::File::open(c.file);
        ranks_group.copy_from(f.root().open_group("ranks"), c.group, store::rank_group_name(r));
        out.ranks.insert(r);
      } catch (const std::exception& e) {
        out.log.push_back("warning: rank " + std::to_string(r) + " from " + fs::path(c.file).filename().string() +
                          " not copied: " + e.what());
        continue;
      }
      // Several processes reported this rank (a wrapper script, a forked helper):
      // the longest-lived one is the rank itself.
      for (const auto& other : cands) {
        if (&other == &c) continue;
        out.log.push_back("rank " + std::to_string(r) + ": kept pid " + std::to_string(c.pid) + " (wall " +
                          std::to_string(c.wall_s) + " s), ignored pid " + std::to_string(other.pid) + " (wall " +
                          std::to_string(other.wall_s) + " s)");
      }
      break;
    }
  }
  for (int r = 0; r < expected_ranks; ++r)
    if (!out.ranks.count(r)) out.log.push_back("rank " + std::to_string(r) + ": no tracer data (missing)");
  return out;
}

std::map<std::int64_t, store::RankRecords> read_tracer_ranks(const std::string& trace_dir,
                                                             std::vector<std::string>& log) {
  std::map<std::int64_t, store::RankRecords> out;
  std::error_code ec;
  if (trace_dir.empty() || !fs::is_directory(trace_dir, ec)) return out;
  auto read_all = [&](const std::string& path, bool keep_longest) {
    try {
      auto f = store::File::open(path);
      if (!f.root().exists("ranks")) return;
      const auto src = f.root().open_group("ranks");
      for (const auto& name : src.children()) {
        const auto r = rank_of(name);
        if (r < 0) continue;
        store::RankRecords rec = store::read_rank(src.open_group(name));
        auto it = out.find(r);
        if (it == out.end()) out.emplace(r, std::move(rec));
        else if (keep_longest && rec.info.wall_s > it->second.info.wall_s) it->second = std::move(rec);
      }
    } catch (const std::exception& e) {
      log.push_back("warning: trace file " + fs::path(path).filename().string() + " unreadable: " + e.what());
    }
  };
  // As collect_tracer_ranks: ranks.h5 first, then per rank the longest-lived process.
  if (fs::exists(trace_dir + "/ranks.h5", ec)) read_all(trace_dir + "/ranks.h5", false);
  const std::size_t from_collective = out.size();
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(trace_dir, ec)) {
    const auto name = entry.path().filename().string();
    if (name.rfind("rank-", 0) == 0 && entry.path().extension() == ".h5") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::map<std::int64_t, store::RankRecords> collective;
  if (from_collective > 0) collective.swap(out);
  for (const auto& path : files) read_all(path, true);
  for (auto& [r, rec] : collective) out[r] = std::move(rec);  // ranks.h5 wins
  return out;
}

}  // namespace rtrace::launcher
