/* gm_reduce.c — sum, mean and max over a dimension or over everything; softmax and
 * log-softmax over a dimension (max-shifted, so large logits stay finite). */
#include <float.h>
#include <math.h>

#include "gm_internal.h"

/* Result shape of reducing dim of t: dropped, or kept as 1. */
static int reduced_shape(const gm_tensor *t, int dim, int keepdim, int64_t *shape) {
  int n = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (i != dim) shape[n++] = t->shape[i];
    else if (keepdim) shape[n++] = 1;
  }
  return n;
}

typedef enum { RED_SUM, RED_MEAN, RED_MAX } reduce_kind;

GM_HOT static gm_tensor *reduce(gm_tensor *a, int dim, int keepdim, reduce_kind kind,
                         gm_tensor **indices) {
  int64_t outer, size, inner, shape[GM_MAX_DIMS];
  int ndim;
  if (dim < 0) { /* everything: view as one row */
    outer = 1;
    size = a->numel;
    inner = 1;
    ndim = 0;
  } else {
    if (gm_check_dim(a, dim, 2) != GM_OK) return NULL;
    gm_dim_split(a, dim, &outer, &size, &inner);
    ndim = reduced_shape(a, dim, keepdim, shape);
  }
  if (kind == RED_MAX && size == 0) {
    gm_fail(GM_ERR_SHAPE, 1, "max of an empty dimension");
    return NULL;
  }
  gm_tensor *out = gm_tensor_empty(ndim, shape);
  gm_tensor *idx = kind == RED_MAX ? gm_tensor_empty(ndim, shape) : NULL;
  if (!out || (kind == RED_MAX && !idx)) {
    gm_tensor_release(out);
    gm_tensor_release(idx);
    return NULL;
  }
  const float *x = a->data;
  float *o = out->data;
  GM_FOR(row, outer * inner, a->numel, {
      int64_t i = row / inner, k = row % inner;
      const float *p = x + i * size * inner + k;
      if (kind == RED_MAX) {
        float best = p[0];
        int64_t at = 0;
        for (int64_t j = 1; j < size; j++)
          if (p[j * inner] > best || isnan(p[j * inner])) {
            best = p[j * inner];
            at = j;
            if (isnan(best)) break;
          }
        o[i * inner + k] = best;
        idx->data[i * inner + k] = (float)at;
      } else {
        double acc = 0; /* double accumulation keeps long sums accurate */
        for (int64_t j = 0; j < size; j++) acc += p[j * inner];
        o[i * inner + k] = (float)(kind == RED_MEAN ? acc / (double)size : acc);
      }
  });
  static const gm_op ops[] = {GM_OP_SUM, GM_OP_MEAN, GM_OP_MAX};
  /* iarg[0] = dim (< 0: all), iarg[1] = keepdim; saved = the argmax for max */
  out = gm_record(out, ops[kind], &a, 1);
  if (!out) {
    gm_tensor_release(idx);
    return NULL;
  }
  out->iarg[0] = dim;
  out->iarg[1] = keepdim;
  if (idx) {
    if (out->op == GM_OP_MAX) {
      gm_node_save(out, idx);
      gm_tensor_retain(idx);
    }
    if (indices) *indices = idx;
    else gm_tensor_release(idx);
  }
  return out;
}

gm_tensor *gm_sum(gm_tensor *a, int dim, int keepdim) { return reduce(a, dim, keepdim, RED_SUM, NULL); }
gm_tensor *gm_mean(gm_tensor *a, int dim, int keepdim) { return reduce(a, dim, keepdim, RED_MEAN, NULL); }
gm_tensor *gm_max(gm_tensor *a, int dim, int keepdim, gm_tensor **indices) {
  return reduce(a, dim, keepdim, RED_MAX, indices);
}

/* ---- softmax ----------------------------------------------------------------------------- */

/* One row at any stride. Inlined twice by gm_softmax_row: with the stride a constant 1 (every
 * softmax over the last dimension) its loops vectorise, which a variable stride kept scalar
 * (1.6 ns an element on a vocabulary row, a tenth of extraction); the same operations either
 * way, so the same bits. */
static inline __attribute__((always_inline)) float softmax_strided(const float *restrict x, int64_t n, int64_t stride,
                                                                   float *restrict y, int log_form) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; j++) m = x[j * stride] > m ? x[j * stride] : m; /* NaN skipped, as by fmaxf */
  if (m == -INFINITY) m = 0; /* an all -inf row gives NaN as in PyTorch, not a shifted one */
#pragma omp simd
  for (int64_t j = 0; j < n; j++) y[j * stride] = gm_exp_nonpositive(x[j * stride] - m);
  double z;
  GM_SUM8(z, n, j, y[j * stride]);
  float lz = (float)log(z) + m;
  if (log_form) {
#pragma omp simd
    for (int64_t j = 0; j < n; j++) y[j * stride] = x[j * stride] - lz;
  } else { /* e^(x − m) / Σ: e^(x − lz) would lose lz's rounding (large logits: 6e-5 at 1000) */
    float inv = (float)(1.0 / z);
#pragma omp simd
    for (int64_t j = 0; j < n; j++) y[j * stride] *= inv;
  }
  return lz;
}

GM_HOT float gm_softmax_row(const float *x, int64_t n, int64_t stride, float *y, int log_form) {
  return stride == 1 ? softmax_strided(x, n, 1, y, log_form) : softmax_strided(x, n, stride, y, log_form);
}

static gm_tensor *softmax_any(gm_tensor *a, int dim, int log_softmax) {
  if (gm_check_dim(a, dim, 2) != GM_OK) return NULL;
  int64_t outer, size, inner;
  gm_dim_split(a, dim, &outer, &size, &inner);
  gm_tensor *out = gm_tensor_empty(a->ndim, a->shape);
  if (!out) return NULL;
  const float *x = a->data;
  float *y = out->data;
  GM_FOR(row, outer * inner, a->numel, {
      int64_t i = row / inner, k = row % inner;
      gm_softmax_row(x + i * size * inner + k, size, inner, y + i * size * inner + k, log_softmax);
  });
  /* iarg[0] = dim */
  out = gm_record(out, log_softmax ? GM_OP_LOG_SOFTMAX : GM_OP_SOFTMAX, &a, 1);
  if (out) out->iarg[0] = dim;
  return out;
}

gm_tensor *gm_softmax(gm_tensor *a, int dim) { return softmax_any(a, dim, 0); }
gm_tensor *gm_log_softmax(gm_tensor *a, int dim) { return softmax_any(a, dim, 1); }

/* softmax:     dx = y ⊙ (g − Σ_j g_j y_j)
 * log-softmax: dx = g − softmax(x) Σ_j g_j  with softmax(x) = exp(y) */
GM_HOT void gm_softmax_backward_kernel(const gm_tensor *y, const gm_tensor *g, gm_tensor *dx, int dim,
                                int log_softmax) {
  int64_t outer, size, inner;
  gm_dim_split(y, dim, &outer, &size, &inner);
  GM_FOR(row, outer * inner, y->numel, {
      int64_t base = (row / inner) * size * inner + row % inner;
      const float *yp = y->data + base, *gp = g->data + base;
      float *dp = dx->data + base;
      double dot = 0;
      if (log_softmax) {
        for (int64_t j = 0; j < size; j++) dot += gp[j * inner];
        for (int64_t j = 0; j < size; j++)
          dp[j * inner] = gp[j * inner] - expf(yp[j * inner]) * (float)dot;
      } else {
        for (int64_t j = 0; j < size; j++) dot += (double)gp[j * inner] * yp[j * inner];
        for (int64_t j = 0; j < size; j++)
          dp[j * inner] = yp[j * inner] * (gp[j * inner] - (float)dot);
      }
  });
}

/* The backward of sum/mean/max over dim (or all when dim < 0): spread g back over the input. */
gm_tensor *gm_reduction_backward(const gm_tensor *node, const gm_tensor *g) {
  const gm_tensor *a = node->src[0];
  int dim = (int)node->iarg[0];
  int64_t outer = 1, size = a->numel, inner = 1;
  if (dim >= 0) gm_dim_split(a, dim, &outer, &size, &inner);
  gm_tensor *dx = gm_tensor_full(a->ndim, a->shape, 0.0f);
  if (!dx) return NULL;
  float scale = node->op == GM_OP_MEAN ? 1.0f / (float)size : 1.0f;
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < inner; k++) {
      float gv = g->data[o * inner + k];
      float *p = dx->data + o * size * inner + k;
      if (node->op == GM_OP_MAX) /* only the (first) maximum moves the output */
        p[(int64_t)node->saved->data[o * inner + k] * inner] = gv;
      else
        for (int64_t j = 0; j < size; j++) p[j * inner] = gv * scale;
    }
  return dx;
}
