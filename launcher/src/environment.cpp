#include "rtrace/launcher/environment.hpp"

#include <fnmatch.h>

#include <algorithm>

extern char** environ;

namespace rtrace::launcher {

Environment Environment::current() {
  Environment e;
  for (char** p = environ; p && *p; ++p) {
    std::string kv = *p;
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    e.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return e;
}

bool Environment::has(const std::string& name) const {
  return std::any_of(vars_.begin(), vars_.end(), [&](const auto& kv) { return kv.first == name; });
}

std::string Environment::get(const std::string& name, const std::string& fallback) const {
  for (const auto& [k, v] : vars_)
    if (k == name) return v;
  return fallback;
}

void Environment::set(const std::string& name, const std::string& value) {
  for (auto& kv : vars_) {
    if (kv.first == name) {
      kv.second = value;
      return;
    }
  }
  vars_.emplace_back(name, value);
}

void Environment::unset(const std::string& name) {
  vars_.erase(std::remove_if(vars_.begin(), vars_.end(), [&](const auto& kv) { return kv.first == name; }),
              vars_.end());
}

void Environment::prepend_list(const std::string& name, const std::string& value) {
  const std::string old = get(name);
  if (old.empty()) {
    set(name, value);
    return;
  }
  // Already first (or anywhere): keep the list as is.
  std::size_t begin = 0;
  while (begin <= old.size()) {
    auto sep = old.find_first_of(": ", begin);
    if (old.substr(begin, sep == std::string::npos ? std::string::npos : sep - begin) == value) return;
    if (sep == std::string::npos) break;
    begin = sep + 1;
  }
  set(name, value + ":" + old);
}

std::vector<std::string> Environment::to_envp() const {
  std::vector<std::string> out;
  out.reserve(vars_.size());
  for (const auto& [k, v] : vars_) out.push_back(k + "=" + v);
  return out;
}

const std::vector<std::string>& default_deny_patterns() {
  static const std::vector<std::string> patterns{"*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*KEY*",
                                                 "*CREDENTIAL*"};
  return patterns;
}

bool is_denied(const std::string& name, const std::vector<std::string>& extra_patterns) {
  for (const auto* list : {&default_deny_patterns(), &extra_patterns}) {
    for (const auto& pat : *list)
      if (fnmatch(pat.c_str(), name.c_str(), FNM_CASEFOLD) == 0) return true;
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> recorded_environment(const Environment& env,
                                                                      const std::vector<std::string>& extra_deny) {
  static const char* const prefixes[] = {"OMP_", "GOMP_", "KMP_", "SLURM_", "CUDA_MPS_", "RTRACE_", "OMPI_MCA_"};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [k, v] : env.entries()) {
    bool wanted = k == "CUDA_VISIBLE_DEVICES";
    for (const char* p : prefixes) wanted = wanted || k.rfind(p, 0) == 0;
    if (wanted && !is_denied(k, extra_deny)) out.emplace_back(k, v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string shell_quote(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
                        std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string join_quoted(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) {
    if (!s.empty()) s += ' ';
    s += shell_quote(w);
  }
  return s;
}

}  // namespace rtrace::launcher
