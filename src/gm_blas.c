/* gm_blas.c — matrix products through OpenBLAS cblas_sgemm: 2-D, batched, broadcast batch
 * dimensions, transposed operands read in place through the BLAS transpose flags; in
 * "medium" precision through the bf16 kernel (gm_bf16.c) instead.
 *
 * OpenBLAS is loaded here with dlopen, not linked. A DYNAMIC_ARCH OpenBLAS picks its kernels
 * once, when it is loaded, from OPENBLAS_CORETYPE or its own CPUID table; a library older than
 * the CPU may not know it and fall back to its AVX2 kernels, which run sgemm at half speed
 * (Debian's 0.3.21 happens to map AMD family 1Ah to Cooperlake, but nothing promises that for
 * the next CPU). Loading it ourselves lets us choose first, the same way in both hosts:
 * the graphmert binary and core.so under a stock lua5.4 (where we do not own main(), so
 * re-executing the process with the variable set is not an option; and a re-exec would
 * restart the user's program, change its pid and run every start-up twice). The rule:
 *   - OPENBLAS_CORETYPE set (even to a core we would not pick): it wins, unchanged;
 *   - OpenBLAS already in the process (a host linked it): we use that one as it is;
 *   - AVX-512 F/BW/VL/DQ/CD present: "SkylakeX" (Cooperlake's sgemm is the same kernel, and
 *     0.3.21 does not accept "Cooperlake" as a forced name), set only while dlopen runs so
 *     that child processes still choose for themselves;
 *   - otherwise OpenBLAS's own detection, which knows the AVX2 cores (Haswell, Zen).
 * gm_blas_get_info() says which of these happened. */
#include <cblas.h>
#include <dlfcn.h>
#include <link.h>
#include <omp.h>
#include <pthread.h>
#include <string.h>

#include "gm_internal.h"

#define BLAS_SONAME "libopenblas.so.0"

static struct {
  __typeof__(&cblas_sgemm) sgemm;
  __typeof__(&openblas_set_num_threads) set_num_threads;
  __typeof__(&openblas_get_corename) get_corename;
  __typeof__(&openblas_get_config) get_config;
  char library[512];
  const char *core_source;
  char error[600];
} blas;

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static const char *core_for_cpu(void) {
  unsigned need = GM_CPU_AVX512F | GM_CPU_AVX512BW | GM_CPU_AVX512VL | GM_CPU_AVX512DQ | GM_CPU_AVX512CD;
  return (gm_cpu_features() & need) == need ? "SkylakeX" : NULL;
}

static void load(void) {
  const char *given = getenv("OPENBLAS_CORETYPE");
  void *h = dlopen(BLAS_SONAME, RTLD_NOW | RTLD_NOLOAD);
  const char *chosen = NULL;
  if (h) {
    blas.core_source = "already loaded by the host program";
  } else if (given) {
    blas.core_source = "OPENBLAS_CORETYPE from the environment";
  } else if ((chosen = core_for_cpu())) {
    blas.core_source = "chosen by graphmert from the CPU's features";
  } else {
    blas.core_source = "OpenBLAS's own CPU detection";
  }
  /* Set only while dlopen runs (start-up is single-threaded in both hosts, so changing the
   * environment is safe): the core type, and one thread so that OpenBLAS does not start a pool
   * that gm_gemm would never use. */
  int one_thread = !h && !getenv("OPENBLAS_NUM_THREADS");
  if (chosen) setenv("OPENBLAS_CORETYPE", chosen, 1);
  if (one_thread) setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (!h) h = dlopen(BLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (chosen) unsetenv("OPENBLAS_CORETYPE");
  if (one_thread) unsetenv("OPENBLAS_NUM_THREADS");
  if (!h) {
    snprintf(blas.error, sizeof blas.error, "cannot load OpenBLAS (%s): %s", BLAS_SONAME, dlerror());
    return;
  }
  blas.sgemm = (__typeof__(blas.sgemm))dlsym(h, "cblas_sgemm");
  blas.set_num_threads = (__typeof__(blas.set_num_threads))dlsym(h, "openblas_set_num_threads");
  blas.get_corename = (__typeof__(blas.get_corename))dlsym(h, "openblas_get_corename");
  blas.get_config = (__typeof__(blas.get_config))dlsym(h, "openblas_get_config");
  struct link_map *map = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name) {
    char *real = realpath(map->l_name, NULL); /* the file behind Debian's alternatives link */
    snprintf(blas.library, sizeof blas.library, "%s", real ? real : map->l_name);
    free(real);
  }
  if (!blas.sgemm || !blas.set_num_threads || !blas.get_corename || !blas.get_config) {
    snprintf(blas.error, sizeof blas.error, "%s is not OpenBLAS (an openblas_* function is missing)",
             blas.library[0] ? blas.library : BLAS_SONAME);
    blas.sgemm = NULL;
    return;
  }
  blas.set_num_threads(1); /* the threads are OpenMP's: see gm_gemm */
}

gm_status gm_blas_load(void) {
  pthread_once(&blas_once, load);
  return blas.sgemm ? GM_OK : gm_fail(GM_ERR_STATE, 0, "%s", blas.error);
}

gm_blas_info gm_blas_get_info(void) {
  GM_ASSERT(blas.sgemm); /* gm_blas_load succeeded first */
  return (gm_blas_info){blas.library, blas.get_config(), blas.get_corename(), blas.core_source};
}

/* ---- precision ----------------------------------------------------------------------------- */

static int matmul_precision = GM_MATMUL_HIGHEST; /* one setting per process, as in PyTorch */

void gm_set_matmul_precision(gm_matmul_precision p) {
  __atomic_store_n(&matmul_precision, (int)p, __ATOMIC_RELAXED);
}

gm_matmul_precision gm_get_matmul_precision(void) {
  return (gm_matmul_precision)__atomic_load_n(&matmul_precision, __ATOMIC_RELAXED);
}

int gm_bf16_available(void) { return (gm_cpu_features() & GM_CPU_AVX512_BF16) != 0; }

/* (gm_bf16.c is compiled for AVX-512: entered only on a CPU that has it) */
void gm_bf16_release_kept_weights(void) {
  if (gm_bf16_available()) gm_bf16_frozen_clear();
}

int gm_matmul_uses_bf16(void) {
  return gm_get_matmul_precision() == GM_MATMUL_MEDIUM && gm_bf16_available();
}

/* ---- products ------------------------------------------------------------------------------ */

/* One thread's sgemm (OpenBLAS runs single-threaded: see gm_gemm). */
static void sgemm1(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  blas.sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
             (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* The one place every matrix product of the core goes through (Linear, matmul, the attention
 * tiles, H-GAT, the LM head, their backward): float32 sgemm, or bf16 in "medium".
 *
 * OpenBLAS is held to one thread and the threads are OpenMP's: C is cut into one slab per
 * thread (rows, or columns when it is wider than tall) and each thread runs a single-threaded
 * sgemm on its slab. With OpenBLAS's own pool next to OpenMP's, each pool's idle threads spin
 * while the other works (libgomp for GOMP_SPINCOUNT, OpenBLAS with sched_yield): on 2 cores a
 * third of a training step went to spinning. Inside a parallel region (the attention tiles)
 * the product simply runs on the calling thread. */
#define GEMM_PAR_MIN_FLOPS (2.0 * 1024 * 1024)
#define GEMM_SLAB_ALIGN 16 /* slab edges on whole micro-tiles */
void gm_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc) {
  if (gm_matmul_uses_bf16() &&
      gm_bf16_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    return;
  GM_ASSERT(blas.sgemm); /* gm_blas_load succeeded first */
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  int64_t span = m >= n ? m : n;
  if (threads > (span + GEMM_SLAB_ALIGN - 1) / GEMM_SLAB_ALIGN)
    threads = (int)((span + GEMM_SLAB_ALIGN - 1) / GEMM_SLAB_ALIGN);
  if (threads <= 1 || 2.0 * (double)m * (double)n * (double)k < GEMM_PAR_MIN_FLOPS) {
    sgemm1(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t blocks = (span + GEMM_SLAB_ALIGN - 1) / GEMM_SLAB_ALIGN;
    int64_t lo = blocks * t / nt * GEMM_SLAB_ALIGN, hi = blocks * (t + 1) / nt * GEMM_SLAB_ALIGN;
    if (hi > span) hi = span;
    if (hi > lo) {
      if (m >= n) /* rows lo..hi of op(A) and C */
        sgemm1(trans_a, trans_b, hi - lo, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda, b, ldb,
               beta, c + lo * ldc, ldc);
      else /* columns lo..hi of op(B) and C */
        sgemm1(trans_a, trans_b, m, hi - lo, k, alpha, a, lda, trans_b ? b + lo * ldb : b + lo, ldb,
               beta, c + lo, ldc);
    }
  }
}

/* Rows and columns of a's last two dimensions as the product sees them. */
static void op_dims(const gm_tensor *t, int trans, int64_t *rows, int64_t *cols) {
  int64_t r = t->shape[t->ndim - 2], c = t->shape[t->ndim - 1];
  *rows = trans ? c : r;
  *cols = trans ? r : c;
}

/* Output shape of a @ b, or an error naming both shapes. */
static gm_status matmul_shape(const gm_tensor *a, const gm_tensor *b, int ta, int tb, int *ndim,
                              int64_t *shape) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  if (a->ndim < 2 || b->ndim < 2)
    return gm_fail(GM_ERR_SHAPE, a->ndim < 2 ? 1 : 2,
                   "matmul needs matrices (at least 2 dimensions): %s @ %s", GM_SHAPE(a, x),
                   GM_SHAPE(b, y));
  int64_t n, k, k2, m;
  op_dims(a, ta, &n, &k);
  op_dims(b, tb, &k2, &m);
  int nb = (a->ndim > b->ndim ? a->ndim : b->ndim) - 2;
  int bad = k != k2;
  for (int i = 0; i < nb && !bad; i++) {
    int ia = a->ndim - 2 - nb + i, ib = b->ndim - 2 - nb + i;
    int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
    bad = sa != sb && sa != 1 && sb != 1;
    shape[i] = sa == 1 ? sb : sa;
  }
  if (bad)
    return gm_fail(GM_ERR_SHAPE, 2, "size mismatch: %s%s @ %s%s", GM_SHAPE(a, x),
                   ta ? " (transposed)" : "", GM_SHAPE(b, y), tb ? " (transposed)" : "");
  shape[nb] = n;
  shape[nb + 1] = m;
  *ndim = nb + 2;
  return GM_OK;
}

/* Offset of batch number `i` of t within a broadcast batch shape of nb dimensions. */
static int64_t batch_offset(const gm_tensor *t, int nb, const int64_t *batch, int64_t i) {
  int tb = t->ndim - 2;
  int64_t off = 0, stride = t->shape[t->ndim - 2] * t->shape[t->ndim - 1];
  for (int d = nb - 1; d >= 0; d--) {
    int64_t idx = i % batch[d];
    i /= batch[d];
    int td = tb - nb + d;
    if (td >= 0) {
      if (t->shape[td] != 1) off += idx * stride;
      stride *= t->shape[td];
    }
  }
  return off;
}

gm_status gm_matmul_into(gm_tensor *c, const gm_tensor *a, const gm_tensor *b, int ta, int tb,
                         float beta) {
  int64_t n, k, k2, m;
  op_dims(a, ta, &n, &k);
  op_dims(b, tb, &k2, &m);
  int nb = c->ndim - 2;
  int64_t batches = 1;
  for (int i = 0; i < nb; i++) batches *= c->shape[i];
  int64_t lda = a->shape[a->ndim - 1], ldb = b->shape[b->ndim - 1];
  if (n == 0 || m == 0 || batches == 0) return GM_OK;
  if (k == 0) { /* an empty sum: BLAS may not touch C, so scale it here */
    for (int64_t i = 0; i < c->numel; i++) c->data[i] = beta == 0.0f ? 0.0f : c->data[i] * beta;
    return GM_OK;
  }
  /* A batched, untransposed A against one B: one tall product over all rows. */
  if (b->ndim == 2 && !ta && a->numel == batches * n * k) {
    gm_gemm(ta, tb, batches * n, m, k, 1.0f, a->data, lda, b->data, ldb, beta, c->data, m);
    return GM_OK;
  }
  for (int64_t i = 0; i < batches; i++)
    gm_gemm(ta, tb, n, m, k, 1.0f, a->data + batch_offset(a, nb, c->shape, i), lda,
            b->data + batch_offset(b, nb, c->shape, i), ldb, beta, c->data + i * n * m, m);
  return GM_OK;
}

gm_tensor *gm_matmul(gm_tensor *a, gm_tensor *b, int trans_a, int trans_b) {
  int ndim = 0;
  int64_t shape[GM_MAX_DIMS];
  if (matmul_shape(a, b, trans_a, trans_b, &ndim, shape) != GM_OK) return NULL;
  for (int i = 0; i < a->ndim || i < b->ndim; i++)
    if ((i < a->ndim && a->shape[i] > INT32_MAX) || (i < b->ndim && b->shape[i] > INT32_MAX)) {
      gm_fail(GM_ERR_SHAPE, 1, "matmul dimensions must be below 2^31");
      return NULL;
    }
  gm_tensor *c = gm_tensor_empty(ndim, shape);
  if (!c) return NULL;
  /* "medium": B's gradient Aᵀ G reads A again, so the forward keeps its bf16 rounding of A for
   * backward (one product over all of A's rows, i.e. B a matrix and A not transposed) in place
   * of A's float32 values, which it stops pinning: no second rounding, and half the memory (B's
   * gradient is then taken in bf16 even if the precision changes before backward). Only for a
   * recorded intermediate A (a leaf may be written in place before backward). */
  int keep = gm_matmul_uses_bf16() && gm_grad_enabled() && b->requires_grad && b->ndim == 2 &&
             !trans_a && a->op != GM_OP_NONE && a->op != GM_OP_FREED;
  if (keep) gm_bf16_keep_begin(a->data);
  /* inference: a parameter (a leaf that requires grad, read with gradients off) keeps its
   * rounding for the next batch, instead of being rounded again by every product */
  int frozen = gm_matmul_uses_bf16() && !gm_grad_enabled() && !gm_backward_running() && b->requires_grad &&
               b->op == GM_OP_NONE;
  if (frozen) gm_bf16_frozen_begin(b);
  gm_matmul_into(c, a, b, trans_a, trans_b, 0.0f);
  if (frozen) gm_bf16_frozen_end();
  int64_t dims[3];
  gm_tensor *kept = keep ? gm_bf16_keep_end(dims) : NULL;
  gm_tensor *srcs[2] = {a, b};
  /* iarg[0] = trans_a, iarg[1] = trans_b; saved: A's kept rounding, as rounded in iarg[2..4] */
  c = gm_record(c, GM_OP_MATMUL, srcs, 2);
  if (c) {
    c->iarg[0] = trans_a;
    c->iarg[1] = trans_b;
    if (kept && c->op == GM_OP_MATMUL) {
      gm_node_save(c, kept);
      memcpy(c->iarg + 2, dims, sizeof dims);
      kept = NULL;
      if (c->pinned_srcs & 1u) {
        c->pinned_srcs &= (uint16_t)~1u;
        gm_tensor_unpin(a);
      }
    }
  }
  gm_tensor_release(kept);
  return c;
}
