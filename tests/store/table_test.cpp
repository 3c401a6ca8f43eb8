#include "rtrace/store/file.hpp"
#include "rtrace/store/records.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"

using namespace rtrace::store;

namespace {
struct Row {
  std::int64_t id;
  double value;
  char name[16];
  std::uint8_t flag;
  static const RowLayout& layout() {
    static const RowLayout l = RowLayout("test_row", sizeof(Row))
                                   .add("id", &Row::id)
                                   .add("value", &Row::value, "GB/s")
                                   .add("name", &Row::name)
                                   .add("flag", &Row::flag);
    return l;
  }
};
// An older reader knows fewer fields; reading by name must still work.
struct OldRow {
  double value;
  std::int64_t id;
  static const RowLayout& layout() {
    static const RowLayout l = RowLayout("test_row", sizeof(OldRow)).add("value", &OldRow::value, "GB/s").add("id", &OldRow::id);
    return l;
  }
};
struct FutureRow {
  std::int64_t id;
  double added_later;
  static const RowLayout& layout() {
    static const RowLayout l =
        RowLayout("test_row", sizeof(FutureRow)).add("id", &FutureRow::id).add("added_later", &FutureRow::added_later);
    return l;
  }
};
// A newer reader with fields added in a later minor: optional ones read as
// unavailable from an older file.
struct NewerRow {
  std::int64_t id;
  double added_f64;
  std::int32_t added_i32;
  static const RowLayout& layout() {
    static const RowLayout l = RowLayout("test_row", sizeof(NewerRow))
                                   .add("id", &NewerRow::id)
                                   .add_optional("added_f64", &NewerRow::added_f64, "s")
                                   .add_optional("added_i32", &NewerRow::added_i32);
    return l;
  }
};
}  // namespace

TEST(StoreTable, LayoutOffsetsAndTypes) {
  const auto& l = Row::layout();
  ASSERT_EQ(l.fields().size(), 4u);
  EXPECT_EQ(l.fields()[1].offset, offsetof(Row, value));
  EXPECT_EQ(l.fields()[2].type, FieldType::Str);
  EXPECT_EQ(l.fields()[2].size, 16u);
  EXPECT_EQ(l.fields()[3].type, FieldType::U8);
  EXPECT_STREQ(field_type_name(FieldType::F64), "f64");
}

TEST(StoreTable, AppendReadSliceAndOverwrite) {
  TempDir d;
  {
    File f = File::create(d.file("t.h5"));
    auto t = f.root().create_table<Row>("rows", "test rows", 4);
    std::vector<Row> rows;
    for (int i = 0; i < 10; ++i) {
      Row r{};
      r.id = i;
      r.value = i * 1.5;
      set_str(r.name, "row-" + std::to_string(i) + "-with-a-long-name");
      r.flag = i % 2;
      rows.push_back(r);
    }
    t.append(rows);
    t.append(rows[0]);
    Row changed = rows[3];
    changed.value = -1;
    t.write_at(3, changed);
    EXPECT_EQ(t.size(), 11u);
  }
  File f = File::open(d.file("t.h5"));
  auto t = f.root().open_table<Row>("rows");
  auto all = t.read_all();
  ASSERT_EQ(all.size(), 11u);
  EXPECT_EQ(get_str(all[2].name), "row-2-with-a-lo");  // truncated to 15 chars + NUL
  EXPECT_EQ(all[3].value, -1);
  auto slice = t.read(5, 3);
  EXPECT_EQ(slice[0].id, 5);
  EXPECT_EQ(slice[2].id, 7);
  EXPECT_THROW(t.read(9, 5), Error);
  EXPECT_EQ(f.root().open_group("/").child_attr_string("rows", "table_kind"), std::optional<std::string>("test_row"));
  const Group& g = f.root();
  auto units = Group(Id(H5Oopen(g.id(), "rows", H5P_DEFAULT)), g.file(), "/rows").attr_strings("units");
  EXPECT_EQ(units, (std::vector<std::string>{"", "GB/s", "", ""}));
}

TEST(StoreTable, ReadsByFieldNameAndReportsMissingFields) {
  TempDir d;
  {
    File f = File::create(d.file("t.h5"));
    Row r{};
    r.id = 7;
    r.value = 3.25;
    f.root().write_table<Row>("rows", {r});
  }
  File f = File::open(d.file("t.h5"));
  auto old = f.root().read_table<OldRow>("rows");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].id, 7);
  EXPECT_EQ(old[0].value, 3.25);
  try {
    f.root().read_table<FutureRow>("rows");
    FAIL();
  } catch (const SchemaError& e) {
    EXPECT_NE(e.detail().find("added_later"), std::string::npos);
  }
  EXPECT_THROW(f.root().read_table<Row>("absent"), SchemaError);
}

TEST(StoreTable, OptionalFieldsAbsentFromOlderFilesReadAsUnavailable) {
  TempDir d;
  {
    File f = File::create(d.file("t.h5"));
    Row a{}, b{};
    a.id = 7;
    b.id = 8;
    f.root().write_table<Row>("rows", {a, b});
    NewerRow n{};
    n.id = 9;
    n.added_f64 = 1.5;
    n.added_i32 = 3;
    f.root().write_table<NewerRow>("newer", {n});
  }
  File f = File::open(d.file("t.h5"));
  auto rows = f.root().read_table<NewerRow>("rows");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].id, 8);
  EXPECT_TRUE(std::isnan(rows[0].added_f64));
  EXPECT_TRUE(std::isnan(rows[1].added_f64));
  EXPECT_EQ(rows[1].added_i32, -1);
  auto newer = f.root().read_table<NewerRow>("newer");  // present fields are read, not defaulted
  EXPECT_EQ(newer[0].added_f64, 1.5);
  EXPECT_EQ(newer[0].added_i32, 3);
}

TEST(StoreTable, EmptyTable) {
  TempDir d;
  File f = File::create(d.file("t.h5"));
  f.root().write_table<Row>("rows", {});
  EXPECT_EQ(f.root().open_table<Row>("rows").size(), 0u);
  EXPECT_TRUE(f.root().read_table<Row>("rows").empty());
}
