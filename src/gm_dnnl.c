/* gm_dnnl.c — oneDNN's bf16 gemm (dnnl_gemm_bf16bf16f32) for the large "medium" products.
 *
 * On avx512_bf16 it runs near three times our own kernel's speed on large products (its
 * blocking and prefetching are tuned per CPU), but costs a fixed start per call that the
 * attention kernel's small tiles cannot pay; gm_bf16_gemm therefore sends it only products
 * above a size (see there). oneDNN is optional: it is loaded with dlopen when first wanted,
 * so the project builds and runs without it, and "medium" then runs on our kernel alone.
 *
 * dnnl_gemm_bf16bf16f32 is exported by libdnnl.so.2 next to dnnl_sgemm, with the same
 * row-major BLAS-like arguments but bf16 A and B; Debian's 2.6 does not declare it in a
 * public header, so its type is written here. oneDNN uses the same libgomp team as the core
 * (omp_get_max_threads threads, one inside a parallel region). */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "gm_internal.h"

#define DNNL_SONAME "libdnnl.so.2"

typedef int (*bf16_gemm_fn)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha,
                            const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta,
                            float *c, int64_t ldc);
typedef struct {
  int major, minor, patch;
  const char *hash;
  unsigned cpu_runtime, gpu_runtime;
} dnnl_version_info; /* dnnl_version_t */

static struct {
  bf16_gemm_fn gemm;
  char status[600]; /* "oneDNN 2.6.3 (path)" or why not */
} dnnl;

static pthread_once_t dnnl_once = PTHREAD_ONCE_INIT;

static void load(void) {
  void *h = dlopen(DNNL_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(dnnl.status, sizeof dnnl.status, "not loaded (%s)", dlerror());
    return;
  }
  bf16_gemm_fn gemm = (bf16_gemm_fn)dlsym(h, "dnnl_gemm_bf16bf16f32");
  const dnnl_version_info *(*version)(void) = (const dnnl_version_info *(*)(void))dlsym(h, "dnnl_version");
  if (!gemm || !version) {
    snprintf(dnnl.status, sizeof dnnl.status, "not used (%s has no dnnl_gemm_bf16bf16f32)", DNNL_SONAME);
    return;
  }
  const dnnl_version_info *v = version();
  snprintf(dnnl.status, sizeof dnnl.status, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch, DNNL_SONAME);
  dnnl.gemm = gemm;
}

const char *gm_dnnl_status(void) {
  pthread_once(&dnnl_once, load);
  return dnnl.status;
}

int gm_dnnl_available(void) {
  pthread_once(&dnnl_once, load);
  return dnnl.gemm != NULL;
}

int gm_dnnl_bf16_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta,
                      float *c, int64_t ldc) {
  pthread_once(&dnnl_once, load);
  return dnnl.gemm && dnnl.gemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                ldb, beta, c, ldc) == 0;
}
