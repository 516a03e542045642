/* gm_segment.c — softmax within groups of rows (graph attention over an edge list: the scores
 * of all edges into one node are normalised together, as torch_geometric.utils.softmax).
 *
 * Forward, per group G and column c:  y_e = exp(x_e − max_G) / Σ_{e'∈G} exp(x_e' − max_G)
 * Backward (the softmax Jacobian restricted to the group):  dx_e = y_e (g_e − Σ_{e'∈G} g_e' y_e')
 * PyG adds 1e-16 to the denominator; it changes nothing in float32 and is left out. */
#include <float.h>

#include "gm_internal.h"

/* Group id of every row (0-based) from index, or −1 after a failure (already reported). */
static int64_t *group_ids(const gm_tensor *index, int64_t groups, int index_base) {
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)index->numel + 1);
  if (!ids) {
    gm_fail(GM_ERR_NOMEM, 0, "segment_softmax: out of memory");
    return NULL;
  }
  for (int64_t e = 0; e < index->numel; e++) {
    float v = index->data[e];
    /* checked as a float first: converting NaN or 1e30 to an integer is undefined */
    if (!(v == floorf(v)) || v < (float)index_base || v >= (float)index_base + (float)groups) {
      gm_fail(GM_ERR_ARG, 2, "segment_softmax: index %g at position %lld is not a group in [%d, %lld]",
              (double)v, (long long)e + index_base, index_base, (long long)groups - 1 + index_base);
      free(ids);
      return NULL;
    }
    ids[e] = (int64_t)v - index_base;
  }
  return ids;
}

gm_tensor *gm_segment_softmax(gm_tensor *x, gm_tensor *index, int64_t groups, int index_base) {
  char s[GM_SHAPE_BUF], t[GM_SHAPE_BUF];
  if (x->ndim < 1 || index->ndim != 1 || index->shape[0] != x->shape[0]) {
    gm_fail(GM_ERR_SHAPE, 2, "segment_softmax needs one index per row (got scores %s, index %s)",
            GM_SHAPE(x, s), GM_SHAPE(index, t));
    return NULL;
  }
  if (groups < 0) {
    gm_fail(GM_ERR_ARG, 3, "segment_softmax: group count %lld is negative", (long long)groups);
    return NULL;
  }
  int64_t rows = x->shape[0], cols = rows ? x->numel / rows : 0;
  int64_t *ids = group_ids(index, groups, index_base);
  if (!ids) return NULL;
  gm_tensor *out = gm_tensor_empty(x->ndim, x->shape);
  int64_t stat_shape[2] = {groups, cols};
  gm_tensor *mx = out ? gm_tensor_full(2, stat_shape, -INFINITY) : NULL;
  gm_tensor *sum = mx ? gm_tensor_full(2, stat_shape, 0.0f) : NULL;
  if (!sum) {
    free(ids);
    gm_tensor_release(out);
    gm_tensor_release(mx);
    return NULL;
  }
  const float *xv = x->data;
  float *y = out->data, *m = mx->data, *z = sum->data;
  for (int64_t e = 0; e < rows; e++)
    for (int64_t c = 0; c < cols; c++) m[ids[e] * cols + c] = fmaxf(m[ids[e] * cols + c], xv[e * cols + c]);
  for (int64_t e = 0; e < rows; e++)
    for (int64_t c = 0; c < cols; c++) {
      float mg = m[ids[e] * cols + c];
      y[e * cols + c] = expf(xv[e * cols + c] - (mg == -INFINITY ? 0 : mg));
      z[ids[e] * cols + c] += y[e * cols + c];
    }
  for (int64_t e = 0; e < rows; e++)
    for (int64_t c = 0; c < cols; c++) y[e * cols + c] /= z[ids[e] * cols + c];
  free(ids);
  gm_tensor_release(mx);
  gm_tensor_release(sum);
  /* iarg[0] = the group count, iarg[1] = the index base; saved = the group index */
  out = gm_record(out, GM_OP_SEGMENT_SOFTMAX, &x, 1);
  if (out && out->op == GM_OP_SEGMENT_SOFTMAX) {
    gm_node_save(out, index);
    gm_tensor_retain(index);
    out->iarg[0] = groups;
    out->iarg[1] = index_base;
  }
  return out;
}

gm_tensor *gm_segment_softmax_backward(const gm_tensor *node, const gm_tensor *g) {
  int64_t groups = node->iarg[0], rows = node->shape[0], cols = rows ? node->numel / rows : 0;
  int64_t *ids = group_ids(node->saved, groups, (int)node->iarg[1]);
  int64_t dot_shape[2] = {groups, cols};
  gm_tensor *dot = ids ? gm_tensor_full(2, dot_shape, 0.0f) : NULL;
  gm_tensor *dx = dot ? gm_tensor_empty(node->ndim, node->shape) : NULL;
  if (dx) {
    const float *y = node->data, *gv = g->data;
    float *d = dot->data;
    for (int64_t e = 0; e < rows; e++)
      for (int64_t c = 0; c < cols; c++) d[ids[e] * cols + c] += gv[e * cols + c] * y[e * cols + c];
    for (int64_t e = 0; e < rows; e++)
      for (int64_t c = 0; c < cols; c++)
        dx->data[e * cols + c] = y[e * cols + c] * (gv[e * cols + c] - d[ids[e] * cols + c]);
  }
  free(ids);
  gm_tensor_release(dot);
  return dx;
}
