// Display names of sampled functions (analysis/src/profile.cpp).
#include "rtrace/analysis/profile.hpp"

#include <gtest/gtest.h>

using rtrace::analysis::short_function_name;

TEST(ProfileNames, ParametersAndQualifiersAreDropped) {
  EXPECT_EQ(short_function_name("solver::Grid::relax(long) const"), "solver::Grid::relax");
  EXPECT_EQ(short_function_name("setup_mesh(long)"), "setup_mesh");
  EXPECT_EQ(short_function_name("f(void (*)(int), std::pair<int, int>)"), "f");
  EXPECT_EQ(short_function_name("mesh::refine"), "mesh::refine");
  EXPECT_EQ(short_function_name("rtrace-demo+0x1a2b"), "rtrace-demo+0x1a2b");
}

TEST(ProfileNames, OutlinedOpenMpRegionsAreMarked) {
  EXPECT_EQ(short_function_name("parallel_sweep(long) [clone ._omp_fn.0]"), "parallel_sweep (OpenMP region)");
  EXPECT_EQ(short_function_name("kernel(double*) [clone .constprop.0]"), "kernel");
}

// An inlined lambda or functor call is named "operator()" in DWARF, with no
// parameter list after it: that "()" is part of the name.
TEST(ProfileNames, CallOperatorKeepsItsParentheses) {
  EXPECT_EQ(short_function_name("operator()"), "operator()");
  EXPECT_EQ(short_function_name("Functor::operator()(int) const"), "Functor::operator()");
  EXPECT_EQ(short_function_name("ns::Functor::operator()"), "ns::Functor::operator()");
  EXPECT_EQ(short_function_name("my_operator(int)"), "my_operator");
}

TEST(ProfileNames, InlinedFunctionAndItsCallerAreBothShortened) {
  EXPECT_EQ(short_function_name("operator() [inlined in ref_point(long, int) [clone ._omp_fn.1]]"),
            "operator() [inlined in ref_point (OpenMP region)]");
  EXPECT_EQ(short_function_name("smooth_cell [inlined in mesh_smooth(long)]"), "smooth_cell [inlined in mesh_smooth]");
}

TEST(ProfileNames, TwoOpenMpRegionsOfOneFunctionAreNumbered) {
  using rtrace::analysis::FunctionSeries;
  std::vector<FunctionSeries> fns(4);
  fns[0].name = "run(int) [clone ._omp_fn.0]";
  fns[1].name = "run(int) [clone ._omp_fn.1]";
  fns[2].name = "point(double) [inlined in run(int) [clone ._omp_fn.1]]";
  fns[3].name = "solo(int) [clone ._omp_fn.0]";
  for (auto& f : fns) f.short_name = short_function_name(f.name);
  rtrace::analysis::disambiguate_openmp_regions(fns);
  EXPECT_EQ(fns[0].short_name, "run (OpenMP region 0)");
  EXPECT_EQ(fns[1].short_name, "run (OpenMP region 1)");
  EXPECT_EQ(fns[2].short_name, "point [inlined in run (OpenMP region)]");  // unique: left as it is
  EXPECT_EQ(fns[3].short_name, "solo (OpenMP region)");
}

TEST(ProfileNames, StandardLibraryFunctionsAreKnownByTheirQualifiedName) {
  using rtrace::analysis::is_standard_library_function;
  EXPECT_TRUE(is_standard_library_function(
      "__gnu_cxx::__enable_if<std::__is_scalar<double>::__value, void>::__type std::__fill_a1<double*, double>(double*, "
      "double*, double const&)"));
  EXPECT_TRUE(is_standard_library_function(
      "double* std::__copy_move<false, true, std::random_access_iterator_tag>::__copy_m<double>(double const*, double "
      "const*, double*)"));
  EXPECT_TRUE(is_standard_library_function("std::vector<double, std::allocator<double> >::_M_default_append(unsigned long)"));
  EXPECT_TRUE(is_standard_library_function("__gnu_cxx::__normal_iterator<double*, std::vector<double> >::operator++()"));
  EXPECT_FALSE(is_standard_library_function("rtrace::demo::run_spmv(rtrace::demo::KernelConfig const&)"));
  EXPECT_FALSE(is_standard_library_function("void fill_grid<std::vector<double> >(std::vector<double>&)"));
  EXPECT_FALSE(is_standard_library_function("operator()"));
  EXPECT_FALSE(is_standard_library_function("mesh::refine"));
}

// The sampled time of a counted function: the function whose code ran (its
// inlined callees included, libc on its own), on the thread with most work.
TEST(ProfileHostFunctions, InlinedCodeCountsForItsHostOnTheCriticalThread) {
  namespace store = rtrace::store;
  store::RankRecords r;
  r.names = {"main", "f(int)", "g(int)", "memcpy", "app", "libc.so.6"};
  store::SamplingRow s{};
  s.period_s = 1e-3;
  store::set_str(s.status, "ok");
  r.sampling.push_back(s);
  auto node = [&](std::int64_t parent, int thread, std::int64_t fn, const char* cat, bool inlined, std::int64_t self) {
    store::CallPathRow c{};
    c.node_id = static_cast<std::int64_t>(r.callpaths.size());
    c.parent_id = parent;
    c.thread = thread;
    c.function_id = fn;
    c.module_id = 4;
    c.file_id = -1;
    store::set_str(c.category, cat);
    c.inlined = inlined ? 1 : 0;
    c.self_samples = self;
    r.callpaths.push_back(c);
    return c.node_id;
  };
  const auto m = node(-1, 0, 0, "app", false, 2);
  const auto f = node(m, 0, 1, "app", false, 10);
  node(f, 0, 2, "app", true, 5);       // g inlined in f: f's code
  node(f, 0, 3, "system", false, 3);   // memcpy: its own symbol
  node(-1, 1, 1, "app", false, 4);     // a second thread with less work
  auto t = rtrace::analysis::sampled_host_function_times({r});
  EXPECT_DOUBLE_EQ(t["f(int)"], 15e-3);
  EXPECT_DOUBLE_EQ(t["main"], 2e-3);
  EXPECT_DOUBLE_EQ(t["memcpy"], 3e-3);
  EXPECT_EQ(t.count("g(int)"), 0u);
}
