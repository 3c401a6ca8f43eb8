// The one classifier of code by runtime (store/code_category.hpp): the
// tracer's sampled frames and the analysis' counted rows use it alike.
#include "rtrace/store/code_category.hpp"

#include <gtest/gtest.h>

using rtrace::store::code_category;
using rtrace::store::is_runtime_category;

TEST(CodeCategory, AttributesRuntimesByModule) {
  EXPECT_EQ(code_category("libmpi.so.40", "ompi_coll_base_allreduce_intra_recursivedoubling"), "mpi");
  EXPECT_EQ(code_category("libopen-pal.so.40", "opal_progress"), "mpi");
  EXPECT_EQ(code_category("mca_btl_vader.so", "mca_btl_vader_component_progress"), "mpi");
  EXPECT_EQ(code_category("mca_coll_libnbc.so", "ompi_coll_libnbc_progress"), "mpi");
  EXPECT_EQ(code_category("libpmix.so.2", "pmix_progress_engine"), "mpi");
  EXPECT_EQ(code_category("libinfinipath.so.4.0", "libinfinipath.so.4.0+0x3b00"), "mpi");  // PSM transport
  EXPECT_EQ(code_category("librtrace_tracer.so", "MPI_Allreduce"), "mpi");
  EXPECT_EQ(code_category("librtrace_tracer.so", "rtrace_region_begin"), "rtrace");
  EXPECT_EQ(code_category("libgomp.so.1.0.0", "gomp_team_barrier_wait_end"), "openmp");
  EXPECT_EQ(code_category("libc.so.6", "memcpy"), "system");
  EXPECT_EQ(code_category("app", "setup_mesh(long)"), "app");
  EXPECT_EQ(code_category("libopenblas.so.0", "dgemm_kernel_HASWELL"), "app");  // the app's own library
}

TEST(CodeCategory, AnUnknownModuleIsJudgedByTheFunctionsName) {
  EXPECT_EQ(code_category("", "PMPI_Barrier"), "mpi");
  EXPECT_EQ(code_category("", "triad"), "app");
}

TEST(CodeCategory, RuntimesAreTheMpiLibraryTheOpenMpRuntimeAndTheTracer) {
  for (const char* c : {"mpi", "openmp", "rtrace"}) EXPECT_TRUE(is_runtime_category(c)) << c;
  for (const char* c : {"app", "system", ""}) EXPECT_FALSE(is_runtime_category(c)) << c;
}
