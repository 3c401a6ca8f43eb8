/* Data that a process's threads share, for the counting tool's shared caches
   (tests/counts). The main thread initialises an array of BYTES (init_array,
   serial), then, by MODE:
     read    every OpenMP thread reads the whole array REPS times (read_all):
             one copy in a shared L3, whatever the thread count;
     for     `omp for` over the array, REPS sweeps (sweep_for): each thread
             its static part, which the L3 holds since the initialisation;
     phases  REPS phases, each a new pthread summing the array (phase_sum),
             one after the other: each finds it in the L3.
   shared_data MODE BYTES REPS */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double* array;
static long n;
static int reps;

__attribute__((noinline)) void init_array(void)
{
   for (long i = 0; i < n; ++i) array[i] = (double)(i % 7);
}

__attribute__((noinline)) double read_all(void)
{
   double s = 0;
   for (int r = 0; r < reps; ++r)
      for (long i = 0; i < n; ++i) s += array[i] * 0.5;
   return s;
}

/* Called by every thread of a parallel region: an orphaned `omp for`. */
__attribute__((noinline)) double sweep_for(void)
{
   double s = 0;
   for (int r = 0; r < reps; ++r) {
#pragma omp for schedule(static)
      for (long i = 0; i < n; ++i) s += array[i] * 0.5;
   }
   return s;
}

__attribute__((noinline)) void* phase_sum(void* out)
{
   double s = 0;
   for (long i = 0; i < n; ++i) s += array[i] * 0.5;
   *(double*)out = s;
   return NULL;
}

int main(int argc, char** argv)
{
   if (argc < 4) {
      fprintf(stderr, "usage: shared_data read|for|phases BYTES REPS\n");
      return 2;
   }
   n = atol(argv[2]) / (long)sizeof(double);
   reps = atoi(argv[3]);
   array = malloc(sizeof(double) * (size_t)n);
   if (!array || n <= 0 || reps <= 0) return 2;
   init_array();
   double total = 0;
   if (strcmp(argv[1], "read") == 0) {
#pragma omp parallel reduction(+ : total)
      total += read_all();
   } else if (strcmp(argv[1], "for") == 0) {
#pragma omp parallel reduction(+ : total)
      total += sweep_for();
   } else if (strcmp(argv[1], "phases") == 0) {
      for (int p = 0; p < reps; ++p) {
         pthread_t t;
         double s = 0;
         if (pthread_create(&t, NULL, phase_sum, &s) != 0) return 1;
         pthread_join(t, NULL);
         total += s;
      }
   } else {
      fprintf(stderr, "shared_data: unknown mode `%s`\n", argv[1]);
      return 2;
   }
   printf("%g\n", total);
   free(array);
   return 0;
}
