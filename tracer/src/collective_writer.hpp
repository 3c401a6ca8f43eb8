// The collective trace file: every MPI rank's records in one ranks.h5,
// written with parallel HDF5 (MPI-IO) inside the MPI_Finalize wrapper.
#pragma once

#include "rank_state.hpp"

#include <string>

namespace rtrace::tracer {

// Collective over MPI_COMM_WORLD: every rank must call it. Returns true on
// every rank when <trace dir>/ranks.h5 holds all ranks; false on every rank
// otherwise (`error` says why), and the ranks then write their own files.
bool write_collective(RankState& state, std::string* error) noexcept;

}  // namespace rtrace::tracer
