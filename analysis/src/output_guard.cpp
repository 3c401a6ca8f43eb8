#include "rtrace/analysis/output_guard.hpp"

#include "rtrace/analysis/model.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <memory>

namespace rtrace::analysis {
namespace {

constexpr unsigned char kHdf5Signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

bool point_file_name(const std::string& n) {
  // pNNNNNN.h5 or pNNNNNN-K.h5 (a re-committed point), as the store names them.
  if (n.size() < 10 || n[0] != 'p' || n.compare(n.size() - 3, 3, ".h5") != 0) return false;
  for (std::size_t i = 1; i < 7; ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  return n.size() == 10 || n[7] == '-';
}

}  // namespace

bool is_hdf5_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return false;
  const long long size = st.st_size;
  for (long long offset = 0; offset + 8 <= size; offset = offset == 0 ? 512 : offset * 2) {
    unsigned char buf[8];
    if (std::fseek(f.get(), static_cast<long>(offset), SEEK_SET) != 0) return false;
    if (std::fread(buf, 1, 8, f.get()) != 8) return false;
    if (std::memcmp(buf, kHdf5Signature, 8) == 0) return true;
  }
  return false;
}

bool is_points_directory(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), &::closedir);
  if (!d) return false;
  while (const dirent* e = ::readdir(d.get())) {
    const std::string name = e->d_name;
    if (point_file_name(name) && is_hdf5_file(dir + "/" + name)) return true;
  }
  return false;
}

void OutputGuard::protect(const std::string& input) {
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0) return;  // load_run names a missing input
  inputs_.push_back({static_cast<unsigned long long>(st.st_dev), static_cast<unsigned long long>(st.st_ino), input});
}

void OutputGuard::check_file(const std::string& option, const std::string& path) const {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // a new file
  for (const auto& in : inputs_)
    if (static_cast<unsigned long long>(st.st_dev) == in.device && static_cast<unsigned long long>(st.st_ino) == in.inode)
      throw InputError(option + " " + path + ": is the input " + in.path + "; refusing to overwrite it (choose another name)");
  if (S_ISDIR(st.st_mode)) throw InputError(option + " " + path + ": is a directory, expected a file name");
  if (is_hdf5_file(path))
    throw InputError(option + " " + path +
                     ": is an HDF5 file (a run, point or ERT file?); refusing to overwrite it (choose another name)");
}

void OutputGuard::check_dir(const std::string& option, const std::string& dir) const {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return;  // a new directory
  if (!S_ISDIR(st.st_mode)) {
    if (is_hdf5_file(dir))
      throw InputError(option + " " + dir + ": is an HDF5 file (a run, point or ERT file?), expected a directory");
    throw InputError(option + " " + dir + ": exists and is not a directory");
  }
  if (is_points_directory(dir))
    throw InputError(option + " " + dir +
                     ": is a run's points directory (it holds pNNNNNN.h5 point files); refusing to write into it "
                     "(choose another directory)");
}

void open_output_file(const std::string& path, std::ofstream& out, std::ios::openmode mode) {
  if (is_hdf5_file(path))
    throw InputError(path + ": is an HDF5 file (a run, point or ERT file?); refusing to overwrite it (choose another name)");
  out.open(path, mode | std::ios::out | std::ios::trunc);
  if (!out) throw InputError(path + ": cannot write: " + std::strerror(errno));
}

}  // namespace rtrace::analysis
