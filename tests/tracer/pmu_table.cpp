// Prints the event table libpfm4 gives on this machine for its core PMU, in
// the format of tests/tracer/pmu_tables/<pmu>.txt: every event the recipes of
// tracer/src/pmu_events.cpp may use, with its perf_event encoding, or a
// comment where libpfm4 does not know it. LIBPFM_FORCE_PMU=<pmu> (libpfm4's
// own variable) describes another CPU: that is how the tables were recorded
// (tests/tracer/pmu_tables/README.md), and how ctest checks that the libpfm4
// installed still encodes them the same way.
#include "libpfm.hpp"
#include "pmu_events.hpp"

#include <cstdio>
#include <string>

int main() {
  std::string why;
  rtrace::tracer::Libpfm* pfm = rtrace::tracer::Libpfm::get(&why);
  if (!pfm) {
    std::fprintf(stderr, "pmu_table: %s\n", why.c_str());
    return 1;
  }
  const std::string pmu = pfm->core_pmu();
  if (pmu.empty()) {
    std::fprintf(stderr, "pmu_table: libpfm4 finds no core PMU\n");
    return 1;
  }
  std::printf("# libpfm4 core PMU %s: event type config config1 config2 (hex)\n%s", pmu.c_str(),
              rtrace::tracer::encoding_table(rtrace::tracer::candidate_event_names(pmu), *pfm).c_str());
  return 0;
}
