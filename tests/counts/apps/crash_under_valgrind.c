/* Runs a small triad, then, only under Valgrind (the counting pass), dies of
   SIGSEGV: the timed run succeeds and the counting run crashes (tests/counts). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/valgrind.h>

int main(void) {
  enum { N = 10000 };
  static double a[N], b[N], c[N];
  for (int i = 0; i < N; ++i) {
    b[i] = i;
    c[i] = 1.0;
  }
  for (int i = 0; i < N; ++i) a[i] = b[i] + 3.0 * c[i];
  printf("%g\n", a[N / 2]);
  fflush(stdout);
  if (RUNNING_ON_VALGRIND) raise(SIGSEGV);
  return 0;
}
