#include "rtrace/store/file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace rtrace::store {

namespace {

Id vlen_string_type() {
  Id t(H5Tcopy(H5T_C_S1));
  H5Tset_size(t.get(), H5T_VARIABLE);
  H5Tset_cset(t.get(), H5T_CSET_UTF8);
  return t;
}

// Reads string data of either fixed or variable length from an attribute or dataset.
std::vector<std::string> read_string_data(hid_t obj, bool is_attr, const std::string& file, const std::string& path) {
  Id type(check(is_attr ? H5Aget_type(obj) : H5Dget_type(obj), "get type", file, path));
  if (H5Tget_class(type.get()) != H5T_STRING) throw SchemaError("read strings", file, path, "not a string");
  Id space(check(is_attr ? H5Aget_space(obj) : H5Dget_space(obj), "get dataspace", file, path));
  hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) throw Error("read strings", file, path, "bad dataspace");
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  if (n == 0) return out;
  if (H5Tis_variable_str(type.get()) > 0) {
    Id mtype = vlen_string_type();
    std::vector<char*> buf(static_cast<std::size_t>(n), nullptr);
    const Id dxpl = transfer_list(static_cast<std::size_t>(n) * 64);
    herr_t st = is_attr ? H5Aread(obj, mtype.get(), buf.data())
                        : H5Dread(obj, mtype.get(), H5S_ALL, H5S_ALL, dxpl.get(), buf.data());
    check_status(st, "read strings", file, path);
    for (char* s : buf) out.emplace_back(s ? s : "");
    // Give the library's allocations back.
    H5Dvlen_reclaim(mtype.get(), space.get(), H5P_DEFAULT, buf.data());
  } else {
    std::size_t len = H5Tget_size(type.get());
    Id mtype(H5Tcopy(H5T_C_S1));
    H5Tset_size(mtype.get(), len);
    std::vector<char> buf(len * static_cast<std::size_t>(n) + 1, 0);
    herr_t st = is_attr ? H5Aread(obj, mtype.get(), buf.data())
                        : H5Dread(obj, mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    check_status(st, "read strings", file, path);
    for (hssize_t i = 0; i < n; ++i) {
      const char* p = buf.data() + static_cast<std::size_t>(i) * len;
      out.emplace_back(p, strnlen(p, len));
    }
  }
  return out;
}

Id open_attr(hid_t obj, const std::string& name, const std::string& file, const std::string& path) {
  if (H5Aexists(obj, name.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw SchemaError("read attribute", file, path, "missing attribute `" + name + "`");
  }
  return Id(check(H5Aopen(obj, name.c_str(), H5P_DEFAULT), "open attribute", file, path + "@" + name));
}

void write_attr_raw(hid_t obj, const std::string& name, hid_t type, hid_t space, const void* data,
                    const std::string& file, const std::string& path) {
  if (H5Aexists(obj, name.c_str()) > 0) check_status(H5Adelete(obj, name.c_str()), "delete attribute", file, path + "@" + name);
  Id a(check(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), "create attribute", file, path + "@" + name));
  check_status(H5Awrite(a.get(), type, data), "write attribute", file, path + "@" + name);
}

herr_t collect_names(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

herr_t collect_attr_names(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}

// HDF5 1.10's H5Ocopy crashes (a null conversion function in H5T__conv_vlen,
// via H5A__dense_post_copy_file_all) when it copies variable-length string
// attributes kept in dense attribute storage, i.e. on objects with more than
// 8 attributes such as the launcher's point groups. So objects are copied
// without attributes and every attribute is then copied through memory.
struct AttrNames_ {
  std::vector<std::string> names;
};
herr_t collect_attr_name_for_copy(hid_t, const char* name, const H5A_info_t*, void* data) {
  static_cast<AttrNames_*>(data)->names.emplace_back(name);
  return 0;
}

void copy_attributes(hid_t src, hid_t dst, const std::string& file, const std::string& path) {
  AttrNames_ attrs;
  hsize_t idx = 0;
  check_status(H5Aiterate2(src, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr_name_for_copy, &attrs), "list attributes", file,
               path);
  for (const auto& name : attrs.names) {
    const std::string where = path + "@" + name;
    Id attr(check(H5Aopen(src, name.c_str(), H5P_DEFAULT), "open attribute", file, where));
    Id file_type(check(H5Aget_type(attr.get()), "attribute type", file, where));
    Id space(check(H5Aget_space(attr.get()), "attribute space", file, where));
    Id mem_type(check(H5Tget_native_type(file_type.get(), H5T_DIR_ASCEND), "attribute memory type", file, where));
    const hssize_t n = H5Sget_simple_extent_npoints(space.get());
    std::vector<unsigned char> buf(H5Tget_size(mem_type.get()) * static_cast<std::size_t>(std::max<hssize_t>(n, 1)));
    check_status(H5Aread(attr.get(), mem_type.get(), buf.data()), "read attribute", file, where);
    // Variable-length data read into buf is owned by HDF5 until reclaimed.
    const bool has_vlen = H5Tdetect_class(mem_type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(mem_type.get()) > 0;
    herr_t written = -1;
    {
      Id copy(H5Acreate2(dst, name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
      if (copy.valid()) written = H5Awrite(copy.get(), mem_type.get(), buf.data());
    }
    if (has_vlen) {
#if H5_VERSION_GE(1, 12, 0)
      H5Treclaim(mem_type.get(), space.get(), H5P_DEFAULT, buf.data());
#else
      H5Dvlen_reclaim(mem_type.get(), space.get(), H5P_DEFAULT, buf.data());
#endif
    }
    check_status(written, "write attribute", file, where);
  }
}

// Copies the attributes of src_parent/src_name and, for a group, of everything
// below it, onto dst_parent/dst_name (same structure, already copied).
void copy_attribute_tree(const Group& src_parent, Group& dst_parent, const std::string& src_name,
                         const std::string& dst_name) {
  const std::string src_path = src_parent.child_path(src_name);
  const std::string dst_path = dst_parent.child_path(dst_name);
  Id src(check(H5Oopen(src_parent.id(), src_name.c_str(), H5P_DEFAULT), "open object", src_parent.file(), src_path));
  Id dst(check(H5Oopen(dst_parent.id(), dst_name.c_str(), H5P_DEFAULT), "open object", dst_parent.file(), dst_path));
  copy_attributes(src.get(), dst.get(), dst_parent.file(), dst_path);
  if (H5Iget_type(src.get()) != H5I_GROUP) return;
  Group src_group(std::move(src), src_parent.file(), src_path);
  Group dst_group(std::move(dst), dst_parent.file(), dst_path);
  for (const auto& child : src_group.children()) copy_attribute_tree(src_group, dst_group, child, child);
}

}  // namespace

namespace {
void report_event(char kind, const std::string& path) noexcept;
}

std::string Group::child_path(const std::string& name) const {
  if (path_.empty() || path_ == "/") return "/" + name;
  return path_ + "/" + name;
}

bool Group::exists(const std::string& name) const {
  htri_t r = H5Lexists(id(), name.c_str(), H5P_DEFAULT);
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

bool Group::is_group(const std::string& name) const {
  if (!exists(name)) return false;
  H5O_info_t info;
  if (H5Oget_info_by_name2(id(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return info.type == H5O_TYPE_GROUP;
}

Group Group::create_group(const std::string& name) {
  Id lcpl(H5Pcreate(H5P_LINK_CREATE));
  Id g(check(H5Gcreate2(id(), name.c_str(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), "create group", file_, child_path(name)));
  return Group(std::move(g), file_, child_path(name));
}

Group Group::open_group(const std::string& name) const {
  // A point of a run in the point-file layout lives in a file of its own:
  // name that file when it is missing, and tell a crash guard it is opened.
  if (auto target = external_link_file(name)) {
    std::string where = target->empty() || (*target)[0] == '/' ? *target : [&] {
      const auto slash = file_.rfind('/');
      return slash == std::string::npos ? *target : file_.substr(0, slash + 1) + *target;
    }();
    report_event('o', where);
    if (!is_group(name))
      throw SchemaError("open group", file_, child_path(name),
                        "its file `" + *target + "` is missing or unreadable (a run's point files live in the "
                        "directory next to it; `rtrace pack` makes one self-contained file)");
  }
  if (!is_group(name)) throw SchemaError("open group", file_, child_path(name), "missing group");
  Id g(check(H5Gopen2(id(), name.c_str(), H5P_DEFAULT), "open group", file_, child_path(name)));
  return Group(std::move(g), file_, child_path(name));
}

void Group::create_external_link(const std::string& name, const std::string& target_file, const std::string& target_object) {
  check_status(H5Lcreate_external(target_file.c_str(), target_object.c_str(), id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
               "create external link", file_, child_path(name) + " -> " + target_file + ":" + target_object);
}

std::optional<std::string> Group::external_link_file(const std::string& name) const {
  H5L_info_t info;
  if (H5Lget_info(id(), name.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  if (info.type != H5L_TYPE_EXTERNAL || info.u.val_size == 0 || info.u.val_size > (1u << 16)) return std::nullopt;
  std::vector<char> buf(info.u.val_size + 1, 0);
  if (H5Lget_val(id(), name.c_str(), buf.data(), info.u.val_size, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  unsigned flags = 0;
  const char* file = nullptr;
  const char* object = nullptr;
  if (H5Lunpack_elink_val(buf.data(), info.u.val_size, &flags, &file, &object) < 0 || !file) {
    H5Eclear2(H5E_DEFAULT);
    return std::nullopt;
  }
  return std::string(file);
}

Group Group::require_group(const std::string& name) {
  return exists(name) ? open_group(name) : create_group(name);
}

std::vector<std::string> Group::children() const {
  std::vector<std::string> names;
  hsize_t idx = 0;
  check_status(H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, &idx, collect_names, &names), "list group", file_, path_);
  std::sort(names.begin(), names.end());
  return names;
}

void Group::remove(const std::string& name) {
  check_status(H5Ldelete(id(), name.c_str(), H5P_DEFAULT), "delete", file_, child_path(name));
}

bool Group::has_attr(const std::string& name) const {
  htri_t r = H5Aexists(id(), name.c_str());
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

void Group::set_attr(const std::string& name, const std::string& value) {
  Id type = vlen_string_type();
  Id space(H5Screate(H5S_SCALAR));
  const char* p = value.c_str();
  write_attr_raw(id(), name, type.get(), space.get(), &p, file_, path_);
}

void Group::set_attr(const std::string& name, std::int64_t value) {
  Id space(H5Screate(H5S_SCALAR));
  write_attr_raw(id(), name, H5T_NATIVE_INT64, space.get(), &value, file_, path_);
}

void Group::set_attr(const std::string& name, double value) {
  Id space(H5Screate(H5S_SCALAR));
  write_attr_raw(id(), name, H5T_NATIVE_DOUBLE, space.get(), &value, file_, path_);
}

void Group::set_attr(const std::string& name, const std::vector<std::string>& values) {
  Id type = vlen_string_type();
  hsize_t dims[1] = {values.size()};
  Id space(H5Screate_simple(1, dims, nullptr));
  std::vector<const char*> ptrs;
  ptrs.reserve(values.size());
  for (const auto& v : values) ptrs.push_back(v.c_str());
  write_attr_raw(id(), name, type.get(), space.get(), ptrs.empty() ? nullptr : ptrs.data(), file_, path_);
}

std::string Group::attr_string(const std::string& name) const {
  Id a = open_attr(id(), name, file_, path_);
  auto v = read_string_data(a.get(), true, file_, path_ + "@" + name);
  if (v.size() != 1) throw SchemaError("read attribute", file_, path_ + "@" + name, "expected one string");
  return v[0];
}

std::vector<std::string> Group::attr_strings(const std::string& name) const {
  Id a = open_attr(id(), name, file_, path_);
  return read_string_data(a.get(), true, file_, path_ + "@" + name);
}

std::int64_t Group::attr_int(const std::string& name) const {
  Id a = open_attr(id(), name, file_, path_);
  Id type(check(H5Aget_type(a.get()), "get type", file_, path_));
  if (H5Tget_class(type.get()) != H5T_INTEGER) throw SchemaError("read attribute", file_, path_ + "@" + name, "not an integer");
  Id space(H5Aget_space(a.get()));
  if (H5Sget_simple_extent_npoints(space.get()) != 1) throw SchemaError("read attribute", file_, path_ + "@" + name, "not a scalar");
  std::int64_t v = 0;
  check_status(H5Aread(a.get(), H5T_NATIVE_INT64, &v), "read attribute", file_, path_ + "@" + name);
  return v;
}

double Group::attr_double(const std::string& name) const {
  Id a = open_attr(id(), name, file_, path_);
  Id type(check(H5Aget_type(a.get()), "get type", file_, path_));
  H5T_class_t cls = H5Tget_class(type.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) throw SchemaError("read attribute", file_, path_ + "@" + name, "not a number");
  Id space(H5Aget_space(a.get()));
  if (H5Sget_simple_extent_npoints(space.get()) != 1) throw SchemaError("read attribute", file_, path_ + "@" + name, "not a scalar");
  double v = 0;
  check_status(H5Aread(a.get(), H5T_NATIVE_DOUBLE, &v), "read attribute", file_, path_ + "@" + name);
  return v;
}

std::vector<std::string> Group::attr_names() const {
  std::vector<std::string> names;
  hsize_t idx = 0;
  check_status(H5Aiterate2(id(), H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr_names, &names), "list attributes", file_, path_);
  return names;
}

void Group::copy_attributes_from(const Group& src) { copy_attributes(src.id(), id(), file_, path_); }

void Group::set_child_attr(const std::string& child, const std::string& name, const std::string& value) {
  Group obj(Id(check(H5Oopen(id(), child.c_str(), H5P_DEFAULT), "open object", file_, child_path(child))), file_, child_path(child));
  obj.set_attr(name, value);
}

std::optional<std::string> Group::child_attr_string(const std::string& child, const std::string& name) const {
  if (!exists(child)) return std::nullopt;
  Group obj(Id(check(H5Oopen(id(), child.c_str(), H5P_DEFAULT), "open object", file_, child_path(child))), file_, child_path(child));
  if (!obj.has_attr(name)) return std::nullopt;
  return obj.attr_string(name);
}

void Group::write_strings(const std::string& name, const std::vector<std::string>& values, const std::string& description) {
  Id type = vlen_string_type();
  hsize_t dims[1] = {values.size()};
  Id space(H5Screate_simple(1, dims, nullptr));
  Id d(check(H5Dcreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             "create dataset", file_, child_path(name)));
  std::vector<const char*> ptrs;
  ptrs.reserve(values.size());
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (!values.empty())
    check_status(H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()), "write strings", file_, child_path(name));
  if (!description.empty()) Group(std::move(d), file_, child_path(name)).set_attr("description", description);
}

std::vector<std::string> Group::read_strings(const std::string& name) const {
  if (!exists(name)) throw SchemaError("read strings", file_, child_path(name), "missing dataset");
  Id d(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "open dataset", file_, child_path(name)));
  return read_string_data(d.get(), false, file_, child_path(name));
}

void Group::write_text(const std::string& name, const std::string& text, const std::string& description) {
  Id type = vlen_string_type();
  Id space(H5Screate(H5S_SCALAR));
  Id d(check(H5Dcreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             "create dataset", file_, child_path(name)));
  const char* p = text.c_str();
  check_status(H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p), "write text", file_, child_path(name));
  if (!description.empty()) Group(std::move(d), file_, child_path(name)).set_attr("description", description);
}

std::string Group::read_text(const std::string& name) const {
  auto v = read_strings(name);
  if (v.size() != 1) throw SchemaError("read text", file_, child_path(name), "expected a scalar string");
  return v[0];
}

void Group::write_doubles(const std::string& name, const std::vector<double>& values, const std::string& unit,
                          const std::string& description) {
  hsize_t dims[1] = {values.size()};
  Id space(H5Screate_simple(1, dims, nullptr));
  Id d(check(H5Dcreate2(id(), name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             "create dataset", file_, child_path(name)));
  if (!values.empty())
    check_status(H5Dwrite(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()), "write values", file_, child_path(name));
  Group obj(std::move(d), file_, child_path(name));
  obj.set_attr("units", unit);
  if (!description.empty()) obj.set_attr("description", description);
}

std::vector<double> Group::read_doubles(const std::string& name) const {
  if (!exists(name)) throw SchemaError("read values", file_, child_path(name), "missing dataset");
  Id d(check(H5Dopen2(id(), name.c_str(), H5P_DEFAULT), "open dataset", file_, child_path(name)));
  Id space(H5Dget_space(d.get()));
  hssize_t n = H5Sget_simple_extent_npoints(space.get());
  std::vector<double> out(static_cast<std::size_t>(std::max<hssize_t>(n, 0)));
  if (!out.empty())
    check_status(H5Dread(d.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read values", file_, child_path(name));
  return out;
}

void Group::copy_from(const Group& src, const std::string& src_name, const std::string& dst_name) {
  // Without attributes, then the attributes through memory (see above).
  Id ocpypl(check(H5Pcreate(H5P_OBJECT_COPY), "create property list", file_, path_));
  check_status(H5Pset_copy_object(ocpypl.get(), H5O_COPY_WITHOUT_ATTR_FLAG), "set copy flags", file_, path_);
  check_status(H5Ocopy(src.id(), src_name.c_str(), id(), dst_name.c_str(), ocpypl.get(), H5P_DEFAULT), "copy object",
               file_, child_path(dst_name) + " (from " + src.file() + ":" + src.child_path(src_name) + ")");
  copy_attribute_tree(src, *this, src_name, dst_name);
}

// ------------------------------------------------------------------ File

namespace {
Id make_fapl(const FileOptions& opts, const std::string& path, bool read_only) {
  Id fapl(check(H5Pcreate(H5P_FILE_ACCESS), "create property list", path, ""));
  // Newest format that HDF5 1.10 readers understand; compact and fast for many small groups.
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_V110);
  // Closing a file closes every object still open in it. Without this, a
  // group half-opened in a damaged file stays registered and crashes HDF5's
  // exit handler (seen with a file truncated by a full filesystem).
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  // Readers: a fixed metadata cache of 1 MiB instead of HDF5's adaptive one.
  // Going through 10^5 rank groups, each a handful of small datasets, every
  // object header stays cached with its decoded messages (a compound type
  // of 20 members is kilobytes in memory, a few hundred bytes of cache
  // size): RSS grew with the ranks (234 MB for 8,192 ranks, 120 MB for
  // 1,024) and a 1 MiB cache keeps it flat (~35 MB) and faster
  // (bench/ingest_scale.sh). Writers keep HDF5's default.
  if (read_only) {
    H5AC_cache_config_t mdc{};
    mdc.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    if (H5Pget_mdc_config(fapl.get(), &mdc) >= 0) {
      mdc.set_initial_size = true;
      mdc.initial_size = 1 << 20;
      mdc.min_size = 1 << 20;
      mdc.max_size = 1 << 20;
      mdc.incr_mode = H5C_incr__off;
      mdc.flash_incr_mode = H5C_flash_incr__off;
      mdc.decr_mode = H5C_decr__off;
      H5Pset_mdc_config(fapl.get(), &mdc);
    }
  }
#if H5_VERSION_GE(1, 10, 7)
  check_status(H5Pset_file_locking(fapl.get(), opts.file_locking, true), "set file locking", path, "");
#endif
#ifdef H5_HAVE_PARALLEL
  if (opts.mpi_comm) {
    check_status(H5Pset_fapl_mpio(fapl.get(), *static_cast<MPI_Comm*>(opts.mpi_comm), MPI_INFO_NULL), "set MPI-IO", path, "");
  }
#endif
  return fapl;
}
}  // namespace

File File::create(const std::string& path, bool overwrite, const FileOptions& opts) {
  silence_hdf5_errors();
  if (!overwrite && access(path.c_str(), F_OK) == 0) throw FileError("create", path, "", "file exists (refusing to overwrite)");
  Id fapl = make_fapl(opts, path, /*read_only=*/false);
  File f;
  f.path_ = path;
  f.file_ = Id(H5Fcreate(path.c_str(), overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5P_DEFAULT, fapl.get()));
  if (!f.file_.valid()) {
    std::string detail = hdf5_error_message();
    H5Eclear2(H5E_DEFAULT);
    // Say why in the operating system's words, without leaving a file behind.
    std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
    if (dir.empty()) dir = path.find('/') == 0 ? "/" : ".";
    if (::access(dir.c_str(), W_OK) != 0) detail = std::strerror(errno);
    throw FileError("create", path, "", detail);
  }
  f.root_ = Group(Id(check(H5Gopen2(f.file_.get(), "/", H5P_DEFAULT), "open root", path, "/")), path, "/");
  return f;
}

bool File::is_hdf5(const std::string& path) noexcept {
  silence_hdf5_errors();
  htri_t r = H5Fis_hdf5(path.c_str());
  if (r < 0) H5Eclear2(H5E_DEFAULT);
  return r > 0;
}

namespace {
int g_event_fd = -1;

void report_event(char kind, const std::string& path) noexcept {
  if (g_event_fd < 0) return;
  try {
    const std::string line = std::string(1, kind) + " " + path + "\n";
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      ssize_t n = ::write(g_event_fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  } catch (...) {  // out of memory for the line: the report is only a courtesy
  }
}
}  // namespace

void report_file_events_to(int fd) noexcept { g_event_fd = fd; }
void report_temp_file(const std::string& path) noexcept { report_event('t', path); }
void report_created_dir(const std::string& path) noexcept { report_event('d', path); }

File File::open(const std::string& path, Access access_mode, const FileOptions& opts) {
  silence_hdf5_errors();
  report_event('o', path);
  if (::access(path.c_str(), F_OK) != 0) throw FileError("open", path, "", "no such file");
  if (::access(path.c_str(), R_OK) != 0) throw FileError("open", path, "", "permission denied");
  {
    // H5Fis_accessible on a directory or a short text file gives a cryptic stack.
    std::FILE* fp = std::fopen(path.c_str(), "rb");
    if (!fp) throw FileError("open", path, "", std::strerror(errno));
    unsigned char sig[8] = {0};
    std::size_t n = std::fread(sig, 1, 8, fp);
    std::fclose(fp);
    static const unsigned char kSig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (n < 8 || std::memcmp(sig, kSig, 8) != 0) {
      // HDF5 also accepts a superblock at 512, 1024, ... (user block); defer to the library then.
      if (!is_hdf5(path)) throw FileError("open", path, "", "not an HDF5 file");
    }
  }
  Id fapl = make_fapl(opts, path, access_mode == Access::ReadOnly);
  File f;
  f.path_ = path;
  f.file_ = Id(H5Fopen(path.c_str(), access_mode == Access::ReadOnly ? H5F_ACC_RDONLY : H5F_ACC_RDWR, fapl.get()));
  if (!f.file_.valid()) {
    std::string detail = hdf5_error_message();
    H5Eclear2(H5E_DEFAULT);
    throw FileError("open", path, "", "cannot open HDF5 file (truncated or damaged?): " + detail);
  }
  Id root(H5Gopen2(f.file_.get(), "/", H5P_DEFAULT));
  if (!root.valid()) {
    H5Eclear2(H5E_DEFAULT);
    throw FileError("open", path, "/", "cannot open root group (truncated or damaged file)");
  }
  f.root_ = Group(std::move(root), path, "/");
  return f;
}

void File::flush() {
  check_status(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL), "flush", path_, "");
}

void File::close() {
  root_ = Group();
  if (file_.valid()) {
    hid_t id = file_.release();
    check_status(H5Fclose(id), "close", path_, "");
  }
}

}  // namespace rtrace::store
