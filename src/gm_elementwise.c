/* gm_elementwise.c — unary and broadcasting binary ops, and the sum-to-shape that undoes a
 * broadcast in backward. */
#include <math.h>
#include <string.h>

#include "gm_internal.h"

/* ---- broadcasting ------------------------------------------------------------------------ */

gm_status gm_broadcast_shape(const gm_tensor *a, const gm_tensor *b, int *ndim, int64_t *shape) {
  int n = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int i = 0; i < n; i++) {
    int ia = a->ndim - n + i, ib = b->ndim - n + i;
    int64_t sa = ia >= 0 ? a->shape[ia] : 1, sb = ib >= 0 ? b->shape[ib] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
      return gm_fail(GM_ERR_SHAPE, 2, "size mismatch: %s and %s do not broadcast (dimension %d)",
                     GM_SHAPE(a, x), GM_SHAPE(b, y), i + 1);
    }
    shape[i] = sa == 1 ? sb : sa;
  }
  *ndim = n;
  return GM_OK;
}

/* Element strides of t seen through an ndim-dimensional broadcast: 0 where t is repeated. */
static void broadcast_strides(int ndim, const int64_t *t_shape, int t_ndim, int64_t *strides) {
  int64_t stride = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    int it = t_ndim - ndim + i;
    int64_t size = it >= 0 ? t_shape[it] : 1;
    strides[i] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV } binary_kind;

/* One loop nest per kind, so the compiler vectorises each inner loop. ndim == 0 means both
 * operands have the output's shape: one flat loop. Otherwise rows of the last dimension, each
 * with its own broadcast offsets. */
#define BINARY_KERNEL(NAME, EXPR)                                                             \
  GM_HOT static void NAME(const float *pa, const float *pb, float *po, int ndim,            \
                   const int64_t *shape, const int64_t *sa, const int64_t *sb, int64_t n) {   \
    if (ndim == 0) {                                                                         \
      GM_FOR(i, n, n, {                                                                      \
        float A = pa[i], B = pb[i];                                                          \
        po[i] = (EXPR);                                                                      \
      });                                                                                    \
      return;                                                                                \
    }                                                                                        \
    int64_t inner = shape[ndim - 1], rows = inner ? n / inner : 0;                           \
    int64_t ia_step = sa[ndim - 1], ib_step = sb[ndim - 1];                                  \
    GM_FOR(r, rows, n, {                                                                     \
      int64_t oa = 0, ob = 0, rest = r;                                                      \
      for (int d = ndim - 2; d >= 0; d--) {                                                  \
        int64_t i = rest % shape[d];                                                         \
        rest /= shape[d];                                                                    \
        oa += i * sa[d];                                                                     \
        ob += i * sb[d];                                                                     \
      }                                                                                      \
      const float *x = pa + oa, *y = pb + ob;                                                \
      float *o = po + r * inner;                                                             \
      for (int64_t j = 0; j < inner; j++) {                                                  \
        float A = x[j * ia_step], B = y[j * ib_step];                                        \
        o[j] = (EXPR);                                                                       \
      }                                                                                      \
    });                                                                                      \
  }

BINARY_KERNEL(kernel_add, A + B)
BINARY_KERNEL(kernel_sub, A - B)
BINARY_KERNEL(kernel_mul, A *B)
BINARY_KERNEL(kernel_div, A / B)

static gm_tensor *binary(gm_tensor *a, gm_tensor *b, binary_kind kind) {
  int ndim;
  int64_t shape[GM_MAX_DIMS], sa[GM_MAX_DIMS], sb[GM_MAX_DIMS];
  if (gm_broadcast_shape(a, b, &ndim, shape) != GM_OK) return NULL;
  gm_tensor *out = gm_tensor_empty(ndim, shape);
  if (!out) return NULL;
  broadcast_strides(ndim, a->shape, a->ndim, sa);
  broadcast_strides(ndim, b->shape, b->ndim, sb);
  /* neither side broadcasts: one flat loop (ndim 0 tells the kernel) */
  int kernel_ndim = gm_tensor_same_shape(a, b) ? 0 : ndim;
  switch (kind) {
    case BIN_ADD: kernel_add(a->data, b->data, out->data, kernel_ndim, shape, sa, sb, out->numel); break;
    case BIN_SUB: kernel_sub(a->data, b->data, out->data, kernel_ndim, shape, sa, sb, out->numel); break;
    case BIN_MUL: kernel_mul(a->data, b->data, out->data, kernel_ndim, shape, sa, sb, out->numel); break;
    case BIN_DIV: kernel_div(a->data, b->data, out->data, kernel_ndim, shape, sa, sb, out->numel); break;
  }
  static const gm_op ops[] = {GM_OP_ADD, GM_OP_SUB, GM_OP_MUL, GM_OP_DIV};
  gm_tensor *srcs[2] = {a, b};
  return gm_record(out, ops[kind], srcs, 2); /* no iarg or farg */
}

gm_tensor *gm_add(gm_tensor *a, gm_tensor *b) { return binary(a, b, BIN_ADD); }
gm_tensor *gm_sub(gm_tensor *a, gm_tensor *b) { return binary(a, b, BIN_SUB); }
gm_tensor *gm_mul(gm_tensor *a, gm_tensor *b) { return binary(a, b, BIN_MUL); }
gm_tensor *gm_div(gm_tensor *a, gm_tensor *b) { return binary(a, b, BIN_DIV); }

GM_HOT void gm_add_rows(float *o, const float *x, int64_t rows, int64_t stride, int64_t width) {
  for (int64_t r = 0; r < rows; r++) {
    const float *row = x + r * stride;
#pragma omp simd
    for (int64_t j = 0; j < width; j++) o[j] += row[j];
  }
}

gm_tensor *gm_sum_to_shape(gm_tensor *g, int ndim, const int64_t *shape) {
  gm_tensor *out = gm_tensor_full(ndim, shape, 0.0f);
  if (!out) return NULL;
  if (out->numel == g->numel) { /* no dimension was broadcast */
    memcpy(out->data, g->data, (size_t)g->numel * sizeof(float));
    return out;
  }
  int64_t so[GM_MAX_DIMS];
  broadcast_strides(g->ndim, shape, ndim, so);
  /* The common case (a bias's gradient): every leading dimension summed, the trailing ones
   * kept. out[j] = sum over rows r of g[r * inner + j], each out[j] adding its rows in order as
   * the general loop below does (the same float32 result), vectorised along j and shared out
   * by columns. */
  int lead = g->ndim; /* dimensions [lead, ndim) are kept, [0, lead) summed */
  while (lead > 0 && (so[lead - 1] != 0 || g->shape[lead - 1] == 1)) lead--;
  int summed_only = 1;
  for (int d = 0; d < lead; d++) summed_only &= so[d] == 0;
  if (summed_only) {
    int64_t inner = out->numel, rows = g->numel / inner;
    const int64_t block = 256;
    float *o = out->data;
    const float *x = g->data;
    GM_FOR(jb, (inner + block - 1) / block, g->numel, {
      int64_t j0 = jb * block;
      gm_add_rows(o + j0, x + j0, rows, inner, j0 + block < inner ? block : inner - j0);
    });
    return out;
  }
  int64_t idx[GM_MAX_DIMS] = {0}, off = 0;
  for (int64_t i = 0; i < g->numel; i++) {
    out->data[off] += g->data[i];
    for (int d = g->ndim - 1; d >= 0; d--) { /* odometer step, keeping the output offset */
      off += so[d];
      if (++idx[d] < g->shape[d]) break;
      off -= so[d] * g->shape[d];
      idx[d] = 0;
    }
  }
  return out;
}

/* ---- ops with a scalar and unary ops ------------------------------------------------------ */

typedef enum {
  UN_ADD_SCALAR, UN_MUL_SCALAR, UN_RDIV_SCALAR, UN_POW_SCALAR, UN_NEG, UN_EXP, UN_LOG, UN_SQRT,
  UN_TANH, UN_GELU, UN_GELU_TANH, UN_RELU, UN_LEAKY_RELU
} unary_kind;

#define UNARY_LOOP(EXPR)   \
  GM_FOR(i, n, n, {        \
    float x = in[i];       \
    out[i] = (EXPR);       \
  });                      \
  break;

GM_HOT static gm_tensor *unary(gm_tensor *a, unary_kind kind, float s) {
  gm_tensor *res = gm_tensor_empty(a->ndim, a->shape);
  if (!res) return NULL;
  const float *in = a->data;
  float *out = res->data;
  int64_t n = a->numel;
  switch (kind) {
    case UN_ADD_SCALAR: UNARY_LOOP(x + s)
    case UN_MUL_SCALAR: UNARY_LOOP(x * s)
    case UN_RDIV_SCALAR: UNARY_LOOP(s / x)
    case UN_POW_SCALAR: UNARY_LOOP(s == 2.0f ? x * x : powf(x, s))
    case UN_NEG: UNARY_LOOP(-x)
    case UN_EXP: UNARY_LOOP(expf(x))
    case UN_LOG: UNARY_LOOP(logf(x))
    case UN_SQRT: UNARY_LOOP(sqrtf(x))
    case UN_TANH: UNARY_LOOP(tanhf(x))
    case UN_GELU: UNARY_LOOP(gm_gelu_erf_value(x))
    case UN_GELU_TANH: UNARY_LOOP(gm_gelu_tanh_value(x))
    case UN_RELU: UNARY_LOOP(x > 0 || x != x ? x : 0.0f) /* NaN stays NaN, as in PyTorch */
    case UN_LEAKY_RELU: UNARY_LOOP(x > 0 ? x : x * s)
  }
  static const gm_op ops[] = {GM_OP_ADD_SCALAR, GM_OP_MUL_SCALAR, GM_OP_RDIV_SCALAR,
                              GM_OP_POW_SCALAR, GM_OP_NEG, GM_OP_EXP, GM_OP_LOG, GM_OP_SQRT,
                              GM_OP_TANH, GM_OP_GELU, GM_OP_GELU_TANH, GM_OP_RELU,
                              GM_OP_LEAKY_RELU};
  /* farg[0] = the scalar (the slope for leaky_relu; unused by the others); no iarg */
  res = gm_record(res, ops[kind], &a, 1);
  if (res) res->farg[0] = s;
  return res;
}

gm_tensor *gm_add_scalar(gm_tensor *a, float s) { return unary(a, UN_ADD_SCALAR, s); }
gm_tensor *gm_mul_scalar(gm_tensor *a, float s) { return unary(a, UN_MUL_SCALAR, s); }
gm_tensor *gm_rdiv_scalar(gm_tensor *a, float s) { return unary(a, UN_RDIV_SCALAR, s); }
gm_tensor *gm_pow_scalar(gm_tensor *a, float p) { return unary(a, UN_POW_SCALAR, p); }
gm_tensor *gm_neg(gm_tensor *a) { return unary(a, UN_NEG, 0); }
gm_tensor *gm_exp(gm_tensor *a) { return unary(a, UN_EXP, 0); }
gm_tensor *gm_log(gm_tensor *a) { return unary(a, UN_LOG, 0); }
gm_tensor *gm_sqrt(gm_tensor *a) { return unary(a, UN_SQRT, 0); }
gm_tensor *gm_tanh(gm_tensor *a) { return unary(a, UN_TANH, 0); }
gm_tensor *gm_gelu(gm_tensor *a) { return unary(a, UN_GELU, 0); }
gm_tensor *gm_gelu_tanh(gm_tensor *a) { return unary(a, UN_GELU_TANH, 0); }
gm_tensor *gm_relu(gm_tensor *a) { return unary(a, UN_RELU, 0); }
gm_tensor *gm_leaky_relu(gm_tensor *a, float slope) { return unary(a, UN_LEAKY_RELU, slope); }

/* Elementwise derivative of a unary op times g: dx = g ⊙ f'(x). */
#define DERIV_LOOP(EXPR)     \
  GM_FOR(i, n, n, {          \
    float x = xs[i], y = ys[i]; \
    (void)x;                 \
    (void)y;                 \
    dx[i] = gs[i] * (EXPR);  \
  });                        \
  break;

GM_HOT gm_tensor *gm_unary_backward(const gm_tensor *node, const gm_tensor *g) {
  const gm_tensor *a = node->src[0];
  gm_tensor *res = gm_tensor_empty(a->ndim, a->shape);
  if (!res) return NULL;
  /* ops that read neither x nor y may have had them dropped: point at g instead (unread) */
  const float *gs = g->data, *xs = a->data ? a->data : gs, *ys = node->data ? node->data : gs;
  float *dx = res->data, s = node->farg[0];
  int64_t n = a->numel;
  switch (node->op) {
    case GM_OP_ADD_SCALAR: DERIV_LOOP(1.0f)
    case GM_OP_MUL_SCALAR: DERIV_LOOP(s)
    case GM_OP_RDIV_SCALAR: DERIV_LOOP(-y / x)          /* d(s/x) = −s/x² = −y/x */
    case GM_OP_POW_SCALAR: DERIV_LOOP(s == 0.0f ? 0.0f : s * powf(x, s - 1.0f)) /* x^0: 0, not 0·∞ at 0 */
    case GM_OP_NEG: DERIV_LOOP(-1.0f)
    case GM_OP_EXP: DERIV_LOOP(y)
    case GM_OP_LOG: DERIV_LOOP(1.0f / x)
    case GM_OP_SQRT: DERIV_LOOP(0.5f / y)
    case GM_OP_TANH: DERIV_LOOP(1.0f - y * y)
    case GM_OP_GELU: DERIV_LOOP(gm_gelu_erf_grad(x))
    case GM_OP_GELU_TANH: DERIV_LOOP(gm_gelu_tanh_grad(x))
    case GM_OP_RELU: DERIV_LOOP(x > 0 ? 1.0f : 0.0f)
    case GM_OP_LEAKY_RELU: DERIV_LOOP(x > 0 ? 1.0f : s)
    default: GM_ASSERT(!"not a unary op");
  }
  return res;
}
