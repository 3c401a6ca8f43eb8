// After a point on several nodes did not end ok: which of its nodes stopped
// answering? A point of a killed node fails like any other (srun reports the
// step terminated); only asking Slurm to run something on each node tells a
// dead node from an app that failed. The answer goes into the point's hosts
// table (state `failed`) and log, and the node is not used again.
#pragma once

#include "rtrace/launcher/environment.hpp"

#include <string>
#include <vector>

namespace rtrace::launcher {

struct NodeCheck {
  std::vector<std::string> failed;  // hosts that did not run the probe
  std::vector<std::string> log;     // "info: ..." / "error: node node3 ..." lines for the point's log
};

// Runs `true` on every host in one srun step (--overlap, so a step still
// holding the point's CPUs does not block it); when that fails, one step per
// host names the ones that cannot run it. Each step is bounded by
// `timeout_s`. Costs one short step after a failed point; a step per node
// only when a node is down.
NodeCheck check_nodes(const std::string& srun_path, const Environment& env, const std::vector<std::string>& hosts,
                      double timeout_s = 20);

}  // namespace rtrace::launcher
