#include "rtrace/counts/geometry.hpp"

#include "split_fields.hpp"

#include <hwloc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rtrace::counts {

std::vector<CacheLevel> host_cache_levels(std::vector<std::string>* notes) {
  std::vector<CacheLevel> out;
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) throw GeometryError("hwloc: cannot initialise the topology");
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    throw GeometryError("hwloc: cannot load the topology");
  }
  const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE};
  for (hwloc_obj_type_t t : types) {
    const int n = hwloc_get_nbobjs_by_type(topo, t);
    if (n <= 0) continue;
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, t, 0);
    if (!obj || !obj->attr) continue;
    const auto& c = obj->attr->cache;
    if (c.type == HWLOC_OBJ_CACHE_INSTRUCTION || c.size == 0) continue;
    CacheLevel l;
    l.name = "L" + std::to_string(c.depth) + (c.depth == 1 ? "d" : "");
    l.size_bytes = static_cast<std::int64_t>(c.size);
    l.line_bytes = c.linesize > 0 ? static_cast<int>(c.linesize) : 64;
    l.instances = n;
    // Sharers in cores, not hardware threads: the timed run places its
    // threads one per core (OMP_PLACES=cores), so two threads on an SMT
    // machine have an L1 and an L2 each.
    if (obj->cpuset) {
      const int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, obj->cpuset, HWLOC_OBJ_CORE);
      l.shared_by = std::max(1, cores > 0 ? cores : hwloc_bitmap_weight(obj->cpuset));
    }
    if (c.associativity > 0) {
      l.associativity = c.associativity;
    } else {
      l.associativity = c.associativity < 0 ? 16 : 8;
      if (notes)
        notes->push_back(l.name + ": hwloc gives no associativity (" + std::to_string(c.associativity) +
                         "); simulated with " + std::to_string(l.associativity) + " ways");
    }
    out.push_back(l);
  }
  const int deeper = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L4CACHE);
  hwloc_topology_destroy(topo);
  if (deeper > 0 && notes) notes->push_back("L4 cache not simulated (the counts have three cache levels)");
  // One line size for the simulation: the L1's (hwloc may leave some out).
  for (auto& l : out) l.line_bytes = out.front().line_bytes;
  return out;
}

namespace {

std::int64_t parse_size(const std::string& s, const std::string& context) {
  if (s.empty()) throw GeometryError(context + ": empty size");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  std::int64_t mult = 1;
  if (end && *end) {
    const std::string suffix = end;
    if (suffix == "K" || suffix == "k" || suffix == "KiB") mult = 1024;
    else if (suffix == "M" || suffix == "m" || suffix == "MiB") mult = 1024 * 1024;
    else if (suffix == "G" || suffix == "g" || suffix == "GiB") mult = 1024LL * 1024 * 1024;
    else throw GeometryError(context + ": `" + s + "` is not a size (bytes, or K/M/G)");
  }
  if (!(v > 0) || v * static_cast<double>(mult) > 1e15)
    throw GeometryError(context + ": `" + s + "` is not a positive size");
  return static_cast<std::int64_t>(v * static_cast<double>(mult));
}

int parse_int(const std::string& s, const std::string& context, const char* what) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || !end || *end || v <= 0 || v > 1 << 20)
    throw GeometryError(context + ": `" + s + "` is not a positive " + what);
  return static_cast<int>(v);
}

}  // namespace

std::vector<CacheLevel> parse_geometry(const std::string& spec) {
  std::vector<CacheLevel> levels(3);
  bool seen[3] = {false, false, false};
  bool present[3] = {false, false, false};
  for (const std::string& item : split_fields(spec, ';')) {
    if (item.empty()) continue;
    const std::string context = "--geometry `" + item + "`";
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw GeometryError(context + ": expected L1=SIZE,ASSOC,LINE (or L2=, L3=)");
    std::string key = item.substr(0, eq);
    if (key == "L1d") key = "L1";
    int index = key == "L1" ? 0 : key == "L2" ? 1 : key == "L3" ? 2 : -1;
    if (index < 0) throw GeometryError(context + ": `" + key + "` is not a level (L1, L2, L3)");
    if (seen[index]) throw GeometryError(context + ": " + key + " given twice");
    seen[index] = true;
    const std::string value = item.substr(eq + 1);
    if (value == "none") {
      if (index == 0) throw GeometryError(context + ": the L1 cannot be left out");
      continue;
    }
    const auto parts = split_fields(value, ',');
    if (parts.size() < 3 || parts.size() > 4) throw GeometryError(context + ": expected SIZE,ASSOC,LINE[,SHARED_BY]");
    CacheLevel& l = levels[index];
    l.name = index == 0 ? "L1d" : key;
    l.size_bytes = parse_size(parts[0], context);
    l.associativity = parse_int(parts[1], context, "associativity");
    l.line_bytes = parse_int(parts[2], context, "line size");
    if ((l.line_bytes & (l.line_bytes - 1)) != 0) throw GeometryError(context + ": the line size must be a power of two");
    if (l.size_bytes < static_cast<std::int64_t>(l.associativity) * l.line_bytes)
      throw GeometryError(context + ": smaller than one set (associativity x line size)");
    // L3 is shared by every worker of a node unless told otherwise.
    l.shared_by = parts.size() == 4 ? parse_int(parts[3], context, "sharing count") : (index == 2 ? 1 << 20 : 1);
    l.instances = 0;
    present[index] = true;
  }
  if (!present[0]) throw GeometryError("--geometry `" + spec + "`: no L1 (L1=SIZE,ASSOC,LINE)");
  if (present[2] && !present[1]) throw GeometryError("--geometry `" + spec + "`: an L3 without an L2");
  std::vector<CacheLevel> out;
  for (int i = 0; i < 3; ++i)
    if (present[i]) out.push_back(levels[i]);
  return out;
}

int sharers_of(const CacheLevel& level, int workers_per_node) {
  const int workers = std::max(1, workers_per_node);
  const int shared_by = std::max(1, level.shared_by);
  int in_use = (workers + shared_by - 1) / shared_by;
  if (level.instances > 0) in_use = std::min(in_use, level.instances);
  in_use = std::max(1, in_use);
  return (workers + in_use - 1) / in_use;
}

std::vector<LevelPlan> plan_levels(const std::vector<CacheLevel>& levels, int threads_per_rank, int ranks_per_node) {
  const int threads = std::max(1, threads_per_rank);
  // Each is at most 2^20: their product does not fit an int.
  const long long workers_on_node = static_cast<long long>(threads) * std::max(1, ranks_per_node);
  const int workers = static_cast<int>(std::min<long long>(workers_on_node, 1 << 30));
  std::vector<LevelPlan> out;
  bool shared_above = false;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const CacheLevel& l = levels[i];
    LevelPlan p;
    p.sharers = std::min(sharers_of(l, workers), 4096);
    if (i > 0 && (l.shared_by > 1 || shared_above)) {
      shared_above = true;
      p.threads_sharing = std::min(threads, p.sharers);
      p.copies = (threads + p.threads_sharing - 1) / p.threads_sharing;
      if (l.instances > 0) p.copies = std::min(p.copies, l.instances);
      p.copies = std::min(p.copies, 4096);
      p.simulated_bytes = static_cast<std::int64_t>(static_cast<double>(l.size_bytes) * p.threads_sharing / p.sharers);
    } else {
      p.simulated_bytes = l.size_bytes / p.sharers;
    }
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> tool_options(const std::vector<CacheLevel>& levels, const std::vector<LevelPlan>& plans) {
  if (levels.empty()) throw GeometryError("no cache level to simulate");
  if (plans.size() != levels.size()) throw GeometryError("one plan per level is needed");
  std::vector<std::string> out;
  static const char* const flags[3] = {"--L1", "--L2", "--L3"};
  for (std::size_t i = 0; i < 3; ++i) {
    if (i >= levels.size()) {
      out.push_back(std::string(flags[i]) + "=none");
      continue;
    }
    const CacheLevel& l = levels[i];
    if (l.line_bytes != levels.front().line_bytes)
      throw GeometryError(l.name + ": line size " + std::to_string(l.line_bytes) + " differs from the L1's " +
                          std::to_string(levels.front().line_bytes) + "; the simulation needs one line size");
    out.push_back(std::string(flags[i]) + "=" + std::to_string(l.size_bytes) + "," + std::to_string(l.associativity) +
                  "," + std::to_string(l.line_bytes));
    out.push_back(std::string(flags[i]) + "-sharers=" + std::to_string(std::max(1, plans[i].sharers)));
    if (i > 0)
      out.push_back(std::string(flags[i]) + "-shared=" + std::to_string(plans[i].threads_sharing) + "," +
                    std::to_string(std::max(1, plans[i].copies)));
  }
  return out;
}

std::string describe_plan(const std::vector<CacheLevel>& levels, const std::vector<LevelPlan>& plans) {
  std::string per_thread, shared;
  for (std::size_t i = 0; i < levels.size() && i < plans.size(); ++i) {
    const LevelPlan& p = plans[i];
    std::string one = levels[i].name + " " + human_bytes(p.simulated_bytes);
    if (!p.shared()) {
      if (p.sharers > 1) one += " (1/" + std::to_string(p.sharers) + ")";
      per_thread += (per_thread.empty() ? "" : ", ") + one;
      continue;
    }
    if (p.simulated_bytes < levels[i].size_bytes)
      one += " (" + std::to_string(p.threads_sharing) + "/" + std::to_string(p.sharers) + " of " +
             human_bytes(levels[i].size_bytes) + ")";
    one += p.copies > 1 ? " x" + std::to_string(p.copies) + " shared by " + std::to_string(p.threads_sharing) +
                              " of the rank's threads each"
                        : " shared by the rank's threads";
    shared += (shared.empty() ? "" : ", ") + one;
  }
  if (per_thread.empty()) return shared;
  return per_thread + " per thread" + (shared.empty() ? "" : ", " + shared);
}

bool host_is_virtual_machine() {
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[4096];
  bool vm = false;
  while (!vm && std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "flags", 5) != 0) continue;
    // " hypervisor" as a whole word among the flags.
    for (const char* p = std::strstr(line, "hypervisor"); p && !vm; p = std::strstr(p + 1, "hypervisor")) {
      const char after = p[10];
      vm = p > line && (p[-1] == ' ' || p[-1] == '\t') && (after == ' ' || after == '\n' || after == '\0');
    }
    break;   // every CPU has the same flags
  }
  std::fclose(f);
  return vm;
}

std::string human_bytes(std::int64_t b) {
  char buf[32];
  const double v = static_cast<double>(b);
  if (b >= (1LL << 30)) std::snprintf(buf, sizeof buf, "%.3g GiB", v / (1LL << 30));
  else if (b >= (1LL << 20)) std::snprintf(buf, sizeof buf, "%.3g MiB", v / (1LL << 20));
  else if (b >= (1LL << 10)) std::snprintf(buf, sizeof buf, "%.3g KiB", v / (1LL << 10));
  else std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

}  // namespace rtrace::counts
