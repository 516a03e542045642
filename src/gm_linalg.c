/* gm_linalg.c — batched linear solve X = A⁻¹ B with its backward (for the Cayley transform of
 * volume-preserving attention).
 *
 * Each slice is factored by LU with partial pivoting in double precision (the matrices are
 * small: sequence length × sequence length), so float32 inputs lose nothing to the solve.
 *
 * Backward (X = A⁻¹B, loss gradient G = ∂L/∂X):
 *   dB = A⁻ᵀ G                 (from A X = B: A dX = dB − dA X)
 *   dA = −dB Xᵀ                (summed over the batch when one A serves every slice) */
#include "gm_internal.h"

/* Solves op(A) X = B for one slice: a [n, n] (transposed when trans), b [n, k] → x [n, k].
 * lu is n·n doubles of scratch, piv n ints, col n doubles. Returns 0, or 1 for a singular A. */
static int solve_slice(const float *a, const float *b, float *x, int64_t n, int64_t k, int trans,
                       double *lu, int64_t *piv, double *col) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) lu[i * n + j] = trans ? a[j * n + i] : a[i * n + j];
  for (int64_t c = 0; c < n; c++) {
    int64_t p = c;
    for (int64_t r = c + 1; r < n; r++)
      if (fabs(lu[r * n + c]) > fabs(lu[p * n + c])) p = r;
    if (lu[p * n + c] == 0 || !isfinite(lu[p * n + c])) return 1;
    piv[c] = p;
    if (p != c)
      for (int64_t j = 0; j < n; j++) {
        double t = lu[c * n + j];
        lu[c * n + j] = lu[p * n + j];
        lu[p * n + j] = t;
      }
    for (int64_t r = c + 1; r < n; r++) {
      double f = lu[r * n + c] /= lu[c * n + c];
      for (int64_t j = c + 1; j < n; j++) lu[r * n + j] -= f * lu[c * n + j];
    }
  }
  for (int64_t j = 0; j < k; j++) {
    for (int64_t i = 0; i < n; i++) col[i] = b[i * k + j];
    for (int64_t c = 0; c < n; c++) { /* the row swaps, then L y = P b */
      double t = col[c];
      col[c] = col[piv[c]];
      col[piv[c]] = t;
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t c = 0; c < i; c++) col[i] -= lu[i * n + c] * col[c];
    for (int64_t i = n - 1; i >= 0; i--) { /* U x = y */
      for (int64_t c = i + 1; c < n; c++) col[i] -= lu[i * n + c] * col[c];
      col[i] /= lu[i * n + i];
    }
    for (int64_t i = 0; i < n; i++) x[i * k + j] = (float)col[i];
  }
  return 0;
}

/* Solves every slice; a_stride 0 means one A for all. */
static gm_status solve_all(const float *a, int64_t a_stride, const float *b, float *x,
                           int64_t slices, int64_t n, int64_t k, int trans) {
  double *lu = malloc(sizeof(double) * (size_t)(n * n + n) + 1);
  int64_t *piv = malloc(sizeof(int64_t) * (size_t)n + 1);
  if (!lu || !piv) {
    free(lu);
    free(piv);
    return gm_fail(GM_ERR_NOMEM, 0, "solve: out of memory for a %lldx%lld factorisation",
                   (long long)n, (long long)n);
  }
  gm_status st = GM_OK;
  for (int64_t s = 0; s < slices && st == GM_OK; s++)
    if (solve_slice(a + s * a_stride, b + s * n * k, x + s * n * k, n, k, trans, lu, piv, lu + n * n))
      st = gm_fail(GM_ERR_ARG, 1, "solve: matrix %lld of the batch is singular", (long long)s + 1);
  free(lu);
  free(piv);
  return st;
}

gm_tensor *gm_solve(gm_tensor *a, gm_tensor *b) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  int ok = a->ndim >= 2 && b->ndim >= 2 && a->shape[a->ndim - 1] == a->shape[a->ndim - 2] &&
           b->shape[b->ndim - 2] == a->shape[a->ndim - 1] && (a->ndim == 2 || a->ndim == b->ndim);
  for (int d = 0; ok && a->ndim > 2 && d < a->ndim - 2; d++) ok = a->shape[d] == b->shape[d];
  if (!ok) {
    gm_fail(GM_ERR_SHAPE, 2, "solve needs A [..., n, n] and B [..., n, k] with the same batch (got %s and %s)",
            GM_SHAPE(a, x), GM_SHAPE(b, y));
    return NULL;
  }
  int64_t n = b->shape[b->ndim - 2], k = b->shape[b->ndim - 1];
  int64_t slices = n * k != 0 ? b->numel / (n * k) : 0;
  gm_tensor *out = gm_tensor_empty(b->ndim, b->shape);
  if (!out) return NULL;
  if (solve_all(a->data, a->ndim == 2 ? 0 : n * n, b->data, out->data, slices, n, k, 0) != GM_OK) {
    gm_tensor_release(out);
    return NULL;
  }
  gm_tensor *srcs[2] = {a, b};
  return gm_record(out, GM_OP_SOLVE, srcs, 2); /* no iarg: backward reads A and X */
}

gm_status gm_solve_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **da,
                            gm_tensor **db) {
  const gm_tensor *a = node->src[0], *b = node->src[1];
  int64_t n = b->shape[b->ndim - 2], k = b->shape[b->ndim - 1];
  int64_t slices = n * k != 0 ? b->numel / (n * k) : 0, a_stride = a->ndim == 2 ? 0 : n * n;
  *da = *db = NULL;
  gm_tensor *gb = gm_tensor_empty(b->ndim, b->shape);
  if (!gb) return gm_last_status();
  gm_status st = solve_all(a->data, a_stride, g->data, gb->data, slices, n, k, 1);
  if (st == GM_OK && a->requires_grad) {
    *da = gm_tensor_full(a->ndim, a->shape, 0.0f);
    if (!*da) st = gm_last_status();
    for (int64_t s = 0; st == GM_OK && s < slices; s++) /* dA −= dB Xᵀ */
      gm_gemm(0, 1, n, n, k, -1.0f, gb->data + s * n * k, k, node->data + s * n * k, k, 1.0f,
              (*da)->data + s * a_stride, n);
  }
  if (st == GM_OK && b->requires_grad) *db = gb;
  else gm_tensor_release(gb);
  if (st != GM_OK) {
    gm_tensor_release(*da);
    *da = NULL;
    *db = NULL;
  }
  return st;
}
