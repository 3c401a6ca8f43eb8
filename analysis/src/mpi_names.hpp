// Which names are MPI's startup and teardown (MPI_Init, MPI_Init_thread,
// MPI_Finalize). The tracer's MPI call rows use the C names; sampled call
// paths name the symbols that ran: the C names, their PMPI entries, and the
// Fortran symbols the tracer wraps (tracer/src/mpi_fortran.hpp: lower_,
// lower__, lower, UPPER, lower_f08_), which mpi_entry_name folds to the C
// name (the profile's MPI frames too). The summaries time the MPI window
// (MPI_Init's end to MPI_Finalize's start), so these calls and their samples
// sit outside it; one rule here keeps the POP factors, the profile and the
// reports from each judging a different list.
#pragma once

#include <string>

namespace rtrace::analysis {

// The C name of an MPI entry point in any binding: "PMPI_Alltoall",
// "mpi_alltoall_", "mpi_alltoall__", "mpi_alltoall_f08_", "MPI_ALLTOALL" ->
// "MPI_Alltoall"; "" when `f` is not one.
std::string mpi_entry_name(const std::string& f);

enum class MpiBoundary { None, Init, Finalize };

// Init for MPI_Init/MPI_Init_thread, Finalize for MPI_Finalize, in any
// binding (mpi_entry_name); None for every other name (MPI_Initialized among them).
MpiBoundary mpi_boundary(const std::string& name);

inline bool starts_or_ends_mpi(const std::string& name) { return mpi_boundary(name) != MpiBoundary::None; }

}  // namespace rtrace::analysis
