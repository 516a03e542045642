/* gm_shape.c — reshape (a view), permute/transpose, concat, narrow, index_select and gather. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gm_internal.h"

gm_tensor *gm_reshape(gm_tensor *a, int ndim, const int64_t *shape) {
  int64_t resolved[GM_MAX_DIMS], known = 1;
  int infer = -1;
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  if (ndim < 0 || ndim > GM_MAX_DIMS) {
    gm_fail(GM_ERR_ARG, 2, "tensors have at most %d dimensions (got %d)", GM_MAX_DIMS, ndim);
    return NULL;
  }
  for (int i = 0; i < ndim; i++) {
    resolved[i] = shape[i];
    if (shape[i] == -1 && infer < 0) {
      infer = i;
    } else if (shape[i] < 0) {
      gm_fail(GM_ERR_ARG, 2, "invalid size %lld in dimension %d", (long long)shape[i], i + 1);
      return NULL;
    } else {
      int64_t factors[2] = { known, shape[i] };
      known = gm_numel_of(2, factors); /* -1 from the first overflow on */
    }
  }
  if (infer >= 0) {
    if (known <= 0 || a->numel % known != 0) {
      gm_fail(GM_ERR_SHAPE, 2, "cannot reshape a tensor of size %s into %s", GM_SHAPE(a, x),
              gm_shape_str(ndim, shape, y, sizeof y));
      return NULL;
    }
    resolved[infer] = a->numel / known;
  }
  if (gm_numel_of(ndim, resolved) != a->numel) {
    gm_fail(GM_ERR_SHAPE, 2, "cannot reshape a tensor of size %s into %s", GM_SHAPE(a, x),
            gm_shape_str(ndim, shape, y, sizeof y));
    return NULL;
  }
  gm_tensor *out = gm_tensor_view(a, a->data - a->storage->data, ndim, resolved);
  return gm_record(out, GM_OP_RESHAPE, &a, 1); /* no iarg: the source has the shape */
}

/* out[j0..jn] = a[i] where out dimension d is a's dimension perm[d]. Rows of out's last
 * dimension, a block of them per task: the block finds its first row in a by division and steps
 * an odometer from there, and a row contiguous in a is one memcpy (a division per dimension per
 * row made the attention's [B, L, 3, H, d] -> [3, B, H, L, d] split take 2.5 times a copy). */
#define PERMUTE_BLOCK_ROWS 64
static void permute_copy(const gm_tensor *a, float *out, const int *perm) {
  int n = a->ndim;
  int64_t in_strides[GM_MAX_DIMS], strides[GM_MAX_DIMS], shape[GM_MAX_DIMS];
  int64_t s = 1;
  for (int d = n - 1; d >= 0; d--) {
    in_strides[d] = s;
    s *= a->shape[d];
  }
  for (int d = 0; d < n; d++) {
    shape[d] = a->shape[perm[d]];
    strides[d] = in_strides[perm[d]];
  }
  int64_t inner = n ? shape[n - 1] : 1, rows = inner ? a->numel / inner : 0;
  int64_t step = n ? strides[n - 1] : 0;
  GM_FOR(block, (rows + PERMUTE_BLOCK_ROWS - 1) / PERMUTE_BLOCK_ROWS, a->numel, {
    int64_t r0 = block * PERMUTE_BLOCK_ROWS, r1 = rows - r0 < PERMUTE_BLOCK_ROWS ? rows : r0 + PERMUTE_BLOCK_ROWS;
    int64_t at[GM_MAX_DIMS], off = 0, rest = r0;
    for (int d = n - 2; d >= 0; d--) {
      at[d] = rest % shape[d];
      rest /= shape[d];
      off += at[d] * strides[d];
    }
    for (int64_t r = r0; r < r1; r++) {
      const float *src = a->data + off;
      float *dst = out + r * inner;
      if (step == 1)
        memcpy(dst, src, (size_t)inner * sizeof(float));
      else
        for (int64_t j = 0; j < inner; j++) dst[j] = src[j * step];
      for (int d = n - 2; d >= 0; d--) { /* the next row's offset */
        off += strides[d];
        if (++at[d] < shape[d]) break;
        off -= at[d] * strides[d];
        at[d] = 0;
      }
    }
  });
}

gm_tensor *gm_permute(gm_tensor *a, const int *perm) {
  int seen[GM_MAX_DIMS] = {0};
  int64_t shape[GM_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) {
    if (perm[d] < 0 || perm[d] >= a->ndim || seen[perm[d]]++) {
      gm_fail(GM_ERR_ARG, 2, "permutation is not a reordering of the %d dimensions", a->ndim);
      return NULL;
    }
    shape[d] = a->shape[perm[d]];
  }
  gm_tensor *out = gm_tensor_empty(a->ndim, shape);
  if (!out) return NULL;
  permute_copy(a, out->data, perm);
  /* iarg[d] = perm[d] for each dimension d */
  out = gm_record(out, GM_OP_PERMUTE, &a, 1);
  if (out)
    for (int d = 0; d < a->ndim; d++) out->iarg[d] = perm[d];
  return out;
}

gm_tensor *gm_transpose(gm_tensor *a, int d0, int d1) {
  if (gm_check_dim(a, d0, 2) != GM_OK || gm_check_dim(a, d1, 3) != GM_OK) return NULL;
  int perm[GM_MAX_DIMS];
  for (int d = 0; d < a->ndim; d++) perm[d] = d;
  perm[d0] = d1;
  perm[d1] = d0;
  return gm_permute(a, perm);
}

gm_tensor *gm_concat(gm_tensor **ts, int n, int dim) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  if (n < 1) {
    gm_fail(GM_ERR_ARG, 1, "concat needs at least one tensor");
    return NULL;
  }
  if (gm_check_dim(ts[0], dim, 2) != GM_OK) return NULL;
  int64_t shape[GM_MAX_DIMS];
  memcpy(shape, ts[0]->shape, sizeof shape);
  shape[dim] = 0;
  for (int i = 0; i < n; i++) {
    int fits = ts[i]->ndim == ts[0]->ndim;
    for (int d = 0; fits && d < ts[0]->ndim; d++)
      fits = d == dim || ts[i]->shape[d] == ts[0]->shape[d];
    if (!fits) {
      gm_fail(GM_ERR_SHAPE, 1, "size mismatch in concat along dimension %d: tensor 1 is %s, "
              "tensor %d is %s", dim + 1, GM_SHAPE(ts[0], x), i + 1, GM_SHAPE(ts[i], y));
      return NULL;
    }
    shape[dim] += ts[i]->shape[dim];
  }
  gm_tensor *out = gm_tensor_empty(ts[0]->ndim, shape);
  if (!out) return NULL;
  int64_t outer, size, inner;
  gm_dim_split(out, dim, &outer, &size, &inner);
  int64_t at = 0;
  for (int i = 0; i < n; i++) {
    int64_t chunk = ts[i]->shape[dim] * inner;
    for (int64_t o = 0; o < outer; o++)
      memcpy(out->data + o * size * inner + at, ts[i]->data + o * chunk,
             (size_t)chunk * sizeof(float));
    at += chunk;
  }
  /* iarg[0] = dim */
  out = gm_record(out, GM_OP_CONCAT, ts, n);
  if (out) out->iarg[0] = dim;
  return out;
}

gm_tensor *gm_narrow(gm_tensor *a, int dim, int64_t start, int64_t length) {
  char x[GM_SHAPE_BUF];
  if (gm_check_dim(a, dim, 2) != GM_OK) return NULL;
  if (start < 0 || length < 0 || start > a->shape[dim] || length > a->shape[dim] - start) {
    gm_fail(GM_ERR_ARG, 3, "narrow of length %lld from position %.0f is out of range for dimension %d of size %s",
            (long long)length, (double)start + 1, dim + 1, GM_SHAPE(a, x));
    return NULL;
  }
  int64_t shape[GM_MAX_DIMS], outer, size, inner;
  memcpy(shape, a->shape, sizeof shape);
  shape[dim] = length;
  gm_dim_split(a, dim, &outer, &size, &inner);
  gm_tensor *out;
  if (outer == 1) { /* a contiguous block: a view */
    out = gm_tensor_view(a, a->data - a->storage->data + start * inner, a->ndim, shape);
  } else {
    out = gm_tensor_empty(a->ndim, shape);
    if (!out) return NULL;
    for (int64_t o = 0; o < outer; o++)
      memcpy(out->data + o * length * inner, a->data + (o * size + start) * inner,
             (size_t)(length * inner) * sizeof(float));
  }
  /* iarg[0] = dim, iarg[1] = start */
  out = gm_record(out, GM_OP_NARROW, &a, 1);
  if (out) {
    out->iarg[0] = dim;
    out->iarg[1] = start;
  }
  return out;
}

/* Index values must be whole numbers in [base, base + size). */
static gm_status check_index(const gm_tensor *index, int64_t size, int base, int arg) {
  for (int64_t i = 0; i < index->numel; i++) {
    float v = index->data[i];
    if (!(v == floorf(v)) || v < (float)base || v >= (float)(base + size))
      return gm_fail(GM_ERR_ARG, arg, "index %g at position %lld is out of range [%d, %lld]",
                     (double)v, (long long)i + 1, base, (long long)(base + size - 1));
  }
  return GM_OK;
}

/* 1 when no entry of index (checked, within [base, base + size)) repeats; 0 also without memory
 * for the check. */
static int distinct(const gm_tensor *index, int64_t size, int base) {
  unsigned char *seen = calloc((size_t)size, 1);
  int unique = seen != NULL;
  for (int64_t i = 0; unique && i < index->numel; i++) {
    int64_t at = (int64_t)index->data[i] - base;
    unique = !seen[at];
    seen[at] = 1;
  }
  free(seen);
  return unique;
}

gm_tensor *gm_index_select(gm_tensor *a, int dim, gm_tensor *index, int index_base) {
  char x[GM_SHAPE_BUF];
  if (gm_check_dim(a, dim, 2) != GM_OK) return NULL;
  if (index->ndim != 1) {
    gm_fail(GM_ERR_SHAPE, 3, "index_select needs a 1-D index (got %s)", GM_SHAPE(index, x));
    return NULL;
  }
  if (check_index(index, a->shape[dim], index_base, 3) != GM_OK) return NULL;
  int64_t shape[GM_MAX_DIMS], outer, size, inner;
  memcpy(shape, a->shape, sizeof shape);
  shape[dim] = index->numel;
  gm_dim_split(a, dim, &outer, &size, &inner);
  gm_tensor *out = gm_tensor_empty(a->ndim, shape);
  if (!out) return NULL;
  int64_t count = index->numel;
  if (inner == 1) /* the last dimension: single floats, not a memcpy each */
    GM_FOR(o, outer, out->numel, {
      const float *from = a->data + o * size;
      float *to = out->data + o * count;
      for (int64_t j = 0; j < count; j++) to[j] = from[(int64_t)index->data[j] - index_base];
    });
  else
    GM_FOR(r, outer * count, out->numel, {
      int64_t o = r / count, j = r % count;
      int64_t row = (int64_t)index->data[j] - index_base;
      memcpy(out->data + r * inner, a->data + (o * size + row) * inner, (size_t)inner * sizeof(float));
    });
  gm_tensor *srcs[2] = {a, index};
  /* iarg[0] = dim, iarg[1] = the index base, iarg[2] = 1 when no index repeats; saved = the index */
  out = gm_record(out, GM_OP_INDEX_SELECT, srcs, 1);
  if (out && out->op == GM_OP_INDEX_SELECT) {
    out->iarg[0] = dim;
    out->iarg[1] = index_base;
    out->iarg[2] = distinct(index, size, index_base);
    gm_node_save(out, index);
    gm_tensor_retain(index);
  }
  return out;
}

/* Columns of a row that one task of gm_index_rows_add takes: 1 KiB. */
#define ROWS_ADD_COLUMNS 256

GM_HOT void gm_index_rows_add(float *dst, const float *src, const gm_tensor *index, int base,
                              int64_t outer, int64_t size, int64_t inner) {
  int64_t count = index->numel, parts = (inner + ROWS_ADD_COLUMNS - 1) / ROWS_ADD_COLUMNS;
  /* a task per (outer block, run of columns): each element of dst is one task's, which adds
   * its rows in the order of j, so the sums do not depend on the threads */
  GM_FOR(t, outer * parts, outer * count * inner, {
    int64_t o = t / parts, c0 = t % parts * ROWS_ADD_COLUMNS;
    int64_t c1 = c0 + ROWS_ADD_COLUMNS < inner ? c0 + ROWS_ADD_COLUMNS : inner;
    for (int64_t j = 0; j < count; j++) {
      float *d = dst + (o * size + (int64_t)index->data[j] - base) * inner;
      const float *s = src + (o * count + j) * inner;
      for (int64_t c = c0; c < c1; c++) d[c] += s[c];
    }
  });
}

void gm_gather_kernel(const gm_tensor *a, const gm_tensor *index, int dim, int index_base,
                      float *a_data, float *out_data, int scatter) {
  int64_t a_strides[GM_MAX_DIMS], s = 1;
  for (int d = a->ndim - 1; d >= 0; d--) {
    a_strides[d] = s;
    s *= a->shape[d];
  }
  for (int64_t i = 0; i < index->numel; i++) {
    int64_t rest = i, off = 0;
    for (int d = index->ndim - 1; d >= 0; d--) {
      int64_t at = rest % index->shape[d];
      rest /= index->shape[d];
      if (d == dim) at = (int64_t)index->data[i] - index_base;
      off += at * a_strides[d];
    }
    if (scatter) a_data[off] += out_data[i];
    else out_data[i] = a_data[off];
  }
}

gm_tensor *gm_gather(gm_tensor *a, int dim, gm_tensor *index, int index_base) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  if (gm_check_dim(a, dim, 2) != GM_OK) return NULL;
  int fits = index->ndim == a->ndim;
  for (int d = 0; fits && d < a->ndim; d++) fits = d == dim || index->shape[d] <= a->shape[d];
  if (!fits) {
    gm_fail(GM_ERR_SHAPE, 3, "gather index of size %s does not fit a tensor of size %s",
            GM_SHAPE(index, x), GM_SHAPE(a, y));
    return NULL;
  }
  if (check_index(index, a->shape[dim], index_base, 3) != GM_OK) return NULL;
  gm_tensor *out = gm_tensor_empty(index->ndim, index->shape);
  if (!out) return NULL;
  gm_gather_kernel(a, index, dim, index_base, a->data, out->data, 0);
  /* iarg[0] = dim, iarg[1] = the index base; saved = the index */
  out = gm_record(out, GM_OP_GATHER, &a, 1);
  if (out && out->op == GM_OP_GATHER) {
    out->iarg[0] = dim;
    out->iarg[1] = index_base;
    gm_node_save(out, index);
    gm_tensor_retain(index);
  }
  return out;
}

gm_tensor *gm_top_sums(gm_tensor *src, gm_tensor *index, int64_t width, int64_t k, int index_base,
                       gm_tensor **candidates) {
  *candidates = NULL;
  if (width < 1 || k < 1) {
    gm_fail(GM_ERR_ARG, width < 1 ? 3 : 4, "top_sums needs a width and a k of at least 1 (got %lld, %lld)",
            (long long)width, (long long)k);
    return NULL;
  }
  if (index->numel % width != 0) {
    gm_fail(GM_ERR_SHAPE, 2, "top_sums: %lld indices are not whole groups of %lld", (long long)index->numel,
            (long long)width);
    return NULL;
  }
  if (check_index(index, src->numel, index_base, 2) != GM_OK) return NULL;
  int64_t n = index->numel / width, m = n < k ? n : k;
  gm_tensor *values = gm_tensor_empty(1, &m), *which = gm_tensor_empty(1, &m);
  if (!values || !which) {
    gm_tensor_release(values);
    gm_tensor_release(which);
    return NULL;
  }
  /* the best m so far, best first: a new sum enters only above the last, after its equals */
  int64_t held = 0;
  const float *at = index->data;
  for (int64_t c = 0; c < n; c++, at += width) {
    double acc = 0; /* as gm_sum adds, so that the scores are the same */
    for (int64_t j = 0; j < width; j++) acc += src->data[(int64_t)at[j] - index_base];
    float s = (float)acc;
    if (held == m && !(s > values->data[m - 1])) continue;
    int64_t i = held < m ? held++ : m - 1;
    for (; i > 0 && values->data[i - 1] < s; i--) {
      values->data[i] = values->data[i - 1];
      which->data[i] = which->data[i - 1];
    }
    values->data[i] = s;
    which->data[i] = (float)(c + index_base);
  }
  *candidates = which;
  return values;
}

gm_tensor *gm_index_add(gm_tensor *base, gm_tensor *index, gm_tensor *src, int index_base) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  if (base->ndim < 1 || index->ndim != 1 || src->ndim != base->ndim ||
      src->shape[0] != index->numel) {
    gm_fail(GM_ERR_SHAPE, 3, "index_add needs src [len(index), ...] matching base (got base %s, src %s)",
            GM_SHAPE(base, x), GM_SHAPE(src, y));
    return NULL;
  }
  for (int d = 1; d < base->ndim; d++)
    if (src->shape[d] != base->shape[d]) {
      gm_fail(GM_ERR_SHAPE, 3, "index_add rows differ: base %s, src %s", GM_SHAPE(base, x), GM_SHAPE(src, y));
      return NULL;
    }
  if (check_index(index, base->shape[0], index_base, 2) != GM_OK) return NULL;
  gm_tensor *out = gm_tensor_clone(base);
  if (!out) return NULL;
  int64_t row = base->shape[0] ? base->numel / base->shape[0] : 0;
  gm_index_rows_add(out->data, src->data, index, index_base, 1, base->shape[0], row);
  gm_tensor *srcs[3] = {base, NULL, src};
  /* iarg[0] = the index base; saved = the index (src[1] stays NULL: no gradient) */
  out = gm_record(out, GM_OP_INDEX_ADD, srcs, 3);
  if (out && out->op == GM_OP_INDEX_ADD) {
    gm_node_save(out, index);
    gm_tensor_retain(index);
    out->iarg[0] = index_base;
  }
  return out;
}

/* narrow's backward: g [.., len, ..] into the window [start, start + len) along dim of dx, a's
 * shape. add: dx is a's pending gradient, the window gets g added; else dx is new, the window
 * gets g and the rest zeros (only the rest is zeroed: the window is often most of a large
 * tensor). Packed attention narrows q, k and v of each sequence out of one product: adding each
 * window where it lands, instead of a full-size tensor per window, saves a pass over that
 * product's gradient per sequence. */
void gm_narrow_backward(const gm_tensor *node, const gm_tensor *g, float *dx, int add) {
  const gm_tensor *a = node->src[0];
  int dim = (int)node->iarg[0];
  int64_t outer, size, inner, len = node->shape[dim], start = node->iarg[1];
  gm_dim_split(a, dim, &outer, &size, &inner);
  int64_t n = len * inner;
  for (int64_t o = 0; o < outer; o++) {
    float *row = dx + o * size * inner, *dst = row + start * inner;
    const float *src = g->data + o * n;
    if (add) {
      GM_FOR(k, n, n, { dst[k] += src[k]; });
    } else {
      memset(row, 0, (size_t)(start * inner) * sizeof(float));
      memcpy(dst, src, (size_t)n * sizeof(float));
      memset(row + (start + len) * inner, 0, (size_t)((size - start - len) * inner) * sizeof(float));
    }
  }
}
