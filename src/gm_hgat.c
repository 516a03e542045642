/* gm_hgat.c — GraphMERT's H-GAT relation fusion (official form, GRAPHMERT_SPEC §3).
 *
 * For tail token i with relation r and head tokens h_1..h_m (a contiguous run of rows of heads):
 *   u = W_r t_i,  w_j = W_r h_j,  s_j = a1·u + a2·w_j,  e_j = LeakyReLU_0.01(s_j),
 *   α = softmax_j(e),  out_i = Σ_j α_j w_j        (the caller adds it to t_i: t'_i = t_i + out_i)
 * a1 and a2 are the two halves of a_r [2H]: concatenated [a1 ‖ a2] as the paper writes it, or
 * interleaved (a1 = a_r[0::2], a2 = a_r[1::2]) as the official code's view(stack([u, w], -1))
 * computes it.
 *
 * Backward, with g = dL/dout_i:
 *   dα_j = g·w_j,  de_j = α_j (dα_j − Σ_k α_k dα_k),  ds_j = de_j · (s_j > 0 ? 1 : 0.01)
 *   dw_j = α_j g + ds_j a2,  du = (Σ_j ds_j) a1
 *   da1 += (Σ_j ds_j) u,  da2 += Σ_j ds_j w_j
 *   dW_r += du tᵀ + Σ_j dw_j h_jᵀ,  dt_i = W_rᵀ du,  dh_j += W_rᵀ dw_j
 * Tails are processed one after another (heads and relations are shared between tails, so the
 * accumulations would race); each tail costs O((m + 1) H²). */
#include <string.h>

#include "gm_internal.h"

#define HGAT_SLOPE 0.01f

static void matvec(const float *w, const float *x, float *y, int64_t h) { /* y = W x */
  for (int64_t r = 0; r < h; r++) {
    float acc = 0;
    for (int64_t c = 0; c < h; c++) acc += w[r * h + c] * x[c];
    y[r] = acc;
  }
}

static void matvec_t_add(const float *w, const float *x, float *y, int64_t h) { /* y += Wᵀ x */
  for (int64_t r = 0; r < h; r++) {
    float xr = x[r];
    for (int64_t c = 0; c < h; c++) y[c] += w[r * h + c] * xr;
  }
}

typedef struct hgat_problem {
  int64_t n_tails, n_heads, h, relations;
  int interleaved, base; /* base: where rel and start values count from (1 in Lua) */
} hgat_problem;

static float a1_at(const float *a, int64_t k, int interleaved) { return interleaved ? a[2 * k] : a[k]; }
static float a2_at(const float *a, int64_t k, int64_t h, int interleaved) {
  return interleaved ? a[2 * k + 1] : a[h + k];
}

/* Checks the index arrays; heads of tail i are rows start[i] .. start[i] + count[i] − 1. */
static gm_status check_hgat(const gm_tensor *tails, const gm_tensor *heads, const gm_tensor *w,
                            const gm_tensor *a, const gm_tensor *rel, const gm_tensor *start,
                            const gm_tensor *count, hgat_problem *pb) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF], z[GM_SHAPE_BUF];
  if (tails->ndim != 2 || heads->ndim != 2 || heads->shape[1] != tails->shape[1])
    return gm_fail(GM_ERR_SHAPE, 1, "hgat needs tails [n, H] and heads [m, H] (got %s and %s)",
                   GM_SHAPE(tails, x), GM_SHAPE(heads, y));
  int64_t h = tails->shape[1];
  if (w->ndim != 3 || w->shape[1] != h || w->shape[2] != h || a->ndim != 2 ||
      a->shape[0] != w->shape[0] || a->shape[1] != 2 * h)
    return gm_fail(GM_ERR_SHAPE, 3, "hgat needs W [K, H, H] and a [K, 2H] for H=%lld (got %s and %s)",
                   (long long)h, GM_SHAPE(w, z), GM_SHAPE(a, x));
  int64_t n = tails->shape[0];
  const gm_tensor *idx[3] = {rel, start, count};
  for (int i = 0; i < 3; i++)
    if (idx[i]->ndim != 1 || idx[i]->shape[0] != n)
      return gm_fail(GM_ERR_SHAPE, 5 + i, "hgat index %d must have one entry per tail (%lld; got %s)",
                     i + 1, (long long)n, GM_SHAPE(idx[i], x));
  float base = (float)pb->base;
  for (int64_t i = 0; i < n; i++) {
    float r = rel->data[i], s = start->data[i], c = count->data[i];
    if (r != floorf(r) || r < base || r >= (float)w->shape[0] + base)
      return gm_fail(GM_ERR_ARG, 5, "relation %g of tail %lld is not a row of W [%g, %g]", (double)r,
                     (long long)i + 1, (double)base, (double)(w->shape[0] - 1 + base));
    if (s != floorf(s) || c != floorf(c) || s < base || c < 1 || s - base + c > (float)heads->shape[0])
      return gm_fail(GM_ERR_ARG, 6, "heads %g..%g of tail %lld are not rows of heads [%g, %g]",
                     (double)s, (double)(s + c - 1), (long long)i + 1, (double)base,
                     (double)(heads->shape[0] - 1 + base));
  }
  pb->n_tails = n, pb->n_heads = heads->shape[0], pb->h = h, pb->relations = w->shape[0];
  return GM_OK;
}

/* Forward for one tail: fills u [h], wh [m, h], s [m], alpha [m] and out [h]. */
static void tail_forward(const hgat_problem *pb, const float *t, const float *heads,
                         const float *wr, const float *ar, int64_t m, float *u, float *wh, float *s,
                         float *alpha, float *out) {
  int64_t h = pb->h;
  matvec(wr, t, u, h);
  float u_score = 0;
  for (int64_t k = 0; k < h; k++) u_score += a1_at(ar, k, pb->interleaved) * u[k];
  float mx = -INFINITY;
  for (int64_t j = 0; j < m; j++) {
    matvec(wr, heads + j * h, wh + j * h, h);
    float sc = u_score;
    for (int64_t k = 0; k < h; k++) sc += a2_at(ar, k, h, pb->interleaved) * wh[j * h + k];
    s[j] = sc;
    float e = sc > 0 ? sc : HGAT_SLOPE * sc;
    alpha[j] = e;
    mx = e > mx ? e : mx;
  }
  float z = 0;
  for (int64_t j = 0; j < m; j++) z += (alpha[j] = expf(alpha[j] - mx));
  memset(out, 0, (size_t)h * sizeof(float));
  for (int64_t j = 0; j < m; j++) {
    alpha[j] /= z;
    for (int64_t k = 0; k < h; k++) out[k] += alpha[j] * wh[j * h + k];
  }
}

gm_tensor *gm_hgat(gm_tensor *tails, gm_tensor *heads, gm_tensor *w, gm_tensor *a,
                   gm_tensor *rel, gm_tensor *start, gm_tensor *count, int interleaved,
                   int index_base) {
  hgat_problem pb = {.base = index_base};
  if (check_hgat(tails, heads, w, a, rel, start, count, &pb) != GM_OK) return NULL;
  pb.interleaved = interleaved != 0;
  int64_t h = pb.h, max_m = 1;
  for (int64_t i = 0; i < pb.n_tails; i++)
    if ((int64_t)count->data[i] > max_m) max_m = (int64_t)count->data[i];
  gm_tensor *out = gm_tensor_empty(2, tails->shape);
  float *scratch = gm_malloc((size_t)((max_m + 1) * h + 2 * max_m + 1) * sizeof(float));
  if (!out || !scratch) {
    gm_tensor_release(out);
    gm_free(scratch);
    return NULL;
  }
  float *u = scratch, *wh = u + h, *s = wh + max_m * h, *alpha = s + max_m;
  for (int64_t i = 0; i < pb.n_tails; i++) {
    int64_t r = (int64_t)rel->data[i] - pb.base, m = (int64_t)count->data[i];
    int64_t st = (int64_t)start->data[i] - pb.base;
    tail_forward(&pb, tails->data + i * h, heads->data + st * h, w->data + r * h * h,
                 a->data + r * 2 * h, m, u, wh, s, alpha, out->data + i * h);
  }
  gm_free(scratch);
  gm_tensor *srcs[7] = {tails, heads, w, a, rel, start, count};
  out = gm_record(out, GM_OP_HGAT, srcs, 7);
  if (out && out->op == GM_OP_HGAT) {
    out->iarg[0] = pb.interleaved;
    out->iarg[1] = pb.base;
  }
  return out;
}

gm_status gm_hgat_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **dtails,
                           gm_tensor **dheads, gm_tensor **dw, gm_tensor **da) {
  gm_tensor *tails = node->src[0], *heads = node->src[1], *w = node->src[2], *a = node->src[3];
  gm_tensor *rel = node->src[4], *start = node->src[5], *count = node->src[6];
  hgat_problem pb = {.base = (int)node->iarg[1]};
  GM_ASSERT(check_hgat(tails, heads, w, a, rel, start, count, &pb) == GM_OK);
  pb.interleaved = (int)node->iarg[0];
  int64_t h = pb.h, max_m = 1;
  for (int64_t i = 0; i < pb.n_tails; i++)
    if ((int64_t)count->data[i] > max_m) max_m = (int64_t)count->data[i];
  *dtails = tails->requires_grad ? gm_tensor_full(2, tails->shape, 0.0f) : NULL;
  *dheads = heads->requires_grad ? gm_tensor_full(2, heads->shape, 0.0f) : NULL;
  *dw = w->requires_grad ? gm_tensor_full(3, w->shape, 0.0f) : NULL;
  *da = a->requires_grad ? gm_tensor_full(2, a->shape, 0.0f) : NULL;
  float *scratch = gm_malloc((size_t)((2 * max_m + 3) * h + 3 * max_m + 1) * sizeof(float));
  if ((tails->requires_grad && !*dtails) || (heads->requires_grad && !*dheads) ||
      (w->requires_grad && !*dw) || (a->requires_grad && !*da) || !scratch) {
    gm_tensor_release(*dtails), gm_tensor_release(*dheads), gm_tensor_release(*dw),
        gm_tensor_release(*da);
    *dtails = *dheads = *dw = *da = NULL;
    gm_free(scratch);
    return gm_last_status();
  }
  float *u = scratch, *wh = u + h, *s = wh + max_m * h, *alpha = s + max_m, *out = alpha + max_m;
  float *dwh = out + h, *du = dwh + max_m * h, *ds = du + h;
  for (int64_t i = 0; i < pb.n_tails; i++) {
    int64_t r = (int64_t)rel->data[i] - pb.base, m = (int64_t)count->data[i];
    int64_t st = (int64_t)start->data[i] - pb.base;
    const float *t = tails->data + i * h, *hd = heads->data + st * h, *gi = g->data + i * h;
    const float *wr = w->data + r * h * h, *ar = a->data + r * 2 * h;
    tail_forward(&pb, t, hd, wr, ar, m, u, wh, s, alpha, out);
    float dot = 0, ds_sum = 0;
    for (int64_t j = 0; j < m; j++) {
      float da_j = 0;
      for (int64_t k = 0; k < h; k++) da_j += gi[k] * wh[j * h + k];
      ds[j] = da_j; /* dα_j for now */
      dot += alpha[j] * da_j;
    }
    for (int64_t j = 0; j < m; j++) {
      float de = alpha[j] * (ds[j] - dot);
      ds[j] = de * (s[j] > 0 ? 1.0f : HGAT_SLOPE);
      ds_sum += ds[j];
      for (int64_t k = 0; k < h; k++)
        dwh[j * h + k] = alpha[j] * gi[k] + ds[j] * a2_at(ar, k, h, pb.interleaved);
    }
    for (int64_t k = 0; k < h; k++) du[k] = ds_sum * a1_at(ar, k, pb.interleaved);
    if (*da) {
      float *dar = (*da)->data + r * 2 * h;
      for (int64_t k = 0; k < h; k++) {
        float d1 = ds_sum * u[k], d2 = 0;
        for (int64_t j = 0; j < m; j++) d2 += ds[j] * wh[j * h + k];
        dar[pb.interleaved ? 2 * k : k] += d1;
        dar[pb.interleaved ? 2 * k + 1 : h + k] += d2;
      }
    }
    if (*dw) {
      float *dwr = (*dw)->data + r * h * h;
      for (int64_t p = 0; p < h; p++) {
        float *row = dwr + p * h;
        for (int64_t q = 0; q < h; q++) row[q] += du[p] * t[q];
        for (int64_t j = 0; j < m; j++) {
          float d = dwh[j * h + p];
          const float *hj = hd + j * h;
          for (int64_t q = 0; q < h; q++) row[q] += d * hj[q];
        }
      }
    }
    if (*dtails) matvec_t_add(wr, du, (*dtails)->data + i * h, h);
    if (*dheads)
      for (int64_t j = 0; j < m; j++) matvec_t_add(wr, dwh + j * h, (*dheads)->data + (st + j) * h, h);
  }
  gm_free(scratch);
  return GM_OK;
}
