// Which runtime a piece of code belongs to, from its module's file name and
// its function's name. One classifier for every component: the tracer books
// sampled frames with it (callpaths.category), the analysis splits counted
// rows with it (the application's own work apart from the MPI library's and
// the OpenMP runtime's), so both sides of a counted roofline agree on what is
// the application.
#pragma once

#include <string>

namespace rtrace::store {

// "mpi": the MPI library, its components and transports, and the libraries its
// progress engine runs in (PMIx, libevent, hwloc, UCX, libfabric, verbs), and
// any MPI_*/PMPI_*/mpi_* entry point; "openmp": libgomp, libomp, libiomp;
// "rtrace": the tracer itself; "system": libc, libm, the C++ and Fortran
// runtimes, the loader, libraries the tracer or the I/O stack bring (libunwind,
// libdw, HDF5, zlib); "app": everything else (the executable and the
// application's own libraries: BLAS, FFTW, ...). A module may be "" (unknown):
// only the function's name then decides.
std::string code_category(const std::string& module, const std::string& function);

// True for the runtimes whose code is not the application's work ("mpi",
// "openmp", "rtrace"): under a counting tool a waiting rank or thread spins
// there, so its instructions and bytes grow with the wait, not with the work.
bool is_runtime_category(const std::string& category) noexcept;

}  // namespace rtrace::store
