#include "rtrace/store/table.hpp"

#include "rtrace/store/file.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>

namespace rtrace::store {

const char* field_type_name(FieldType t) noexcept {
  switch (t) {
    case FieldType::I32: return "i32";
    case FieldType::I64: return "i64";
    case FieldType::U8: return "u8";
    case FieldType::U64: return "u64";
    case FieldType::F64: return "f64";
    case FieldType::Str: return "str";
  }
  return "?";
}

std::string fit_words(const std::string& text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  const std::string more = "...";
  if (max_bytes <= more.size()) return text.substr(0, max_bytes);
  const std::size_t room = max_bytes - more.size();
  // The last space at or before `room`: the words before it fit whole.
  std::size_t cut = text.rfind(' ', room);
  if (cut == std::string::npos || cut == 0) {
    // One word longer than the field: cut it (on a UTF-8 character boundary).
    cut = room;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  }
  std::string out = text.substr(0, cut);
  // No parenthesis left open, no dangling separator before the dots
  // ("runs were disturbed by other processes...", not "processes (threads...").
  if (const auto open = out.rfind('('); open != std::string::npos && out.find(')', open) == std::string::npos && open > 0)
    out.resize(open);
  while (!out.empty() && std::string(" ,;:(").find(out.back()) != std::string::npos) out.pop_back();
  return out + more;
}

const Field* RowLayout::find(const std::string& name) const noexcept {
  for (const auto& f : fields_)
    if (f.name == name) return &f;
  return nullptr;
}

namespace {
// Native types for memory, little-endian standard types for the file so files
// are identical across hosts.
Id atom_type(const Field& f, bool file) {
  switch (f.type) {
    case FieldType::I32: return Id(H5Tcopy(file ? H5T_STD_I32LE : H5T_NATIVE_INT32));
    case FieldType::I64: return Id(H5Tcopy(file ? H5T_STD_I64LE : H5T_NATIVE_INT64));
    case FieldType::U8: return Id(H5Tcopy(file ? H5T_STD_U8LE : H5T_NATIVE_UINT8));
    case FieldType::U64: return Id(H5Tcopy(file ? H5T_STD_U64LE : H5T_NATIVE_UINT64));
    case FieldType::F64: return Id(H5Tcopy(file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE));
    case FieldType::Str: {
      Id t(H5Tcopy(H5T_C_S1));
      H5Tset_size(t.get(), f.size);
      H5Tset_strpad(t.get(), H5T_STR_NULLTERM);
      H5Tset_cset(t.get(), H5T_CSET_UTF8);
      return t;
    }
  }
  return Id();
}
}  // namespace

Id RowLayout::make_memory_type(const std::vector<const Field*>& skip) const {
  silence_hdf5_errors();
  Id t(check(H5Tcreate(H5T_COMPOUND, row_size_), "create compound type", "", kind_));
  for (const auto& f : fields_) {
    if (std::find(skip.begin(), skip.end(), &f) != skip.end()) continue;
    Id a = atom_type(f, false);
    check_status(H5Tinsert(t.get(), f.name.c_str(), f.offset, a.get()), "insert field", "", kind_ + "." + f.name);
  }
  return t;
}

Id RowLayout::make_file_type() const {
  silence_hdf5_errors();
  std::size_t size = 0;
  for (const auto& f : fields_) size += f.size;
  Id t(check(H5Tcreate(H5T_COMPOUND, size), "create compound type", "", kind_));
  std::size_t offset = 0;
  for (const auto& f : fields_) {
    Id a = atom_type(f, true);
    check_status(H5Tinsert(t.get(), f.name.c_str(), offset, a.get()), "insert field", "", kind_ + "." + f.name);
    offset += f.size;
  }
  return t;
}

RawTable RawTable::create(Group& parent, const std::string& name, const RowLayout& layout,
                          const std::string& description, std::size_t chunk_rows) {
  silence_hdf5_errors();
  RawTable t;
  t.file_ = parent.file();
  t.path_ = parent.child_path(name);
  t.row_size_ = layout.row_size();
  t.memtype_ = layout.make_memory_type();
  Id ftype = layout.make_file_type();
  const std::size_t file_row = H5Tget_size(ftype.get());
  if (chunk_rows == 0) chunk_rows = std::max<std::size_t>(16, (64 * 1024) / std::max<std::size_t>(file_row, 1));
  hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {chunk_rows};
  Id space(check(H5Screate_simple(1, dims, maxdims), "create dataspace", t.file_, t.path_));
  Id dcpl(check(H5Pcreate(H5P_DATASET_CREATE), "create property list", t.file_, t.path_));
  check_status(H5Pset_chunk(dcpl.get(), 1, chunk), "set chunk", t.file_, t.path_);
  t.dataset_ = Id(check(H5Dcreate2(parent.id(), name.c_str(), ftype.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
                        "create table", t.file_, t.path_));
  std::vector<std::string> units;
  units.reserve(layout.fields().size());
  for (const auto& f : layout.fields()) units.push_back(f.unit);
  parent.set_child_attr(name, "table_kind", layout.kind());
  parent.set_child_attr(name, "description", description);
  // units: one entry per field, in field order.
  {
    Group self(Id(check(H5Oopen(parent.id(), name.c_str(), H5P_DEFAULT), "open table", t.file_, t.path_)), t.file_, t.path_);
    self.set_attr("units", units);
  }
  return t;
}

namespace {
// One memory type per (layout, fields the file lacks), built once: a reader
// of 10^5 rank groups opens 5 tables per rank, and building a 40-member
// compound type each time was 11% of its CPU time. Each table takes a
// reference (closing the table gives it back); the cache keeps one, and
// rebuilds a type the library no longer knows (after H5close).
Id cached_memory_type(const RowLayout& layout, const std::vector<const Field*>& absent) {
  static std::mutex lock;
  static std::map<std::pair<const RowLayout*, std::vector<const Field*>>, hid_t> types;
  std::lock_guard<std::mutex> guard(lock);
  hid_t& id = types[{&layout, absent}];
  if (id <= 0 || H5Iis_valid(id) <= 0) id = layout.make_memory_type(absent).release();
  H5Iinc_ref(id);
  return Id(id);
}
}  // namespace

RawTable RawTable::open(const Group& parent, const std::string& name, const RowLayout& layout) {
  silence_hdf5_errors();
  RawTable t;
  t.file_ = parent.file();
  t.path_ = parent.child_path(name);
  t.row_size_ = layout.row_size();
  if (!parent.exists(name)) throw SchemaError("open table", t.file_, t.path_, "missing");
  t.dataset_ = Id(check(H5Dopen2(parent.id(), name.c_str(), H5P_DEFAULT), "open table", t.file_, t.path_));
  Id ftype(check(H5Dget_type(t.dataset_.get()), "get type", t.file_, t.path_));
  if (H5Tget_class(ftype.get()) != H5T_COMPOUND) throw SchemaError("open table", t.file_, t.path_, "not a compound table");
  Id space(check(H5Dget_space(t.dataset_.get()), "get dataspace", t.file_, t.path_));
  if (H5Sget_simple_extent_ndims(space.get()) != 1) throw SchemaError("open table", t.file_, t.path_, "not one-dimensional");
  std::vector<const Field*> absent;
  for (const auto& f : layout.fields()) {
    int idx = H5Tget_member_index(ftype.get(), f.name.c_str());
    if (idx < 0) {
      H5Eclear2(H5E_DEFAULT);
      if (f.optional) {
        absent.push_back(&f);
        t.absent_.push_back(f);
        continue;
      }
      throw SchemaError("open table", t.file_, t.path_, "missing field `" + f.name + "`");
    }
    Id mtype(H5Tget_member_type(ftype.get(), static_cast<unsigned>(idx)));
    H5T_class_t cls = H5Tget_class(mtype.get());
    bool ok = (f.type == FieldType::Str) ? cls == H5T_STRING
              : (f.type == FieldType::F64) ? cls == H5T_FLOAT
                                           : cls == H5T_INTEGER;
    if (!ok)
      throw SchemaError("open table", t.file_, t.path_,
                        "field `" + f.name + "` has the wrong type (expected " + field_type_name(f.type) + ")");
  }
  t.memtype_ = cached_memory_type(layout, absent);
  return t;
}

std::size_t RawTable::size() const {
  Id space(check(H5Dget_space(dataset_.get()), "get dataspace", file_, path_));
  hsize_t dims[1] = {0};
  check(H5Sget_simple_extent_dims(space.get(), dims, nullptr), "get extent", file_, path_);
  return static_cast<std::size_t>(dims[0]);
}

void RawTable::append(const void* rows, std::size_t count) {
  if (count == 0) return;
  std::size_t start = size();
  hsize_t newdims[1] = {static_cast<hsize_t>(start + count)};
  check_status(H5Dset_extent(dataset_.get(), newdims), "extend table", file_, path_);
  write_at(start, rows, count);
}

void RawTable::write_at(std::size_t start, const void* rows, std::size_t count) {
  if (count == 0) return;
  if (start + count > size()) throw Error("write table", file_, path_, "rows out of range");
  Id fspace(check(H5Dget_space(dataset_.get()), "get dataspace", file_, path_));
  hsize_t off[1] = {start}, cnt[1] = {count};
  check_status(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, off, nullptr, cnt, nullptr), "select rows", file_, path_);
  Id mspace(check(H5Screate_simple(1, cnt, nullptr), "create dataspace", file_, path_));
  check_status(H5Dwrite(dataset_.get(), memtype_.get(), mspace.get(), fspace.get(), H5P_DEFAULT, rows), "write rows", file_, path_);
}

void RawTable::read(void* rows, std::size_t start, std::size_t count) const {
  if (count == 0) return;
  if (start + count > size())
    throw Error("read table", file_, path_, "rows " + std::to_string(start) + "+" + std::to_string(count) + " out of range");
  // Fields absent from the file would read as garbage; open() refuses those,
  // so zero-fill only protects padding.
  std::memset(rows, 0, count * row_size_);
  for (std::size_t i = 0; i < count && !absent_.empty(); ++i) {
    unsigned char* row = static_cast<unsigned char*>(rows) + i * row_size_;
    for (const auto& f : absent_) {
      if (f.type == FieldType::F64) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(row + f.offset, &nan, sizeof nan);
      } else if (f.type != FieldType::Str) {
        std::memset(row + f.offset, 0xff, f.size);  // -1 in two's complement (max for unsigned)
      }
    }
  }
  Id fspace(check(H5Dget_space(dataset_.get()), "get dataspace", file_, path_));
  hsize_t off[1] = {start}, cnt[1] = {count};
  check_status(H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, off, nullptr, cnt, nullptr), "select rows", file_, path_);
  Id mspace(check(H5Screate_simple(1, cnt, nullptr), "create dataspace", file_, path_));
  const Id dxpl = transfer_list(2 * count * row_size_);
  check_status(H5Dread(dataset_.get(), memtype_.get(), mspace.get(), fspace.get(), dxpl.get(), rows), "read rows", file_, path_);
}

}  // namespace rtrace::store
