#include "rtrace/store/code_category.hpp"

namespace rtrace::store {
namespace {
bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

std::string code_category(const std::string& module, const std::string& function) {
  auto has = [&](const char* prefix) { return starts_with(module, prefix); };
  if (starts_with(function, "MPI_") || starts_with(function, "PMPI_") || starts_with(function, "mpi_") ||
      starts_with(function, "pmpi_"))
    return "mpi";
  if (has("libmpi") || has("libopen-pal") || has("libopen-rte") || has("libpmix") || has("libprrte") ||
      has("mca_") || has("libmca") || has("libucp") || has("libucs") || has("libuct") || has("libucm") ||
      has("libfabric") || has("libpsm") || has("libinfinipath") || has("libhcoll") || has("libevent") ||
      has("libmpich") ||
      has("libhwloc") || has("libibverbs") || has("libnl-"))
    return "mpi";
  if (has("libgomp") || has("libomp") || has("libiomp")) return "openmp";
  if (has("librtrace_tracer")) return "rtrace";
  if (has("libc.so") || has("libc-") || has("libm.so") || has("libm-") || has("libstdc++") || has("libgcc_s") ||
      has("ld-linux") || has("libpthread") || has("libdl") || has("librt") || has("[vdso") || has("linux-vdso") ||
      has("libunwind") || has("libdw") || has("libelf") || has("libz.so") || has("libgfortran") ||
      has("libquadmath") || has("libhdf5") || has("libsz") || has("libaec") || has("libcrypto") ||
      has("libcurl"))
    return "system";
  return "app";
}

bool is_runtime_category(const std::string& category) noexcept {
  return category == "mpi" || category == "openmp" || category == "rtrace";
}

}  // namespace rtrace::store
