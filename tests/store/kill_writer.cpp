// Writes (or resumes) a synthetic run file with N points, committing them one by one.
// usage: store_kill_writer FILE N
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "synthetic_points.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s FILE N\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int n = std::atoi(argv[2]);
  try {
    using namespace rtrace::store;
    RunFile run = access(path.c_str(), F_OK) == 0
                      ? RunFile::open(path)
                      : RunFile::create(path, synth::metadata(), describe_this_machine(), {}, synth::plan(n));
    for (const auto& row : std::vector<SweepPointRow>(run.points())) {
      if (row.complete) continue;
      run.commit_point(synth::finished(row), [&](Group& g) { synth::fill_point(g, row.point_id); });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_kill_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
