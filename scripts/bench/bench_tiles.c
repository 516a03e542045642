/* bench_tiles.c — the attention's float32 tile products (src/gm_tiles.c) in the attention's own
 * loop order, without the rest of the attention: how far the micro-kernel runs from the FMA peak
 * inside that loop, where each tile brings new operands, against the same product repeated on
 * one tile. make bench-cpu's attention (B8 H8 N1024 d64) spends most of its time in these
 * products, so a kernel change shows here first, in seconds, without autograd or the softmax.
 *
 *   bench_tiles [threads=2]            (make bench-tiles prints bench_fma_peak's figures first)
 *
 * Lines: "<what> <threads> <GFLOP/s>", the best of 3 runs. Per product kind, on 1 thread: the
 * product repeated on one tile (operands in cache) and the product over every tile of 2 x 8
 * (b, h) in the attention's order (Kᵀ packed once per (b, h), as the attention does; its packing
 * is timed too); and a plain product small enough for L1, repeated (IN_L1). Then the forward's
 * products (Q Kᵀ with the decay factor, P V) and the backward's (Q Kᵀ again, dO Vᵀ, dV, dQ, dK)
 * for B8 H8 on `threads` threads, with a per-head decay plane
 * [8, 1024, 1024]. Inputs are arbitrary: only speed is measured. Linked with the core's objects
 * (the tile kernel is internal); needs AVX-512. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "gm_kernels.h"

enum { H = 8, N = 1024, D = 64, BQ = 64, BK = 256, LDT = BK + 16 /* as gm_attention.c's */ };

typedef struct inputs {
  int batch;
  float *q, *k, *v, *out, *dk, *dv, *decay; /* [batch, H, N, D] each; decay [H, N, N] */
} inputs;

static inputs make_inputs(int batch) {
  size_t each = (size_t)batch * H * N * D;
  return (inputs){.batch = batch, .q = filled(each, 0.01f), .k = filled(each, 0.01f),
                  .v = filled(each, 0.01f), .out = filled(each, 0.0f), .dk = filled(each, 0.0f),
                  .dv = filled(each, 0.0f), .decay = filled((size_t)H * N * N, 0.05f)};
}

/* IN_L1: a plain product whose operands fit L1 together (L1_ROWS x 64 x D: A 7.5, B 16, C 7.5
 * KiB), repeated: the tile kernel's own ceiling, to hold against bench_fma_peak's f32-fed loop
 * (the same micro-tile's FMAs and loads, nothing else), apart from what the caches cost inside
 * the attention. */
#define L1_ROWS 30
enum kind { SCORES, PV, TRANSPOSED, PLAIN, IN_L1, KINDS };
static const char *kind_name[KINDS] = {"Q Kt scores, decayed (m64 n256 k64)", "P V (m64 n64 k256)",
                                       "dV += At dO (m256 n64 k64, A read down columns)",
                                       "dO Vt (m64 n256 k64)", "plain, all in L1 (m30 n64 k64)"};

/* One product of `kind` for tile (i0, j0) of (b, h) (bh = b·H + h): t a BQ x LDT tile, kt the
 * packed Kᵀ of (b, h). */
static void product(int kind, const inputs *in, int bh, int h, int i0, int j0, const float *kt,
                    float *t) {
  const float *q = in->q + (size_t)bh * N * D, *v = in->v + (size_t)bh * N * D;
  float *o = in->out + (size_t)bh * N * D, *dv = in->dv + (size_t)bh * N * D;
  switch (kind) {
  case SCORES:
    gm_tiles_scores(BQ, BK, D, q + i0 * D, D, kt + j0 * D, 64, 64 * D, 0.125f,
                    in->decay + ((size_t)h * N + i0) * N + j0, N, NULL, 0, 0, t, LDT);
    break;
  case PV: gm_tiles_gemm(0, BQ, D, BK, t, LDT, v + j0 * D, D, 64, 1, o + i0 * D, D, NULL, 0, NULL, 0); break;
  case TRANSPOSED: gm_tiles_gemm(1, BK, D, BQ, t, LDT, o + i0 * D, D, 64, 1, dv + j0 * D, D, NULL, 0, NULL, 0); break;
  case PLAIN: gm_tiles_gemm(0, BQ, BK, D, o + i0 * D, D, kt + j0 * D, 64, 64 * D, 0, t, LDT, NULL, 0, NULL, 0); break;
  case IN_L1: gm_tiles_gemm(0, L1_ROWS, 64, D, o, D, kt, 64, 64 * D, 0, t, 64, NULL, 0, NULL, 0); break;
  default: break;
  }
}

/* GFLOP/s of the best of 3 calls of run(in, what, threads) doing `flops`. */
static double best_of_3(double flops, void (*run)(const inputs *, int, int), const inputs *in, int what,
                        int threads) {
  double best = 1e30;
  for (int r = 0; r < 3; r++) {
    double t0 = now();
    run(in, what, threads);
    double t = now() - t0;
    if (t < best) best = t;
  }
  return flops / best / 1e9;
}

/* How often `repeated` runs a kind: IN_L1, about a ninth of a tile's work, 32 times as often. */
static int repeats(int kind) { return kind == IN_L1 ? 32 * 1024 : 1024; }

static void repeated(const inputs *in, int kind, int threads) {
  (void)threads;
  float *kt = filled((size_t)gm_tiles_panel_floats(N, D), 0.0f), *t = filled((size_t)BQ * LDT, 0.001f);
  gm_tiles_pack_panels(in->k, N, D, kt);
  for (int i = 0; i < repeats(kind); i++) product(kind, in, 0, 0, 0, 0, kt, t);
  free(kt), free(t);
}

static void in_order(const inputs *in, int kind, int threads) {
  (void)threads;
  float *kt = filled((size_t)gm_tiles_panel_floats(N, D), 0.0f), *t = filled((size_t)BQ * LDT, 0.001f);
  for (int bh = 0; bh < in->batch * H; bh++) {
    gm_tiles_pack_panels(in->k + (size_t)bh * N * D, N, D, kt);
    for (int i0 = 0; i0 < N; i0 += BQ)
      for (int j0 = 0; j0 < N; j0 += BK) product(kind, in, bh, bh % H, i0, j0, kt, t);
  }
  free(kt), free(t);
}

/* The forward's (backward 0) or backward's products over every tile, a task per (b, h), heads
 * outermost as in gm_attention.c; dO and the outputs share buffers (only speed counts). */
static void sequence(const inputs *in, int backward, int threads) {
#pragma omp parallel num_threads(threads)
  {
    float *kt = filled((size_t)gm_tiles_panel_floats(N, D), 0.0f);
    float *vt = filled((size_t)gm_tiles_panel_floats(N, D), 0.0f);
    float *s = filled((size_t)BQ * LDT, 0.001f), *ds = filled((size_t)BQ * LDT, 0.001f);
#pragma omp for schedule(static)
    for (int task = 0; task < in->batch * H; task++) {
      int h = task / in->batch, bh = task % in->batch * H + h;
      size_t at = (size_t)bh * N * D;
      gm_tiles_pack_panels(in->k + at, N, D, kt);
      if (backward) gm_tiles_pack_panels(in->v + at, N, D, vt);
      for (int i0 = 0; i0 < N; i0 += BQ)
        for (int j0 = 0; j0 < N; j0 += BK) {
          const float *q = in->q + at + i0 * D, *e = in->decay + ((size_t)h * N + i0) * N + j0;
          float *o = in->out + at + i0 * D;
          product(SCORES, in, bh, h, i0, j0, kt, s);
          if (!backward) {
            product(PV, in, bh, h, i0, j0, kt, s);
            continue;
          }
          /* dO Vᵀ asks for the decay gradient's rows, as the attention's backward does */
          gm_tiles_gemm(0, BQ, BK, D, o, D, vt + j0 * D, 64, 64 * D, 0, ds, LDT, e, N, NULL, 0);
          product(TRANSPOSED, in, bh, h, i0, j0, kt, s);
          gm_tiles_gemm(0, BQ, D, BK, ds, LDT, in->k + at + j0 * D, D, 64, j0 > 0, o, D, NULL, 0, NULL, 0);
          gm_tiles_gemm(1, BK, D, BQ, ds, LDT, q, D, 64, 1, in->dk + at + j0 * D, D, NULL, 0, NULL, 0);
        }
    }
    free(kt), free(vt), free(s), free(ds);
  }
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  if (threads < 1) threads = 1;
  if (!gm_tiles_available()) {
    printf("bench_tiles: this CPU has no AVX-512F; the attention multiplies through gm_gemm here\n");
    return 0;
  }
  double tile_flops = 2.0 * BQ * BK * D;
  inputs small = make_inputs(2), full = make_inputs(8);
  for (int kind = 0; kind < KINDS; kind++) {
    printf("%-50s repeated on one tile %d %.0f\n", kind_name[kind], 1,
           best_of_3(repeats(kind) * (kind == IN_L1 ? 2.0 * L1_ROWS * 64 * D : tile_flops), repeated, &small,
                     kind, 1));
    if (kind == IN_L1) continue; /* not an attention tile */
    printf("%-50s in the attention's order %d %.0f\n", kind_name[kind], 1,
           best_of_3(small.batch * H * (N / BQ) * (N / BK) * tile_flops, in_order, &small, kind, 1));
  }
  double tiles = (double)full.batch * H * (N / BQ) * (N / BK);
  printf("%-50s %d %.0f\n", "forward's products (2 per tile)", threads,
         best_of_3(2 * tiles * tile_flops, sequence, &full, 0, threads));
  printf("%-50s %d %.0f\n", "backward's products (5 per tile)", threads,
         best_of_3(5 * tiles * tile_flops, sequence, &full, 1, threads));
  return 0;
}
