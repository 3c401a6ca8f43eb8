// The processes taking part in one ERT run: one (no MPI) or an MPI world.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace rtrace::ert {

class RankGroup {
 public:
  virtual ~RankGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual void barrier() = 0;
  // Every rank's value, in rank order, on every rank.
  virtual std::vector<double> allgather(double value) = 0;
  // Every rank's values (the same count on every rank), rank after rank: one
  // collective for several numbers.
  virtual std::vector<double> allgather_values(const std::vector<double>& values) = 0;
  // This process's index among the ranks on its node, and how many there are.
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  // True on every rank when every rank of this node passed the same value.
  virtual bool node_agrees(double value) = 0;
  // True on every rank when any rank passes true (used to agree on errors).
  virtual bool any(bool flag) = 0;
  virtual std::string description() const = 0;  // "single process", "MPI (OpenMPI 4.1.4)"
  // The ranks of this node as a group of their own (a node measures its own
  // slice with `rtrace ert --per-node`); nullptr without MPI.
  virtual std::unique_ptr<RankGroup> node_group() { return nullptr; }
  // The number of nodes, and this node's index in world-rank order of the nodes' first ranks.
  virtual int node_count() { return 1; }
  // Every node's first rank sends `blob`; world rank 0 gets them all, in node
  // order; every other rank gets an empty vector. Collective over the world.
  virtual std::vector<std::string> gather_from_node_leaders(const std::string& blob) { return {blob}; }
};

// One process, nothing to synchronise.
std::unique_ptr<RankGroup> make_single_rank_group();

// True when this process was started by an MPI launcher (mpirun/mpiexec/srun
// with PMI): OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK or MPI_LOCALNRANKS set.
bool launched_by_mpi();
// Whether this build has MPI support.
bool mpi_available() noexcept;
// Initialises MPI (MPI_THREAD_FUNNELED) and returns MPI_COMM_WORLD; finalised
// when the group is destroyed. Throws std::runtime_error without MPI support.
std::unique_ptr<RankGroup> make_mpi_rank_group(int& argc, char**& argv);

}  // namespace rtrace::ert
