// Collective write of ranks.h5.
//
// Parallel HDF5 needs every rank to make the same metadata calls: so the
// ranks first allgather their table sizes, then every rank creates every
// rank's group and tables (collective), sizes them (collective), and writes
// only its own rows (independent). HDF5 1.10 cannot write variable-length
// strings through MPI-IO, so the string datasets (names, log) and the root
// attributes are added afterwards by rank 0 alone, serially, from strings
// gathered to it; only then is the temp file renamed to ranks.h5. The result
// has exactly store::write_rank's layout, so store::read_rank reads it.
#include "collective_writer.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>

#include "pmpi.hpp"
#include "rank_writer.hpp"
#include "serialize.hpp"
#include "tracer.hpp"

namespace rtrace::tracer {

namespace {

constexpr int kTables = 8;  // info, regions, kernels, memcpy, mpi, sampling, callpaths, dispatch

struct Pmpi {
  decltype(&PMPI_Comm_dup) comm_dup = RTRACE_PMPI(Comm_dup);
  decltype(&PMPI_Comm_free) comm_free = RTRACE_PMPI(Comm_free);
  decltype(&PMPI_Comm_rank) comm_rank = RTRACE_PMPI(Comm_rank);
  decltype(&PMPI_Comm_size) comm_size = RTRACE_PMPI(Comm_size);
  decltype(&PMPI_Allgather) allgather = RTRACE_PMPI(Allgather);
  decltype(&PMPI_Allreduce) allreduce = RTRACE_PMPI(Allreduce);
  decltype(&PMPI_Gather) gather = RTRACE_PMPI(Gather);
  decltype(&PMPI_Gatherv) gatherv = RTRACE_PMPI(Gatherv);
  decltype(&PMPI_Bcast) bcast = RTRACE_PMPI(Bcast);
  bool complete() const {
    return comm_dup && comm_free && comm_rank && comm_size && allgather && allreduce && gather && gatherv && bcast;
  }
};

// All ranks agree: true only if `ok` on every rank.
bool all_ok(const Pmpi& mpi, MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  if (mpi.allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return false;
  return all == 1;
}

// Creates one table for rank `owner` on every rank, sizes it, and lets the
// owner write its rows.
template <class Row>
void collective_table(store::Group& g, const char* name, const char* description, std::int64_t rows_on_owner,
                      const std::vector<Row>* mine) {
  std::size_t n = static_cast<std::size_t>(rows_on_owner);
  g.create_table<Row>(name, description, n > 0 ? std::min<std::size_t>(n, 65536) : 0);
  if (n == 0) return;
  store::Id ds(store::check(H5Dopen2(g.id(), name, H5P_DEFAULT), "open table", g.file(), g.child_path(name)));
  hsize_t dims[1] = {n};
  store::check_status(H5Dset_extent(ds.get(), dims), "extend table", g.file(), g.child_path(name));
  if (!mine) return;
  if (mine->size() != n) throw std::runtime_error(std::string("table ") + name + ": row count changed while writing");
  store::Id mtype = Row::layout().make_memory_type();
  store::check_status(H5Dwrite(ds.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, mine->data()), "write rows",
                      g.file(), g.child_path(name));
}

class CommGuard {
 public:
  CommGuard(const Pmpi& mpi, MPI_Comm comm) : mpi_(mpi), comm_(comm) {}
  ~CommGuard() { mpi_.comm_free(&comm_); }
  CommGuard(const CommGuard&) = delete;
  CommGuard& operator=(const CommGuard&) = delete;

 private:
  const Pmpi& mpi_;
  MPI_Comm comm_;
};

// Every rank's bytes, gathered on rank 0 (MPI_Gather of the sizes, then
// MPI_Gatherv). `what` names them in the error.
struct GatheredBytes {
  std::string all;
  std::vector<int> lens, displs;
  std::string of_rank(int r) const {
    return all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(r)]),
                      static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
  }
};

bool gather_bytes(const Pmpi& mpi, MPI_Comm comm, int rank, int size, const std::string& mine, const char* what,
                  GatheredBytes& out, std::string* error) {
  int my_len = static_cast<int>(mine.size());
  out.lens.assign(static_cast<std::size_t>(size), 0);
  out.displs.assign(static_cast<std::size_t>(size), 0);
  if (mpi.gather(&my_len, 1, MPI_INT, out.lens.data(), 1, MPI_INT, 0, comm) != MPI_SUCCESS) {
    *error = std::string("MPI_Gather of the sizes of ") + what + " failed";
    return false;
  }
  if (rank == 0) {
    std::size_t total = 0;
    for (int r = 0; r < size; ++r) {
      out.displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
      total += static_cast<std::size_t>(out.lens[static_cast<std::size_t>(r)]);
    }
    out.all.resize(total);
  }
  if (mpi.gatherv(mine.data(), my_len, MPI_CHAR, out.all.data(), out.lens.data(), out.displs.data(), MPI_CHAR, 0,
                  comm) != MPI_SUCCESS) {
    *error = std::string("MPI_Gatherv of ") + what + " failed";
    return false;
  }
  return true;
}

// The alternative: one gather of every rank's packed records, then rank 0
// writes ranks.h5 serially (temp + rename). One collective operation instead
// of several per rank and table.
bool gather_and_write(const Pmpi& mpi, MPI_Comm comm, int rank, int size, const store::RankRecords& rec,
                      const std::string& dir, std::string* error) {
  GatheredBytes gathered;
  if (!gather_bytes(mpi, comm, rank, size, pack_records(rec), "the records", gathered, error)) return false;
  int published = 0;
  std::string what;
  if (rank == 0) {
    const std::string tmp = dir + "/.ranks.h5.tmp", final_path = dir + "/ranks.h5";
    try {
      {
        store::File f = store::File::create(tmp, /*overwrite=*/true);
        store::write_root_attributes(f.root(), "trace", own_command_line());
        {
          store::Group ranks = f.root().create_group("ranks");
          for (int r = 0; r < size; ++r) {
            store::RankRecords one = unpack_records(gathered.of_rank(r));
            one.info.rank = r;
            one.writer = "gather";
            store::write_rank(ranks, one);
          }
        }
        f.close();
      }
      if (std::rename(tmp.c_str(), final_path.c_str()) != 0) throw std::runtime_error("rename to " + final_path + " failed");
      published = 1;
    } catch (const std::exception& e) {
      what = e.what();
      std::remove(tmp.c_str());
    }
  }
  if (mpi.bcast(&published, 1, MPI_INT, 0, comm) != MPI_SUCCESS || !published) {
    *error = rank == 0 ? "writing ranks.h5 on rank 0 failed: " + what : "rank 0 could not write ranks.h5";
    return false;
  }
  return true;
}

}  // namespace

bool write_collective(RankState& state, std::string* error) noexcept {
  InternalScope internal;
  static const Pmpi mpi;
  if (!mpi.complete()) {
    *error = "the loaded MPI library lacks a PMPI function the collective write needs";
    return false;  // consistent on every rank: same library everywhere
  }
  MPI_Comm comm;
  if (mpi.comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) {
    *error = "MPI_Comm_dup failed";
    return false;
  }
  CommGuard guard(mpi, comm);
  int rank = 0, size = 1;
  mpi.comm_rank(comm, &rank);
  mpi.comm_size(comm, &size);

  store::RankRecords rec = state.snapshot(/*complete=*/true, /*exit_status=*/-1, /*blocking=*/true);
  rec.info.rank = rank;  // the group name must match the communicator's numbering
  const std::string dir = state.config().trace_dir;
  const std::string tmp = dir + "/.ranks.h5.tmp";
  const std::string final_path = dir + "/ranks.h5";

  if (state.config().gather_to_root) return gather_and_write(mpi, comm, rank, size, rec, dir, error);

  // 1. Sizes of every rank's tables.
  std::int64_t my_sizes[kTables] = {1, static_cast<std::int64_t>(rec.regions.size()),
                                    static_cast<std::int64_t>(rec.kernels.size()),
                                    static_cast<std::int64_t>(rec.memcpy.size()),
                                    static_cast<std::int64_t>(rec.mpi.size()),
                                    static_cast<std::int64_t>(rec.sampling.size()),
                                    static_cast<std::int64_t>(rec.callpaths.size()),
                                    static_cast<std::int64_t>(rec.dispatch.size())};
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(size) * kTables);
  if (mpi.allgather(my_sizes, kTables, MPI_INT64_T, sizes.data(), kTables, MPI_INT64_T, comm) != MPI_SUCCESS) {
    *error = "MPI_Allgather of table sizes failed";
    return false;
  }

  std::int64_t t_start = monotonic_ns();
  auto phase = [&](const char* what) {
    state.log(LogLevel::Debug, std::string("collective write: ") + what + " at " +
                                   std::to_string(static_cast<double>(monotonic_ns() - t_start) * 1e-9) + " s");
  };
  // 2. Tables through MPI-IO: every rank creates everything, writes its own rows.
  bool ok = true;
  std::string what;
  try {
    store::FileOptions opts;
    opts.mpi_comm = &comm;
    store::File f = store::File::create(tmp, /*overwrite=*/true, opts);
    phase("file created");
    {  // every group handle closed before the file: MPI-IO files close only when nothing is open
    store::Group ranks = f.root().create_group("ranks");
    std::vector<store::RankInfoRow> info{rec.info};
    for (int r = 0; r < size; ++r) {
      const std::int64_t* s = &sizes[static_cast<std::size_t>(r) * kTables];
      bool own = r == rank;
      store::Group g = ranks.create_group(store::rank_group_name(r));
      collective_table<store::RankInfoRow>(g, "info", "one row: this rank's process, rusage and tracer status", s[0],
                                           own ? &info : nullptr);
      collective_table<store::RegionRow>(g, "regions", "annotated regions, aggregated per name", s[1],
                                         own ? &rec.regions : nullptr);
      collective_table<store::KernelRow>(g, "kernels", "CUDA kernel launches", s[2], own ? &rec.kernels : nullptr);
      collective_table<store::MemcpyRow>(g, "memcpy", "CUDA memcpy/memset activity", s[3], own ? &rec.memcpy : nullptr);
      collective_table<store::MpiRow>(g, "mpi", "MPI calls per function", s[4], own ? &rec.mpi : nullptr);
      collective_table<store::SamplingRow>(g, "sampling", "one row: the sampler's rate, clock and totals", s[5],
                                           own ? &rec.sampling : nullptr);
      collective_table<store::CallPathRow>(g, "callpaths",
                                           "sampled call-path tree per thread: self and inclusive samples", s[6],
                                           own ? &rec.callpaths : nullptr);
      if (s[7] > 0)  // as write_rank: only where the tracer observed something
        collective_table<store::DispatchRow>(g, "dispatch",
                                             "code libraries chose at run time in this process (the tracer observed it)",
                                             s[7], own ? &rec.dispatch : nullptr);
    }
    }
    phase("tables written");
    f.close();
    phase("file closed");
  } catch (const std::exception& e) {
    ok = false;
    what = e.what();
  }
  if (!all_ok(mpi, comm, ok)) {
    *error = what.empty() ? "another rank failed writing its tables" : what;
    if (rank == 0) std::remove(tmp.c_str());
    return false;
  }

  phase("agreed");
  // 3. Strings to rank 0, which adds them serially and publishes the file.
  std::string packed;
  pack_strings(rec.names, packed);
  pack_strings(rec.log, packed);
  GatheredBytes gathered;
  if (!gather_bytes(mpi, comm, rank, size, packed, "names and logs", gathered, error)) return false;
  int published = 0;
  if (rank == 0) {
    try {
      {
        store::File f = store::File::open(tmp, store::Access::ReadWrite);
        store::write_root_attributes(f.root(), "trace", own_command_line());
        {
        store::Group ranks = f.root().open_group("ranks");
        for (int r = 0; r < size; ++r) {
          const std::string chunk = gathered.of_rank(r);
          std::size_t at = 0;
          auto names = unpack_strings(chunk, at);
          auto log = unpack_strings(chunk, at);
          store::Group g = ranks.open_group(store::rank_group_name(r));
          g.write_strings("names", names, "name_id -> region/kernel/MPI function name");
          g.write_strings("log", log, "tracer warnings and errors");
          g.set_attr("writer", "mpi-io");
        }
        }
        f.close();
      }
      if (std::rename(tmp.c_str(), final_path.c_str()) != 0) throw std::runtime_error("rename to " + final_path + " failed");
      published = 1;
    } catch (const std::exception& e) {
      what = e.what();
      std::remove(tmp.c_str());
    }
  }
  phase("published");
  if (mpi.bcast(&published, 1, MPI_INT, 0, comm) != MPI_SUCCESS || !published) {
    *error = rank == 0 ? "publishing ranks.h5 failed: " + what : "rank 0 could not publish ranks.h5";
    return false;
  }
  return true;
}

}  // namespace rtrace::tracer
