// Environment handling: the app's environment per point, and which variables
// of rtrace's own environment are recorded in the run file (never secrets).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rtrace::launcher {

// An ordered NAME -> VALUE map; later set() calls replace earlier values in place.
class Environment {
 public:
  static Environment current();  // this process's environ
  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback = "") const;
  void set(const std::string& name, const std::string& value);
  void unset(const std::string& name);
  // Prepends `value` to a ':'-separated list (LD_PRELOAD, PATH), avoiding a duplicate.
  void prepend_list(const std::string& name, const std::string& value);
  std::vector<std::string> to_envp() const;  // "NAME=VALUE"
  const std::vector<std::pair<std::string, std::string>>& entries() const noexcept { return vars_; }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

// Default deny patterns: never recorded, whatever else is asked.
const std::vector<std::string>& default_deny_patterns();
// True when `name` matches a deny pattern (case-insensitive fnmatch).
bool is_denied(const std::string& name, const std::vector<std::string>& extra_patterns);
// Variables worth recording in /run: OMP_*, GOMP_*, KMP_*, SLURM_*, CUDA_VISIBLE_DEVICES,
// CUDA_MPS_*, RTRACE_*, OMPI_MCA_*, minus denied ones. Sorted by name.
std::vector<std::pair<std::string, std::string>> recorded_environment(const Environment& env,
                                                                      const std::vector<std::string>& extra_deny);

// Quotes a word for display only (never executed): plain words stay bare.
std::string shell_quote(const std::string& word);
std::string join_quoted(const std::vector<std::string>& words);

}  // namespace rtrace::launcher
