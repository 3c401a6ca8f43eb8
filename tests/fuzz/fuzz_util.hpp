// Helpers shared by the libFuzzer entry points (tests/fuzz/*.cpp).
//
// HDF5 reads files, not buffers, so file targets write the mutated bytes to a
// private temp file first. Every entry point accepts exactly the exceptions
// its API documents for bad input; anything else (a crash, a sanitizer
// report, an unexpected exception type) is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace rtrace::fuzz {

// One temp file per process, rewritten for every input. /dev/shm keeps the
// fuzzer off the disk when it exists.
class ScratchFile {
 public:
  explicit ScratchFile(const char* tag) {
    const char* dir = std::getenv("RTRACE_FUZZ_TMPDIR");
    if (!dir || !*dir) dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    path_ = std::string(dir) + "/rtrace-fuzz-" + tag + "-" + std::to_string(getpid()) + ".h5";
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Replaces the file's content with the input bytes; false when the disk refuses.
  bool write(const std::uint8_t* data, std::size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (!f) return false;
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok;
  }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

// Splits the input into lines (for text targets that take several strings).
inline std::size_t next_line(const std::uint8_t* data, std::size_t size, std::size_t pos, std::string& line) {
  line.clear();
  while (pos < size && data[pos] != '\n') line.push_back(static_cast<char>(data[pos++]));
  return pos < size ? pos + 1 : pos;
}

}  // namespace rtrace::fuzz
