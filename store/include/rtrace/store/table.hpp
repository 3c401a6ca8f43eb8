// Compound tables: one HDF5 dataset of compound rows, chunked and extendible.
//
// A row type is a plain struct whose static layout() lists its fields with
// their units; the table writes a `units` attribute with one entry per field
// (in field order) and a `description` attribute. Reads match fields by name,
// so a reader built for an older minor schema reads newer files.
#pragma once

#include "rtrace/store/hdf5.hpp"

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace rtrace::store {

class Group;

enum class FieldType { I32, I64, U8, U64, F64, Str };
const char* field_type_name(FieldType t) noexcept;  // "i32", "i64", "u8", "u64", "f64", "str"

struct Field {
  std::string name;
  FieldType type;
  std::size_t offset;
  std::size_t size;   // bytes; for Str the fixed capacity including the NUL
  std::string unit;   // "1" for dimensionless counts, "" for ids/labels/strings
  // Added in a later minor schema: a file written before it lacks the field,
  // and reads fill it with "unavailable" (NaN, -1, "") instead of refusing.
  bool optional = false;
};

class RowLayout {
 public:
  RowLayout(std::string table_kind, std::size_t row_size) : kind_(std::move(table_kind)), row_size_(row_size) {}

  // Registers a member. The field type follows the member's C++ type:
  // int32_t, int64_t, uint8_t, uint64_t, double, or char[N] (fixed string).
  template <class Row, class M>
  RowLayout& add(const char* name, M Row::*member, const char* unit = "") {
    static_assert(std::is_trivially_copyable_v<Row>, "rows must be plain structs");
    alignas(Row) unsigned char storage[sizeof(Row)] = {};
    const Row* row = reinterpret_cast<const Row*>(storage);
    std::size_t offset = static_cast<std::size_t>(
        reinterpret_cast<const unsigned char*>(&(row->*member)) - storage);
    fields_.push_back(Field{name, type_of<M>(), offset, sizeof(M), unit});
    return *this;
  }

  // As add(), for a field appended in a later minor schema version (see
  // Field::optional): older files without it still open.
  template <class Row, class M>
  RowLayout& add_optional(const char* name, M Row::*member, const char* unit = "") {
    add(name, member, unit);
    fields_.back().optional = true;
    return *this;
  }

  const std::string& kind() const noexcept { return kind_; }
  std::size_t row_size() const noexcept { return row_size_; }
  const std::vector<Field>& fields() const noexcept { return fields_; }
  const Field* find(const std::string& name) const noexcept;

  // Compound type describing the struct in memory; `skip` leaves fields out
  // (optional fields that an older file lacks).
  Id make_memory_type(const std::vector<const Field*>& skip = {}) const;
  Id make_file_type() const;    // packed compound type written to disk

 private:
  template <class M>
  static constexpr FieldType type_of() {
    if constexpr (std::is_same_v<M, std::int32_t>) return FieldType::I32;
    else if constexpr (std::is_same_v<M, std::int64_t>) return FieldType::I64;
    else if constexpr (std::is_same_v<M, std::uint8_t>) return FieldType::U8;
    else if constexpr (std::is_same_v<M, std::uint64_t>) return FieldType::U64;
    else if constexpr (std::is_same_v<M, double>) return FieldType::F64;
    else if constexpr (std::is_array_v<M> && std::is_same_v<std::remove_extent_t<M>, char>) return FieldType::Str;
    else static_assert(sizeof(M) == 0, "unsupported field type");
  }
  std::string kind_;
  std::size_t row_size_;
  std::vector<Field> fields_;
};

// Copies a string into a fixed char field, truncating and always NUL-terminating.
template <std::size_t N>
void set_str(char (&dst)[N], const std::string& src) noexcept {
  std::size_t n = src.size() < N - 1 ? src.size() : N - 1;
  std::memcpy(dst, src.data(), n);
  std::memset(dst + n, 0, N - n);
}
// `text` in at most `max_bytes` bytes, never cut inside a word: a text that
// does not fit ends at the last word boundary that leaves room for "..."
// (issue 30: a reason read "measured on a busy mac").
std::string fit_words(const std::string& text, std::size_t max_bytes);
// Copies prose (a reason, a note) into a fixed char field through fit_words.
template <std::size_t N>
void set_text(char (&dst)[N], const std::string& text) {
  set_str(dst, fit_words(text, N - 1));
}
template <std::size_t N>
std::string get_str(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

// Untyped table over a layout; Table<Row> below is the usual entry point.
class RawTable {
 public:
  RawTable() = default;
  // Creates an empty extendible table. chunk_rows tunes I/O granularity.
  static RawTable create(Group& parent, const std::string& name, const RowLayout& layout,
                         const std::string& description = "", std::size_t chunk_rows = 0);
  // Opens an existing table; every field of `layout` must exist in the file
  // (a missing one throws SchemaError naming it) except optional fields, which
  // read as unavailable when absent.
  static RawTable open(const Group& parent, const std::string& name, const RowLayout& layout);

  void append(const void* rows, std::size_t count);
  void write_at(std::size_t start, const void* rows, std::size_t count);  // overwrite existing rows
  void read(void* rows, std::size_t start, std::size_t count) const;
  std::size_t size() const;
  const std::string& path() const noexcept { return path_; }

 private:
  Id dataset_;
  Id memtype_;
  std::string file_, path_;
  std::size_t row_size_ = 0;
  std::vector<Field> absent_;  // optional fields this file lacks: filled on read
};

template <class Row>
class Table {
 public:
  Table() = default;
  static Table create(Group& parent, const std::string& name, const std::string& description = "",
                      std::size_t chunk_rows = 0) {
    return Table(RawTable::create(parent, name, Row::layout(), description, chunk_rows));
  }
  static Table open(const Group& parent, const std::string& name) {
    return Table(RawTable::open(parent, name, Row::layout()));
  }
  void append(const std::vector<Row>& rows) { if (!rows.empty()) raw_.append(rows.data(), rows.size()); }
  void append(const Row& row) { raw_.append(&row, 1); }
  void write_at(std::size_t start, const Row& row) { raw_.write_at(start, &row, 1); }
  std::vector<Row> read(std::size_t start, std::size_t count) const {
    std::vector<Row> out(count);
    if (count) raw_.read(out.data(), start, count);
    return out;
  }
  std::vector<Row> read_all() const { return read(0, size()); }
  std::size_t size() const { return raw_.size(); }
  const std::string& path() const noexcept { return raw_.path(); }

 private:
  explicit Table(RawTable raw) : raw_(std::move(raw)) {}
  RawTable raw_;
};

}  // namespace rtrace::store
