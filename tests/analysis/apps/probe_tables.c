/* An unannotated OpenMP code without FLOPs (issue 39): each thread builds
 * its own hash table of TABLE_MIB MiB and probes it with pseudo-random keys.
 * Sorts, joins, graph and genomics codes look like this to the counters.
 *
 *   probe_tables strong TABLE_MIB PROBES   PROBES split over the threads
 *   probe_tables weak   TABLE_MIB PROBES   PROBES per thread (work grows)
 *
 * With a table of ~0.6 of the L3, one thread's table fits it and two
 * threads' tables do not: DRAM bytes per instruction rise, a capacity loss
 * with no FLOP anywhere. Prints its own timers: "build_s ... probe_s ...". */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

/* Open addressing, linear probing; key 0 is "empty". Any table size: the
 * test sizes it from the machine's L3. */
static void build(uint64_t* table, uint64_t slots, uint64_t seed) {
  memset(table, 0, slots * sizeof *table);
  for (uint64_t i = 0; i < slots / 2; ++i) {
    uint64_t key = mix(seed + 2 * i + 1) | 1;
    uint64_t s = key % slots;
    while (table[s] != 0) s = s + 1 == slots ? 0 : s + 1;
    table[s] = key;
  }
}

static uint64_t probe(const uint64_t* table, uint64_t slots, uint64_t seed, long probes) {
  uint64_t found = 0;
  for (long i = 0; i < probes; ++i) {
    uint64_t key = mix(seed + 2 * (uint64_t)(i % (long)(slots / 2)) + 1) | 1;
    uint64_t s = key % slots;
    while (table[s] != 0 && table[s] != key) s = s + 1 == slots ? 0 : s + 1;
    found += table[s] == key;
  }
  return found;
}

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[1], "strong") != 0 && strcmp(argv[1], "weak") != 0)) {
    fprintf(stderr, "usage: probe_tables strong|weak TABLE_MIB PROBES\n");
    return 2;
  }
  const int weak = strcmp(argv[1], "weak") == 0;
  const long mib = atol(argv[2]), probes = atol(argv[3]);
  const uint64_t slots = ((uint64_t)mib << 20) / sizeof(uint64_t);
  if (slots < 16 || probes < 1) {
    fprintf(stderr, "probe_tables: TABLE_MIB and PROBES must be positive\n");
    return 2;
  }
  uint64_t total = 0;
  double build_s = 0, probe_s = 0;
#pragma omp parallel reduction(+ : total) reduction(max : build_s, probe_s)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    uint64_t* table = malloc(slots * sizeof *table);
    if (table) {
      double t0 = omp_get_wtime();
      build(table, slots, 0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1));
      double t1 = omp_get_wtime();
      total += probe(table, slots, 0x9e3779b97f4a7c15ULL * (uint64_t)(t + 1), weak ? probes : probes / n);
      double t2 = omp_get_wtime();
      build_s = t1 - t0;
      probe_s = t2 - t1;
      free(table);
    }
  }
  printf("found %llu build_s %.3f probe_s %.3f\n", (unsigned long long)total, build_s, probe_s);
  return total > 0 ? 0 : 1;
}
