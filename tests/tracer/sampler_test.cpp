// Sampler logic: names, categories, the call-path tree; and the signal-driven
// tables read while threads are sampled.
#include <gtest/gtest.h>

#include "sampler.hpp"
#include "symbolize.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

using namespace rtrace::tracer;

TEST(TracerSampler, DemanglesCxxAndFortranNames) {
  EXPECT_EQ(demangle("_ZN6solver4Grid5relaxEl"), "solver::Grid::relax(long)");
  EXPECT_EQ(demangle("_Z10setup_meshl"), "setup_mesh(long)");
  EXPECT_EQ(demangle("__mesh_MOD_refine"), "mesh::refine");
  EXPECT_EQ(demangle("__grid_utils_MOD_halo_exchange"), "grid_utils::halo_exchange");
  EXPECT_EQ(demangle("mesh_mp_refine_"), "mesh::refine");  // Intel Fortran
  EXPECT_EQ(demangle("main"), "main");
  EXPECT_EQ(demangle("MAIN__"), "MAIN__");
  EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");  // not a valid mangling: unchanged
  EXPECT_EQ(demangle("__libc_start_main"), "__libc_start_main");
}

TEST(TracerSampler, BuildsOneTreePerThreadWithSelfAndInclusiveCounts) {
  // PCs stand for functions: 1 main, 2 solve, 3 kernel, 4 setup; 5 has an inlined helper.
  auto lookup = [](std::uintptr_t pc, bool) {
    static const char* const fn[] = {"?", "main", "solve", "kernel", "setup", "outer"};
    SourceFrame f;
    f.function = fn[pc];
    f.module = "app";
    f.category = "app";
    f.line = static_cast<int>(pc * 10);
    std::vector<SourceFrame> out;
    if (pc == 5) {
      SourceFrame in = f;
      in.function = "helper";
      in.inlined = true;
      out.push_back(in);
    }
    out.push_back(f);
    return out;
  };
  std::vector<ThreadSamples> threads(2);
  threads[0].thread = 0;
  threads[0].stacks = {{{3, 2, 1}, 5}, {{2, 1}, 2}, {{4, 1}, 3}, {{5, 1}, 1}};  // innermost first
  threads[1].thread = 1;
  threads[1].stacks = {{{3, 2}, 4}};
  NameTable names;
  auto rows = build_call_paths(threads, lookup, names);
  auto find = [&](int thread, const std::string& fn, std::int64_t parent) -> const rtrace::store::CallPathRow* {
    for (const auto& r : rows)
      if (r.thread == thread && names.names()[static_cast<std::size_t>(r.function_id)] == fn && r.parent_id == parent)
        return &r;
    return nullptr;
  };
  const auto* main0 = find(0, "main", -1);
  ASSERT_NE(main0, nullptr);
  EXPECT_EQ(main0->inclusive_samples, 11);
  EXPECT_EQ(main0->self_samples, 0);
  const auto* solve0 = find(0, "solve", main0->node_id);
  ASSERT_NE(solve0, nullptr);
  EXPECT_EQ(solve0->inclusive_samples, 7);
  EXPECT_EQ(solve0->self_samples, 2);
  const auto* kernel0 = find(0, "kernel", solve0->node_id);
  ASSERT_NE(kernel0, nullptr);
  EXPECT_EQ(kernel0->self_samples, 5);
  EXPECT_EQ(kernel0->line, 30);
  const auto* outer = find(0, "outer", main0->node_id);
  ASSERT_NE(outer, nullptr);
  const auto* helper = find(0, "helper", outer->node_id);
  ASSERT_NE(helper, nullptr);
  EXPECT_EQ(helper->inlined, 1);
  EXPECT_EQ(helper->self_samples, 1);
  EXPECT_EQ(outer->self_samples, 0);
  // Thread 1 has its own root.
  const auto* solve1 = find(1, "solve", -1);
  ASSERT_NE(solve1, nullptr);
  EXPECT_EQ(solve1->inclusive_samples, 4);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].node_id, static_cast<std::int64_t>(i));
    EXPECT_LT(rows[i].parent_id, rows[i].node_id);
  }
}

TEST(TracerSampler, StackAtTheDepthLimitGetsAMarkerRoot) {
  auto lookup = [](std::uintptr_t, bool) {
    SourceFrame f;
    f.function = "recurse";
    f.module = "app";
    f.category = "app";
    return std::vector<SourceFrame>{f};
  };
  std::vector<ThreadSamples> threads(1);
  threads[0].stacks = {{std::vector<std::uintptr_t>(kMaxSampleDepth, 7), 1}};
  NameTable names;
  auto rows = build_call_paths(threads, lookup, names);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kMaxSampleDepth + 1));
  EXPECT_EQ(names.names()[static_cast<std::size_t>(rows[0].function_id)].rfind("[stack deeper than", 0), 0u);
}

// The signal handler writes each thread's table while another thread reads
// them all (collect(), info()). Not under TSan: see scripts/sanitize.sh.
// The sampler starts once per process; ctest runs each test in its own, a
// whole-binary run gets to the first test that starts it only.
constexpr const char* kOncePerProcess =
    "the sampler starts once per process: run this test alone (ctest runs each test in its own process)";

TEST(TracerSampler, CollectsWhileThreadsAreSampled) {
  std::string why;
  const bool started = Sampler::start(2000, &why);
  if (!started && why == "already started") GTEST_SKIP() << kOncePerProcess;
  ASSERT_TRUE(started) << why;
  std::atomic<bool> go{true};
  auto spin = [&go] {
    Sampler::thread_begin();
    volatile double x = 1;
    while (go.load(std::memory_order_relaxed))
      for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
    Sampler::thread_end();
  };
  std::thread a(spin), b(spin);
  std::size_t seen = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  while (std::chrono::steady_clock::now() < until) {
    for (const auto& t : Sampler::collect()) seen = std::max(seen, t.stacks.size());
    (void)Sampler::info();
  }
  go = false;
  a.join();
  b.join();
  Sampler::stop();
  const auto threads = Sampler::collect();
  const auto info = Sampler::info();
  EXPECT_STREQ(info.status, "ok");
  EXPECT_EQ(info.threads, 3);  // main (armed by start) and the two spinners
  EXPECT_GT(info.samples, 0);
  std::int64_t counted = 0;
  for (const auto& t : threads)
    for (const auto& s : t.stacks) {
      EXPECT_FALSE(s.pcs.empty());
      counted += s.count;
    }
  EXPECT_EQ(counted, info.samples);  // dropped: the CPU time no sample shows, never in a stack
  EXPECT_GE(threads.size(), 2u);
  EXPECT_GT(seen, 0u);
}

// The kernel may deliver no timer signal to a thread for its whole run (one
// time-sliced with other processes: 0 of 12 expected for a 50 ms thread on
// kernel 6.18). Its CPU time is then counted as dropped when it ends, not lost
// silently: here the signal is blocked to make that happen on purpose.
TEST(TracerSampler, CpuTimeWithoutSignalsIsCountedAsDropped) {
  std::string why;
  const bool started = Sampler::start(20, &why);  // 50 ms periods
  if (!started && why == "already started") GTEST_SKIP() << kOncePerProcess;
  ASSERT_TRUE(started) << why;
  const int sig = [] {
    for (int s = SIGRTMIN; s <= SIGRTMAX; ++s)
      if (Sampler::is_sample_signal(s)) return s;
    return 0;
  }();
  ASSERT_NE(sig, 0);
  std::int64_t before = Sampler::info().dropped;
  std::thread t([sig] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    Sampler::thread_begin();
    timespec start{}, now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    volatile double x = 1;
    do {
      for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    } while ((now.tv_sec - start.tv_sec) * 1e9 + (now.tv_nsec - start.tv_nsec) < 180e6);
    Sampler::thread_end();
    // Pending: delivered now, it must add no weight (the tail is counted).
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  });
  t.join();
  Sampler::stop();
  const auto info = Sampler::info();
  EXPECT_GE(info.dropped - before, 3);  // 180 ms of CPU, 50 ms periods, no signal taken
  EXPECT_LE(info.dropped - before, 4);
  std::int64_t counted = 0;
  for (const auto& th : Sampler::collect())
    for (const auto& st : th.stacks) counted += st.count;
  EXPECT_EQ(counted, info.samples);
}

#ifdef MANY_SYMBOLS_LIB
// Issue 25: symbolising a large stripped library (GROMACS's .dynsym) cost
// 0.12-0.19 s a run because every PC scanned the whole symbol table. The
// table is now read once per module, however many PCs are looked up, and the
// names are those libdwfl gave (the function containing the PC; among
// aliases the global symbol).
TEST(TracerSampler, SymbolTableIsReadOncePerModuleNotPerPc) {
  void* lib = dlopen(MANY_SYMBOLS_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_TRUE(lib) << dlerror();
  Symbolizer sym;  // after dlopen: /proc/self/maps has the library
  ASSERT_TRUE(sym.ok()) << sym.error();
  auto name_at = [&](int i, std::size_t offset) {
    void* f = dlsym(lib, ("many_" + std::to_string(i)).c_str());
    EXPECT_TRUE(f) << i;
    auto frames = sym.frames(reinterpret_cast<std::uintptr_t>(f) + offset, false);
    return frames.empty() ? std::string() : frames.back().function;
  };
  EXPECT_EQ(name_at(0, 0), "many_0");
  const std::size_t after_one = sym.symbol_entries_read();
  EXPECT_GE(after_one, static_cast<std::size_t>(MANY_SYMBOLS_COUNT));  // its table was read
  for (int i = 1; i < MANY_SYMBOLS_COUNT; i += 7) EXPECT_EQ(name_at(i, 2), "many_" + std::to_string(i));
  EXPECT_EQ(sym.symbol_entries_read(), after_one) << "the table was read again for later PCs";
  // An alias at the same address: the global name, not the local/weak one.
  EXPECT_EQ(name_at(MANY_SYMBOLS_COUNT - 1, 0), "many_" + std::to_string(MANY_SYMBOLS_COUNT - 1));
  dlclose(lib);
}
#endif
