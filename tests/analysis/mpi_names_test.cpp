// MPI's startup and teardown names (analysis/src/mpi_names.cpp), in every
// spelling the tracer's rows and the sampled symbols use.
#include "mpi_names.hpp"

#include <gtest/gtest.h>

using rtrace::analysis::mpi_boundary;
using rtrace::analysis::MpiBoundary;

TEST(MpiNames, EverySpellingOfInitAndFinalize) {
  // C, PMPI, and the Fortran symbols the tracer wraps (lower_, lower__, lower, UPPER, lower_f08_).
  for (const char* n : {"MPI_Init", "PMPI_Init", "mpi_init_", "mpi_init__", "mpi_init", "MPI_INIT", "mpi_init_f08_",
                        "pmpi_init_", "MPI_Init_thread", "PMPI_Init_thread", "mpi_init_thread_", "MPI_INIT_THREAD",
                        "mpi_init_thread_f08_"})
    EXPECT_EQ(mpi_boundary(n), MpiBoundary::Init) << n;
  for (const char* n : {"MPI_Finalize", "PMPI_Finalize", "mpi_finalize_", "mpi_finalize__", "mpi_finalize",
                        "MPI_FINALIZE", "mpi_finalize_f08_"})
    EXPECT_EQ(mpi_boundary(n), MpiBoundary::Finalize) << n;
}

TEST(MpiNames, TheirNeighboursAreNot) {
  // Queries and other calls are inside the MPI window: the app's own MPI time.
  for (const char* n : {"MPI_Initialized", "mpi_initialized_", "MPI_Finalized", "MPI_Init_thread_x", "PMPI_",
                        "init", "_f08", "mpi_", "", "MPI_Allreduce", "my_mpi_init", "MPI_Init::helper"})
    EXPECT_EQ(mpi_boundary(n), MpiBoundary::None) << n;
}
