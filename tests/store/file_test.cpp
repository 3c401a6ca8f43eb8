#include "rtrace/store/file.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "test_util.hpp"

using namespace rtrace::store;

TEST(StoreFile, AttributesRoundTrip) {
  TempDir d;
  {
    File f = File::create(d.file("a.h5"));
    Group g = f.root().create_group("g");
    g.set_attr("s", "hello");
    g.set_attr("i", std::int64_t{42});
    g.set_attr("x", 2.5);
    g.set_attr("list", std::vector<std::string>{"a", "bb", ""});
    g.set_attr("s", "overwritten");
  }
  File f = File::open(d.file("a.h5"));
  Group g = f.root().open_group("g");
  EXPECT_EQ(g.attr_string("s"), "overwritten");
  EXPECT_EQ(g.attr_int("i"), 42);
  EXPECT_DOUBLE_EQ(g.attr_double("x"), 2.5);
  EXPECT_DOUBLE_EQ(g.attr_double("i"), 42.0);
  EXPECT_EQ(g.attr_strings("list"), (std::vector<std::string>{"a", "bb", ""}));
  EXPECT_TRUE(g.has_attr("s"));
  EXPECT_FALSE(g.has_attr("nope"));
}

TEST(StoreFile, StringsTextAndDoubles) {
  TempDir d;
  {
    File f = File::create(d.file("a.h5"));
    f.root().write_strings("names", {"triad", "dgemm<double, 64>", "ünïcode"});
    f.root().write_strings("empty", {});
    f.root().write_text("out", std::string("line1\nline2\0tail", 16));
    f.root().write_doubles("v", {1.0, std::nan(""), 3.0}, "GB/s");
  }
  File f = File::open(d.file("a.h5"));
  EXPECT_EQ(f.root().read_strings("names")[2], "ünïcode");
  EXPECT_TRUE(f.root().read_strings("empty").empty());
  EXPECT_EQ(f.root().read_text("out"), "line1\nline2");  // C strings stop at NUL
  auto v = f.root().read_doubles("v");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(*f.root().child_attr_string("v", "units"), "GB/s");
}

TEST(StoreFile, ChildrenSortedAndRemove) {
  TempDir d;
  File f = File::create(d.file("a.h5"));
  f.root().create_group("b");
  f.root().create_group("a");
  EXPECT_EQ(f.root().children(), (std::vector<std::string>{"a", "b"}));
  f.root().remove("a");
  EXPECT_EQ(f.root().children(), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(f.root().is_group("b"));
  EXPECT_FALSE(f.root().exists("a"));
}

TEST(StoreFile, ErrorsCarryContext) {
  TempDir d;
  try {
    File::open(d.file("missing.h5"));
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.h5"), std::string::npos);
    EXPECT_EQ(e.detail(), "no such file");
  }
  std::ofstream(d.file("text.h5")) << "this is not hdf5\n";
  EXPECT_THROW(File::open(d.file("text.h5")), FileError);
  File f = File::create(d.file("a.h5"));
  try {
    f.root().open_group("nope");
    FAIL();
  } catch (const SchemaError& e) {
    EXPECT_EQ(e.object(), "/nope");
    EXPECT_EQ(e.file(), d.file("a.h5"));
  }
  try {
    f.root().create_group("x");
    f.root().create_group("x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.operation(), "create group");
    EXPECT_FALSE(e.detail().empty());
  }
  EXPECT_THROW(f.root().attr_int("missing"), SchemaError);
  EXPECT_THROW(File::create(d.file("a.h5")), FileError);  // refuses to clobber
}

TEST(StoreFile, TruncatedFileIsAFileError) {
  TempDir d;
  {
    File f = File::create(d.file("a.h5"));
    f.root().write_strings("names", std::vector<std::string>(1000, "some name"));
  }
  std::ifstream in(d.file("a.h5"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(d.file("t.h5"), std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  EXPECT_THROW(
      {
        File f = File::open(d.file("t.h5"));
        f.root().read_strings("names");
      },
      Error);
}

TEST(StoreFile, IdMoveInvalidatesSource) {
  Id a(H5Screate(H5S_SCALAR));
  ASSERT_TRUE(a.valid());
  hid_t raw = a.get();
  Id b(std::move(a));
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), raw);
  Id c;
  c = std::move(b);
  EXPECT_FALSE(b.valid());
  EXPECT_EQ(c.get(), raw);
  c.reset();
  EXPECT_FALSE(c.valid());
  EXPECT_LE(H5Iis_valid(raw), 0);
}

// HDF5 1.10.8's H5Ocopy crashes on variable-length string attributes in dense
// storage (> 8 attributes); copy_from must copy them another way.
TEST(StoreFile, CopyFromKeepsManyStringAttributes) {
  TempDir d;
  {
    File src = File::create(d.file("src.h5"));
    Group g = src.root().create_group("point");
    for (int i = 0; i < 12; ++i) g.set_attr("attr" + std::to_string(i), "value " + std::to_string(i));
    g.set_attr("n", std::int64_t{7});
    Group sub = g.create_group("ranks");
    sub.set_attr("x", "y");
    g.write_strings("names", {"a", "b"}, "described");
    File dst = File::create(d.file("dst.h5"));
    dst.root().copy_from(src.root(), "point", "copied");
  }
  File dst = File::open(d.file("dst.h5"));
  Group g = dst.root().open_group("copied");
  for (int i = 0; i < 12; ++i) EXPECT_EQ(g.attr_string("attr" + std::to_string(i)), "value " + std::to_string(i));
  EXPECT_EQ(g.attr_int("n"), 7);
  EXPECT_EQ(g.open_group("ranks").attr_string("x"), "y");
  EXPECT_EQ(g.read_strings("names"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*g.child_attr_string("names", "description"), "described");
}
