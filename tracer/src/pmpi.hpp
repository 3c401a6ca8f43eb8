// PMPI_* entry points looked up with dlsym (RTLD_NEXT first: the MPI library
// loaded after this one), never bound at link time.
#pragma once

#include <dlfcn.h>

namespace rtrace::tracer {

template <class Fn>
Fn resolve_pmpi(const char* name) noexcept {
  void* p = dlsym(RTLD_NEXT, name);
  if (!p) p = dlsym(RTLD_DEFAULT, name);
  return reinterpret_cast<Fn>(p);
}

// `auto f = RTRACE_PMPI(Comm_rank);` -> PMPI_Comm_rank or nullptr.
#define RTRACE_PMPI(name) ::rtrace::tracer::resolve_pmpi<decltype(&PMPI_##name)>("PMPI_" #name)

}  // namespace rtrace::tracer
