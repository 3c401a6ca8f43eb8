// Output paths of `rtrace analyze` (--json, --html, --csv, --svg, --folded)
// must never replace data: not an HDF5 file (a run, its point files, an ERT
// cache: recognised by the HDF5 signature, whatever the name), not the input
// itself, not a run's points directory. Issue 25: `--html run.h5` replaced a
// run file with HTML and its point files could not be recovered.
#pragma once

#include <fstream>
#include <string>
#include <vector>

namespace rtrace::analysis {

// True when `path` is a regular file holding an HDF5 superblock signature at
// offset 0, 512, 1024, 2048, ... (the places HDF5 looks, user block or not).
bool is_hdf5_file(const std::string& path);

// True when `dir` is a directory holding rtrace point files (pNNNNNN.h5 that
// are HDF5), i.e. a run's points directory.
bool is_points_directory(const std::string& dir);

// Checks every output path before anything is read or written; each method
// throws InputError with one line naming the option and the path.
class OutputGuard {
 public:
  // An input file: outputs must not be it (same device and inode), nor its
  // points directory.
  void protect(const std::string& input);
  // A file an option writes (--json, --html).
  void check_file(const std::string& option, const std::string& path) const;
  // A directory an option writes files into (--csv, --svg, --folded).
  void check_dir(const std::string& option, const std::string& dir) const;

 private:
  struct Identity {
    unsigned long long device = 0, inode = 0;
    std::string path;
  };
  std::vector<Identity> inputs_;
};

// Opens `path` for writing (truncating) after refusing an existing HDF5 file:
// the last line of defence in every writer, whatever the caller checked.
// Throws InputError.
void open_output_file(const std::string& path, std::ofstream& out, std::ios::openmode mode = std::ios::out);

}  // namespace rtrace::analysis
