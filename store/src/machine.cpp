// describe_this_machine(): CPU topology and caches from hwloc, memory from
// /proc/meminfo (hwloc's memory size is wrong in some VMs), model from /proc/cpuinfo.
#include "rtrace/store/run_file.hpp"

#include <hwloc.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <map>
#include <string>

namespace rtrace::store {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown";
}

// The widest SIMD registers the CPU offers, from the flags the kernel reports
// (x86 `flags`, Arm `Features`); 0 when none is recognised.
std::int32_t vector_bits() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    std::int32_t bits = 0;
    std::string w;
    while (words >> w) {
      if (w == "avx512f") bits = std::max(bits, 512);
      else if (w == "avx" || w == "avx2") bits = std::max(bits, 256);
      else if (w == "sse2" || w == "asimd" || w == "neon") bits = std::max(bits, 128);
    }
    return bits;
  }
  return 0;
}

std::int64_t memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : -1;
}

}  // namespace

MachineInfo describe_this_machine() {
  MachineInfo m;
  m.hostname = hostname();
  m.cpu_model = cpu_model();
  struct utsname u {};
  if (uname(&u) == 0) m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  m.memory_bytes = memory_bytes();
  m.vector_bits = vector_bits();

  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return m;
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return m;
  }
  m.sockets = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  m.cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  m.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  // Data and unified caches only (L1i is irrelevant to the roofline).
  const hwloc_obj_type_t types[] = {HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE, HWLOC_OBJ_L4CACHE,
                                    HWLOC_OBJ_L5CACHE};
  for (hwloc_obj_type_t t : types) {
    int n = hwloc_get_nbobjs_by_type(topo, t);
    if (n <= 0) continue;
    hwloc_obj_t obj = hwloc_get_obj_by_type(topo, t, 0);
    if (!obj || !obj->attr) continue;
    const auto& c = obj->attr->cache;
    if (c.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
    CacheRow row{};
    std::string name = "L" + std::to_string(c.depth) + (c.depth == 1 ? "d" : "");
    set_str(row.name, name);
    row.depth = static_cast<std::int32_t>(c.depth);
    row.size_bytes = static_cast<std::int64_t>(c.size);
    row.line_bytes = static_cast<std::int32_t>(c.linesize);
    row.instances = n;
    row.shared_by = obj->cpuset ? hwloc_bitmap_weight(obj->cpuset) : 1;
    m.caches.push_back(row);
  }
  hwloc_topology_destroy(topo);
  return m;
}

}  // namespace rtrace::store
