/* A small triad that, only under Valgrind (the counting pass), waits until
   the file GO_FILE exists; every run outside Valgrind (the timed run) adds a
   line to RUNS_FILE. Lets a test interrupt the counting pass while it is
   surely running, and see which runs --resume repeats (tests/counts).
     wait_under_valgrind GO_FILE RUNS_FILE */
#include <stdio.h>
#include <unistd.h>
#include <valgrind/valgrind.h>

__attribute__((noinline)) void triad(double* a, const double* b, const double* c, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + 3.0 * c[i];
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: wait_under_valgrind GO_FILE RUNS_FILE\n");
    return 2;
  }
  enum { N = 10000 };
  static double a[N], b[N], c[N];
  for (int i = 0; i < N; ++i) {
    b[i] = i;
    c[i] = 1.0;
  }
  triad(a, b, c, N);
  if (RUNNING_ON_VALGRIND) {
    while (access(argv[1], F_OK) != 0) usleep(20000);
  } else {
    FILE* f = fopen(argv[2], "a");
    if (!f) return 1;
    fputs("timed run\n", f);
    fclose(f);
  }
  printf("%g\n", a[N / 2]);
  return 0;
}
