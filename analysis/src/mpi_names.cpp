#include "mpi_names.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace rtrace::analysis {

namespace {
bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
}  // namespace

std::string mpi_entry_name(const std::string& f) {
  std::string s = starts_with(f, "PMPI_") || starts_with(f, "pmpi_") ? f.substr(1) : f;
  if (starts_with(s, "MPI_")) {
    const bool lower = std::any_of(s.begin() + 4, s.end(), [](unsigned char c) { return std::islower(c); });
    if (lower) return s.find('(') == std::string::npos ? s : s.substr(0, s.find('('));  // the C binding
  } else if (!starts_with(s, "mpi_")) {
    return "";
  }
  std::string rest = s.substr(4);
  for (const char* suffix : {"_f08_", "_f08", "__", "_"})
    if (rest.size() > std::strlen(suffix) && rest.compare(rest.size() - std::strlen(suffix), std::strlen(suffix), suffix) == 0) {
      rest.resize(rest.size() - std::strlen(suffix));
      break;
    }
  if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; }))
    return "";
  for (auto& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  rest[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(rest[0])));
  return "MPI_" + rest;
}

MpiBoundary mpi_boundary(const std::string& name) {
  const std::string c = mpi_entry_name(name);
  if (c == "MPI_Init" || c == "MPI_Init_thread") return MpiBoundary::Init;
  if (c == "MPI_Finalize") return MpiBoundary::Finalize;
  return MpiBoundary::None;
}

}  // namespace rtrace::analysis
