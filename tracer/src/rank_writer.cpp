#include "rank_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace rtrace::tracer {

std::string rank_file_path(const std::string& dir, std::int64_t rank, std::int64_t pid) {
  return dir + "/rank-" + std::to_string(rank) + "-" + std::to_string(pid) + ".h5";
}

std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

namespace {
// Removes the temp file unless disarmed.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const noexcept { return path_; }
  void disarm() noexcept { path_.clear(); }

 private:
  std::string path_;
};
}  // namespace

std::string write_rank_file(const std::string& dir, const store::RankRecords& records) {
  const std::string final_path = rank_file_path(dir, records.info.rank, records.info.pid);
  // The temp name starts with a dot so nothing that globs rank-*.h5 picks it up.
  TempFile tmp(dir + "/.rank-" + std::to_string(records.info.rank) + "-" + std::to_string(records.info.pid) +
               ".h5.tmp");
  {
    store::File f = store::File::create(tmp.path(), /*overwrite=*/true);
    store::write_root_attributes(f.root(), "trace", own_command_line());
    store::Group ranks = f.root().create_group("ranks");
    store::write_rank(ranks, records);
    // Says in the file which writer produced it (tests and `rtrace validate`
    // readers tell a fallback from the collective paths by it).
    ranks.open_group(store::rank_group_name(records.info.rank)).set_attr("writer", "per-rank");
    f.close();
  }
  // No fsync: the rename alone makes the file appear whole to the launcher,
  // which reads it right after the process ends; syncing would cost every
  // rank tens of milliseconds for durability against a machine crash, which
  // loses the run anyway.
  if (std::rename(tmp.path().c_str(), final_path.c_str()) != 0)
    throw std::runtime_error("rename " + tmp.path() + " -> " + final_path + ": " + std::strerror(errno));
  tmp.disarm();
  return final_path;
}

}  // namespace rtrace::tracer
