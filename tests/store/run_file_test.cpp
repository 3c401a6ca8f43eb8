#include "rtrace/store/run_file.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <dirent.h>
#include <fstream>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

#include "synthetic_points.hpp"
#include "test_util.hpp"

using namespace rtrace::store;

TEST(RunFile, CreateCommitReadBack) {
  TempDir d;
  const auto path = d.file("run.h5");
  SweepAxisRow axis{};
  set_str(axis.name, "threads");
  set_str(axis.spec, "1..3");
  RunFile run = RunFile::create(path, synth::metadata(), describe_this_machine(), {axis}, synth::plan(3));
  ASSERT_EQ(run.points().size(), 3u);
  EXPECT_EQ(run.points()[0].complete, 0);
  run.commit_point(synth::finished(run.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  EXPECT_EQ(run.points()[1].complete, 1);

  File f = File::open(path);
  check_schema(f);
  EXPECT_EQ(f.root().attr_string("schema_name"), "rtrace");
  EXPECT_EQ(f.root().attr_string("schema_version"), schema_version());
  EXPECT_EQ(f.root().attr_string("file_kind"), "run");
  EXPECT_EQ(f.root().attr_string("created").size(), 20u);  // 2026-11-21T12:00:00Z
  EXPECT_TRUE(f.root().has_attr("hostname"));
  auto rows = read_points(f);
  EXPECT_EQ(rows[1].complete, 1);
  EXPECT_EQ(get_str(rows[1].status), "ok");
  EXPECT_EQ(rows[0].complete, 0);
  EXPECT_EQ(synth::check_point(f, 1), "");
  auto meta = read_run_metadata(f.root());
  EXPECT_EQ(meta.app_argv, (std::vector<std::string>{"./app", "--size", "1000"}));
  EXPECT_EQ(meta.environment.at(0).first, "OMP_PROC_BIND");
  EXPECT_EQ(read_axes(f).at(0).spec, std::string("1..3"));
  auto m = read_machine(f.root());
  EXPECT_GT(m.pus, 0);
  EXPECT_GT(m.memory_bytes, 0);
  EXPECT_FALSE(m.caches.empty());
  // x86-64 has SSE2 at least (the build machines): the widest registers are known.
#if defined(__x86_64__)
  EXPECT_GE(m.vector_bits, 128);
#endif
}

TEST(RunFile, MachineVectorWidthIsOptionalAndRoundTrips) {
  TempDir d;
  MachineInfo m;
  m.vector_bits = 512;
  RunFile::create(d.file("a.h5"), synth::metadata(), m, {}, synth::plan(1));
  RunFile::create(d.file("b.h5"), synth::metadata(), MachineInfo{}, {}, synth::plan(1));
  EXPECT_EQ(read_machine(File::open(d.file("a.h5")).root()).vector_bits, 512);
  EXPECT_EQ(read_machine(File::open(d.file("b.h5")).root()).vector_bits, 0);  // unknown: not written
}

TEST(RunFile, RefusesToClobberAndRecommitReplaces) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2));
  EXPECT_THROW(RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2)), FileError);
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  File f = File::open(path);
  EXPECT_EQ(synth::check_point(f, 0), "");
}

TEST(RunFile, FailedFillLeavesFileUntouched) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2));
  EXPECT_THROW(run.commit_point(synth::finished(run.points()[0]),
                                [](Group& g) {
                                  synth::fill_point(g, 0);
                                  throw std::runtime_error("disk on fire");
                                }),
               std::runtime_error);
  File f = File::open(path);
  EXPECT_EQ(read_points(f)[0].complete, 0);
  EXPECT_FALSE(f.root().open_group("points").exists(point_group_name(0)));
  struct stat st {};
  EXPECT_NE(stat((path + ".rtrace-tmp").c_str(), &st), 0) << "temp file left behind";
}

TEST(RunFile, UnknownPointAndNewerMajorAreRejected) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(1));
  SweepPointRow bogus = run.points()[0];
  bogus.point_id = 99;
  EXPECT_THROW(run.commit_point(bogus, [](Group&) {}), SchemaError);
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "2.0.0"); });
  try {
    RunFile::open(path);
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(e.detail().find("2.0.0"), std::string::npos);
  }
  transaction(path, [](File& f) { f.root().set_attr("schema_version", "1.7.3"); });
  EXPECT_NO_THROW(RunFile::open(path));  // newer minor is fine
}

TEST(RunFile, TransactionFailsCleanlyOnUnwritableDirectory) {
  if (geteuid() == 0) {
    // root ignores directory permissions; use a path under a non-directory instead.
    EXPECT_THROW(transaction("/proc/version/x.h5", [](File&) {}), FileError);
    return;
  }
  TempDir d;
  EXPECT_THROW(transaction(d.file("missing.h5"), [](File&) {}), FileError);
}

TEST(RunFile, PointAndRankNames) {
  EXPECT_EQ(point_group_name(3), "p000003");
  EXPECT_EQ(rank_group_name(1234567), "r1234567");
  EXPECT_EQ(point_status_from_string("timeout"), PointStatus::Timeout);
  EXPECT_THROW(point_status_from_string("bogus"), std::invalid_argument);
}

TEST(RunFile, RanksGroupedByHost) {
  EXPECT_EQ(rank_ranges({8, 0, 2, 1, 3, 3}), "0-3,8");
  EXPECT_EQ(rank_ranges({}), "");
  EXPECT_EQ(rank_ranges({0, 2, 4, 6, 8, 10, 12}, 12), "0,2,4,6,...");
  TempDir d;
  File f = File::create(d.file("hosts.h5"));
  Group ranks = f.root().create_group("ranks");
  // Ranks 0,1 on node1 and 2,3 on node3; node2 was placed but recorded nothing.
  for (int r = 0; r < 4; ++r) {
    RankRecords rec = synth::rank(0, r, 1);
    set_str(rec.info.host, r < 2 ? "node1" : "node3");
    write_rank(ranks, rec);
  }
  const auto rows = hosts_of_ranks(ranks, {"node1", "node2", "node3"}, {"node2"});
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(get_str(rows[0].host), "node1");
  EXPECT_EQ(rows[0].ranks, 2);
  EXPECT_EQ(get_str(rows[0].rank_list), "0-1");
  EXPECT_EQ(rows[0].placed, 1);
  EXPECT_EQ(get_str(rows[0].state), "ok");
  EXPECT_EQ(get_str(rows[1].host), "node2");
  EXPECT_EQ(rows[1].ranks, 0);
  EXPECT_EQ(get_str(rows[1].state), "failed");
  EXPECT_EQ(get_str(rows[2].rank_list), "2-3");
  // Without a placement every host comes from the data, by name.
  const auto unplaced = hosts_of_ranks(ranks, {}, {});
  ASSERT_EQ(unplaced.size(), 2u);
  EXPECT_EQ(unplaced[1].placed, -1);
  EXPECT_EQ(get_str(unplaced[1].host), "node3");
  EXPECT_EQ(get_str(hosts_of_ranks(ranks, {"node1", "node4"}, {})[2].state), "ok");
  EXPECT_EQ(get_str(hosts_of_ranks(ranks, {"node1", "node4"}, {})[1].state), "missing");
}

TEST(RunFile, ReadRankPartsReadsOnlyWhatIsAsked) {
  TempDir d;
  File f = File::create(d.file("parts.h5"));
  Group ranks = f.root().create_group("ranks");
  RankRecords cpu = synth::rank(0, 0, 2);
  KernelRow k{};
  k.launch_index = 0;
  cpu.kernels.push_back(k);  // a kernel row a cpu-mode rank never has: shows what is read
  cpu.info.gpu_available = 0;
  write_rank(ranks, cpu);
  RankRecords gpu = synth::rank(0, 1, 2);
  set_str(gpu.info.tracer_mode, "cuda-trace");
  gpu.kernels.push_back(k);
  write_rank(ranks, gpu);
  const RankRecords all = read_rank(ranks.open_group("r000000"));
  EXPECT_EQ(all.kernels.size(), 1u);
  EXPECT_EQ(all.log.size(), 1u);
  const unsigned lean = kRankInfo | kRankNames | kRankRegions | kRankGpuKernels | kRankMpi;
  const RankRecords c = read_rank_parts(ranks.open_group("r000000"), lean);
  EXPECT_EQ(c.info.rank, 0);
  EXPECT_EQ(c.regions.size(), 2u);
  EXPECT_EQ(c.mpi.size(), 1u);
  EXPECT_TRUE(c.kernels.empty());  // cpu mode without a GPU: kernels not opened
  EXPECT_TRUE(c.log.empty());      // not asked for
  EXPECT_EQ(read_rank_parts(ranks.open_group("r000001"), lean).kernels.size(), 1u);
}

// ------------------------------------------------------------ point-file layout

namespace {
struct stat stat_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) st.st_ino = 0;
  return st;
}
std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

TEST(RunFileLayout, EachPointIsItsOwnFileAndOthersAreNeverRewritten) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(3));
  EXPECT_EQ(run.points_dir(), "run.h5.d");
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  const auto p0 = stat_of(d.file("run.h5.d/p000000.h5"));
  ASSERT_NE(p0.st_ino, 0u);
  run.commit_point(synth::finished(run.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  run.commit_point(synth::finished(run.points()[2]), [](Group& g) { synth::fill_point(g, 2); });
  // Point 0's file is the same inode, never rewritten by later commits.
  const auto p0_after = stat_of(d.file("run.h5.d/p000000.h5"));
  EXPECT_EQ(p0_after.st_ino, p0.st_ino);
  EXPECT_EQ(p0_after.st_mtim.tv_nsec, p0.st_mtim.tv_nsec);
  EXPECT_EQ(dir_entries(d.file("run.h5.d")), (std::vector<std::string>{"p000000.h5", "p000001.h5", "p000002.h5"}));

  File f = File::open(path);
  EXPECT_EQ(f.root().attr_string("points_dir"), "run.h5.d");
  Group points = f.root().open_group("points");
  EXPECT_EQ(points.external_link_file("p000001"), std::optional<std::string>("run.h5.d/p000001.h5"));
  for (int p = 0; p < 3; ++p) EXPECT_EQ(synth::check_point(f, p), "") << p;
  // A point file is a small rtrace file of its own.
  File pf = File::open(d.file("run.h5.d/p000002.h5"));
  EXPECT_EQ(pf.root().attr_string("file_kind"), "point");
}

TEST(RunFileLayout, RecommitReplacesTheFileAndRemovesTheOldOne) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(1));
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0, 1); });
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  EXPECT_EQ(dir_entries(d.file("run.h5.d")), (std::vector<std::string>{"p000000-1.h5"}));
  File f = File::open(path);
  EXPECT_EQ(synth::check_point(f, 0), "");
}

TEST(RunFileLayout, FailedFillLeavesNoPointFile) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(1));
  EXPECT_THROW(run.commit_point(synth::finished(run.points()[0]),
                                [](Group& g) {
                                  synth::fill_point(g, 0);
                                  throw std::runtime_error("disk on fire");
                                }),
               std::runtime_error);
  EXPECT_TRUE(dir_entries(d.file("run.h5.d")).empty());
  File f = File::open(path);
  EXPECT_EQ(read_points(f)[0].complete, 0);
}

TEST(RunFileLayout, OpenRemovesWhatAKilledWriterLeft) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2));
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  // As if killed after point 1's file was renamed but before the index named it,
  // and during another point file's write.
  std::ofstream(d.file("run.h5.d/p000001.h5")) << "orphan";
  std::ofstream(d.file("run.h5.d/p000001-1.h5.rtrace-tmp")) << "temp";
  std::ofstream(d.file("run.h5.d/notes.txt")) << "not ours";
  RunFile again = RunFile::open(path);
  EXPECT_EQ(dir_entries(d.file("run.h5.d")), (std::vector<std::string>{"notes.txt", "p000000.h5"}));
  again.commit_point(synth::finished(again.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  File f = File::open(path);
  EXPECT_EQ(synth::check_point(f, 0), "");
  EXPECT_EQ(synth::check_point(f, 1), "");
}

TEST(RunFileLayout, OpeningACopiedIndexNeverDeletesTheOriginalsPoints) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2));
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  // The user copies the index alone, then the original run goes on.
  {
    std::ifstream in(path, std::ios::binary);
    std::ofstream out(d.file("copy.h5"), std::ios::binary);
    out << in.rdbuf();
  }
  run.commit_point(synth::finished(run.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  // The copy does not link point 1's file; opening it must not remove it.
  RunFile copy = RunFile::open(d.file("copy.h5"));
  EXPECT_EQ(dir_entries(d.file("run.h5.d")), (std::vector<std::string>{"p000000.h5", "p000001.h5"}));
  File f = File::open(path);
  EXPECT_EQ(synth::check_point(f, 0), "");
  EXPECT_EQ(synth::check_point(f, 1), "");
}

TEST(RunFileLayout, CreateRefusesAPointsDirectoryOfAnotherRun) {
  TempDir d;
  const auto path = d.file("run.h5");
  {
    RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(1));
    run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  }
  ASSERT_EQ(::unlink(path.c_str()), 0);  // the index is gone, its point files are not
  try {
    RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(1));
    FAIL() << "created a run over another run's point files";
  } catch (const FileError& e) {
    EXPECT_NE(e.detail().find("another run"), std::string::npos) << e.what();
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0);
  // A symlink where the directory goes is refused too.
  const auto other = d.file("other.h5");
  ASSERT_EQ(::symlink(d.path.c_str(), (other + ".d").c_str()), 0);
  EXPECT_THROW(RunFile::create(other, synth::metadata(), MachineInfo{}, {}, synth::plan(1)), FileError);
}

TEST(RunFileLayout, SingleFileLayoutStillWritesAndReads) {
  TempDir d;
  const auto path = d.file("legacy.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(2), false, std::string());
  EXPECT_EQ(run.points_dir(), "");
  run.commit_point(synth::finished(run.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  EXPECT_NE(::access((path + ".d").c_str(), F_OK), 0);
  File f = File::open(path);
  EXPECT_FALSE(f.root().has_attr("points_dir"));
  EXPECT_FALSE(f.root().open_group("points").external_link_file("p000001"));
  EXPECT_EQ(synth::check_point(f, 1), "");
}

TEST(RunFileLayout, PackMakesOneSelfContainedFile) {
  TempDir d;
  const auto path = d.file("run.h5");
  RunFile run = RunFile::create(path, synth::metadata(), MachineInfo{}, {}, synth::plan(3));
  run.commit_point(synth::finished(run.points()[0]), [](Group& g) { synth::fill_point(g, 0); });
  run.commit_point(synth::finished(run.points()[2]), [](Group& g) { synth::fill_point(g, 2); });
  const auto packed = d.file("sub/one.h5");
  ASSERT_EQ(::mkdir(d.file("sub").c_str(), 0755), 0);
  pack_run(path, packed);
  EXPECT_THROW(pack_run(path, packed), FileError);  // never overwrites
  // Self-contained: still whole after the run and its points directory are gone.
  ASSERT_EQ(std::system(("rm -rf '" + path + "' '" + path + ".d'").c_str()), 0);
  File f = File::open(packed);
  check_schema(f);
  EXPECT_FALSE(f.root().has_attr("points_dir"));
  EXPECT_EQ(f.root().attr_string("file_kind"), "run");
  EXPECT_FALSE(f.root().open_group("points").external_link_file("p000000"));
  EXPECT_EQ(synth::check_point(f, 0), "");
  EXPECT_EQ(synth::check_point(f, 2), "");
  auto rows = read_points(f);
  EXPECT_EQ(rows[0].complete, 1);
  EXPECT_EQ(rows[1].complete, 0);
  EXPECT_EQ(read_run_metadata(f.root()).app_argv, synth::metadata().app_argv);
  // And a packed (single-file) run can be resumed in place.
  RunFile again = RunFile::open(packed);
  again.commit_point(synth::finished(again.points()[1]), [](Group& g) { synth::fill_point(g, 1); });
  File g = File::open(packed);
  EXPECT_EQ(synth::check_point(g, 1), "");
}

TEST(RunFile, CountTablesRoundTripAndAreOptional) {
  TempDir d;
  RankRecords rec = synth::rank(0, 1, 1);
  {
    File f = File::create(d.file("trace.h5"));
    Group ranks = f.root().create_group("ranks");
    write_rank(ranks, rec);  // no counts: no count tables
  }
  {
    File f = File::open(d.file("trace.h5"));
    EXPECT_FALSE(f.root().open_group("ranks").open_group(rank_group_name(1)).exists("counts"));
    EXPECT_TRUE(read_rank(f.root().open_group("ranks").open_group(rank_group_name(1))).counts_info.empty());
  }
  CountInfoRow info{};
  set_str(info.source, "sim:rtrace-count 0.1.0 valgrind-3.19.0");
  set_str(info.status, "ok");
  info.threads = 2;
  info.serialised = 1;
  info.wall_s = 3.5;
  info.exit_code = 0;
  rec.counts_info.push_back(info);
  CountLevelRow l3{};
  set_str(l3.name, "L3");
  l3.size_bytes = 52 << 20;
  l3.full_size_bytes = 105 << 20;
  l3.line_bytes = 64;
  l3.associativity = 15;
  l3.sharers = 2;
  rec.count_levels.push_back(l3);
  CountRow c{};
  c.thread = 1;
  c.function_id = 0;
  c.module_id = -1;
  c.instructions = 1e6;
  c.flops_fp64_v256 = 4e6;
  c.flops_fp32_scalar = kUnavailable;
  c.bytes_l1_read = 16e6;
  c.bytes_dram_write = 8e6;
  rec.counts.push_back(c);
  {
    File f = File::create(d.file("trace2.h5"));
    Group ranks = f.root().create_group("ranks");
    write_rank(ranks, rec);
  }
  File f = File::open(d.file("trace2.h5"));
  RankRecords back = read_rank(f.root().open_group("ranks").open_group(rank_group_name(1)));
  ASSERT_EQ(back.counts_info.size(), 1u);
  EXPECT_EQ(get_str(back.counts_info[0].source), "sim:rtrace-count 0.1.0 valgrind-3.19.0");
  EXPECT_EQ(back.counts_info[0].serialised, 1);
  ASSERT_EQ(back.count_levels.size(), 1u);
  EXPECT_EQ(back.count_levels[0].size_bytes, 52 << 20);
  EXPECT_EQ(back.count_levels[0].sharers, 2);
  ASSERT_EQ(back.counts.size(), 1u);
  EXPECT_EQ(back.counts[0].thread, 1);
  EXPECT_DOUBLE_EQ(back.counts[0].flops_fp64_v256, 4e6);
  EXPECT_TRUE(std::isnan(back.counts[0].flops_fp32_scalar));
  EXPECT_DOUBLE_EQ(back.counts[0].bytes_dram_write, 8e6);
  EXPECT_EQ(get_str(back.counts[0].window), "");   // the whole run
}

TEST(RunFile, CountedWindowAndDispatchRoundTrip) {
  TempDir d;
  RankRecords rec = synth::rank(0, 1, 1);
  CountInfoRow info{};
  set_str(info.source, "sim:rtrace-count 0.1.0 valgrind-3.19.0");
  set_str(info.status, "ok");
  set_str(info.window, "calls 10-20 of timestep");
  set_str(info.steered, "OpenBLAS core Prescott (OPENBLAS_CORETYPE=Prescott)");
  set_str(info.not_steered, "FFTW: plans differ run to run");
  rec.counts_info.push_back(info);
  CountRow inside{}, after{};
  set_str(inside.window, "inside");
  inside.flops_fp64_scalar = 6;
  set_str(after.window, "after");
  after.bytes_l1_read = kUnavailable;
  rec.counts = {inside, after};
  DispatchRow ob{};
  set_str(ob.library, "openblas");
  set_str(ob.item, "core");
  set_str(ob.choice, "Prescott");
  set_str(ob.detail, "OpenBLAS 0.3.21 DYNAMIC_ARCH Prescott");
  rec.dispatch = {ob};
  {
    File f = File::create(d.file("trace.h5"));
    Group ranks = f.root().create_group("ranks");
    write_rank(ranks, rec);
  }
  File f = File::open(d.file("trace.h5"));
  const Group g = f.root().open_group("ranks").open_group(rank_group_name(1));
  RankRecords back = read_rank(g);
  EXPECT_EQ(get_str(back.counts_info.at(0).window), "calls 10-20 of timestep");
  EXPECT_EQ(get_str(back.counts_info.at(0).steered), "OpenBLAS core Prescott (OPENBLAS_CORETYPE=Prescott)");
  EXPECT_EQ(get_str(back.counts_info.at(0).not_steered), "FFTW: plans differ run to run");
  ASSERT_EQ(back.counts.size(), 2u);
  EXPECT_EQ(get_str(back.counts[0].window), "inside");
  EXPECT_EQ(get_str(back.counts[1].window), "after");
  ASSERT_EQ(back.dispatch.size(), 1u);
  EXPECT_EQ(get_str(back.dispatch[0].choice), "Prescott");
  // Only what is asked for is read.
  EXPECT_TRUE(read_rank_parts(g, kRankInfo).dispatch.empty());
  EXPECT_EQ(read_rank_parts(g, kRankInfo | kRankDispatch).dispatch.size(), 1u);
}

TEST(RunFile, AttachCountsInternsNamesIntoTheRankAndReplacesOldTables) {
  TempDir d;
  RankRecords timed = synth::rank(0, 1, 1);
  timed.names = {"MPI_Send", "triad"};
  {
    File f = File::create(d.file("trace.h5"));
    Group ranks = f.root().create_group("ranks");
    write_rank(ranks, timed);
  }
  RankRecords counted;
  CountInfoRow info{};
  set_str(info.source, "sim:rtrace-count 0.1.0 valgrind-3.19.0");
  set_str(info.status, "ok");
  counted.counts_info = {info};
  counted.names = {"app", "triad", "main"};
  CountRow a{}, b{};
  a.function_id = 1;  // "triad": already in the rank's names
  a.module_id = 0;    // "app": new
  a.flops_fp64_v256 = 8;
  b.function_id = 2;  // "main": new
  b.module_id = 0;
  counted.counts = {a, b};
  for (int round = 0; round < 2; ++round) {  // attaching again replaces, never duplicates
    File f = File::open(d.file("trace.h5"), Access::ReadWrite);
    Group g = f.root().open_group("ranks").open_group(rank_group_name(1));
    attach_counts(g, counted);
  }
  File f = File::open(d.file("trace.h5"));
  RankRecords back = read_rank(f.root().open_group("ranks").open_group(rank_group_name(1)));
  EXPECT_EQ(back.names, (std::vector<std::string>{"MPI_Send", "triad", "app", "main"}));
  ASSERT_EQ(back.counts.size(), 2u);
  EXPECT_EQ(back.counts[0].function_id, 1);
  EXPECT_EQ(back.counts[0].module_id, 2);
  EXPECT_EQ(back.counts[1].function_id, 3);
  EXPECT_DOUBLE_EQ(back.counts[0].flops_fp64_v256, 8);
  ASSERT_EQ(back.counts_info.size(), 1u);
  EXPECT_EQ(back.info.rank, 1);  // the rank's own records are untouched
}
