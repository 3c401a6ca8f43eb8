// Running `rtrace counts` (and other commands) from the counts tests, and
// reading what it wrote back through the store.
#pragma once

#include "rtrace/store/file.hpp"
#include "rtrace/store/run_file.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace counts_test {

struct Ran {
  int exit_code = -1;   // -1: killed by a signal
  std::string err;      // stderr
  std::string out;      // stdout
};

// Runs argv (no shell) with `extra_env` added to this process's environment.
inline Ran run(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {}) {
  char tmpl[] = "/tmp/counts-test-stderr-XXXXXX";
  const int fd = mkstemp(tmpl);
  char out_tmpl[] = "/tmp/counts-test-stdout-XXXXXX";
  const int out_fd = mkstemp(out_tmpl);
  Ran r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, STDERR_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    for (const auto& e : extra_env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  close(fd);
  unlink(tmpl);
  std::ifstream out_in(out_tmpl);
  std::stringstream out_ss;
  out_ss << out_in.rdbuf();
  r.out = out_ss.str();
  close(out_fd);
  unlink(out_tmpl);
  return r;
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string l;
  while (std::getline(is, l))
    if (!l.empty()) out.push_back(l);
  return out;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/counts-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The counts of one rank, summed per function name (over threads), and per module.
struct RankTotals {
  rtrace::store::CountInfoRow info{};
  std::vector<rtrace::store::CountLevelRow> levels;
  std::vector<rtrace::store::CountRow> rows;
  std::vector<std::string> names;
  double flops(const rtrace::store::CountRow& r) const {
    return r.flops_fp64_scalar + r.flops_fp64_v128 + r.flops_fp64_v256 + r.flops_fp64_v512 + r.flops_fp32_scalar +
           r.flops_fp32_v128 + r.flops_fp32_v256 + r.flops_fp32_v512 + r.flops_fp16_scalar + r.flops_fp16_v128 +
           r.flops_fp16_v256 + r.flops_fp16_v512;
  }
  // Sum of `field` over the rows whose function (or, with module=true, module) is `name`.
  template <typename F>
  double sum(const std::string& name, F field, bool module = false) const {
    double s = 0;
    for (const auto& r : rows) {
      const std::string& n = names.at(static_cast<std::size_t>(module ? r.module_id : r.function_id));
      if (name.empty() || n == name || (module && n.rfind(name, 0) == 0)) s += field(r);
    }
    return s;
  }
  double fn_flops(const std::string& fn) const {
    return sum(fn, [&](const rtrace::store::CountRow& r) { return flops(r); });
  }
};

inline std::map<std::int64_t, RankTotals> read_counts(const std::string& path) {
  std::map<std::int64_t, RankTotals> out;
  auto f = rtrace::store::File::open(path);
  const auto ranks = f.root().open_group("ranks");
  for (const auto& name : ranks.children()) {
    const auto rec = rtrace::store::read_rank(ranks.open_group(name));
    RankTotals t;
    if (!rec.counts_info.empty()) t.info = rec.counts_info.front();
    t.levels = rec.count_levels;
    t.rows = rec.counts;
    t.names = rec.names;
    out[rec.info.rank] = t;
  }
  return out;
}

}  // namespace counts_test
