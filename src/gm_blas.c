/* gm_blas.c — matrix products through OpenBLAS cblas_sgemm: 2-D, batched, broadcast batch
 * dimensions, transposed operands read in place through the BLAS transpose flags. */
#include <cblas.h>
#include <string.h>

#include "gm_internal.h"

void gm_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

int gm_blas_threads_set(int n) {
  int previous = openblas_get_num_threads();
  openblas_set_num_threads(n);
  return previous;
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
  int lda = (int)a->shape[a->ndim - 1], ldb = (int)b->shape[b->ndim - 1];
  CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans, opb = tb ? CblasTrans : CblasNoTrans;
  if (n == 0 || m == 0 || batches == 0) return GM_OK;
  if (k == 0) { /* an empty sum: BLAS may not touch C, so scale it here */
    for (int64_t i = 0; i < c->numel; i++) c->data[i] = beta == 0.0f ? 0.0f : c->data[i] * beta;
    return GM_OK;
  }
  /* A batched, untransposed A against one B: one tall product over all rows. */
  if (b->ndim == 2 && !ta && a->numel == batches * n * k) {
    cblas_sgemm(CblasRowMajor, opa, opb, (int)(batches * n), (int)m, (int)k, 1.0f, a->data, lda,
                b->data, ldb, beta, c->data, (int)m);
    return GM_OK;
  }
  for (int64_t i = 0; i < batches; i++)
    cblas_sgemm(CblasRowMajor, opa, opb, (int)n, (int)m, (int)k, 1.0f,
                a->data + batch_offset(a, nb, c->shape, i), lda,
                b->data + batch_offset(b, nb, c->shape, i), ldb, beta, c->data + i * n * m,
                (int)m);
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
  gm_matmul_into(c, a, b, trans_a, trans_b, 0.0f);
  gm_tensor *srcs[2] = {a, b};
  /* iarg[0] = trans_a, iarg[1] = trans_b */
  c = gm_record(c, GM_OP_MATMUL, srcs, 2);
  if (c) {
    c->iarg[0] = trans_a;
    c->iarg[1] = trans_b;
  }
  return c;
}
