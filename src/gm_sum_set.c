/* gm_sum_set.c — gm_top_sums for a set of candidates asked again and again: constrained
 * decoding scores a relation's known tails (100,000 and more) against each query's slot
 * log-probabilities, and reading every candidate for every query was a fifth of extraction.
 *
 * The candidates are grouped by their first element. A query first finds, for every later slot,
 * the largest value any candidate can read there; a group's bound is its first element's value
 * plus those. A group whose bound is below the k-th best sum so far cannot enter, so it is
 * skipped unread; with the peaked distributions a trained model gives, a few groups are read.
 * The answer is gm_top_sums's exactly: each sum is added in the same order and precision, the
 * bound is added the same way from values at least as large (so it is never below the sum: both
 * double additions and the final rounding to float are monotone), a group is skipped only when
 * its bound is strictly below the k-th value, and ties rank by candidate number as there. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gm_internal.h"

struct gm_sum_set {
  int64_t n, width, groups;
  int64_t max_element; /* the largest element, 0-based: a query's src must be longer */
  int32_t *first;      /* [groups] each group's first element (0-based) */
  int64_t *start;      /* [groups + 1] the group's members in member[start[g] .. start[g+1]) */
  int32_t *member;     /* [n] candidate numbers (0-based), ascending within a group */
  int32_t *rest;       /* [n · (width − 1)] the members' other elements, in member order */
  int64_t *slot_start; /* [width] slot j's distinct elements in slot_elements[slot_start[j-1] ..] */
  int32_t *slot_elements;
};

void gm_sum_set_free(gm_sum_set *s) {
  if (!s) return;
  gm_free(s->first);
  gm_free(s->start);
  gm_free(s->member);
  gm_free(s->rest);
  gm_free(s->slot_start);
  gm_free(s->slot_elements);
  gm_free(s);
}

/* candidates in order of their first element, then of their number */
static int by_first(const void *x, const void *y, void *ctx) {
  const int32_t *first = ctx;
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  if (first[a] != first[b]) return first[a] < first[b] ? -1 : 1;
  return (a > b) - (a < b);
}

static int ascending(const void *x, const void *y) {
  int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
  return (a > b) - (a < b);
}

gm_sum_set *gm_sum_set_new(gm_tensor *index, int64_t width, int index_base) {
  if (width < 1 || index->numel % width != 0) {
    gm_fail(width < 1 ? GM_ERR_ARG : GM_ERR_SHAPE, 2, "sum_set: %lld indices are not whole groups of %lld",
            (long long)index->numel, (long long)width);
    return NULL;
  }
  int64_t n = index->numel / width, top = 0;
  if (index->numel > INT32_MAX) {
    gm_fail(GM_ERR_ARG, 1, "sum_set: %lld indices are more than it takes", (long long)index->numel);
    return NULL;
  }
  for (int64_t i = 0; i < index->numel; i++) { /* checked as floats before any conversion */
    float v = index->data[i];
    if (!(v >= (float)index_base) || v - (float)index_base > (float)(INT32_MAX / 2) || v != floorf(v)) {
      gm_fail(GM_ERR_ARG, 1, "sum_set: index %g at position %lld is not an element number from %d", (double)v,
              (long long)i + 1, index_base);
      return NULL;
    }
    if ((int64_t)v - index_base > top) top = (int64_t)v - index_base;
  }
  gm_sum_set *s = gm_malloc(sizeof *s);
  if (!s) return NULL;
  memset(s, 0, sizeof *s);
  s->n = n;
  s->width = width;
  s->max_element = top;
  int32_t *first = gm_malloc(sizeof(int32_t) * (size_t)(n + 1));
  s->member = gm_malloc(sizeof(int32_t) * (size_t)(n + 1));
  s->first = gm_malloc(sizeof(int32_t) * (size_t)(n + 1));
  s->start = gm_malloc(sizeof(int64_t) * (size_t)(n + 2));
  s->rest = gm_malloc(sizeof(int32_t) * (size_t)(n * (width - 1) + 1));
  s->slot_start = gm_malloc(sizeof(int64_t) * (size_t)width);
  s->slot_elements = gm_malloc(sizeof(int32_t) * (size_t)(n * (width - 1) + 1));
  if (!first || !s->member || !s->first || !s->start || !s->rest || !s->slot_start || !s->slot_elements) {
    gm_free(first);
    gm_sum_set_free(s);
    return NULL;
  }
  /* groups by first element, members in candidate order */
  for (int64_t c = 0; c < n; c++) {
    first[c] = (int32_t)((int64_t)index->data[c * width] - index_base);
    s->member[c] = (int32_t)c;
  }
  qsort_r(s->member, (size_t)n, sizeof(int32_t), by_first, first);
  int64_t groups = 0;
  for (int64_t p = 0; p < n; p++) {
    int32_t c = s->member[p];
    if (p == 0 || first[c] != first[s->member[p - 1]]) {
      s->first[groups] = first[c];
      s->start[groups++] = p;
    }
    for (int64_t j = 1; j < width; j++)
      s->rest[p * (width - 1) + j - 1] = (int32_t)((int64_t)index->data[c * width + j] - index_base);
  }
  s->groups = groups;
  s->start[groups] = n;
  gm_free(first);
  /* each later slot's distinct elements, for the bounds */
  int64_t used = 0;
  s->slot_start[0] = 0;
  for (int64_t j = 1; j < width; j++) {
    int32_t *slot = s->slot_elements + used;
    for (int64_t c = 0; c < n; c++) slot[c] = (int32_t)((int64_t)index->data[c * width + j] - index_base);
    qsort(slot, (size_t)n, sizeof(int32_t), ascending);
    int64_t distinct = 0;
    for (int64_t c = 0; c < n; c++)
      if (c == 0 || slot[c] != slot[distinct - 1]) slot[distinct++] = slot[c];
    used += distinct;
    s->slot_start[j] = used;
  }
  return s;
}

int64_t gm_sum_set_size(const gm_sum_set *s) { return s->n; }
int64_t gm_sum_set_width(const gm_sum_set *s) { return s->width; }

/* the best m so far, best first: a sum enters above the last, or equal to it with a lower number */
typedef struct {
  float *values, *which;
  int64_t held, m;
} ranking;

static void offer(ranking *r, float v, int64_t c, int index_base) {
  float number = (float)(c + index_base);
  if (r->held == r->m && !(v > r->values[r->m - 1] || (v == r->values[r->m - 1] && number < r->which[r->m - 1])))
    return;
  int64_t i = r->held < r->m ? r->held++ : r->m - 1;
  for (; i > 0 && (r->values[i - 1] < v || (r->values[i - 1] == v && r->which[i - 1] > number)); i--) {
    r->values[i] = r->values[i - 1];
    r->which[i] = r->which[i - 1];
  }
  r->values[i] = v;
  r->which[i] = number;
}

static void read_group(const gm_sum_set *s, const float *src, int64_t g, ranking *r, int index_base) {
  int64_t w = s->width - 1;
  for (int64_t p = s->start[g]; p < s->start[g + 1]; p++) {
    double acc = src[s->first[g]]; /* as gm_top_sums adds */
    for (int64_t j = 0; j < w; j++) acc += src[s->rest[p * w + j]];
    offer(r, (float)acc, s->member[p], index_base);
  }
}

gm_tensor *gm_sum_set_top(const gm_sum_set *s, gm_tensor *src, int64_t k, int index_base, gm_tensor **candidates) {
  *candidates = NULL;
  if (k < 1) {
    gm_fail(GM_ERR_ARG, 3, "sum_set: k must be at least 1 (got %lld)", (long long)k);
    return NULL;
  }
  if (s->n > 0 && src->numel <= s->max_element) {
    gm_fail(GM_ERR_SHAPE, 2, "sum_set: its elements reach %lld, the tensor has %lld", (long long)s->max_element + 1,
            (long long)src->numel);
    return NULL;
  }
  int64_t m = s->n < k ? s->n : k;
  gm_tensor *values = gm_tensor_empty(1, &m), *which = gm_tensor_empty(1, &m);
  if (!values || !which) {
    gm_tensor_release(values);
    gm_tensor_release(which);
    return NULL;
  }
  if (m == 0) {
    *candidates = which;
    return values;
  }
  const float *x = src->data;
  double rest[64], *later = s->width - 1 <= 64 ? rest : gm_malloc(sizeof(double) * (size_t)(s->width - 1));
  if (!later) {
    gm_tensor_release(values);
    gm_tensor_release(which);
    return NULL;
  }
  for (int64_t j = 1; j < s->width; j++) {
    float best = x[s->slot_elements[s->slot_start[j - 1]]];
    for (int64_t i = s->slot_start[j - 1]; i < s->slot_start[j]; i++)
      if (x[s->slot_elements[i]] > best) best = x[s->slot_elements[i]];
    later[j - 1] = best;
  }
  ranking r = {values->data, which->data, 0, m};
  /* the group of the best first element first: its sums make the k-th value a useful bar early */
  int64_t seed = 0;
  for (int64_t g = 1; g < s->groups; g++)
    if (x[s->first[g]] > x[s->first[seed]]) seed = g;
  read_group(s, x, seed, &r, index_base);
  for (int64_t g = 0; g < s->groups; g++) {
    if (g == seed) continue;
    if (r.held == m) {
      double bound = x[s->first[g]];
      for (int64_t j = 0; j < s->width - 1; j++) bound += later[j];
      if ((float)bound < r.values[m - 1]) continue;
    }
    read_group(s, x, g, &r, index_base);
  }
  if (later != rest) gm_free(later);
  *candidates = which;
  return values;
}
