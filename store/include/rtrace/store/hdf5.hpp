// rtrace::store — RAII wrappers over the HDF5 C API.
//
// Every HDF5 id is owned by exactly one Id object: moves invalidate the source,
// destructors never throw. Every C call is checked; failures become a typed
// exception that carries the file, the object path, the operation and the
// innermost message of HDF5's error stack. HDF5's own stderr printing is
// silenced once, process-wide, the first time the store is used.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtrace::store {

// Base of every store error. what() is one line: "<op> <file>:<path>: <detail>".
class Error : public std::runtime_error {
 public:
  Error(std::string operation, std::string file, std::string object, std::string detail);
  const std::string& operation() const noexcept { return operation_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& object() const noexcept { return object_; }
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string operation_, file_, object_, detail_;
};
// The file is missing, unreadable, or not HDF5 at all.
class FileError : public Error { using Error::Error; };
// The file is HDF5 but not an rtrace file, or its schema major version is unsupported.
class FormatError : public Error { using Error::Error; };
// An object (group, dataset, attribute, field) is missing or has the wrong shape/type.
class SchemaError : public Error { using Error::Error; };

// Silences HDF5's automatic error printing (idempotent, thread-safe).
void silence_hdf5_errors() noexcept;

// Owns one HDF5 id of any kind. Closing uses the kind's own close call.
class Id {
 public:
  Id() noexcept = default;
  explicit Id(hid_t id) noexcept : id_(id) {}
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  Id(Id&& other) noexcept : id_(other.id_) { other.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& other) noexcept;
  ~Id() { reset(); }

  hid_t get() const noexcept { return id_; }
  bool valid() const noexcept { return id_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }
  void reset() noexcept;        // closes; never throws
  hid_t release() noexcept;     // gives up ownership

 private:
  hid_t id_ = H5I_INVALID_HID;
};

// A dataset transfer property list whose type-conversion buffers hold
// `bytes` (at least 4 KiB): HDF5 allocates and zeroes its default 1 MiB
// buffers on every read that converts types, which was 14% of reading 10^4
// one-row tables (bench/ingest_scale.sh). `bytes` only bounds how much is
// converted at once; larger reads are converted in pieces.
Id transfer_list(std::size_t bytes);

// Checks an HDF5 return value (negative = failure) and throws Error with context.
hid_t check(hid_t value, const char* operation, const std::string& file, const std::string& object);
herr_t check_status(herr_t value, const char* operation, const std::string& file, const std::string& object);
// The innermost message of the current HDF5 error stack ("" if none).
std::string hdf5_error_message();

}  // namespace rtrace::store
