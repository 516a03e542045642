/* bench_util.h — what the C benchmarks under scripts/ share: a monotonic clock, and float
 * buffers on 64-byte lines with arbitrary contents (they measure speed only). Header-only: each
 * benchmark is a program of its own. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* n floats, element i = value · (i mod 13); the program exits when there is no memory */
static inline float *filled(size_t n, float value) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "out of memory for a benchmark buffer of %zu floats\n", n);
    exit(1);
  }
  for (size_t i = 0; i < n; i++) p[i] = value * (float)(i % 13);
  return p;
}

#endif
