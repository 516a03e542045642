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
 * Work goes relation by relation: the projections of all its tails and heads are two sgemms,
 * the rest O(m H) per tail, and the weight gradient two more sgemms. */
#include <string.h>

#include "gm_internal.h"

#define HGAT_SLOPE 0.01f

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

/* Tails are processed relation by relation: U = T W_rᵀ for all tails of r and WH = Hd W_rᵀ for
 * every head row they use, each one product (gm_gemm); then per tail only O(m H) work. */
typedef struct relation_group {
  int64_t n;        /* tails of this relation */
  int64_t *tails;   /* their rows in tails */
  int64_t k;        /* distinct head rows they use */
  int64_t *heads;   /* those rows of heads */
  int64_t *slot;    /* heads row → index into this group's head list, or −1 (size n_heads) */
} relation_group;

/* Gathers rows of src [*, h] into dst [count, h]. */
static void gather_rows(const float *src, const int64_t *rows, int64_t count, int64_t h, float *dst) {
  for (int64_t i = 0; i < count; i++) memcpy(dst + i * h, src + rows[i] * h, (size_t)h * sizeof(float));
}

static void group_build(const hgat_problem *pb, const gm_tensor *rel, const gm_tensor *start,
                        const gm_tensor *count, int64_t r, relation_group *g, int64_t *tail_buf,
                        int64_t *head_buf, int64_t *slot) {
  g->n = g->k = 0;
  g->tails = tail_buf, g->heads = head_buf, g->slot = slot;
  for (int64_t i = 0; i < pb->n_tails; i++) {
    if ((int64_t)rel->data[i] - pb->base != r) continue;
    g->tails[g->n++] = i;
    int64_t st = (int64_t)start->data[i] - pb->base, m = (int64_t)count->data[i];
    for (int64_t j = st; j < st + m; j++)
      if (slot[j] < 0) {
        slot[j] = g->k;
        g->heads[g->k++] = j;
      }
  }
}

static void group_reset(relation_group *g) {
  for (int64_t j = 0; j < g->k; j++) g->slot[g->heads[j]] = -1;
}

/* Softmax weights of tail i over its heads: s_j = a1·u + a2·wh_j, e = LeakyReLU(s), α = softmax(e). */
static void tail_scores(const hgat_problem *pb, const float *u, const float *wh, const int64_t *slots,
                        int64_t m, const float *ar, float *s, float *alpha) {
  int64_t h = pb->h;
  float u_score = 0, mx = -INFINITY, z = 0;
  for (int64_t k = 0; k < h; k++) u_score += a1_at(ar, k, pb->interleaved) * u[k];
  for (int64_t j = 0; j < m; j++) {
    const float *w = wh + slots[j] * h;
    float sc = u_score;
    for (int64_t k = 0; k < h; k++) sc += a2_at(ar, k, h, pb->interleaved) * w[k];
    s[j] = sc;
    alpha[j] = sc > 0 ? sc : HGAT_SLOPE * sc;
    mx = alpha[j] > mx ? alpha[j] : mx;
  }
  for (int64_t j = 0; j < m; j++) z += (alpha[j] = expf(alpha[j] - mx));
  for (int64_t j = 0; j < m; j++) alpha[j] /= z;
}

typedef struct hgat_buffers {
  int64_t *tail_buf, *head_buf, *slot, *slots;
  float *t, *hd, *u, *wh, *s, *alpha, *dalpha, *du, *dwh;
} hgat_buffers;

static void buffers_free(hgat_buffers *b) {
  gm_free(b->tail_buf), gm_free(b->head_buf), gm_free(b->slot), gm_free(b->slots);
  gm_free(b->t), gm_free(b->hd), gm_free(b->u), gm_free(b->wh), gm_free(b->s), gm_free(b->alpha);
  gm_free(b->dalpha);
  gm_free(b->du), gm_free(b->dwh);
}

static gm_status buffers_alloc(const hgat_problem *pb, int64_t max_m, int backward, hgat_buffers *b) {
  int64_t n = pb->n_tails ? pb->n_tails : 1, k = pb->n_heads ? pb->n_heads : 1, h = pb->h;
  memset(b, 0, sizeof *b);
  b->tail_buf = gm_malloc((size_t)n * sizeof(int64_t));
  b->head_buf = gm_malloc((size_t)k * sizeof(int64_t));
  b->slot = gm_malloc((size_t)k * sizeof(int64_t));
  b->slots = gm_malloc((size_t)max_m * sizeof(int64_t));
  b->t = gm_malloc((size_t)(n * h) * sizeof(float));
  b->hd = gm_malloc((size_t)(k * h) * sizeof(float));
  b->u = gm_malloc((size_t)(n * h) * sizeof(float));
  b->wh = gm_malloc((size_t)(k * h) * sizeof(float));
  b->s = gm_malloc((size_t)max_m * sizeof(float));
  b->alpha = gm_malloc((size_t)max_m * sizeof(float));
  b->dalpha = gm_malloc((size_t)max_m * sizeof(float));
  if (backward) {
    b->du = gm_malloc((size_t)(n * h) * sizeof(float));
    b->dwh = gm_malloc((size_t)(k * h) * sizeof(float));
  }
  if (!b->tail_buf || !b->head_buf || !b->slot || !b->slots || !b->t || !b->hd || !b->u || !b->wh ||
      !b->s || !b->alpha || !b->dalpha || (backward && (!b->du || !b->dwh))) {
    buffers_free(b);
    return gm_last_status();
  }
  for (int64_t j = 0; j < k; j++) b->slot[j] = -1;
  return GM_OK;
}

/* U = T W_rᵀ and WH = Hd W_rᵀ for one relation group. */
static void group_project(const hgat_problem *pb, const relation_group *g, const float *tails,
                          const float *heads, const float *wr, hgat_buffers *b) {
  int64_t h = pb->h;
  gather_rows(tails, g->tails, g->n, h, b->t);
  gather_rows(heads, g->heads, g->k, h, b->hd);
  gm_gemm(0, 1, g->n, h, h, 1.0f, b->t, h, wr, h, 0.0f, b->u, h);
  gm_gemm(0, 1, g->k, h, h, 1.0f, b->hd, h, wr, h, 0.0f, b->wh, h);
}

static int64_t max_heads(const gm_tensor *count) {
  int64_t max_m = 1;
  for (int64_t i = 0; i < count->numel; i++)
    if ((int64_t)count->data[i] > max_m) max_m = (int64_t)count->data[i];
  return max_m;
}

gm_tensor *gm_hgat(gm_tensor *tails, gm_tensor *heads, gm_tensor *w, gm_tensor *a,
                   gm_tensor *rel, gm_tensor *start, gm_tensor *count, int interleaved,
                   int index_base) {
  hgat_problem pb = {.base = index_base};
  if (check_hgat(tails, heads, w, a, rel, start, count, &pb) != GM_OK) return NULL;
  pb.interleaved = interleaved != 0;
  int64_t h = pb.h, max_m = max_heads(count);
  hgat_buffers b;
  gm_tensor *out = gm_tensor_full(2, tails->shape, 0.0f);
  if (!out || buffers_alloc(&pb, max_m, 0, &b) != GM_OK) {
    gm_tensor_release(out);
    return NULL;
  }
  for (int64_t r = 0; r < pb.relations; r++) {
    relation_group g;
    group_build(&pb, rel, start, count, r, &g, b.tail_buf, b.head_buf, b.slot);
    if (g.n == 0) continue;
    group_project(&pb, &g, tails->data, heads->data, w->data + r * h * h, &b);
    const float *ar = a->data + r * 2 * h;
    for (int64_t q = 0; q < g.n; q++) {
      int64_t i = g.tails[q], st = (int64_t)start->data[i] - pb.base, m = (int64_t)count->data[i];
      for (int64_t j = 0; j < m; j++) b.slots[j] = g.slot[st + j];
      tail_scores(&pb, b.u + q * h, b.wh, b.slots, m, ar, b.s, b.alpha);
      float *o = out->data + i * h;
      for (int64_t j = 0; j < m; j++) {
        const float *wj = b.wh + b.slots[j] * h;
        for (int64_t k = 0; k < h; k++) o[k] += b.alpha[j] * wj[k];
      }
    }
    group_reset(&g);
  }
  buffers_free(&b);
  gm_tensor *srcs[7] = {tails, heads, w, a, rel, start, count};
  /* iarg[0] = interleaved, iarg[1] = the index base of rel and start */
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
  int64_t h = pb.h, max_m = max_heads(count);
  *dtails = tails->requires_grad ? gm_tensor_full(2, tails->shape, 0.0f) : NULL;
  *dheads = heads->requires_grad ? gm_tensor_full(2, heads->shape, 0.0f) : NULL;
  *dw = w->requires_grad ? gm_tensor_full(3, w->shape, 0.0f) : NULL;
  *da = a->requires_grad ? gm_tensor_full(2, a->shape, 0.0f) : NULL;
  hgat_buffers b;
  int bad = (tails->requires_grad && !*dtails) || (heads->requires_grad && !*dheads) ||
            (w->requires_grad && !*dw) || (a->requires_grad && !*da);
  if (bad || buffers_alloc(&pb, max_m, 1, &b) != GM_OK) {
    if (!bad) gm_fail(GM_ERR_NOMEM, 0, "not enough memory for the H-GAT backward");
    gm_tensor_release(*dtails), gm_tensor_release(*dheads), gm_tensor_release(*dw),
        gm_tensor_release(*da);
    *dtails = *dheads = *dw = *da = NULL;
    return gm_last_status();
  }
  for (int64_t r = 0; r < pb.relations; r++) {
    relation_group grp;
    group_build(&pb, rel, start, count, r, &grp, b.tail_buf, b.head_buf, b.slot);
    if (grp.n == 0) continue;
    const float *wr = w->data + r * h * h, *ar = a->data + r * 2 * h;
    group_project(&pb, &grp, tails->data, heads->data, wr, &b);
    memset(b.dwh, 0, (size_t)(grp.k * h) * sizeof(float));
    float *dar = *da ? (*da)->data + r * 2 * h : NULL;
    for (int64_t q = 0; q < grp.n; q++) {
      int64_t i = grp.tails[q], st = (int64_t)start->data[i] - pb.base, m = (int64_t)count->data[i];
      const float *gi = g->data + i * h, *u = b.u + q * h;
      for (int64_t j = 0; j < m; j++) b.slots[j] = grp.slot[st + j];
      tail_scores(&pb, u, b.wh, b.slots, m, ar, b.s, b.alpha);
      float dot = 0, ds_sum = 0;
      for (int64_t j = 0; j < m; j++) { /* dα_j = g · w_j */
        const float *wj = b.wh + b.slots[j] * h;
        float da_j = 0;
        for (int64_t k = 0; k < h; k++) da_j += gi[k] * wj[k];
        b.dalpha[j] = da_j;
        dot += b.alpha[j] * da_j;
      }
      for (int64_t j = 0; j < m; j++) {
        const float *wj = b.wh + b.slots[j] * h;
        float dsj = b.alpha[j] * (b.dalpha[j] - dot) * (b.s[j] > 0 ? 1.0f : HGAT_SLOPE);
        ds_sum += dsj;
        float *dw_j = b.dwh + b.slots[j] * h;
        for (int64_t k = 0; k < h; k++) dw_j[k] += b.alpha[j] * gi[k] + dsj * a2_at(ar, k, h, pb.interleaved);
        if (dar)
          for (int64_t k = 0; k < h; k++) dar[pb.interleaved ? 2 * k + 1 : h + k] += dsj * wj[k];
      }
      float *du = b.du + q * h;
      for (int64_t k = 0; k < h; k++) du[k] = ds_sum * a1_at(ar, k, pb.interleaved);
      if (dar)
        for (int64_t k = 0; k < h; k++) dar[pb.interleaved ? 2 * k : k] += ds_sum * u[k];
    }
    /* dW_r += dUᵀ T + dWHᵀ Hd;  dT = dU W_r;  dHd = dWH W_r (one product each) */
    if (*dw) {
      float *dwr = (*dw)->data + r * h * h;
      gm_gemm(1, 0, h, h, grp.n, 1.0f, b.du, h, b.t, h, 1.0f, dwr, h);
      gm_gemm(1, 0, h, h, grp.k, 1.0f, b.dwh, h, b.hd, h, 1.0f, dwr, h);
    }
    if (*dtails) {
      gm_gemm(0, 0, grp.n, h, h, 1.0f, b.du, h, wr, h, 0.0f, b.u, h);
      for (int64_t q = 0; q < grp.n; q++) {
        float *dst = (*dtails)->data + grp.tails[q] * h;
        for (int64_t k = 0; k < h; k++) dst[k] += b.u[q * h + k];
      }
    }
    if (*dheads) {
      gm_gemm(0, 0, grp.k, h, h, 1.0f, b.dwh, h, wr, h, 0.0f, b.wh, h);
      for (int64_t j = 0; j < grp.k; j++) {
        float *dst = (*dheads)->data + grp.heads[j] * h;
        for (int64_t k = 0; k < h; k++) dst[k] += b.wh[j * h + k];
      }
    }
    group_reset(&grp);
  }
  buffers_free(&b);
  return GM_OK;
}
