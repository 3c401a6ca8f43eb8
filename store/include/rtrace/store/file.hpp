// Files, groups, attributes, string lists and numeric vectors.
#pragma once

#include "rtrace/store/hdf5.hpp"
#include "rtrace/store/table.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rtrace::store {

class Group {
 public:
  Group() = default;
  Group(Id id, std::string file, std::string path) : id_(std::move(id)), file_(std::move(file)), path_(std::move(path)) {}

  hid_t id() const noexcept { return id_.get(); }
  const std::string& file() const noexcept { return file_; }
  const std::string& path() const noexcept { return path_; }
  std::string child_path(const std::string& name) const;

  // Groups
  bool exists(const std::string& name) const;     // link exists (no intermediate-path magic)
  bool is_group(const std::string& name) const;
  Group create_group(const std::string& name);
  Group open_group(const std::string& name) const;
  Group require_group(const std::string& name);   // open or create
  std::vector<std::string> children() const;      // link names, sorted
  void remove(const std::string& name);           // unlink

  // External links (a run's /points/pNNNNNN in the point-file layout). The
  // file name is stored as given; HDF5 resolves a relative one next to the
  // file holding the link.
  void create_external_link(const std::string& name, const std::string& target_file, const std::string& target_object);
  // The target file name when `name` is an external link, else nothing.
  std::optional<std::string> external_link_file(const std::string& name) const;

  // Attributes (scalars and string arrays). Setting overwrites.
  bool has_attr(const std::string& name) const;
  void set_attr(const std::string& name, const std::string& value);
  void set_attr(const std::string& name, const char* value) { set_attr(name, std::string(value)); }
  void set_attr(const std::string& name, std::int64_t value);
  void set_attr(const std::string& name, double value);
  void set_attr(const std::string& name, const std::vector<std::string>& values);
  std::string attr_string(const std::string& name) const;
  std::int64_t attr_int(const std::string& name) const;
  double attr_double(const std::string& name) const;
  std::vector<std::string> attr_strings(const std::string& name) const;
  std::vector<std::string> attr_names() const;
  // Copies every attribute of `src` (any file) onto this object.
  void copy_attributes_from(const Group& src);

  // Attributes on a child object (dataset or group) by name.
  void set_child_attr(const std::string& child, const std::string& name, const std::string& value);
  std::optional<std::string> child_attr_string(const std::string& child, const std::string& name) const;

  // 1-D variable-length UTF-8 string datasets (names tables, logs, argv).
  void write_strings(const std::string& name, const std::vector<std::string>& values,
                     const std::string& description = "");
  std::vector<std::string> read_strings(const std::string& name) const;
  // A scalar string dataset (captured output, JSON blobs).
  void write_text(const std::string& name, const std::string& text, const std::string& description = "");
  std::string read_text(const std::string& name) const;
  // 1-D numeric datasets with a units attribute.
  void write_doubles(const std::string& name, const std::vector<double>& values, const std::string& unit,
                     const std::string& description = "");
  std::vector<double> read_doubles(const std::string& name) const;

  // Copies object `src_name` of `src` (any file) to `dst_name` here, recursively.
  void copy_from(const Group& src, const std::string& src_name, const std::string& dst_name);

  template <class Row>
  Table<Row> create_table(const std::string& name, const std::string& description = "", std::size_t chunk_rows = 0) {
    return Table<Row>::create(*this, name, description, chunk_rows);
  }
  template <class Row>
  Table<Row> open_table(const std::string& name) const { return Table<Row>::open(*this, name); }
  template <class Row>
  std::vector<Row> read_table(const std::string& name) const { return open_table<Row>(name).read_all(); }
  template <class Row>
  void write_table(const std::string& name, const std::vector<Row>& rows, const std::string& description = "") {
    create_table<Row>(name, description, rows.size() > 0 ? std::min<std::size_t>(rows.size(), 65536) : 0).append(rows);
  }

 private:
  Id id_;
  std::string file_, path_;
};

enum class Access { ReadOnly, ReadWrite };

// Options for network filesystems and parallel I/O.
struct FileOptions {
  bool file_locking = false;   // HDF5 file locking hangs on Lustre/NFS; rtrace's own
                               // commit protocol (temp + rename) needs no locks.
#ifdef H5_HAVE_PARALLEL
  void* mpi_comm = nullptr;    // MPI_Comm* for collective (MPI-IO) access; nullptr = serial
#endif
};

// Crash guards (cli/crash_guard.cpp) name the file a crashed child was
// reading and remove the temp files it left. With a descriptor set, File::open
// writes "o <path>\n" to it before handing the file to libhdf5, and
// report_temp_file "t <path>\n". -1 (the default): off.
void report_file_events_to(int fd) noexcept;
// A temp file about to be created that a crash would leave behind.
void report_temp_file(const std::string& path) noexcept;
// A directory just created (a new run's points directory): "d <path>\n";
// a crash guard removes it when it is empty.
void report_created_dir(const std::string& path) noexcept;

class File {
 public:
  File() = default;
  // Creates a new file; fails if it exists unless `overwrite`.
  static File create(const std::string& path, bool overwrite = false, const FileOptions& opts = {});
  // Opens an existing HDF5 file. Throws FileError for missing/unreadable/not-HDF5.
  static File open(const std::string& path, Access access = Access::ReadOnly, const FileOptions& opts = {});
  static bool is_hdf5(const std::string& path) noexcept;

  Group& root() noexcept { return root_; }
  const Group& root() const noexcept { return root_; }
  const std::string& path() const noexcept { return path_; }
  hid_t id() const noexcept { return file_.get(); }
  void flush();
  void close();  // explicit close that reports errors (the destructor swallows them)

 private:
  Id file_;
  Group root_;
  std::string path_;
};

}  // namespace rtrace::store
