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
 * the rest O(m H) per tail, and the weight gradient two more sgemms.
 *
 * With dropout p > 0 (training), W_r and a_r are multiplied by a dropout mask of their own for
 * each occurrence, the tails that share a relation and a start row (one triple: the official
 * code drops out the W_r and a_r it looks up for each triple). The masks come from a counter-based
 * hash of (seed, relation, start), so nothing is stored: work goes occurrence by occurrence, the
 * masked W_r (H² floats, one buffer) is made once per occurrence in forward and in backward, and
 * the weight gradients are masked the same way: dW_r += M ⊙ dW̃, da_r += m ⊙ dã. */
#include <string.h>

#include "gm_internal.h"

#define HGAT_SLOPE 0.01f

typedef struct hgat_problem {
  int64_t n_tails, n_heads, h, relations;
  int interleaved, base; /* base: where rel and start values count from (1 in Lua) */
  float dropout;         /* per-occurrence dropout of W_r and a_r, 0 for none */
  uint64_t seed;
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
  if (!(pb->dropout >= 0.0f && pb->dropout < 1.0f))
    return gm_fail(GM_ERR_ARG, 8, "hgat dropout must be in [0, 1) (got %g)", (double)pb->dropout);
  pb->n_tails = n, pb->n_heads = heads->shape[0], pb->h = h, pb->relations = w->shape[0];
  return GM_OK;
}

/* Tails are processed in groups that share one weight — a relation, or with dropout one
 * occurrence (relation and start): U = T W̃ᵀ for all tails of the group and WH = Hd W̃ᵀ for every
 * head row they use, each one product (gm_gemm); then per tail only O(m H) work. */
typedef struct relation_group {
  int64_t r, start; /* the relation (0-based) and, with dropout, the start row */
  int64_t n;        /* tails of this group */
  int64_t *tails;   /* their rows in tails */
  int64_t k;        /* distinct head rows they use */
  int64_t *heads;   /* those rows of heads */
  int64_t *slot;    /* heads row → index into this group's head list, or −1 (size n_heads) */
} relation_group;

/* A tail's sort key: groups are runs of equal (rel, start) — start 0 for all without dropout —
 * with tails in their own order inside each. */
typedef struct tail_key {
  int64_t rel, start, row;
} tail_key;

static int tail_key_cmp(const void *x, const void *y) {
  const tail_key *p = x, *q = y;
  if (p->rel != q->rel) return p->rel < q->rel ? -1 : 1;
  if (p->start != q->start) return p->start < q->start ? -1 : 1;
  return p->row < q->row ? -1 : p->row > q->row;
}

/* splitmix64's finaliser: the seeds of one occurrence's masks */
static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint64_t occurrence_seed(const hgat_problem *pb, const relation_group *g) {
  return mix64(pb->seed ^ mix64(((uint64_t)g->r << 40) ^ (uint64_t)g->start));
}

/* Gathers rows of src [*, h] into dst [count, h]. */
static void gather_rows(const float *src, const int64_t *rows, int64_t count, int64_t h, float *dst) {
  for (int64_t i = 0; i < count; i++) memcpy(dst + i * h, src + rows[i] * h, (size_t)h * sizeof(float));
}

/* The tails sorted into groups (keys[0..n_tails)); returns NULL when out of memory. */
static tail_key *sorted_keys(const hgat_problem *pb, const gm_tensor *rel, const gm_tensor *start) {
  tail_key *keys = gm_malloc((size_t)(pb->n_tails ? pb->n_tails : 1) * sizeof(tail_key));
  if (!keys) return NULL;
  for (int64_t i = 0; i < pb->n_tails; i++)
    keys[i] = (tail_key){.rel = (int64_t)rel->data[i] - pb->base,
                         .start = pb->dropout > 0 ? (int64_t)start->data[i] - pb->base : 0,
                         .row = i};
  qsort(keys, (size_t)pb->n_tails, sizeof(tail_key), tail_key_cmp);
  return keys;
}

/* The group that starts at keys[*next]; *next moves past it. */
static void group_build(const hgat_problem *pb, const tail_key *keys, int64_t *next,
                        const gm_tensor *start, const gm_tensor *count, relation_group *g,
                        int64_t *tail_buf, int64_t *head_buf, int64_t *slot) {
  g->n = g->k = 0;
  g->tails = tail_buf, g->heads = head_buf, g->slot = slot;
  g->r = keys[*next].rel, g->start = keys[*next].start;
  for (; *next < pb->n_tails && keys[*next].rel == g->r && keys[*next].start == g->start; (*next)++) {
    int64_t i = keys[*next].row;
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
  tail_key *keys;
  int64_t *tail_buf, *head_buf, *slot, *slots;
  float *t, *hd, *u, *wh, *s, *alpha, *dalpha, *du, *dwh;
  float *wm, *am, *dwm, *dam; /* with dropout: one occurrence's masked W_r, a_r and their gradients */
} hgat_buffers;

static void buffers_free(hgat_buffers *b) {
  gm_free(b->keys);
  gm_free(b->tail_buf), gm_free(b->head_buf), gm_free(b->slot), gm_free(b->slots);
  gm_free(b->t), gm_free(b->hd), gm_free(b->u), gm_free(b->wh), gm_free(b->s), gm_free(b->alpha);
  gm_free(b->dalpha);
  gm_free(b->du), gm_free(b->dwh);
  gm_free(b->wm), gm_free(b->am), gm_free(b->dwm), gm_free(b->dam);
}

static gm_status buffers_alloc(const hgat_problem *pb, const gm_tensor *rel, const gm_tensor *start,
                               int64_t max_m, int backward, hgat_buffers *b) {
  int64_t n = pb->n_tails ? pb->n_tails : 1, k = pb->n_heads ? pb->n_heads : 1, h = pb->h;
  memset(b, 0, sizeof *b);
  int masked = pb->dropout > 0;
  if (masked) {
    b->wm = gm_malloc((size_t)(h * h) * sizeof(float));
    b->am = gm_malloc((size_t)(2 * h) * sizeof(float));
    if (backward) {
      b->dwm = gm_malloc((size_t)(h * h) * sizeof(float));
      b->dam = gm_malloc((size_t)(2 * h) * sizeof(float));
    }
    if (!b->wm || !b->am || (backward && (!b->dwm || !b->dam))) {
      buffers_free(b);
      return gm_last_status();
    }
  }
  b->keys = sorted_keys(pb, rel, start);
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
  if (!b->keys || !b->tail_buf || !b->head_buf || !b->slot || !b->slots || !b->t || !b->hd || !b->u || !b->wh ||
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

/* The W and a the group uses: W_r and a_r, or with dropout their masked copies in b->wm, b->am. */
static const float *group_weights(const hgat_problem *pb, const relation_group *g, const gm_tensor *w,
                                  const gm_tensor *a, hgat_buffers *b, const float **ar) {
  int64_t h = pb->h;
  const float *wr = w->data + g->r * h * h;
  *ar = a->data + g->r * 2 * h;
  if (pb->dropout == 0) return wr;
  uint64_t seed_w = occurrence_seed(pb, g);
  gm_dropout_apply(wr, b->wm, h * h, seed_w, pb->dropout);
  gm_dropout_apply(*ar, b->am, 2 * h, mix64(seed_w), pb->dropout);
  *ar = b->am;
  return b->wm;
}

static int64_t max_heads(const gm_tensor *count) {
  int64_t max_m = 1;
  for (int64_t i = 0; i < count->numel; i++)
    if ((int64_t)count->data[i] > max_m) max_m = (int64_t)count->data[i];
  return max_m;
}

gm_tensor *gm_hgat(gm_tensor *tails, gm_tensor *heads, gm_tensor *w, gm_tensor *a,
                   gm_tensor *rel, gm_tensor *start, gm_tensor *count, const gm_hgat_opts *opts) {
  hgat_problem pb = {.base = opts->index_base, .dropout = opts->dropout, .seed = opts->dropout_seed};
  if (check_hgat(tails, heads, w, a, rel, start, count, &pb) != GM_OK) return NULL;
  pb.interleaved = opts->interleaved != 0;
  int64_t h = pb.h, max_m = max_heads(count);
  hgat_buffers b;
  gm_tensor *out = gm_tensor_full(2, tails->shape, 0.0f);
  if (!out || buffers_alloc(&pb, rel, start, max_m, 0, &b) != GM_OK) {
    gm_tensor_release(out);
    return NULL;
  }
  for (int64_t next = 0; next < pb.n_tails;) {
    relation_group g;
    group_build(&pb, b.keys, &next, start, count, &g, b.tail_buf, b.head_buf, b.slot);
    const float *ar;
    group_project(&pb, &g, tails->data, heads->data, group_weights(&pb, &g, w, a, &b, &ar), &b);
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
  /* iarg[0] = interleaved, iarg[1] = the index base of rel and start, iarg[2] = the dropout
   * seed; farg[0] = the dropout probability */
  out = gm_record(out, GM_OP_HGAT, srcs, 7);
  if (out && out->op == GM_OP_HGAT) {
    out->iarg[0] = pb.interleaved;
    out->iarg[1] = pb.base;
    out->iarg[2] = (int64_t)pb.seed;
    out->farg[0] = pb.dropout;
  }
  return out;
}

gm_status gm_hgat_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **dtails,
                           gm_tensor **dheads, gm_tensor **dw, gm_tensor **da) {
  gm_tensor *tails = node->src[0], *heads = node->src[1], *w = node->src[2], *a = node->src[3];
  gm_tensor *rel = node->src[4], *start = node->src[5], *count = node->src[6];
  hgat_problem pb = {.base = (int)node->iarg[1], .dropout = node->farg[0], .seed = (uint64_t)node->iarg[2]};
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
  if (bad || buffers_alloc(&pb, rel, start, max_m, 1, &b) != GM_OK) {
    if (!bad) gm_fail(GM_ERR_NOMEM, 0, "not enough memory for the H-GAT backward");
    gm_tensor_release(*dtails), gm_tensor_release(*dheads), gm_tensor_release(*dw),
        gm_tensor_release(*da);
    *dtails = *dheads = *dw = *da = NULL;
    return gm_last_status();
  }
  int masked = pb.dropout > 0;
  for (int64_t next = 0; next < pb.n_tails;) {
    relation_group grp;
    group_build(&pb, b.keys, &next, start, count, &grp, b.tail_buf, b.head_buf, b.slot);
    const float *ar, *wr = group_weights(&pb, &grp, w, a, &b, &ar);
    group_project(&pb, &grp, tails->data, heads->data, wr, &b);
    memset(b.dwh, 0, (size_t)(grp.k * h) * sizeof(float));
    /* with dropout the gradient of the masked a_r is gathered first, then masked into da_r */
    float *dar = *da ? (masked ? b.dam : (*da)->data + grp.r * 2 * h) : NULL;
    if (dar && masked) memset(dar, 0, (size_t)(2 * h) * sizeof(float));
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
    if (*dw) { /* with dropout: dW̃ into its buffer, then dW_r += M ⊙ dW̃ */
      float *dwr = (*dw)->data + grp.r * h * h, *dst = masked ? b.dwm : dwr;
      gm_gemm(1, 0, h, h, grp.n, 1.0f, b.du, h, b.t, h, masked ? 0.0f : 1.0f, dst, h);
      gm_gemm(1, 0, h, h, grp.k, 1.0f, b.dwh, h, b.hd, h, 1.0f, dst, h);
      if (masked) {
        gm_dropout_apply(b.dwm, b.dwm, h * h, occurrence_seed(&pb, &grp), pb.dropout);
        for (int64_t e = 0; e < h * h; e++) dwr[e] += b.dwm[e];
      }
    }
    if (dar && masked) {
      float *dst = (*da)->data + grp.r * 2 * h;
      gm_dropout_apply(b.dam, b.dam, 2 * h, mix64(occurrence_seed(&pb, &grp)), pb.dropout);
      for (int64_t e = 0; e < 2 * h; e++) dst[e] += b.dam[e];
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
