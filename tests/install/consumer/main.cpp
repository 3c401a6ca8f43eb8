// An out-of-tree user of the installed rtrace package: writes a run file with one point.
#include <rtrace/store/run_file.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace rtrace::store;
  if (argc < 2) return 2;
  std::remove(argv[1]);
  SweepPointRow row{};
  row.point_id = 0;
  set_str(row.label, "threads=1");
  row.threads = 1;
  set_str(row.status, "pending");
  RunMetadata meta;
  meta.app_argv = {"/bin/true"};
  RunFile run = RunFile::create(argv[1], meta, describe_this_machine(), {}, {row});
  set_str(row.status, "ok");
  run.commit_point(row, [](Group&) {});
  std::printf("consumer wrote %s with schema %s\n", argv[1], schema_version());
  return 0;
}
