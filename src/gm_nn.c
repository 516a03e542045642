/* gm_nn.c — layer norm, dropout and cross-entropy: forward kernels and the backward kernels
 * that gm_autograd.c calls. */
#include <math.h>
#include <string.h>

#include "gm_internal.h"

/* ---- layer norm over the last dimension --------------------------------------------------- */

/* One row of layer norm: q = (p − μ)·r·w + b, and (μ, r = 1/√(var + eps)) into st. The row
 * loops live here, out of the OpenMP body, where they vectorise (sums by GM_SUM8). */
GM_HOT static __attribute__((noinline)) void normalize_row(const float *p, int64_t d, float eps,
                                                           const float *w, const float *b, float *q,
                                                           float *st) {
  double mean, var;
  GM_SUM8(mean, d, j, p[j]);
  mean /= (double)d;
  GM_SUM8(var, d, j, ((double)p[j] - mean) * ((double)p[j] - mean));
  var /= (double)d; /* biased, as torch.nn.LayerNorm */
  float mu = (float)mean, rstd = (float)(1.0 / sqrt(var + eps));
  st[0] = mu;
  st[1] = rstd;
  for (int64_t j = 0; j < d; j++) q[j] = (p[j] - mu) * rstd;
  if (w)
    for (int64_t j = 0; j < d; j++) q[j] *= w[j];
  if (b)
    for (int64_t j = 0; j < d; j++) q[j] += b[j];
}

/* dx of one row (see gm_layer_norm_backward), out of the OpenMP body like normalize_row. */
GM_HOT static __attribute__((noinline)) void normalize_row_backward(const float *p, const float *gp,
                                                                    const float *w, int64_t d,
                                                                    float mu, float rstd, float *dx) {
  double mg, mgx;
  GM_SUM8(mg, d, j, gp[j] * (w ? w[j] : 1.0f));
  GM_SUM8(mgx, d, j, gp[j] * (w ? w[j] : 1.0f) * (p[j] - mu) * rstd);
  mg /= (double)d;
  mgx /= (double)d;
  for (int64_t j = 0; j < d; j++) {
    float gh = gp[j] * (w ? w[j] : 1.0f);
    float xh = (p[j] - mu) * rstd;
    dx[j] = rstd * (gh - (float)mg - xh * (float)mgx);
  }
}

GM_HOT gm_tensor *gm_layer_norm(gm_tensor *x, gm_tensor *weight, gm_tensor *bias, float eps) {
  char a[GM_SHAPE_BUF], b[GM_SHAPE_BUF];
  if (x->ndim < 1) {
    gm_fail(GM_ERR_SHAPE, 1, "layer_norm needs at least one dimension");
    return NULL;
  }
  int64_t d = x->shape[x->ndim - 1], rows = d ? x->numel / d : 0;
  gm_tensor *params[2] = {weight, bias};
  for (int i = 0; i < 2; i++)
    if (params[i] && !(params[i]->ndim == 1 && params[i]->shape[0] == d)) {
      gm_fail(GM_ERR_SHAPE, 2 + i, "layer_norm %s of size %s does not match input %s",
              i ? "bias" : "weight", GM_SHAPE(params[i], a), GM_SHAPE(x, b));
      return NULL;
    }
  if (!(eps >= 0)) {
    gm_fail(GM_ERR_ARG, 4, "layer_norm eps must be >= 0");
    return NULL;
  }
  int64_t stats_shape[2] = {rows, 2};
  gm_tensor *out = gm_tensor_empty(x->ndim, x->shape);
  gm_tensor *stats = gm_tensor_empty(2, stats_shape); /* mean, 1/sqrt(var + eps) per row */
  if (!out || !stats) {
    gm_tensor_release(out);
    gm_tensor_release(stats);
    return NULL;
  }
  GM_FOR(r, rows, x->numel, { normalize_row(x->data + r * d, d, eps, weight ? weight->data : NULL,
                                             bias ? bias->data : NULL, out->data + r * d,
                                             stats->data + 2 * r); });
  gm_tensor *srcs[3] = {x, weight, bias};
  /* no iarg; saved = mean and 1/std per row */
  out = gm_record(out, GM_OP_LAYER_NORM, srcs, 3);
  if (out && out->op == GM_OP_LAYER_NORM) gm_node_save(out, stats);
  else gm_tensor_release(stats);
  return out;
}

/* With x̂ = (x − μ) r and ĝ = g ⊙ w:
 *   dx = r (ĝ − mean(ĝ) − x̂ mean(ĝ ⊙ x̂)),  dw = Σ_rows g ⊙ x̂,  db = Σ_rows g.
 * dx, dw, db may be NULL when not needed; dw and db are accumulated into (zeroed by caller). */
GM_HOT void gm_layer_norm_backward(const gm_tensor *x, const gm_tensor *weight, const gm_tensor *stats,
                            const gm_tensor *g, float *dx, float *dw, float *db) {
  int64_t d = x->shape[x->ndim - 1], rows = d ? x->numel / d : 0;
  if (dx)
    GM_FOR(r, rows, x->numel, {
      normalize_row_backward(x->data + r * d, g->data + r * d, weight ? weight->data : NULL, d,
                             stats->data[2 * r], stats->data[2 * r + 1], dx + r * d);
    });
  if (!dw && !db) return;
  /* dw and db: each thread a block of columns over all rows, in row order, so the sums are the
   * same for any number of threads (it was one thread over everything) */
  int64_t blocks = (d + 63) / 64;
  GM_FOR(c, blocks, x->numel, {
    int64_t j0 = c * 64, j1 = j0 + 64 < d ? j0 + 64 : d;
    if (dw)
      for (int64_t r = 0; r < rows; r++) {
        const float *p = x->data + r * d, *gp = g->data + r * d;
        float mu = stats->data[2 * r], rstd = stats->data[2 * r + 1];
        for (int64_t j = j0; j < j1; j++) dw[j] += gp[j] * (p[j] - mu) * rstd;
      }
    if (db) gm_add_rows(db + j0, g->data + j0, rows, d, j1 - j0); /* a bias's gradient */
  });
}

/* ---- dropout ----------------------------------------------------------------------------- */

/* The mask is not stored: one seed is drawn, and forward and backward both recompute each
 * element's multiplier from (seed, index). */
GM_HOT void gm_dropout_apply(const float *in, float *out, int64_t n, uint64_t seed, float p) {
  uint32_t threshold = (uint32_t)(p * 16777216.0f);
  float scale = p < 1 ? 1.0f / (1.0f - p) : 0.0f;
  if (p >= 1.0f) threshold = 1u << 24;
  /* runs of 4096 never cross a multiple of 2^32: each takes gm_dropout_run's 32-bit path */
  GM_FOR(run, (n + 4095) / 4096, n, {
    int64_t i = run * 4096;
    gm_dropout_run(seed, (uint64_t)i, n - i < 4096 ? n - i : 4096, threshold, scale, in + i, out + i, NULL);
  });
}

gm_tensor *gm_dropout(gm_tensor *x, float p, gm_rng *rng) {
  if (!(p >= 0 && p <= 1)) {
    gm_fail(GM_ERR_ARG, 2, "dropout probability must be in [0, 1] (got %g)", (double)p);
    return NULL;
  }
  gm_tensor *out = gm_tensor_empty(x->ndim, x->shape);
  if (!out) return NULL;
  uint64_t seed = gm_rng_next(rng);
  gm_dropout_apply(x->data, out->data, x->numel, seed, p);
  /* iarg[0] = the mask seed; farg[0] = p */
  out = gm_record(out, GM_OP_DROPOUT, &x, 1);
  if (out && out->op == GM_OP_DROPOUT) {
    out->iarg[0] = (int64_t)seed;
    out->farg[0] = p;
  }
  return out;
}

/* ---- cross-entropy ----------------------------------------------------------------------- */

gm_tensor *gm_cross_entropy(gm_tensor *logits, gm_tensor *target, int index_base,
                            int64_t ignore_index) {
  char a[GM_SHAPE_BUF], b[GM_SHAPE_BUF];
  if (logits->ndim != 2 || target->ndim != 1 || target->shape[0] != logits->shape[0]) {
    gm_fail(GM_ERR_SHAPE, 2, "cross_entropy needs logits NxC and target N (got %s and %s)",
            GM_SHAPE(logits, a), GM_SHAPE(target, b));
    return NULL;
  }
  int64_t n = logits->shape[0], c = logits->shape[1];
  for (int64_t i = 0; i < n; i++) {
    float t = target->data[i];
    if (t == (float)ignore_index) continue;
    if (!(t == floorf(t)) || t < (float)index_base || t >= (float)(index_base + c)) {
      gm_fail(GM_ERR_ARG, 2, "target %g at position %lld is not a class in [%d, %lld]",
              (double)t, (long long)i + 1, index_base, (long long)(index_base + c - 1));
      return NULL;
    }
  }
  gm_tensor *probs = gm_tensor_empty(2, logits->shape);
  gm_tensor *loss = gm_tensor_empty(0, NULL);
  if (!probs || !loss) {
    gm_tensor_release(probs);
    gm_tensor_release(loss);
    return NULL;
  }
  double total = 0;
  int64_t count = 0;
#pragma omp parallel for reduction(+ : total, count) if (logits->numel > GM_PAR_MIN)
  for (int64_t i = 0; i < n; i++) {
    const float *row = logits->data + i * c;
    float lz = gm_softmax_row(row, c, 1, probs->data + i * c, 0);
    float t = target->data[i];
    if (t != (float)ignore_index) {
      total += lz - row[(int64_t)t - index_base];
      count++;
    }
  }
  loss->data[0] = (float)(total / (double)count); /* 0/0 = NaN when all are ignored, as PyTorch */
  gm_tensor *srcs[2] = {logits, target};
  /* iarg[0] = the class index base, iarg[1] = ignore_index, iarg[2] = the rows counted;
   * saved = the softmax probabilities */
  loss = gm_record(loss, GM_OP_CROSS_ENTROPY, srcs, 1);
  if (loss && loss->op == GM_OP_CROSS_ENTROPY) {
    gm_node_save(loss, probs);
    loss->iarg[0] = index_base;
    loss->iarg[1] = ignore_index;
    loss->iarg[2] = count;
    /* the target is needed by backward too: keep it as the second source (no gradient) */
    loss->src[1] = target;
    loss->nsrc = 2;
    gm_tensor_retain(target);
  } else {
    gm_tensor_release(probs);
  }
  return loss;
}

/* d loss / d logits[i, j] = g (softmax_ij − [j = target_i]) / count, 0 on ignored rows. */
void gm_cross_entropy_backward(const gm_tensor *probs, const gm_tensor *target, int index_base,
                               int64_t ignore_index, int64_t count, float g, float *dlogits) {
  int64_t n = probs->shape[0], c = probs->shape[1];
  float scale = g / (float)count;
  for (int64_t i = 0; i < n; i++) {
    float t = target->data[i];
    float *d = dlogits + i * c;
    if (t == (float)ignore_index) {
      memset(d, 0, (size_t)c * sizeof(float));
      continue;
    }
    const float *p = probs->data + i * c;
    for (int64_t j = 0; j < c; j++) d[j] = p[j] * scale;
    d[(int64_t)t - index_base] -= scale;
  }
}
