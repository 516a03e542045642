/* bench_fma_peak.c — the float32 peak of this machine: a register-only loop of independent
 * 512-bit FMAs (no memory traffic) on every OpenMP thread, as GFLOP/s (2 flops per lane per
 * FMA). With "bf16", the same loop of VDPBF16PS (2 bf16 products + adds per float32 lane).
 * Built for AVX-512 by its own attribute; on a CPU without it, prints 0 and says so.
 * Usage: bench_fma_peak [f32|bf16] [seconds]. Prints "<kind> <threads> <GFLOP/s>". */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHAINS 12 /* independent accumulators: more than FMA latency x ports */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"))) static double fma_loop(long iters) {
  __m512 acc[CHAINS], x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  for (long i = 0; i < iters; i++)
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(acc[c], x, y);
  float sink = 0; /* keeps the loop alive */
  for (int c = 0; c < CHAINS; c++) sink += _mm512_reduce_add_ps(acc[c]);
  return (double)sink;
}

__attribute__((target("avx512f,avx512bf16"))) static double bf16_loop(long iters) {
  __m512 acc[CHAINS];
  __m512bh x = (__m512bh)_mm512_set1_epi32(0x3F803F80), y = (__m512bh)_mm512_set1_epi32(0x33803380);
  for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
  for (long i = 0; i < iters; i++)
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], x, y);
  float sink = 0;
  for (int c = 0; c < CHAINS; c++) sink += _mm512_reduce_add_ps(acc[c]);
  return (double)sink;
}

int main(int argc, char **argv) {
  int bf16 = argc > 1 && strcmp(argv[1], "bf16") == 0;
  double seconds = argc > 2 ? atof(argv[2]) : 0.5;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || (bf16 && !__builtin_cpu_supports("avx512bf16"))) {
    printf("%s 0 0 (no %s on this CPU)\n", bf16 ? "bf16" : "f32", bf16 ? "avx512_bf16" : "avx512f");
    return 0;
  }
  /* flops per iteration per thread: CHAINS instructions x 16 lanes x 2 (x 2 again for bf16 pairs) */
  double flops_per_iter = CHAINS * 16.0 * 2.0 * (bf16 ? 2.0 : 1.0), best = 0, sink = 0;
  long iters = 1000000;
  int threads = omp_get_max_threads();
  for (double t0 = now(); now() - t0 < seconds;) {
    double start = now();
#pragma omp parallel reduction(+ : sink)
    sink += bf16 ? bf16_loop(iters) : fma_loop(iters);
    double rate = flops_per_iter * iters * threads / (now() - start) / 1e9;
    if (rate > best) best = rate;
  }
  printf("%s %d %.1f\n", bf16 ? "bf16" : "f32", threads, best + 0 * sink);
  return 0;
}
