/* bench_sgemm.c — OpenBLAS cblas_sgemm called directly at n x n x n: the ceiling that
 * scripts/bench/bench_core.lua compares t:matmul with. Prints "sgemm <n> <best seconds> <GFLOP/s>". */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1024, reps = argc > 2 ? atoi(argv[2]) : 10;
  float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n),
        *c = malloc(sizeof(float) * n * n);
  for (long i = 0; i < (long)n * n; i++) {
    a[i] = (float)rand() / RAND_MAX;
    b[i] = (float)rand() / RAND_MAX;
  }
  double best = 1e30;
  for (int r = 0; r < reps + 1; r++) {
    double t0 = now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    double t = now() - t0;
    if (r > 0 && t < best) best = t; /* the first run warms up the threads */
  }
  printf("sgemm %d %.6f %.2f\n", n, best, 2.0 * n * n * n / best / 1e9);
  free(a);
  free(b);
  free(c);
  return 0;
}
