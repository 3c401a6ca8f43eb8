// The cache hierarchy the counting tool simulates: the host's data caches
// (hwloc, as the ERT reads the topology), each shared level divided among
// the point's workers that share one instance of it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::counts {

class GeometryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CacheLevel {
  std::string name;                 // "L1d", "L2", "L3"
  std::int64_t size_bytes = 0;      // one instance
  int associativity = 0;            // ways
  int line_bytes = 64;
  int instances = 0;                // in the machine; 0 unknown
  int shared_by = 1;                // cores sharing one instance (not hardware threads)
};

// The host's L1d, L2 and L3 from hwloc (data or unified caches; deeper levels
// are left out: the counts have three cache levels). Unknown associativity
// (hwloc 0) is taken as 8 ways and fully associative (-1) as 16, with a note.
std::vector<CacheLevel> host_cache_levels(std::vector<std::string>* notes = nullptr);

// "L1=32K,8,64;L2=1M,16,64;L3=32M,16,64[,SHARED_BY]" (sizes in bytes, K/M/G
// suffixes; SHARED_BY counts cores; `L3=none` or a missing level: not simulated). L1 and L2 are
// private unless SHARED_BY says otherwise; L3 is shared by every worker.
std::vector<CacheLevel> parse_geometry(const std::string& spec);

// Workers of a point (threads per rank x ranks on a node) sharing one
// instance of `level`: they fill the cores in order, one per core (as the
// timed run places them: OMP_PLACES=cores), a core's second hardware thread
// only once every core has one; so the
// instances in use are ceil(workers / shared_by) (at most `instances`) and
// each holds ceil(workers / instances in use). At least 1.
int sharers_of(const CacheLevel& level, int workers_per_node);

// The tool's options for a hierarchy and its sharers: --L1=.. --L2=..|none
// --L3=..|none --L<n>-sharers=N. Throws GeometryError when the levels cannot
// be simulated (no L1, different line sizes).
std::vector<std::string> tool_options(const std::vector<CacheLevel>& levels, const std::vector<int>& sharers);

std::string human_bytes(std::int64_t bytes);  // "48 KiB", "1.5 MiB"

}  // namespace rtrace::counts
