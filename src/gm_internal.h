/* gm_internal.h — helpers shared by the core's .c files; not part of the public API. */
#ifndef GM_INTERNAL_H
#define GM_INTERNAL_H

#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gm.h"

/* For states that cannot happen whatever the user does: a bug, so stop loudly. */
#define GM_ASSERT(cond)                                                               \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "graphmert: %s:%d: assertion failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                                 \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* Records status, the blamed argument (1-based, 0 for none) and a printf-style message. */
gm_status gm_fail(gm_status status, int arg, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define GM_SHAPE_BUF 96
/* The shape of t as "2x3", in a caller's buffer of GM_SHAPE_BUF bytes. */
#define GM_SHAPE(t, buf) gm_shape_str((t)->ndim, (t)->shape, (buf), sizeof(buf))

int64_t gm_numel_of(int ndim, const int64_t *shape); /* -1 on overflow */

/* A tensor sharing base's storage at element offset `offset`. */
gm_tensor *gm_tensor_view(gm_tensor *base, int64_t offset, int ndim, const int64_t *shape);

/* Autograd recording: when grad mode is on and a source requires grad, out becomes a node that
 * retains its sources. Returns out (so ops can `return gm_record(...)`). */
int gm_needs_grad(gm_tensor *const *srcs, int n);
gm_tensor *gm_record(gm_tensor *out, gm_op op, gm_tensor *const *srcs, int n);
/* Which sources' values (bit i = src[i]) and whether its own output an op's backward reads
 * (the op table of gm_ops.c, made from GM_OP_LIST). */
unsigned gm_op_needs_src_data(gm_op op);
int gm_op_needs_output(gm_op op);
/* Drops the node's sources and saved buffer (keeps requires_grad and op). */
void gm_node_clear(gm_tensor *t);
/* node->saved = t (the reference becomes the node's), with t's storage version noted, so that
 * backward refuses to read it changed in place (an index the caller still holds). */
void gm_node_save(gm_tensor *node, gm_tensor *t);

/* Rows/columns of a softmax-like reduction over dim: outer x size x inner. */
void gm_dim_split(const gm_tensor *t, int dim, int64_t *outer, int64_t *size, int64_t *inner);
gm_status gm_check_dim(const gm_tensor *t, int dim, int arg);

/* broadcast machinery (gm_elementwise.c) */
gm_status gm_broadcast_shape(const gm_tensor *a, const gm_tensor *b, int *ndim, int64_t *shape);
/* Sums g down to the given shape (the backward of broadcasting). New reference. */
gm_tensor *gm_sum_to_shape(gm_tensor *g, int ndim, const int64_t *shape);

/* kernels used by backward (no recording, plain buffers) */
void gm_softmax_backward_kernel(const gm_tensor *y, const gm_tensor *g, gm_tensor *dx, int dim,
                                int log_softmax);
gm_status gm_matmul_into(gm_tensor *c, const gm_tensor *a, const gm_tensor *b, int trans_a,
                         int trans_b, float beta);

void gm_layer_norm_backward(const gm_tensor *x, const gm_tensor *weight, const gm_tensor *stats,
                            const gm_tensor *g, float *dx, float *dw, float *db);
void gm_dropout_apply(const float *in, float *out, int64_t n, uint64_t seed, float p);
void gm_cross_entropy_backward(const gm_tensor *probs, const gm_tensor *target, int index_base,
                               int64_t ignore_index, int64_t count, float g, float *dlogits);

/* o[j] += sum over r < rows of x[r * stride + j], j < width, the rows in order (vectorised along
 * j): a bias's gradient, a block of columns at a time. */
void gm_add_rows(float *o, const float *x, int64_t rows, int64_t stride, int64_t width);

/* The backward kernels of the ops whose forward lives in gm_elementwise.c, gm_reduce.c and
 * gm_shape.c (the rule: gm_autograd.c's header). gm_unary_backward: dx = g ⊙ f'(x) for the unary
 * ops; gm_reduction_backward: sum / mean / max over a dim spread back; gm_narrow_backward: g into
 * the window of dx (added when add, else the rest of dx zeroed). */
gm_tensor *gm_unary_backward(const gm_tensor *node, const gm_tensor *g);
gm_tensor *gm_reduction_backward(const gm_tensor *node, const gm_tensor *g);
void gm_narrow_backward(const gm_tensor *node, const gm_tensor *g, float *dx, int add);
/* New references in *dp and *dsp (NULL where the source needs no gradient). */
gm_status gm_decay_mask_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **dp, gm_tensor **dsp);
/* New references (NULL where the source needs no gradient). decay_into, when not NULL, is the
 * decay's pending gradient, which the kernel may add its gradient into instead (it does when
 * that sums the same terms in the same order: a per-head decay and a batch of one); *ddecay is
 * then NULL. */
gm_status gm_attention_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor *decay_into,
                                gm_tensor **dq, gm_tensor **dk, gm_tensor **dv, gm_tensor **ddecay);

gm_status gm_hgat_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **dtails,
                           gm_tensor **dheads, gm_tensor **dw, gm_tensor **da);

/* New references (NULL where the source needs no gradient). */
gm_status gm_solve_backward(const gm_tensor *node, const gm_tensor *g, gm_tensor **da,
                            gm_tensor **db);
gm_tensor *gm_segment_softmax_backward(const gm_tensor *node, const gm_tensor *g);

#include "gm_kernels.h" /* the raw-buffer products: gm_gemm, bf16, the tiles */

/* Between gm_bf16_share_begin(x) and gm_bf16_share_end(), the products that go to oneDNN round
 * the matrix at x to bf16 once and reuse it (the two gradients of a product both read G, which
 * does not change in between); for products in bf16 (gm_matmul_uses_bf16(), or a kept rounding
 * below). _end frees the copy and forgets an offered rounding.
 * A forward product's A is read again by its backward (dB = Aᵀ G): between gm_bf16_keep_begin(a)
 * and gm_bf16_keep_end, a product that goes to oneDNN rounds a into a tensor of its own, which
 * _end hands over (NULL when no product rounded a) with the matrix as rounded (rows, cols, ld
 * in dims); A's float32 values are then no longer needed. The backward names that rounding by
 * a pointer of its own, x = the kept tensor's data, with gm_bf16_offer(x, kept, dims), and
 * multiplies with gm_bf16_gemm_offered, passing x as the operand: only oneDNN, alpha 1, beta 0;
 * 0 without oneDNN or memory (C untouched). The offer lasts until gm_bf16_share_end. */
void gm_bf16_share_begin(const float *x);
void gm_bf16_share_end(void);
/* While gradients are off (inference), a parameter's rounding is kept across products: between
 * gm_bf16_frozen_begin(t) and _end, a product that goes to oneDNN and reads t's data rounds it
 * once per (storage serial, version, shape) and finds it again in later products (a model's
 * weights, read by every batch). Up to FROZEN_SLOTS of them and FROZEN_BYTES are held, the least
 * recently used dropped (gm_bf16_release_kept_weights drops them all); an in-place change bumps
 * the version, so a changed matrix is never read stale. */
void gm_bf16_frozen_begin(const gm_tensor *t);
void gm_bf16_frozen_end(void);
void gm_bf16_frozen_clear(void); /* (gm_bf16_release_kept_weights, on a CPU with bf16) */
/* 1 while gm_backward runs its nodes (gradients off there too, but a training step's products,
 * whose weights change at every step: not inference). Set by gm_autograd.c, read by gm_blas.c. */
int gm_backward_running(void);
int gm_set_backward_running(int on); /* returns the previous setting (thread-local) */
void gm_bf16_keep_begin(const float *a);
gm_tensor *gm_bf16_keep_end(int64_t dims[3]);
void gm_bf16_offer(const float *x, const gm_tensor *kept, const int64_t dims[3]);
int gm_bf16_gemm_offered(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a,
                         int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc);

/* oneDNN's bf16 gemm (gm_dnnl.c), loaded on first use if installed: C = alpha op(A) op(B) + beta C
 * with row-major bf16 A and B. Returns 0, C untouched, when oneDNN is missing or refuses. */
int gm_dnnl_available(void);
int gm_dnnl_bf16_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb, float beta,
                      float *c, int64_t ldc);

/* index_select's backward and index_add: dst [outer, size, inner] gets, in each outer block, row j of src
 * [outer, len(index), inner] added to its row index[j] − base, repeated rows in the order of j. */
void gm_index_rows_add(float *dst, const float *src, const gm_tensor *index, int base,
                       int64_t outer, int64_t size, int64_t inner);
/* gather (scatter = 0: out[i] = a[at(i)]) or its backward (scatter = 1: a[at(i)] += out[i]);
 * a gives the shape, a_data the buffer of that shape. */
void gm_gather_kernel(const gm_tensor *a, const gm_tensor *index, int dim, int index_base,
                      float *a_data, float *out_data, int scatter);

/* graph internals shared by gm_graph.c and gm_graph_cache.c */
gm_paths *gm_graph_paths_compute(const gm_graph *g, gm_paths_method method);
size_t gm_graph_key(const gm_graph *g, char *buf, size_t size);
const int64_t *gm_graph_csr(const gm_graph *g, const int64_t **offsets);
gm_paths *gm_paths_alloc(int64_t n);

/* GELU and its derivative, exact (erf) and tanh forms, shared by the elementwise ops, their
 * backward and the decay mask. */
#define GM_SQRT_2_OVER_PI 0.7978845608028654f
#define GM_INV_SQRT_2PI 0.3989422804014327f
/* e^x for x <= 0 (softmax arguments, GELU's erf and φ; −inf gives 0), in branch-free float arithmetic that the
 * compiler vectorises (libm's expf does not vectorise without -ffast-math): Cody–Waite
 * reduction by ln 2 and Cephes' degree-6 polynomial, relative error about 1e-7. x below −87
 * gives 0; NaN gives NaN. The steps are fmaf: one rounding each, so the same bits in every clone
 * (an FMA instruction where the clone has one, libm's exact fmaf elsewhere), at half the
 * instructions of a multiply and an add. */
static inline float gm_exp_nonpositive(float x) {
  float xc = x < -87.0f ? -87.0f : x;
  float k = xc * 1.44269504088896341f + 12582912.0f; /* + 1.5·2^23 rounds to an integer n */
  float n = k - 12582912.0f;
  uint32_t k_bits; /* unsigned: a NaN input must not make the shift below undefined */
  memcpy(&k_bits, &k, sizeof k_bits); /* n sits in the low mantissa bits of k */
  float r = fmaf(n, 2.12194440e-4f, fmaf(n, -0.693359375f, xc));
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  p = fmaf(p * r, r, r) + 1.0f;
  uint32_t bits = (k_bits - 0x4B400000u + 127u) << 23; /* 2^n */
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  return x < -87.0f ? 0.0f : y;
}

/* The softmax (log_form = 0) or log-softmax of a row of n floats x[0], x[stride], ... into y at the
 * same stride (y apart from x); returns the log-normaliser log Σ e^x. Out of line and vectorised (gm_reduce.c): every
 * x − max and x − log Σ e^x is ≤ 0, gm_exp_nonpositive's domain, where libm's expf was a call per
 * element; Σ e^x is summed in double by GM_SUM8; NaN is skipped by the max as by fmaxf. Shared by
 * softmax, log_softmax and cross-entropy. */
float gm_softmax_row(const float *x, int64_t n, int64_t stride, float *y, int log_form);

/* erf in float32, branch-free for the same reason (glibc's erff, a call per element, was a
 * twentieth of a training step). |x| < 1: x + x·P(x²), P of degree 6; 1 ≤ |x|: 1 − e^(−x²)·R(1/|x|),
 * R of degree 8 fitted to erfc(x)·e^(x²) on [1, 4] (past 4, erf rounds to 1 in float32). The
 * coefficients are least-squares fits in float64 (relative error), evaluated by fmaf (one
 * rounding per step, the same bits in every clone): at most 1.5 ulp from erf over all floats
 * (spec/gelu_spec.lua checks it against float64). */
static inline float gm_erf(float x) {
  float s = x * x, p = 7.932866719784215e-05f;
  p = fmaf(p, s, -8.034645579755306e-04f);
  p = fmaf(p, s, 5.191193427890539e-03f);
  p = fmaf(p, s, -2.6855384930968285e-02f);
  p = fmaf(p, s, 1.1283625662326813e-01f);
  p = fmaf(p, s, -3.761262893676758e-01f);
  p = fmaf(p, s, 1.2837916612625122e-01f);
  float small = fmaf(x, p, x);
  float t = fabsf(x);
  t = t > 4.0f ? 4.0f : t;
  float u = 1.0f / t, q = -1.2079884298145771e-02f;
  q = fmaf(q, u, 4.147293418645859e-02f);
  q = fmaf(q, u, -3.256680676713586e-03f);
  q = fmaf(q, u, -2.1059322357177734e-01f);
  q = fmaf(q, u, 4.749651551246643e-01f);
  q = fmaf(q, u, -4.620603919029236e-01f);
  q = fmaf(q, u, 3.947317227721214e-02f);
  q = fmaf(q, u, 5.594154596328735e-01f);
  q = fmaf(q, u, 2.469873579684645e-04f);
  float large = copysignf(1.0f - gm_exp_nonpositive(-(t * t)) * q, x);
  return fabsf(x) < 1.0f ? small : large;
}
static inline float gm_gelu_erf_value(float x) { return 0.5f * x * (1.0f + gm_erf(x * (float)M_SQRT1_2)); }
static inline float gm_gelu_erf_grad(float x) { /* Φ(x) + x φ(x) */
  return 0.5f * (1.0f + gm_erf(x * (float)M_SQRT1_2)) + x * GM_INV_SQRT_2PI * gm_exp_nonpositive(-0.5f * x * x);
}
static inline float gm_gelu_tanh_value(float x) {
  return 0.5f * x * (1.0f + tanhf(GM_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x)));
}
static inline float gm_gelu_tanh_grad(float x) {
  /* u = c(x + 0.044715x³): ½(1 + tanh u) + ½x(1 − tanh²u) c (1 + 3·0.044715x²) */
  float t = tanhf(GM_SQRT_2_OVER_PI * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GM_SQRT_2_OVER_PI * (1.0f + 3.0f * 0.044715f * x * x);
}

/* Counter-based dropout: the multiplier (0 or scale) of element `index` under `seed`, from a
 * 32-bit mixing hash (murmur3's finaliser, twice) that vectorises. The same (seed, index) always
 * gives the same answer, so backward recomputes masks instead of storing them. */
static inline uint32_t gm_mix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
/* The multiplier from the low and high 32-bit halves of index ^ seed. */
static inline float gm_dropout_factor(uint32_t lo, uint32_t hi, uint32_t threshold, float scale) {
  uint32_t h = gm_mix32(gm_mix32(lo) ^ hi);
  return (h >> 8) < threshold ? 0.0f : scale; /* threshold = p · 2^24 */
}
static inline float gm_dropout_keep(uint64_t seed, uint64_t index, uint32_t threshold, float scale) {
  return gm_dropout_factor((uint32_t)index ^ (uint32_t)seed, (uint32_t)(index >> 32) ^ (uint32_t)(seed >> 32),
                           threshold, scale);
}
/* dst[c] = src[c] · the multiplier of element base + c for c < n (src may be dst), each
 * multiplier also kept in z[c] when z is not NULL. The run is taken in pieces that do not cross
 * a multiple of 2^32 (one piece, in practice): within one the upper half of the index is fixed
 * and the hash runs in 32-bit lanes. The loops count in 32 bits too (pieces of at most 2^31):
 * a 64-bit counter cost each 16 lanes two 64-bit adds and a narrowing shuffle (the hash ran 10%
 * slower). */
static inline void gm_dropout_run(uint64_t seed, uint64_t base, int64_t n, uint32_t threshold,
                                  float scale, const float *src, float *dst, float *z) {
  for (int64_t done = 0; done < n;) {
    uint64_t at = base + (uint64_t)done;
    uint32_t lo = (uint32_t)at, hi = (uint32_t)(at >> 32) ^ (uint32_t)(seed >> 32);
    int64_t len = n - done, to_wrap = (int64_t)(((uint64_t)1 << 32) - lo);
    if (len > to_wrap) len = to_wrap;
    if (len > ((int64_t)1 << 31)) len = (int64_t)1 << 31;
    uint32_t count = (uint32_t)len;
    const float *s = src + done;
    float *d = dst + done, *zs = z ? z + done : NULL;
    if (zs) /* two loops, so that each vectorises */
      for (uint32_t c = 0; c < count; c++) {
        zs[c] = gm_dropout_factor((lo + c) ^ (uint32_t)seed, hi, threshold, scale);
        d[c] = s[c] * zs[c];
      }
    else
      for (uint32_t c = 0; c < count; c++)
        d[c] = s[c] * gm_dropout_factor((lo + c) ^ (uint32_t)seed, hi, threshold, scale);
    done += len;
  }
}

/* The hot loops are compiled three times, for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and
 * the portable baseline the build targets, and the loader picks one for the CPU it runs on (an
 * ifunc): the installed binary runs anywhere and still vectorises 8 or 16 wide. -std=c11 keeps
 * FMA contraction off, so every version gives the same bits. Not needed when the build already
 * targets AVX2 (make NATIVE=1), nor under clang (the fuzzers), whose clones differ. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__AVX2__)
#define GM_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GM_HOT
#endif

/* A function that stays a call with its side effects: GCC's noipa (clang has no IPA that
 * drops such calls and no such attribute; noinline does there). */
#ifdef __clang__
#define GM_NOIPA __attribute__((noinline))
#else
#define GM_NOIPA __attribute__((noipa))
#endif

/* result = Σ_{j<n} EXPR in double, in 8 fixed lanes (lane j mod 8, then the lanes pairwise): the
 * order does not depend on the vector width, so every clone of a GM_HOT loop gives the same bits,
 * and it vectorises where a serial double sum runs at one add per latency. EXPR reads j. */
#define GM_SUM8(result, n, j, EXPR)                                                          \
  do {                                                                                       \
    double gm_lane_[8] = {0};                                                                \
    int64_t gm_n_ = (n), gm_n8_ = gm_n_ & ~(int64_t)7;                                       \
    for (int64_t gm_b_ = 0; gm_b_ < gm_n8_; gm_b_ += 8)                                      \
      for (int gm_k_ = 0; gm_k_ < 8; gm_k_++) {                                              \
        int64_t j = gm_b_ + gm_k_;                                                           \
        gm_lane_[gm_k_] += (double)(EXPR);                                                   \
      }                                                                                      \
    for (int64_t j = gm_n8_; j < gm_n_; j++) gm_lane_[j & 7] += (double)(EXPR);             \
    (result) = ((gm_lane_[0] + gm_lane_[1]) + (gm_lane_[2] + gm_lane_[3])) +                  \
               ((gm_lane_[4] + gm_lane_[5]) + (gm_lane_[6] + gm_lane_[7]));                  \
  } while (0)

/* A parallel loop threshold: below it, threads cost more than they save. */
#define GM_PAR_MIN 32768

/* for (int64_t i = 0; i < n; i++) BODY, on the OpenMP team when `work` (elements touched)
 * passes GM_PAR_MIN and as a plain loop otherwise: even a parallel region disabled by an `if`
 * clause costs a trip through libgomp, which dominates tiny ops. */
#define GM_FOR(i, n, work, ...)                                                         \
  do {                                                                                \
    int64_t gm_for_n_ = (n);                                                          \
    if ((work) > GM_PAR_MIN) {                                                        \
      _Pragma("omp parallel for") for (int64_t i = 0; i < gm_for_n_; i++) __VA_ARGS__ \
    } else {                                                                          \
      for (int64_t i = 0; i < gm_for_n_; i++) __VA_ARGS__                             \
    }                                                                                 \
  } while (0)

#endif
