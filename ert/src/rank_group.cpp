#include "rtrace/ert/rank_group.hpp"

#include <cstdlib>
#include <stdexcept>

#ifdef RTRACE_ERT_HAVE_MPI
#include <mpi.h>
#endif

namespace rtrace::ert {

namespace {

class SingleRank final : public RankGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  std::vector<double> allgather(double value) override { return {value}; }
  std::vector<double> allgather_values(const std::vector<double>& values) override { return values; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  bool node_agrees(double) override { return true; }
  bool any(bool flag) override { return flag; }
  std::string description() const override { return "single process"; }
};

#ifdef RTRACE_ERT_HAVE_MPI
void check_mpi(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw std::runtime_error(std::string(what) + " failed: " + std::string(msg, len));
  }
}

// The ranks of one node (a communicator of MPI_COMM_TYPE_SHARED), measuring
// as if they were the whole world.
class MpiNode final : public RankGroup {
 public:
  MpiNode(MPI_Comm parent_node, std::string library) : library_(std::move(library)) {
    check_mpi(MPI_Comm_dup(parent_node, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiNode() override { MPI_Comm_free(&comm_); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }
  std::vector<double> allgather(double value) override {
    std::vector<double> all(static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_), "MPI_Allgather");
    return all;
  }
  std::vector<double> allgather_values(const std::vector<double>& values) override {
    const int n = static_cast<int>(values.size());
    std::vector<double> all(values.size() * static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(values.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, comm_), "MPI_Allgather");
    return all;
  }
  int local_rank() const override { return rank_; }
  int local_size() const override { return size_; }
  bool node_agrees(double value) override {
    double lo = 0, hi = 0;
    check_mpi(MPI_Allreduce(&value, &lo, 1, MPI_DOUBLE, MPI_MIN, comm_), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(&value, &hi, 1, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
    return lo == hi;
  }
  bool any(bool flag) override {
    int local = flag ? 1 : 0, global = 0;
    check_mpi(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, comm_), "MPI_Allreduce");
    return global != 0;
  }
  std::string description() const override { return "MPI (" + library_ + "), per node"; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::string library_;
};

class MpiWorld final : public RankGroup {
 public:
  MpiWorld(int& argc, char**& argv) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      owns_ = true;
      if (provided < MPI_THREAD_FUNNELED) throw std::runtime_error("MPI does not provide MPI_THREAD_FUNNELED");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, len);
    library_ = v.substr(0, v.find_first_of(",\n"));
    // The ranks sharing this node (they may share its CPUs too).
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node_),
              "MPI_Comm_split_type");
    MPI_Comm_rank(node_, &local_rank_);
    MPI_Comm_size(node_, &local_size_);
  }
  ~MpiWorld() override {
    if (node_ != MPI_COMM_NULL) MPI_Comm_free(&node_);
    if (owns_) MPI_Finalize();
  }
  std::vector<double> allgather_values(const std::vector<double>& values) override {
    const int n = static_cast<int>(values.size());
    std::vector<double> all(values.size() * static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(values.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
    return all;
  }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  bool node_agrees(double value) override {
    double lo = 0, hi = 0;
    check_mpi(MPI_Allreduce(&value, &lo, 1, MPI_DOUBLE, MPI_MIN, node_), "MPI_Allreduce");
    check_mpi(MPI_Allreduce(&value, &hi, 1, MPI_DOUBLE, MPI_MAX, node_), "MPI_Allreduce");
    return any(lo != hi) == false;
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  std::vector<double> allgather(double value) override {
    std::vector<double> all(static_cast<std::size_t>(size_));
    check_mpi(MPI_Allgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD), "MPI_Allgather");
    return all;
  }
  bool any(bool flag) override {
    int local = flag ? 1 : 0, global = 0;
    check_mpi(MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return global != 0;
  }
  std::string description() const override { return "MPI (" + library_ + ")"; }
  std::unique_ptr<RankGroup> node_group() override { return std::make_unique<MpiNode>(node_, library_); }
  int node_count() override {
    int leader = local_rank_ == 0 ? 1 : 0, nodes = 0;
    check_mpi(MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return nodes;
  }
  std::vector<std::string> gather_from_node_leaders(const std::string& blob) override {
    // Sizes first (0 from the other ranks of a node), then the bytes.
    const int mine = local_rank_ == 0 ? static_cast<int>(blob.size()) : 0;
    std::vector<int> sizes(static_cast<std::size_t>(size_)), offsets(static_cast<std::size_t>(size_));
    check_mpi(MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[static_cast<std::size_t>(r)] = total;
      total += sizes[static_cast<std::size_t>(r)];
    }
    std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
    check_mpi(MPI_Gatherv(blob.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
                          MPI_COMM_WORLD),
              "MPI_Gatherv");
    std::vector<std::string> out;
    if (rank_ != 0) return out;
    for (int r = 0; r < size_; ++r)
      if (sizes[static_cast<std::size_t>(r)] > 0)
        out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                                 static_cast<std::size_t>(sizes[static_cast<std::size_t>(r)])));
    return out;
  }

 private:
  int rank_ = 0, size_ = 1;
  int local_rank_ = 0, local_size_ = 1;
  MPI_Comm node_ = MPI_COMM_NULL;
  bool owns_ = false;
  std::string library_;
};
#endif

}  // namespace

std::unique_ptr<RankGroup> make_single_rank_group() { return std::make_unique<SingleRank>(); }

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

bool mpi_available() noexcept {
#ifdef RTRACE_ERT_HAVE_MPI
  return true;
#else
  return false;
#endif
}

std::unique_ptr<RankGroup> make_mpi_rank_group(int& argc, char**& argv) {
#ifdef RTRACE_ERT_HAVE_MPI
  return std::make_unique<MpiWorld>(argc, argv);
#else
  (void)argc;
  (void)argv;
  throw std::runtime_error("this rtrace was built without MPI (RTRACE_ENABLE_MPI=OFF)");
#endif
}

}  // namespace rtrace::ert
