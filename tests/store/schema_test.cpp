// The C++ row layouts and schemas/rtrace-v1.json must describe the same tables.
#include "rtrace/store/records.hpp"
#include "rtrace/store/validate.hpp"
#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

using namespace rtrace::store;

namespace {
void expect_matches(const nlohmann::json& tables, const RowLayout& l) {
  ASSERT_TRUE(tables.contains(l.kind())) << "schema lacks table " << l.kind();
  const auto& fields = tables[l.kind()]["fields"];
  ASSERT_EQ(fields.size(), l.fields().size()) << l.kind();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ(fields[i]["name"], l.fields()[i].name) << l.kind();
    EXPECT_EQ(fields[i]["type"], field_type_name(l.fields()[i].type)) << l.kind() << "." << l.fields()[i].name;
    EXPECT_EQ(fields[i]["unit"], l.fields()[i].unit) << l.kind() << "." << l.fields()[i].name;
    // Fields added in a later minor are optional on read (older files lack them).
    EXPECT_EQ(fields[i].contains("since"), l.fields()[i].optional) << l.kind() << "." << l.fields()[i].name;
  }
}
}  // namespace

TEST(Schema, LayoutsMatchJson) {
  std::ifstream in(std::string(RTRACE_SOURCE_DIR) + "/schemas/rtrace-v1.json");
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema_version"], schema_version());
  const auto& t = j["tables"];
  expect_matches(t, SweepAxisRow::layout());
  expect_matches(t, SweepPointRow::layout());
  expect_matches(t, CeilingRow::layout());
  expect_matches(t, ErtSampleRow::layout());
  expect_matches(t, CacheRow::layout());
  expect_matches(t, GpuRow::layout());
  expect_matches(t, RankInfoRow::layout());
  expect_matches(t, RegionRow::layout());
  expect_matches(t, KernelRow::layout());
  expect_matches(t, MemcpyRow::layout());
  expect_matches(t, MpiRow::layout());
  expect_matches(t, SamplingRow::layout());
  expect_matches(t, CallPathRow::layout());
  expect_matches(t, CountInfoRow::layout());
  expect_matches(t, CountLevelRow::layout());
  expect_matches(t, CountRow::layout());
  expect_matches(t, DispatchRow::layout());
  expect_matches(t, MachineLoadRow::layout());
  expect_matches(t, HostRow::layout());
  EXPECT_EQ(t.size(), 19u) << "a table in the JSON has no C++ layout";
}

TEST(Schema, CompiledInCopyIsTheSourceFile) {
  std::ifstream in(std::string(RTRACE_SOURCE_DIR) + "/schemas/rtrace-v1.json");
  EXPECT_EQ(nlohmann::json::parse(in), nlohmann::json::parse(schema_v1_json()));
}

TEST(Schema, EveryNumericFieldHasAUnitOrIsAnId) {
  for (const RowLayout* l : {&SweepPointRow::layout(), &CeilingRow::layout(), &RankInfoRow::layout(), &RegionRow::layout(),
                             &KernelRow::layout(), &MpiRow::layout(), &CountInfoRow::layout(),
                             &CountLevelRow::layout(), &CountRow::layout(), &MachineLoadRow::layout()})
    for (const auto& f : l->fields()) {
      if (f.type == FieldType::F64) {
        EXPECT_FALSE(f.unit.empty()) << l->kind() << "." << f.name;
      }
    }
}
