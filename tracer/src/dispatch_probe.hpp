// What the libraries of this process chose at run time (OpenBLAS's core
// type, MKL's code path, glibc's CPU features and string-function variants,
// FFTW loaded): observed in the timed run, so that the counting pass can run
// the same code under Valgrind, whose CPU the libraries see differently
// (docs/counts.md, "Run-time dispatch").
#pragma once

#include "rtrace/store/records.hpp"

#include <string>
#include <vector>

namespace rtrace::tracer {

// OpenBLAS's core and MKL's path, asked of the libraries themselves
// (openblas_get_corename, mkl_cbwr_get_auto_branch). Early: the tracer's
// constructor runs after those of the app's libraries, and the tracer's
// final write after their destructors (OpenBLAS then says "Unknown").
std::vector<store::DispatchRow> observe_blas() noexcept;

// Everything, for the rank's records: `early` (observe_blas at start-up),
// OpenBLAS/MKL asked again only when `early` has no row of theirs (a
// library loaded later by dlopen), glibc's active CPU features and the
// variants its IFUNC'd string functions resolved to (dlsym), FFTW loaded.
// Never throws; a library that is not loaded gives no row. Not in a signal
// handler.
std::vector<store::DispatchRow> observe_dispatch(const std::vector<store::DispatchRow>& early) noexcept;

}  // namespace rtrace::tracer
