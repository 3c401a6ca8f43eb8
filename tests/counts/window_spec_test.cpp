#include "rtrace/counts/window_spec.hpp"

#include <gtest/gtest.h>

using namespace rtrace::counts;

TEST(CountsWindowSpec, CallsAndTimeRanges) {
  WindowSpec w = parse_window_spec("timestep:10-20");
  EXPECT_EQ(w.function, "timestep");
  EXPECT_EQ(w.first_call, 10);
  EXPECT_EQ(w.last_call, 20);
  EXPECT_TRUE(w.user());
  EXPECT_EQ(describe_window(w), "calls 10-20 of timestep");
  EXPECT_EQ(window_tool_options(w), (std::vector<std::string>{"--window-fn=timestep", "--window-calls=10-20"}));

  w = parse_window_spec("ns::step:3-");   // C++: the range is after the last ':'
  EXPECT_EQ(w.function, "ns::step");
  EXPECT_EQ(w.last_call, 0);
  EXPECT_EQ(describe_window(w), "calls from 3 of ns::step");

  w = parse_window_spec("time:0-600");
  EXPECT_EQ(describe_window(w), "0-600 s of the counting run");
  EXPECT_EQ(window_tool_options(w), (std::vector<std::string>{"--window-ms=0-600000"}));

  w = parse_window_spec("step:2-4,time:1.5-");
  EXPECT_EQ(describe_window(w), "calls 2-4 of step and from 1.5 s of the counting run");
  EXPECT_EQ(window_tool_options(w).back(), "--window-ms=1500-");

  EXPECT_FALSE(parse_window_spec("mpi").user());
  EXPECT_TRUE(parse_window_spec("mpi").mpi);
  EXPECT_EQ(window_tool_options(parse_window_spec("whole")), (std::vector<std::string>{"--mpi-window=no"}));
  EXPECT_EQ(describe_window(parse_window_spec("mpi")), "MPI_Init..MPI_Finalize");
}

TEST(CountsWindowSpec, BadSpecsAreOneLineNamingTheProblem) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "empty"},
      {"timestep", "expected FUNC:N-M"},
      {"timestep:20-10", "the last call (10) is before the first (20)"},
      {"timestep:0-3", "call number >= 1"},
      {"timestep:x-3", "call number >= 1"},
      {"timestep:5", "expected a range"},
      {"time:10-5", "ends before it starts"},
      {"time:-5", "expected a range"},
      {"a:1-2,b:3-4", "two call ranges"},
      {"time:1-2,time:3-4", "two time ranges"},
      {"a:1-2,time:1-2,b:1-2", "at most one call range and one time range"},
  };
  for (const auto& [spec, says] : cases) {
    try {
      parse_window_spec(spec);
      ADD_FAILURE() << "`" << spec << "` accepted";
    } catch (const WindowSpecError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(says), std::string::npos) << spec << ": " << what;
      EXPECT_EQ(what.rfind("--counts-window `", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos);
    }
  }
}
