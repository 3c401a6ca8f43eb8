/* A process tree under the counting tool: the parent forks a child that runs
   a triad of N doubles itself, and a child that execs TRIAD_APP N; all three
   are counted as the same rank (tests/counts).
     forker TRIAD_APP N */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) void triad(double* restrict a, const double* restrict b, const double* restrict c,
                                     double s, long n) {
  for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: forker TRIAD_APP N\n");
    return 2;
  }
  const long n = atol(argv[2]);
  pid_t in_process = fork();
  if (in_process == 0) {
    double* a = calloc((size_t)n, sizeof(double));
    double* b = calloc((size_t)n, sizeof(double));
    double* c = calloc((size_t)n, sizeof(double));
    triad(a, b, c, 3.0, n);
    printf("child %g\n", a[0]);
    fflush(stdout);
    _exit(0);
  }
  pid_t execed = fork();
  if (execed == 0) {
    execl(argv[1], argv[1], argv[2], (char*)NULL);
    perror("execl");
    _exit(127);
  }
  int s1 = 0, s2 = 0;
  waitpid(in_process, &s1, 0);
  waitpid(execed, &s2, 0);
  return (WIFEXITED(s1) && WEXITSTATUS(s1) == 0 && WIFEXITED(s2) && WEXITSTATUS(s2) == 0) ? 0 : 1;
}
