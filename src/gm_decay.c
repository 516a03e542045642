/* gm_decay.c — GraphMERT's spatial decay mask f = λ^GELU(√(sp + offset) − p) and its
 * gradients with respect to p and, when they are learned, the distances.
 *
 * Distances are small integers in practice (hop counts), so both directions go through a
 * table: per head, f and df/dp for every distance 0..max once, then a lookup per pair (forward)
 * or a per-distance sum of the incoming gradient (backward). Non-integer distances (the graph
 * token's learned ones) take the direct path. With x = √(s + offset) − p, df/ds = −df/dp ·
 * 1/(2√(s + offset)), taken as 0 where s + offset = 0 (a distance of zero is not learned). */
#include <string.h>

#include "gm_internal.h"

/* f and df/dp at distance s for one p:  x = √(s + offset) − p,  f = exp(ln λ · GELU(x)),
 * df/dp = f · ln λ · (−GELU'(x)). Unreachable pairs (s = ∞) give f = 0 and no gradient. */
static void decay_at(double s, float p, float offset, float log_lambda, int gelu_tanh, float *f,
                     float *dfdp) {
  if (isinf(s)) {
    *f = 0.0f;
    *dfdp = 0.0f;
    return;
  }
  float x = sqrtf((float)s + offset) - p;
  float gelu = gelu_tanh ? gm_gelu_tanh_value(x) : gm_gelu_erf_value(x);
  float slope = gelu_tanh ? gm_gelu_tanh_grad(x) : gm_gelu_erf_grad(x);
  *f = expf(log_lambda * gelu);
  *dfdp = -*f * log_lambda * slope;
}

/* Every pair's distance as a table slot: the hop count, or max + 1 for unreachable pairs. NULL
 * (without an error) when a distance is not a whole number below 2^16 - 1: the direct path. */
static uint16_t *distance_slots(const gm_tensor *sp, int64_t *slots) {
  int64_t max = 0;
  for (int64_t i = 0; i < sp->numel; i++) {
    float s = sp->data[i];
    if (isinf(s)) continue;
    if (s != floorf(s) || s >= 65534.0f) return NULL;
    if ((int64_t)s > max) max = (int64_t)s;
  }
  uint16_t *idx = gm_malloc((size_t)sp->numel * sizeof(uint16_t));
  if (!idx) return NULL;
  for (int64_t i = 0; i < sp->numel; i++)
    idx[i] = isinf(sp->data[i]) ? (uint16_t)(max + 1) : (uint16_t)sp->data[i];
  *slots = max + 2;
  return idx;
}

/* f (and df/dp) for every slot of one head; the last slot is the unreachable one. */
static void fill_tables(int64_t slots, float p, float offset, float log_lambda, int gelu_tanh,
                        float *f, float *dfdp) {
  for (int64_t d = 0; d < slots; d++)
    decay_at(d == slots - 1 ? INFINITY : (double)d, p, offset, log_lambda, gelu_tanh, &f[d], &dfdp[d]);
}

static gm_status check_inputs(const gm_tensor *sp, const gm_tensor *p, float lambda,
                              float offset) {
  char a[GM_SHAPE_BUF], b[GM_SHAPE_BUF];
  if (sp->ndim != 2)
    return gm_fail(GM_ERR_SHAPE, 1, "distances must be a matrix (got %s)", GM_SHAPE(sp, a));
  for (int64_t i = 0; i < sp->numel; i++) {
    float s = sp->data[i];
    if (isnan(s) || s < 0)
      return gm_fail(GM_ERR_ARG, 1, "distance %g at position %lld is not >= 0 (use inf for unreachable)",
                     (double)s, (long long)i + 1);
  }
  int per_head = p->ndim == 1 || (p->ndim == 3 && p->shape[1] == 1 && p->shape[2] == 1);
  if (!(p->ndim == 0 || per_head))
    return gm_fail(GM_ERR_SHAPE, 2, "p must be a scalar, [H] or [H, 1, 1] (got %s)", GM_SHAPE(p, b));
  for (int64_t h = 0; h < p->numel; h++)
    if (!isfinite(p->data[h]))
      return gm_fail(GM_ERR_ARG, 2, "p must be finite (value %lld is %g)", (long long)h + 1,
                     (double)p->data[h]);
  if (!(lambda > 0 && lambda <= 1))
    return gm_fail(GM_ERR_ARG, 3, "lambda must be in (0, 1] (got %g)", (double)lambda);
  if (!(offset >= 0 && isfinite(offset)))
    return gm_fail(GM_ERR_ARG, 4, "offset must be finite and >= 0 (got %g)", (double)offset);
  return GM_OK;
}

GM_HOT gm_tensor *gm_decay_mask(gm_tensor *sp, gm_tensor *p, float lambda, float offset, int gelu_tanh) {
  if (check_inputs(sp, p, lambda, offset) != GM_OK) return NULL;
  int64_t pairs = sp->numel, heads = p->numel, slots = 0;
  int64_t shape[3] = {heads, sp->shape[0], sp->shape[1]};
  gm_tensor *out = p->ndim == 0 ? gm_tensor_empty(2, shape + 1) : gm_tensor_empty(3, shape);
  if (!out) return NULL;
  float log_lambda = logf(lambda);
  uint16_t *idx = lambda == 1.0f ? NULL : distance_slots(sp, &slots);
  float *table = idx ? gm_malloc((size_t)(2 * slots) * sizeof(float)) : NULL;
  if (idx && !table) {
    gm_free(idx);
    gm_tensor_release(out);
    return NULL;
  }
  for (int64_t h = 0; h < heads; h++) {
    float *o = out->data + h * pairs, ph = p->data[h];
    if (lambda == 1.0f) { /* λ^anything = 1, even for unreachable pairs */
      GM_FOR(i, pairs, pairs, { o[i] = 1.0f; });
    } else if (idx) {
      fill_tables(slots, ph, offset, log_lambda, gelu_tanh, table, table + slots);
      GM_FOR(i, pairs, pairs, { o[i] = table[idx[i]]; });
    } else {
      GM_FOR(i, pairs, pairs, {
        float unused;
        decay_at(sp->data[i], ph, offset, log_lambda, gelu_tanh, &o[i], &unused);
      });
    }
  }
  gm_free(table);
  gm_free(idx);
  /* src = {p, sp}; iarg[0] = gelu_tanh; farg[0] = lambda, farg[1] = offset */
  gm_tensor *srcs[2] = {p, sp};
  out = gm_record(out, GM_OP_DECAY_MASK, srcs, 2);
  if (out && out->op == GM_OP_DECAY_MASK) {
    out->iarg[0] = gelu_tanh;
    out->farg[0] = lambda;
    out->farg[1] = offset;
  }
  return out;
}

/* What gm_decay_mask recorded on its node, read in one place for both gradients. */
typedef struct {
  const gm_tensor *p, *sp;
  float lambda, offset, log_lambda; /* λ = 1: no decay, and no gradient */
  int gelu_tanh;
} recorded;

static recorded recorded_of(const gm_tensor *node) {
  return (recorded){node->src[0], node->src[1], node->farg[0], node->farg[1], logf(node->farg[0]), (int)node->iarg[0]};
}

/* dL/dp_h = Σ_ij g_hij · df/dp(sp_ij, p_h), with the sum grouped by distance when possible. */
static gm_tensor *p_gradient(const recorded *r, const gm_tensor *g) {
  const gm_tensor *p = r->p, *sp = r->sp;
  gm_tensor *dp = gm_tensor_full(p->ndim, p->shape, 0.0f);
  if (!dp || r->lambda == 1.0f) return dp;
  int64_t pairs = sp->numel, heads = p->numel, slots = 0;
  uint16_t *idx = distance_slots(sp, &slots);
  gm_status st = GM_OK;
  GM_FOR(h, heads, heads * pairs, {
    const float *gh = g->data + h * pairs;
    double total = 0;
    if (idx) { /* sum g per distance, then weigh each distance once */
      double *sums = calloc((size_t)slots, sizeof(double));
      float *f = malloc((size_t)(2 * slots) * sizeof(float));
      if (sums && f) {
        for (int64_t i = 0; i < pairs; i++) sums[idx[i]] += gh[i];
        fill_tables(slots, p->data[h], r->offset, r->log_lambda, r->gelu_tanh, f, f + slots);
        for (int64_t d = 0; d < slots; d++) total += sums[d] * f[slots + d];
      } else {
        st = GM_ERR_NOMEM;
      }
      free(sums);
      free(f);
    } else {
      for (int64_t i = 0; i < pairs; i++) {
        float f, dfdp;
        decay_at(sp->data[i], p->data[h], r->offset, r->log_lambda, r->gelu_tanh, &f, &dfdp);
        total += (double)gh[i] * dfdp;
      }
    }
    dp->data[h] = (float)total;
  });
  gm_free(idx);
  if (st != GM_OK) {
    gm_tensor_release(dp);
    gm_fail(st, 0, "not enough memory for the decay mask gradient");
    return NULL;
  }
  return dp;
}

/* dL/dsp_ij = Σ_h g_hij · df/ds(sp_ij, p_h) = Σ_h g_hij · (−df/dp) / (2√(sp_ij + offset)) */
static gm_tensor *distance_gradient(const recorded *r, const gm_tensor *g) {
  const gm_tensor *p = r->p, *sp = r->sp;
  gm_tensor *dsp = gm_tensor_full(sp->ndim, sp->shape, 0.0f);
  if (!dsp || r->lambda == 1.0f) return dsp;
  int64_t pairs = sp->numel, heads = p->numel;
  GM_FOR(i, pairs, heads * pairs, {
    float root = sqrtf(sp->data[i] + r->offset);
    if (root > 0) {
      double total = 0;
      for (int64_t h = 0; h < heads; h++) {
        float f, dfdp;
        decay_at(sp->data[i], p->data[h], r->offset, r->log_lambda, r->gelu_tanh, &f, &dfdp);
        total += (double)g->data[h * pairs + i] * dfdp;
      }
      dsp->data[i] = (float)(-total / (2.0 * root));
    }
  });
  return dsp;
}

gm_status gm_decay_mask_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **dp, gm_tensor **dsp) {
  recorded r = recorded_of(node);
  *dp = node->src[0]->requires_grad ? p_gradient(&r, g) : NULL;
  *dsp = NULL;
  if (node->src[0]->requires_grad && !*dp) return gm_last_status();
  if (node->src[1]->requires_grad) {
    *dsp = distance_gradient(&r, g);
    if (!*dsp) {
      gm_tensor_release(*dp);
      *dp = NULL;
      return gm_last_status();
    }
  }
  return GM_OK;
}
