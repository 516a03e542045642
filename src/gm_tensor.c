/* gm_tensor.c — storage and tensor lifetime, shapes, constructors, views, in-place helpers. */
#include <math.h>
#include <string.h>

#include "gm_internal.h"

static void refcount_inc(int *rc) { __atomic_add_fetch(rc, 1, __ATOMIC_RELAXED); }
static int refcount_dec(int *rc) { return __atomic_sub_fetch(rc, 1, __ATOMIC_ACQ_REL); }

static gm_storage *storage_new(int64_t numel) {
  gm_storage *s = gm_malloc(sizeof *s);
  if (!s) return NULL;
  /* one element at least, so data is never NULL */
  s->data = gm_malloc((size_t)(numel > 0 ? numel : 1) * sizeof(float));
  if (!s->data) {
    gm_free(s);
    return NULL;
  }
  s->numel = numel;
  s->refcount = 1;
  s->version = 0;
  static uint64_t serials;
  s->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
  return s;
}

static void storage_release(gm_storage *s) {
  if (s && refcount_dec(&s->refcount) == 0) {
    gm_free(s->data);
    gm_free(s);
  }
}

int64_t gm_numel_of(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return -1;
    if (shape[i] && n > INT64_MAX / shape[i]) return -1;
    n *= shape[i];
  }
  return n;
}

char *gm_shape_str(int ndim, const int64_t *shape, char *buf, size_t size) {
  if (ndim == 0) {
    snprintf(buf, size, "scalar");
    return buf;
  }
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < ndim && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? "x%lld" : "%lld", (long long)shape[i]);
  return buf;
}

/* The largest tensor we accept: its bytes must fit a size_t with room to spare. */
#define GM_MAX_NUMEL ((int64_t)1 << 40)

gm_status gm_check_shape(int ndim, const int64_t *shape, int arg) {
  if (ndim < 0 || ndim > GM_MAX_DIMS)
    return gm_fail(GM_ERR_ARG, arg, "tensors have at most %d dimensions (got %d)", GM_MAX_DIMS,
                   ndim);
  for (int i = 0; i < ndim; i++)
    if (shape[i] < 0)
      return gm_fail(GM_ERR_ARG, arg, "negative size %lld in dimension %d",
                     (long long)shape[i], i + 1);
  int64_t n = gm_numel_of(ndim, shape);
  if (n < 0 || n > GM_MAX_NUMEL) {
    char buf[GM_SHAPE_BUF];
    return gm_fail(GM_ERR_NOMEM, arg, "tensor of size %s is too large",
                   gm_shape_str(ndim, shape, buf, sizeof buf));
  }
  return GM_OK;
}

static gm_tensor *tensor_alloc(int ndim, const int64_t *shape) {
  gm_tensor *t = gm_malloc(sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->refcount = 1;
  t->ndim = ndim;
  for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
  t->numel = gm_numel_of(ndim, shape);
  t->src = t->src_inline;
  return t;
}

gm_tensor *gm_tensor_empty(int ndim, const int64_t *shape) {
  if (gm_check_shape(ndim, shape, 0) != GM_OK) return NULL;
  gm_tensor *t = tensor_alloc(ndim, shape);
  if (!t) return NULL;
  t->storage = storage_new(t->numel);
  if (!t->storage) {
    gm_free(t);
    return NULL;
  }
  t->data = t->storage->data;
  return t;
}

gm_tensor *gm_tensor_view(gm_tensor *base, int64_t offset, int ndim, const int64_t *shape) {
  gm_tensor *t = tensor_alloc(ndim, shape);
  if (!t) return NULL;
  GM_ASSERT(offset >= 0 && offset + t->numel <= base->storage->numel);
  t->storage = base->storage;
  refcount_inc(&t->storage->refcount);
  t->data = base->storage->data + offset;
  return t;
}

void gm_tensor_retain(gm_tensor *t) { refcount_inc(&t->refcount); }

void gm_tensor_pin(gm_tensor *t) { __atomic_add_fetch(&t->data_pins, 1, __ATOMIC_RELAXED); }

/* Drops the storage of a recorded intermediate that nobody will read any more. Leaves and
 * tensors made outside autograd keep theirs. */
void gm_tensor_unpin(gm_tensor *t) {
  if (__atomic_sub_fetch(&t->data_pins, 1, __ATOMIC_ACQ_REL) > 0) return;
  if (t->op == GM_OP_NONE || !t->storage) return;
  storage_release(t->storage);
  t->storage = NULL;
  t->data = NULL;
}

void gm_node_clear(gm_tensor *t) {
  for (int i = 0; i < t->nsrc; i++)
    if (t->src[i] && (t->pinned_srcs >> i & 1)) gm_tensor_unpin(t->src[i]);
  t->pinned_srcs = 0;
  if (t->pinned_self) {
    t->pinned_self = 0;
    gm_tensor_unpin(t);
  }
  for (int i = 0; i < t->nsrc; i++) gm_tensor_release(t->src[i]);
  if (t->src != t->src_inline) gm_free(t->src);
  t->src = t->src_inline;
  t->nsrc = 0;
  gm_tensor_release(t->saved);
  t->saved = NULL;
}

void gm_tensor_release(gm_tensor *t) {
  if (!t || refcount_dec(&t->refcount) > 0) return;
  gm_node_clear(t);
  gm_tensor_release(t->grad);
  gm_tensor_release(t->grad_pending);
  storage_release(t->storage);
  gm_free(t);
}

static void fill_values(float *d, int64_t n, float value) {
  if (value == 0.0f) memset(d, 0, (size_t)n * sizeof(float));
  else GM_FOR(i, n, n, { d[i] = value; });
}

gm_tensor *gm_tensor_full(int ndim, const int64_t *shape, float value) {
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (t) fill_values(t->data, t->numel, value);
  return t;
}

gm_tensor *gm_tensor_from_data(int ndim, const int64_t *shape, const float *data) {
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (t) memcpy(t->data, data, (size_t)t->numel * sizeof(float));
  return t;
}

gm_tensor *gm_tensor_arange(double start, double stop, double step) {
  if (!isfinite(start) || !isfinite(stop) || !isfinite(step) || step == 0) {
    gm_fail(GM_ERR_ARG, 0, "arange needs finite bounds and a non-zero step");
    return NULL;
  }
  double count = ceil((stop - start) / step);
  if (count < 0) count = 0;
  if (count > (double)GM_MAX_NUMEL) {
    gm_fail(GM_ERR_NOMEM, 0, "arange of %.0f elements is too large", count);
    return NULL;
  }
  int64_t n = (int64_t)count;
  gm_tensor *t = gm_tensor_empty(1, &n);
  if (!t) return NULL;
  for (int64_t i = 0; i < n; i++) t->data[i] = (float)(start + (double)i * step);
  return t;
}

/* Random tensors fill sequentially so the same seed gives the same bits at any thread count. */
gm_tensor *gm_tensor_randn(gm_rng *rng, int ndim, const int64_t *shape) {
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (!t) return NULL;
  for (int64_t i = 0; i < t->numel; i++) t->data[i] = (float)gm_rng_normal(rng);
  return t;
}

gm_tensor *gm_tensor_rand(gm_rng *rng, int ndim, const int64_t *shape) {
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (!t) return NULL;
  /* A double just below 1 rounds to 1.0f (one draw in 2^25): kept below 1, as [0, 1) promises
     (a caller's floor(u * n) + 1 must stay within 1..n). Every other value is rounded as before. */
  for (int64_t i = 0; i < t->numel; i++) {
    float u = (float)gm_rng_uniform(rng);
    t->data[i] = u < 1.0f ? u : 0x1.fffffep-1f;
  }
  return t;
}

gm_tensor *gm_tensor_clone(const gm_tensor *t) {
  return gm_tensor_from_data(t->ndim, t->shape, t->data);
}

gm_tensor *gm_tensor_detach(gm_tensor *t) {
  return gm_tensor_view(t, t->data - t->storage->data, t->ndim, t->shape);
}

int gm_tensor_same_shape(const gm_tensor *a, const gm_tensor *b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

gm_status gm_check_dim(const gm_tensor *t, int dim, int arg) {
  if (dim < 0 || dim >= t->ndim) {
    char buf[GM_SHAPE_BUF];
    return gm_fail(GM_ERR_ARG, arg, "dimension %d out of range for a tensor of size %s",
                   dim + 1, GM_SHAPE(t, buf));
  }
  return GM_OK;
}

void gm_dim_split(const gm_tensor *t, int dim, int64_t *outer, int64_t *size, int64_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int i = 0; i < dim; i++) *outer *= t->shape[i];
  for (int i = dim + 1; i < t->ndim; i++) *inner *= t->shape[i];
  *size = t->shape[dim];
}

/* ---- autograd bookkeeping ---------------------------------------------------------------- */

static _Thread_local int grad_disabled;

int gm_grad_enabled(void) { return !grad_disabled; }

int gm_set_grad_enabled(int on) {
  int previous = !grad_disabled;
  grad_disabled = !on;
  return previous;
}

static _Thread_local int backward_running;

int gm_backward_running(void) { return backward_running; }

int gm_set_backward_running(int on) {
  int previous = backward_running;
  backward_running = on;
  return previous;
}

gm_status gm_tensor_set_requires_grad(gm_tensor *t, int on) {
  if (t->op != GM_OP_NONE)
    return gm_fail(GM_ERR_STATE, 1,
                   "requires_grad can only be changed on a leaf (this tensor was made by %s; "
                   "use detach())",
                   gm_op_name(t->op));
  t->requires_grad = on != 0;
  return GM_OK;
}

void gm_tensor_zero_grad(gm_tensor *t) {
  gm_tensor_release(t->grad);
  t->grad = NULL;
}

int gm_needs_grad(gm_tensor *const *srcs, int n) {
  if (grad_disabled) return 0;
  for (int i = 0; i < n; i++)
    if (srcs[i] && srcs[i]->requires_grad) return 1;
  return 0;
}

gm_tensor *gm_record(gm_tensor *out, gm_op op, gm_tensor *const *srcs, int n) {
  if (!out || !gm_needs_grad(srcs, n)) return out;
  if (n > GM_MAX_SRC) {
    out->src = gm_malloc((size_t)n * sizeof *out->src);
    if (!out->src) {
      out->src = out->src_inline;
      gm_tensor_release(out);
      return NULL;
    }
  }
  for (int i = 0; i < n; i++) {
    out->src[i] = srcs[i];
    if (srcs[i]) gm_tensor_retain(srcs[i]);
  }
  out->nsrc = n;
  out->op = op;
  out->requires_grad = 1;
  /* pin what this op's backward will read */
  unsigned need = gm_op_needs_src_data(op);
  for (int i = 0; i < n && i < GM_MAX_PINNED; i++)
    if (srcs[i] && (need >> i & 1)) {
      gm_tensor_pin(srcs[i]);
      out->pinned_srcs |= (uint16_t)(1u << i);
      out->src_versions[i] = srcs[i]->storage ? srcs[i]->storage->version : 0;
    }
  if (gm_op_needs_output(op)) {
    gm_tensor_pin(out);
    out->pinned_self = 1;
    out->self_version = out->storage ? out->storage->version : 0;
  }
  return out;
}

void gm_node_save(gm_tensor *node, gm_tensor *t) {
  node->saved = t;
  node->saved_version = t && t->storage ? t->storage->version : 0;
}

/* ---- in-place helpers -------------------------------------------------------------------- */

gm_status gm_tensor_check_writable(const gm_tensor *t) {
  if (t->op != GM_OP_NONE && t->op != GM_OP_FREED)
    return gm_fail(GM_ERR_STATE, 1,
                   "in-place change of a tensor that a recorded graph needs (made by %s)",
                   gm_op_name(t->op));
  if (t->requires_grad && gm_grad_enabled())
    return gm_fail(GM_ERR_STATE, 1,
                   "in-place change of a leaf that requires grad (wrap it in gm.no_grad)");
  if (t->storage) __atomic_add_fetch(&t->storage->version, 1, __ATOMIC_RELAXED); /* (views share it) */
  return GM_OK;
}

gm_status gm_tensor_fill_(gm_tensor *t, float value) {
  gm_status st = gm_tensor_check_writable(t);
  if (st == GM_OK) fill_values(t->data, t->numel, value);
  return st;
}

static gm_status check_same_numel(const gm_tensor *dst, const gm_tensor *src) {
  if (dst->numel != src->numel) {
    char a[GM_SHAPE_BUF], b[GM_SHAPE_BUF];
    return gm_fail(GM_ERR_SHAPE, 2, "size mismatch: %s and %s", GM_SHAPE(dst, a),
                   GM_SHAPE(src, b));
  }
  return gm_tensor_check_writable(dst);
}

gm_status gm_tensor_copy_(gm_tensor *dst, const gm_tensor *src) {
  gm_status st = check_same_numel(dst, src);
  if (st == GM_OK) memmove(dst->data, src->data, (size_t)src->numel * sizeof(float));
  return st;
}

gm_status gm_tensor_add_(gm_tensor *dst, const gm_tensor *src, float alpha) {
  gm_status st = check_same_numel(dst, src);
  if (st != GM_OK) return st;
  float *d = dst->data;
  const float *s = src->data;
  int64_t n = dst->numel;
  GM_FOR(i, n, n, { d[i] += alpha * s[i]; });
  return GM_OK;
}

gm_status gm_tensor_mul_(gm_tensor *t, float s) {
  gm_status st = gm_tensor_check_writable(t);
  if (st != GM_OK) return st;
  float *d = t->data;
  int64_t n = t->numel;
  GM_FOR(i, n, n, { d[i] *= s; });
  return GM_OK;
}
