// Display names of sampled functions and their losses against the ideal (analysis/src/profile.cpp).
#include "rtrace/analysis/profile.hpp"
#include "rtrace/analysis/analyze.hpp"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>

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
  // C and Fortran symbols are not demangled: the region is the symbol's suffix.
  EXPECT_EQ(short_function_name("stream_passes._omp_fn.1"), "stream_passes (OpenMP region)");
  EXPECT_EQ(short_function_name("MAIN__._omp_fn.0"), "MAIN__ (OpenMP region)");
  EXPECT_EQ(short_function_name("odd._omp_fn.x"), "odd._omp_fn.x");
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

// ---- per-function losses and shapes against the right ideal (issue 25)

namespace {

using namespace rtrace;
using namespace rtrace::analysis;

// One rank whose main thread spent `samples` samples (4 ms each) in `fn`.
store::RankRecords sampled_rank(const std::string& fn, std::int64_t samples) {
  store::RankRecords r;
  r.info = store::RankInfoRow{};
  r.names = {fn};
  store::SamplingRow s{};
  s.rate_hz = 250;
  s.period_s = 0.004;
  r.sampling.push_back(s);
  store::CallPathRow c{};
  c.parent_id = -1;
  c.function_id = 0;
  c.module_id = c.file_id = -1;
  store::set_str(c.category, "app");
  c.self_samples = c.inclusive_samples = samples;
  r.callpaths.push_back(c);
  return r;
}

// An analysis of two configurations, 1 and 2 along `axis` (threads or ranks),
// whose one summary has the times t1 and t2.
AnalysisResult two_configurations(const std::string& axis, double t1, double t2, bool weak = false) {
  AnalysisResult res;
  res.axis = axis;
  for (int n : {1, 2}) {
    Configuration c;
    (axis == "ranks" ? c.ranks : c.threads) = n;
    c.label = axis + "=" + std::to_string(n);
    res.run.configs.push_back(c);
  }
  AppSummary sum;
  sum.weak = weak;
  for (int i = 0; i < 2; ++i) {
    AppPoint p;
    p.config = i;
    p.concurrency = i + 1;
    p.time_s = i == 0 ? t1 : t2;
    sum.points.push_back(p);
  }
  res.summaries.push_back(sum);
  return res;
}

// threads 1 -> 2, the function's time constant (1.0 s -> 1.005 s), the app 99.5% efficient (weak).
std::string sentence(bool weak) {
  AnalysisResult res = two_configurations("threads", 1.0, 1.005, weak);
  ProfileResult p = build_profile(res, {{sampled_rank("PairLJCut::compute()", 250)},
                                        {sampled_rank("PairLJCut::compute()", 251)}});
  EXPECT_EQ(p.groups.size(), 1u);
  return p.groups.empty() ? "" : p.groups[0].sentence;
}

// ranks 1 -> 2 on the MPI window (1.0 s -> 0.6 s), whose startup the samples
// also see: MPI_Init (as `startup` names it) 0.1 s -> 0.3 s, outside the window.
std::string windowed_sentence(const std::string& startup = "MPI_Init") {
  AnalysisResult res = two_configurations("ranks", 1.0, 0.6);
  for (auto& p : res.summaries[0].points) {
    p.pop.basis = "mpi";
    p.pop.window_measured = true;
  }
  auto rank = [&](std::int64_t work, std::int64_t init) {
    store::RankRecords r = sampled_rank("compute", work);
    r.names.push_back(startup);
    store::CallPathRow c = r.callpaths[0];
    c.node_id = 1;
    c.function_id = 1;
    store::set_str(c.category, "mpi");
    c.self_samples = c.inclusive_samples = init;
    r.callpaths.push_back(c);
    return r;
  };
  ProfileResult p = build_profile(res, {{rank(250, 25)}, {rank(150, 75), rank(150, 75)}});
  EXPECT_EQ(p.groups.size(), 1u);
  return p.groups.empty() ? "" : p.groups[0].sentence;
}

}  // namespace

TEST(ProfileShapes, StartupOutsideTheMpiWindowIsNotItsLoss) {
  // The samples name the symbol that ran: the C name, its PMPI entry (an MPI
  // library calling its own), or a Fortran symbol the tracer wraps. The profile
  // left out only the C and plain Fortran spellings, and listed `PMPI_Init`'s
  // and `mpi_init_f08_`'s startup as the app's loss.
  for (const std::string startup : {"MPI_Init", "PMPI_Init", "mpi_init_", "MPI_INIT", "mpi_init_f08_",
                                    "pmpi_init_thread_", "MPI_Init_thread"}) {
    const std::string s = windowed_sentence(startup);
    EXPECT_EQ(s.find(startup), std::string::npos) << s;
    EXPECT_NE(s.find("100% in `compute`"), std::string::npos) << s;
  }
}

TEST(ProfileShapes, WeakScalingIdealIsConstantTime) {
  const std::string weak = sentence(true);
  EXPECT_EQ(weak.find("constant: serial"), std::string::npos) << weak;
  EXPECT_NE(weak.find("lost 0.005 s"), std::string::npos) << weak;  // against T(1), not T(1)/2
  EXPECT_NE(weak.find("no function loses time"), std::string::npos) << weak;
  // The same numbers under strong scaling: the function should have halved.
  const std::string strong = sentence(false);
  EXPECT_NE(strong.find("100% in `PairLJCut::compute` (constant: serial)"), std::string::npos) << strong;
  EXPECT_EQ(scaling_shape(1.0, 1.02, 1, 2, "app", true), "constant: weak-scaling ideal");
  EXPECT_EQ(scaling_shape(1.0, 1.9, 1, 2, "app", true), "growing with the total work: serial");
  EXPECT_EQ(scaling_shape(1.0, 1.02, 1, 2, "app", false), "constant: serial");
}

// A memory-bound loop on 2 threads keeps its time (each thread does half the
// work at half the bandwidth): constant, but not serial. The old shape called
// it "constant: serial" and the step serial-fraction (issue 23).
TEST(ProfileShapes, ConstantTimeOnSeveralThreadsIsNotSerial) {
  AnalysisResult res = two_configurations("threads", 1.0, 1.0);
  // threads=2: the loop on both threads (250 + 240 samples), a setup on thread 0 only.
  auto two_threads = [](std::int64_t loop0, std::int64_t loop1, std::int64_t setup) {
    store::RankRecords r = sampled_rank("triad_loop", loop0);
    r.names.push_back("setup");
    store::CallPathRow c = r.callpaths[0];
    c.node_id = 1;
    c.thread = 1;
    c.self_samples = c.inclusive_samples = loop1;
    r.callpaths.push_back(c);
    c.node_id = 2;
    c.thread = 0;
    c.function_id = 1;
    c.self_samples = c.inclusive_samples = setup;
    r.callpaths.push_back(c);
    return r;
  };
  store::RankRecords one = sampled_rank("triad_loop", 250);
  {
    store::CallPathRow c = one.callpaths[0];
    one.names.push_back("setup");
    c.node_id = 1;
    c.function_id = 1;
    c.self_samples = c.inclusive_samples = 100;
    one.callpaths.push_back(c);
  }
  ProfileResult p = build_profile(res, {{one}, {two_threads(250, 240, 100)}});
  const FunctionSeries* loop = nullptr;
  const FunctionSeries* setup = nullptr;
  for (const auto& f : p.functions) {
    if (f.short_name == "triad_loop") loop = &f;
    if (f.short_name == "setup") setup = &f;
  }
  ASSERT_TRUE(loop && setup);
  EXPECT_NEAR(loop->at[1].threads, 490.0 / 250.0, 1e-9);
  EXPECT_NEAR(setup->at[1].threads, 1.0, 1e-9);
  ASSERT_EQ(p.groups.size(), 1u);
  const std::string& s = p.groups[0].sentence;
  EXPECT_NE(s.find("`triad_loop` (" + std::string(kConstantParallelShape) + ")"), std::string::npos) << s;
  EXPECT_NE(s.find("`setup` (constant: serial)"), std::string::npos) << s;
  // The step's serial evidence: only the setup, 100 of the 350 samples' loss.
  const SampledStep step = sampled_step(p, 0, 1, 1, 2, false);
  ASSERT_TRUE(step.available);
  EXPECT_EQ(step.serial_function, "setup");
  EXPECT_NEAR(step.serial_share, (0.4 - 0.2) / ((0.4 - 0.2) + (1.0 - 0.5)), 1e-9);
  EXPECT_EQ(scaling_shape(1.0, 1.02, 1, 2, "app", false, 2.0), kConstantParallelShape);
  EXPECT_EQ(scaling_shape(1.0, 1.02, 1, 2, "app", false, 1.2), "constant: serial");
  EXPECT_EQ(scaling_shape(1.0, 1.9, 1, 2, "app", true, 2.0), "growing: replicated work or communication");
}

// Issue 30: `rtrace::tracer` frames showed in the app's flame graph. The
// tracer's frames (category rtrace) are one "rtrace" frame, nothing below it.
TEST(ProfileFolded, TheTracersFramesAreOneRtraceFrame) {
  AnalysisResult res = two_configurations("threads", 1.0, 0.5);
  store::RankRecords r = sampled_rank("main", 5);
  r.names = {"main", "compute(int)", "MPI_Test", "rtrace::tracer::CallTable::add(int, double)", "clock_gettime"};
  auto node = [&](std::int64_t parent, std::int64_t fn, const char* cat, std::int64_t self) {
    store::CallPathRow c = r.callpaths[0];
    c.node_id = static_cast<std::int64_t>(r.callpaths.size());
    c.parent_id = parent;
    c.function_id = fn;
    store::set_str(c.category, cat);
    c.self_samples = c.inclusive_samples = self;
    r.callpaths.push_back(c);
    return c.node_id;
  };
  node(0, 1, "app", 100);
  const auto test = node(0, 2, "mpi", 20);             // the tracer's MPI_Test wrapper, as the app called it
  const auto table = node(test, 3, "rtrace", 3);       // its bookkeeping
  node(table, 4, "system", 7);                         // the clock it reads
  ProfileResult p = build_profile(res, {{r}, {r}});
  ASSERT_FALSE(p.folded.empty());
  const auto& folded = p.folded[0];
  for (const auto& [stack, n] : folded) EXPECT_EQ(stack.find("rtrace::"), std::string::npos) << stack;
  const auto tracer = folded.find("rank 0;thread 0;main;MPI_Test;rtrace");
  ASSERT_NE(tracer, folded.end());
  EXPECT_DOUBLE_EQ(tracer->second, 10);  // its own 3 and the clock's 7
  EXPECT_DOUBLE_EQ(folded.at("rank 0;thread 0;main;MPI_Test"), 20);
  EXPECT_DOUBLE_EQ(folded.at("rank 0;thread 0;main;compute(int)"), 100);
}

// Issue 39: a frame too narrow for a recognisable name shows none ("li..",
// "p.." were noise); its name stays in the tooltip.
TEST(ProfileFlame, NarrowFramesShowNoStubOfAName) {
  // 4% and 3% of the width: room for 5 and 3 characters.
  std::map<std::string, double> folded{{"main;work_loop", 930}, {"main;libfoo_helper_function", 40},
                                       {"main;p_tiny_function", 30}};
  const std::string svg = render_flame_svg(folded, "flame");
  EXPECT_FALSE(std::regex_search(svg, std::regex(">[^<>]{1,5}\\.\\.<"))) << svg;
  EXPECT_NE(svg.find("<title>p_tiny_function:"), std::string::npos);
  EXPECT_NE(svg.find(">work_loop<"), std::string::npos);
}
