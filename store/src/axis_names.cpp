#include "rtrace/store/axis_names.hpp"

#include <algorithm>
#include <cctype>
#include <utility>

namespace rtrace::store {
namespace {

// Edit distance with adjacent transpositions ("rnaks" -> "ranks" is 1).
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::vector<std::string> likely_axis_names(const std::string& name, bool with_point) {
  if (name.empty()) return {};
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> aliases = {
      {{"rank", "np", "nranks", "nprocs", "procs", "processes", "mpi", "tasks", "ntasks"}, {"ranks"}},
      {{"omp", "openmp", "omp_num_threads", "omp_threads", "nthreads", "thread", "num_threads"},
       {"threads", "env:OMP_NUM_THREADS"}},
      {{"node", "nnodes", "num_nodes"}, {"nodes"}},
      {{"ppn", "rpn", "ranks_per_node", "rankspernode", "tasks-per-node", "ntasks-per-node", "tasks_per_node"},
       {"ranks-per-node"}},
      {{"sm", "nsms", "num_sms", "smcount"}, {"sms"}},
  };
  for (const auto& [names, hint] : aliases)
    if (std::find(names.begin(), names.end(), lower) != names.end()) return hint;
  std::vector<std::string> known = {"threads", "ranks", "ranks-per-node", "nodes", "sms"};
  if (with_point) known.push_back("point");
  for (const auto& k : known)
    if (edit_distance(lower, k) <= 1) return {k};
  // NAME in capitals: an environment variable.
  const bool env_like = std::isalpha(static_cast<unsigned char>(name[0])) &&
                        std::all_of(name.begin(), name.end(), [](unsigned char c) {
                          return std::isupper(c) || std::isdigit(c) || c == '_';
                        });
  if (env_like) return {"env:" + name};
  return {};
}

}  // namespace rtrace::store
