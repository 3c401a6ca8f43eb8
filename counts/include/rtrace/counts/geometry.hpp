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

// How the tool simulates one level for each process (rank) of a point with
// `threads_per_rank` x `ranks_per_node` workers on a node. A level that cores
// share (shared_by > 1; never the L1, which every access reads) is one
// simulated cache for the rank's threads, holding the rank's part of an
// instance: its threads on the instance out of all the workers there (so at
// 1 rank, all of it); threads spread over several instances get one copy
// per instance (threads in creation order, as OpenMP fills the cores).
// Levels below a shared one are shared too. A private level is a cache per
// thread (a 1/sharers slice where workers outnumber its instances).
struct LevelPlan {
  int sharers = 1;                 // workers of the node on one instance (sharers_of)
  int threads_sharing = 0;         // shared: the rank's threads on one simulated cache; 0: private
  int copies = 0;                  // shared: simulated caches for the rank's threads; 0: private
  std::int64_t simulated_bytes = 0;  // one simulated cache (the tool rounds it down to whole sets)
  bool shared() const { return threads_sharing > 0; }
};
std::vector<LevelPlan> plan_levels(const std::vector<CacheLevel>& levels, int threads_per_rank, int ranks_per_node);

// The tool's options for a hierarchy and its plan: --L1=.. --L2=..|none
// --L3=..|none --L<n>-sharers=N --L<n>-shared=THREADS,COPIES. Throws
// GeometryError when the levels cannot be simulated (no L1, different line sizes).
std::vector<std::string> tool_options(const std::vector<CacheLevel>& levels, const std::vector<LevelPlan>& plans);

// "L1d 48 KiB and L2 2 MiB per thread, L3 32 MiB shared by the rank's threads"
std::string describe_plan(const std::vector<CacheLevel>& levels, const std::vector<LevelPlan>& plans);

// Is this a virtual machine (the `hypervisor` flag in /proc/cpuinfo)? Its
// caches as the guest sees them may be the host's (an L3 of the whole
// socket, not the VM's share of it).
bool host_is_virtual_machine();

std::string human_bytes(std::int64_t bytes);  // "48 KiB", "1.5 MiB"

}  // namespace rtrace::counts
