// Slurm host lists: "node[1-4,7],gpu[01-02]" <-> node1,node2,... (the form of
// SLURM_JOB_NODELIST and srun -w). Expanded here instead of running
// `scontrol show hostnames`, so a sweep's node placement is known before
// anything runs.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::launcher {

class HostlistError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// "a[1-3]b,c" -> a1b a2b a3b c. Zero padding is kept ("n[08-10]" -> n08 n09
// n10); several bracket groups in one name multiply out. Throws HostlistError
// naming the list and the bad part.
std::vector<std::string> expand_hostlist(const std::string& list);

// The tasks per node of an allocation from SLURM_NTASKS_PER_NODE, else the
// first count of SLURM_TASKS_PER_NODE ("2(x3),1" -> 2); 0 when neither parses.
int allocation_tasks_per_node(const std::string& ntasks_per_node, const std::string& tasks_per_node);

// "node1,node2" (srun -w takes a comma list).
std::string join_hosts(const std::vector<std::string>& hosts, std::size_t count);

}  // namespace rtrace::launcher
