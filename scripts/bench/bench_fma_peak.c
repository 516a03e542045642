/* bench_fma_peak.c — the float32 peak of this machine: a register-only loop of independent
 * 512-bit FMAs (no memory traffic) on every OpenMP thread, as GFLOP/s (2 flops per lane per
 * FMA). With "bf16", the same loop of VDPBF16PS (2 bf16 products + adds per float32 lane);
 * with "amx", TDPBF16PS on AMX tiles that stay loaded (16 x 16 x 32 products + adds each).
 * With "f32-fed", the float32 FMAs as a matrix product's micro-kernel must feed them: the
 * attention tiles' 6 x 4 register block (src/gm_tiles.c), each step loading 4 vectors of B and
 * broadcasting 6 floats of A from L1 for its 24 FMAs — no cache miss, no loop overhead beyond
 * the kernel's own: the most any such kernel can reach on this core, which tells a kernel's and
 * the caches' losses from the core's own (on a 2-core AMX Xeon: 91–97% of the f32 figure).
 * Built for AVX-512 and AMX by their own attributes; on a CPU without them, prints 0 and says so.
 * Usage: bench_fma_peak [f32|f32-fed|bf16|amx] [seconds]. Prints "<kind> <threads> <GFLOP/s>". */
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_util.h"

#define CHAINS 12 /* independent accumulators: more than FMA latency x ports */

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

#define FED_ROWS 6
#define FED_COLS 64  /* four vectors of 16 */
#define FED_STEPS 64 /* a 64 x 64 block of B (16 KiB) and 64 x 6 of A: both stay in L1 */
static float fed_b[FED_STEPS * FED_COLS] __attribute__((aligned(64)));
static float fed_a[FED_STEPS * FED_ROWS] __attribute__((aligned(64)));

__attribute__((target("avx512f"))) static double fed_loop(long iters) {
  __m512 acc[FED_ROWS][4];
  for (int r = 0; r < FED_ROWS; r++)
    for (int v = 0; v < 4; v++) acc[r][v] = _mm512_setzero_ps();
  for (long i = 0; i < iters; i += FED_STEPS)
    for (int p = 0; p < FED_STEPS; p++) {
      __m512 b[4];
#pragma GCC unroll 4
      for (int v = 0; v < 4; v++) b[v] = _mm512_load_ps(fed_b + p * FED_COLS + 16 * v);
#pragma GCC unroll 6
      for (int r = 0; r < FED_ROWS; r++) {
        __m512 x = _mm512_set1_ps(fed_a[p * FED_ROWS + r]);
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) acc[r][v] = _mm512_fmadd_ps(x, b[v], acc[r][v]);
      }
    }
  float sink = 0;
  for (int r = 0; r < FED_ROWS; r++)
    for (int v = 0; v < 4; v++) sink += _mm512_reduce_add_ps(acc[r][v]);
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

/* Four accumulating tiles from two A and two B tiles of ones, as gm_bf16.c's blocks use them. */
__attribute__((target("amx-tile,amx-bf16"))) static double amx_loop(long iters) {
  struct { uint8_t palette, start_row, reserved[14]; uint16_t bytes_per_row[16]; uint8_t rows[16]; } cfg = {.palette = 1};
  for (int t = 0; t < 8; t++) cfg.bytes_per_row[t] = 64, cfg.rows[t] = 16;
  static const uint16_t ones[16 * 32] = {0};
  _tile_loadconfig(&cfg);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (long i = 0; i < iters; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}

/* AMX-BF16 and AMX-TILE (CPUID leaf 7 EDX bits 22, 24), and Linux's grant of the tile state */
static int amx_usable(void) {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 22 & 1) && (d >> 24 & 1) &&
         syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}

int main(int argc, char **argv) {
  const char *kind = argc > 1 ? argv[1] : "f32";
  int bf16 = strcmp(kind, "bf16") == 0, amx = strcmp(kind, "amx") == 0, fed = strcmp(kind, "f32-fed") == 0;
  if (!bf16 && !amx && !fed && strcmp(kind, "f32") != 0) {
    fprintf(stderr, "bench_fma_peak: kind must be f32, f32-fed, bf16 or amx (got '%s')\n", kind);
    return 2;
  }
  double seconds = argc > 2 ? atof(argv[2]) : 0.5;
  __builtin_cpu_init();
  const char *missing = !__builtin_cpu_supports("avx512f")                  ? "avx512f"
                        : bf16 && !__builtin_cpu_supports("avx512bf16") ? "avx512_bf16"
                        : amx && !amx_usable()                            ? "usable amx_bf16"
                                                                          : NULL;
  if (missing) {
    printf("%s 0 0 (no %s on this CPU)\n", kind, missing);
    return 0;
  }
  /* flops per iteration per thread: CHAINS instructions x 16 lanes x 2 (x 2 again for bf16
   * pairs); f32-fed: one step of 24 FMAs; AMX: four tile products of 16 x 16 x 32 multiply-adds */
  double flops_per_iter = amx   ? 4 * 16.0 * 16 * 32 * 2
                          : fed ? FED_ROWS * FED_COLS * 2.0
                                : CHAINS * 16.0 * 2.0 * (bf16 ? 2.0 : 1.0);
  if (fed) {
    for (int i = 0; i < FED_STEPS * FED_COLS; i++) fed_b[i] = 1e-7f * (float)(i % 13);
    for (int i = 0; i < FED_STEPS * FED_ROWS; i++) fed_a[i] = 0.999f;
  }
  double best = 0, sink = 0;
  long iters = 1000000;
  int threads = omp_get_max_threads();
  for (double t0 = now(); now() - t0 < seconds;) {
    double start = now();
#pragma omp parallel reduction(+ : sink)
    sink += amx ? amx_loop(iters / 16) : bf16 ? bf16_loop(iters) : fed ? fed_loop(iters) : fma_loop(iters);
    double rate = flops_per_iter * (amx ? iters / 16 : iters) * threads / (now() - start) / 1e9;
    if (rate > best) best = rate;
  }
  printf("%s %d %.1f\n", kind, threads, best + 0 * sink);
  return 0;
}
