/* bench_gemm.c — graphmert's float32 matrix products (gm_gemm: OpenBLAS with the kernels
 * graphmert picks, one single-threaded call per slab of C on each OpenMP thread) against
 * oneDNN's sgemm on the same threads, over the products of make bench-cpu's training step
 * (2 layers, hidden 512, FFN 2048, vocabulary 8000, 8192 rows, the LM head on 15% of them:
 * about as many as the step masks) and t:matmul's 2048³: the measurement behind keeping
 * OpenBLAS for float32, to repeat on each new CPU.
 *
 *   bench_gemm [threads=2] [reps=5]        (make bench-gemm prints bench_fma_peak's figure first)
 *
 * Lines: "<product> <m> <n> <k> <op> <OpenBLAS GFLOP/s> <oneDNN GFLOP/s> <oneDNN/OpenBLAS>",
 * each the best of reps runs after a warm-up; then both libraries' seconds over one step's
 * float32 products (each layer's counted twice) and their ratio. oneDNN is loaded with dlopen
 * (Debian's libdnnl-dev, optional); without it its columns say "-". Linked with the core's
 * objects: gm_gemm is internal. */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "gm.h"
#include "gm_kernels.h"

/* dnnl_sgemm: row-major, BLAS-like arguments (oneDNN's dnnl.h, not needed to build) */
typedef int (*dnnl_sgemm_fn)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                             const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                             float *c, int64_t ldc);

typedef struct product {
  const char *name;
  int64_t m, n, k;
  int trans_a, trans_b;
  int per_step; /* times one training step runs it */
} product;

enum { ROWS = 8192, HEAD_ROWS = 1229, HID = 512, FFN = 2048, VOCAB = 8000, LAYERS = 2 };

static const product products[] = {
    {"t:matmul 2048^3", 2048, 2048, 2048, 0, 0, 0},
    {"q k v = x Wt", ROWS, 3 * HID, HID, 0, 1, LAYERS},
    {"attention out = x Wt", ROWS, HID, HID, 0, 1, LAYERS},
    {"fc1 = x Wt", ROWS, FFN, HID, 0, 1, LAYERS},
    {"fc2 = x Wt", ROWS, HID, FFN, 0, 1, LAYERS},
    {"LM head = x Et", HEAD_ROWS, VOCAB, HID, 0, 1, 1},
    {"dx of q k v = g W", ROWS, HID, 3 * HID, 0, 0, LAYERS},
    {"dx of attention out", ROWS, HID, HID, 0, 0, LAYERS},
    {"dx of fc1", ROWS, HID, FFN, 0, 0, LAYERS},
    {"dx of fc2", ROWS, FFN, HID, 0, 0, LAYERS},
    {"dx of LM head", HEAD_ROWS, HID, VOCAB, 0, 0, 1},
    {"dW of q k v = gt x", 3 * HID, HID, ROWS, 1, 0, LAYERS},
    {"dW of attention out", HID, HID, ROWS, 1, 0, LAYERS},
    {"dW of fc1", FFN, HID, ROWS, 1, 0, LAYERS},
    {"dW of fc2", HID, FFN, ROWS, 1, 0, LAYERS},
    {"dE of LM head", VOCAB, HID, HEAD_ROWS, 1, 0, 1},
};

/* best seconds of reps runs of one library's product, after a warm-up */
static double best_of(const product *p, dnnl_sgemm_fn dnnl, int reps, const float *a, const float *b, float *c) {
  int64_t lda = p->trans_a ? p->m : p->k, ldb = p->trans_b ? p->k : p->n;
  double best = 1e30;
  for (int r = 0; r <= reps; r++) {
    double t0 = now();
    if (dnnl)
      dnnl(p->trans_a ? 'T' : 'N', p->trans_b ? 'T' : 'N', p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.0f, c, p->n);
    else
      gm_gemm(p->trans_a, p->trans_b, p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.0f, c, p->n);
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2, reps = argc > 2 ? atoi(argv[2]) : 5;
  if (threads < 1 || reps < 1) {
    fprintf(stderr, "usage: bench_gemm [threads >= 1] [reps >= 1]\n");
    return 2;
  }
  if (gm_blas_load() != GM_OK) {
    fprintf(stderr, "bench_gemm: %s\n", gm_last_error());
    return 1;
  }
  gm_set_num_threads(threads);
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  dnnl_sgemm_fn dnnl = h ? (dnnl_sgemm_fn)dlsym(h, "dnnl_sgemm") : NULL;
  gm_blas_info info = gm_blas_get_info();
  printf("OpenBLAS core %s (%s), oneDNN sgemm %s, %d threads, best of %d\n", info.core, info.core_source,
         dnnl ? "loaded (libdnnl.so.2)" : "not available", threads, reps);
  size_t most = 0;
  for (size_t i = 0; i < sizeof products / sizeof *products; i++) {
    const product *p = &products[i];
    size_t sizes[3] = {(size_t)(p->m * p->k), (size_t)(p->k * p->n), (size_t)(p->m * p->n)};
    for (int j = 0; j < 3; j++) most = sizes[j] > most ? sizes[j] : most;
  }
  float *a = filled(most, 0.01f), *b = filled(most, 0.02f), *c = filled(most, 0.0f);
  double step_blas = 0, step_dnnl = 0;
  for (size_t i = 0; i < sizeof products / sizeof *products; i++) {
    const product *p = &products[i];
    double flops = 2.0 * (double)p->m * (double)p->n * (double)p->k;
    double t_blas = best_of(p, NULL, reps, a, b, c), t_dnnl = dnnl ? best_of(p, dnnl, reps, a, b, c) : 0;
    step_blas += p->per_step * t_blas;
    step_dnnl += p->per_step * t_dnnl;
    printf("%-22s %5lld %5lld %5lld %c%c %7.1f ", p->name, (long long)p->m, (long long)p->n, (long long)p->k,
           p->trans_a ? 'T' : 'N', p->trans_b ? 'T' : 'N', flops / t_blas / 1e9);
    if (dnnl) printf("%7.1f %5.2f\n", flops / t_dnnl / 1e9, t_blas / t_dnnl);
    else printf("%7s %5s\n", "-", "-");
  }
  printf("one step's float32 products: OpenBLAS %.4f s", step_blas);
  if (dnnl) printf(", oneDNN %.4f s (%.2fx)", step_dnnl, step_blas / step_dnnl);
  printf("\n");
  free(a), free(b), free(c);
  return 0;
}
