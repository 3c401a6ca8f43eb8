// What the tracer's integration tests share: running a test app (fork +
// execve, argv verbatim, extra environment), a fresh trace directory per test
// case, and reading back every rank of every trace file in it.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rtrace/store/run_file.hpp"
#include "../process_tree.hpp"

extern char** environ;

namespace rtrace::test {

// fork + execve with argv verbatim and extra environment; returns the wait
// status. A process still running after `timeout_s` (default 180 s, under
// the hang guard's bound of the whole test case) is shown (dump_hung_tree)
// and killed with all its descendants (SIGKILL: a hung app's status says so).
inline int run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
               double timeout_s = 180) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (!extra_env.count(kv.substr(0, kv.find('=')))) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : extra_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> args, env;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    execve(args[0], args.data(), env.data());
    _exit(127);
  }
  if (timeout_s > 0) return wait_or_end_hung(pid, timeout_s, argv[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// One rank group of a trace file, with the file's name.
struct TracedRank {
  std::string file;
  store::RankRecords rec;
  bool log_has(const std::string& text) const {
    for (const auto& l : rec.log)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
};

// A fresh trace directory per test case (`prefix` + pid + case name),
// removed unless the case failed.
class TraceDirTest : public ::testing::Test {
 protected:
  explicit TraceDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / (prefix_ + std::to_string(getpid()) + "-" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  // The trace directory's file names, sorted.
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  // Every rank group of every trace file, files in name order. `Rank` is
  // TracedRank or a type derived from it (with lookups of its own).
  template <class Rank = TracedRank>
  std::vector<Rank> read_ranks() const {
    std::vector<Rank> out;
    for (const auto& name : files()) {
      store::File f = store::File::open((dir_ / name).string());
      EXPECT_EQ(f.root().attr_string("file_kind"), "trace") << name;
      store::Group g = f.root().open_group("ranks");
      for (const auto& r : g.children()) {
        Rank rank;
        rank.file = name;
        rank.rec = store::read_rank(g.open_group(r));
        out.push_back(std::move(rank));
      }
    }
    return out;
  }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace rtrace::test
