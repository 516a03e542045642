/* gm_autograd.c — reverse-mode autodiff over the recorded graph.
 *
 * gm_backward() sorts the nodes reachable from the root topologically, seeds the root with
 * ones, and visits the nodes in reverse order. Each visit is one case of the switch in
 * node_backward(): it turns the node's gradient g into contributions for its sources, which
 * accumulate in their grad_pending until they are visited in turn. Leaves move their pending
 * gradient into ->grad. Backward itself runs with grad mode off, so it records nothing.
 *
 * Where an op's backward lives, one rule: node_backward holds the chain rule of every op —
 * which source gets what, composed from differentiable ops where it can be (add, mul, matmul,
 * narrow, index_select, ...), and the accumulation. Every loop over the data that computes a
 * gradient is a kernel in the op's own file, beside its forward: gm_unary_backward
 * (gm_elementwise.c), gm_reduction_backward and gm_softmax_backward_kernel (gm_reduce.c),
 * gm_narrow_backward, gm_index_rows_add and gm_gather_kernel (gm_shape.c),
 * gm_layer_norm_backward, gm_cross_entropy_backward and gm_dropout_apply (gm_nn.c),
 * gm_decay_mask_backward (gm_decay.c), gm_attention_backward, gm_hgat_backward,
 * gm_solve_backward, gm_segment_softmax_backward. A new op adds a case here and, if it needs
 * one, a kernel there. */
#include <math.h>
#include <string.h>

#include "gm_internal.h"

/* A tensor we may add into in place: nobody else holds it or its storage. */
static int exclusive(const gm_tensor *t) {
  return t->refcount == 1 && t->storage->refcount == 1;
}

/* Adds contribution (stolen) to t's pending gradient. */
static gm_status accumulate(gm_tensor *t, gm_tensor *contribution) {
  if (!contribution) return gm_last_status();
  GM_ASSERT(contribution->numel == t->numel);
  if (!t->grad_pending) {
    t->grad_pending = contribution;
    return GM_OK;
  }
  if (exclusive(t->grad_pending)) {
    gm_tensor_add_(t->grad_pending, contribution, 1.0f);
    gm_tensor_release(contribution);
    return GM_OK;
  }
  gm_tensor *sum = gm_add(t->grad_pending, contribution);
  gm_tensor_release(contribution);
  if (!sum) return gm_last_status();
  gm_tensor_release(t->grad_pending);
  t->grad_pending = sum;
  return GM_OK;
}

/* t's pending gradient when a contribution may be added straight into it (see exclusive), else
 * NULL: then a backward that touches only part of t adds its part there instead of building a
 * full-size contribution that is mostly zeros. */
static gm_tensor *pending_in_place(const gm_tensor *t) {
  return t->grad_pending && exclusive(t->grad_pending) ? t->grad_pending : NULL;
}

/* g summed down to the shape of t (the backward of broadcasting); steals g. */
static gm_tensor *reduce_to(gm_tensor *g, const gm_tensor *t) {
  if (!g || gm_tensor_same_shape(g, t)) return g;
  gm_tensor *r = gm_sum_to_shape(g, t->ndim, t->shape);
  gm_tensor_release(g);
  return r;
}

static gm_tensor *zeros_like(const gm_tensor *t) { return gm_tensor_full(t->ndim, t->shape, 0.0f); }

/* Turns the node's gradient g into contributions for its sources. */
static gm_status node_backward(gm_tensor *node, gm_tensor *g) {
  gm_tensor *a = node->src[0], *b = node->nsrc > 1 ? node->src[1] : NULL;
  int need_a = a && a->requires_grad, need_b = b && b->requires_grad;
  gm_status st = GM_OK;
  switch (node->op) {
    /* z = a ± b: dz/da = 1, dz/db = ±1, then undo the broadcast */
    case GM_OP_ADD:
    case GM_OP_SUB:
      if (need_a) gm_tensor_retain(g), st = accumulate(a, reduce_to(g, a));
      if (need_b && st == GM_OK)
        st = accumulate(b, reduce_to(node->op == GM_OP_ADD ? (gm_tensor_retain(g), g) : gm_neg(g), b));
      break;
    /* z = a b: da = g b, db = g a */
    case GM_OP_MUL:
      if (need_a) st = accumulate(a, reduce_to(gm_mul(g, b), a));
      if (need_b && st == GM_OK) st = accumulate(b, reduce_to(gm_mul(g, a), b));
      break;
    /* z = a / b: da = g / b, db = −g a / b² = −g z / b */
    case GM_OP_DIV:
      if (need_a) st = accumulate(a, reduce_to(gm_div(g, b), a));
      if (need_b && st == GM_OK) {
        gm_tensor *gz = gm_mul(g, node), *q = gz ? gm_div(gz, b) : NULL;
        gm_tensor *nq = q ? gm_neg(q) : NULL;
        gm_tensor_release(gz);
        gm_tensor_release(q);
        st = accumulate(b, reduce_to(nq, b));
      }
      break;
    case GM_OP_ADD_SCALAR: case GM_OP_MUL_SCALAR: case GM_OP_RDIV_SCALAR: case GM_OP_POW_SCALAR:
    case GM_OP_NEG: case GM_OP_EXP: case GM_OP_LOG: case GM_OP_SQRT: case GM_OP_TANH:
    case GM_OP_GELU: case GM_OP_GELU_TANH: case GM_OP_RELU: case GM_OP_LEAKY_RELU:
      st = accumulate(a, gm_unary_backward(node, g));
      break;
    /* sum: every input gets g; mean: g/n; max: the argmax gets g */
    case GM_OP_SUM: case GM_OP_MEAN: case GM_OP_MAX:
      st = accumulate(a, gm_reduction_backward(node, g));
      break;
    /* y = softmax(x): dx = y (g − Σ g y); log-softmax: dx = g − e^y Σ g */
    case GM_OP_SOFTMAX: case GM_OP_LOG_SOFTMAX: {
      gm_tensor *dx = gm_tensor_empty(a->ndim, a->shape);
      if (dx) gm_softmax_backward_kernel(node, g, dx, (int)node->iarg[0], node->op == GM_OP_LOG_SOFTMAX);
      st = accumulate(a, dx);
      break;
    }
    /* C = op(A) op(B): d op(A) = G op(B)ᵀ, d op(B) = op(A)ᵀ G (cs231n). A transposed operand
     * receives the transpose, the same product with its factors swapped. */
    case GM_OP_MATMUL: {
      int ta = (int)node->iarg[0], tb = (int)node->iarg[1];
      int bf16 = gm_matmul_uses_bf16(), kept = need_b && node->saved != NULL;
      if (need_a && need_b && (bf16 || kept)) gm_bf16_share_begin(g->data); /* both products read G: round it once */
      if (need_a)
        st = accumulate(a, reduce_to(ta ? gm_matmul(b, g, tb, 1) : gm_matmul(g, b, 0, !tb), a));
      if (kept && st == GM_OK) {
        /* a "medium" forward kept A's bf16 rounding [rows, k] instead of A (gm_matmul): B [k, n]
         * or, transposed, [n, k] gets Aᵀ G or Gᵀ A over the rows, G read as [rows, n] */
        const int64_t *dims = node->iarg + 2;
        int64_t rows = dims[0], k = dims[1], n = g->shape[g->ndim - 1];
        const float *x = node->saved->data; /* names the rounding; never read as float32 */
        gm_tensor *db = gm_tensor_empty(2, b->shape);
        gm_bf16_offer(x, node->saved, dims);
        if (db && !(tb ? gm_bf16_gemm_offered(1, 0, n, k, rows, g->data, n, x, k, db->data, k)
                       : gm_bf16_gemm_offered(1, 0, k, n, rows, x, k, g->data, n, db->data, n))) {
          gm_tensor_release(db);
          db = NULL;
          gm_fail(GM_ERR_NOMEM, 0, "matmul backward: the bf16 product for B's gradient over %lld rows "
                  "failed (no memory, or oneDNN refused it)", (long long)rows);
        }
        st = accumulate(b, db);
      } else if (need_b && st == GM_OK) {
        if (b->ndim == 2 && a->ndim > 2 && !ta) {
          /* one weight matrix shared by a batch: fold the batch into the rows, one product */
          int64_t k = a->shape[a->ndim - 1], m = g->shape[g->ndim - 1];
          int64_t a2[2] = {a->numel / (k ? k : 1), k}, g2[2] = {g->numel / (m ? m : 1), m};
          gm_tensor *av = gm_tensor_view(a, a->data - a->storage->data, 2, a2);
          gm_tensor *gv = gm_tensor_view(g, g->data - g->storage->data, 2, g2);
          gm_tensor *db = av && gv ? (tb ? gm_matmul(gv, av, 1, 0) : gm_matmul(av, gv, 1, 0)) : NULL;
          gm_tensor_release(av);
          gm_tensor_release(gv);
          st = accumulate(b, db);
        } else {
          st = accumulate(b, reduce_to(tb ? gm_matmul(g, a, 1, ta) : gm_matmul(a, g, !ta, 0), b));
        }
      }
      if (bf16 || kept) gm_bf16_share_end();
      break;
    }
    /* a reshape moves no values: the gradient is g read in the source's shape */
    case GM_OP_RESHAPE:
      st = accumulate(a, gm_tensor_view(g, g->data - g->storage->data, a->ndim, a->shape));
      break;
    /* permute back with the inverse permutation */
    case GM_OP_PERMUTE: {
      int inv[GM_MAX_DIMS];
      for (int d = 0; d < a->ndim; d++) inv[node->iarg[d]] = d;
      st = accumulate(a, gm_permute(g, inv));
      break;
    }
    /* each source gets its slice of g */
    case GM_OP_CONCAT: {
      int dim = (int)node->iarg[0];
      int64_t start = 0;
      for (int i = 0; i < node->nsrc && st == GM_OK; i++) {
        gm_tensor *s = node->src[i];
        if (s->requires_grad) st = accumulate(s, gm_narrow(g, dim, start, s->shape[dim]));
        start += s->shape[dim];
      }
      break;
    }
    /* g into a's window: added into its pending gradient when there is one (gm_narrow_backward) */
    case GM_OP_NARROW: {
      gm_tensor *into = pending_in_place(a);
      if (into) {
        gm_narrow_backward(node, g, into->data, 1);
        break;
      }
      gm_tensor *dx = gm_tensor_empty(a->ndim, a->shape);
      if (dx) gm_narrow_backward(node, g, dx->data, 0);
      st = accumulate(a, dx);
      break;
    }
    /* out[.., j, ..] = a[.., index_j, ..]: scatter-add g's rows back (repeated indices add).
     * With no repeated index each entry of a gets at most one row, so the rows go straight
     * into a's pending gradient when there is one (as narrow's), instead of into a zero-filled
     * a-sized contribution added to it afterwards: a few rows of a large a (a sequence's block
     * of the decay mask) no longer cost two passes over all of it. */
    case GM_OP_INDEX_SELECT: {
      int dim = (int)node->iarg[0], base = (int)node->iarg[1];
      int64_t outer, size, inner;
      gm_dim_split(a, dim, &outer, &size, &inner);
      gm_tensor *into = node->iarg[2] ? pending_in_place(a) : NULL;
      gm_tensor *dx = into ? NULL : zeros_like(a);
      if (into || dx) gm_index_rows_add((into ? into : dx)->data, g->data, node->saved, base, outer, size, inner);
      if (!into) st = accumulate(a, dx);
      break;
    }
    case GM_OP_GATHER: {
      gm_tensor *dx = zeros_like(a);
      if (dx)
        gm_gather_kernel(a, node->saved, (int)node->iarg[0], (int)node->iarg[1], dx->data,
                         g->data, 1);
      st = accumulate(a, dx);
      break;
    }
    case GM_OP_LAYER_NORM: {
      gm_tensor *w = node->src[1], *bias = node->src[2];
      gm_tensor *dx = need_a ? gm_tensor_empty(a->ndim, a->shape) : NULL;
      gm_tensor *dw = w && w->requires_grad ? zeros_like(w) : NULL;
      gm_tensor *db = bias && bias->requires_grad ? zeros_like(bias) : NULL;
      if ((need_a && !dx) || (w && w->requires_grad && !dw) || (bias && bias->requires_grad && !db)) {
        gm_tensor_release(dx), gm_tensor_release(dw), gm_tensor_release(db);
        return gm_last_status();
      }
      gm_layer_norm_backward(a, w, node->saved, g, dx ? dx->data : NULL, dw ? dw->data : NULL,
                             db ? db->data : NULL);
      if (dx) st = accumulate(a, dx);
      if (dw) st = st == GM_OK ? accumulate(w, dw) : (gm_tensor_release(dw), st);
      if (db) st = st == GM_OK ? accumulate(bias, db) : (gm_tensor_release(db), st);
      break;
    }
    /* y = x ⊙ mask: dx = g ⊙ mask, the mask recomputed from its seed */
    case GM_OP_DROPOUT: {
      gm_tensor *dx = gm_tensor_empty(g->ndim, g->shape);
      if (dx) gm_dropout_apply(g->data, dx->data, g->numel, (uint64_t)node->iarg[0], node->farg[0]);
      st = accumulate(a, dx);
      break;
    }
    case GM_OP_CROSS_ENTROPY: {
      gm_tensor *dx = gm_tensor_empty(a->ndim, a->shape);
      if (dx)
        gm_cross_entropy_backward(node->saved, b, (int)node->iarg[0], node->iarg[1],
                                  node->iarg[2], g->data[0], dx->data);
      st = accumulate(a, dx);
      break;
    }
    /* f = λ^GELU(√(sp + offset) − p): dp_h = Σ_ij g_hij f_hij ln λ (−GELU'(x_hij)) */
    case GM_OP_DECAY_MASK: {
      gm_tensor *dp, *dsp;
      st = gm_decay_mask_backward(node, g, &dp, &dsp);
      if (dp) st = st == GM_OK ? accumulate(a, dp) : (gm_tensor_release(dp), st);
      if (dsp) st = st == GM_OK ? accumulate(b, dsp) : (gm_tensor_release(dsp), st);
      break;
    }
    /* the flash-style recomputation of gm_attention_backward.c (derivations at the top of that file) */
    case GM_OP_ATTENTION: {
      gm_tensor *dq, *dk, *dv, *ddecay;
      /* packed attention calls it once per sequence, all on one decay: each call adding into
       * the pending sum saves a pass over [H, L, S] per call */
      gm_tensor *decay_into = node->src[3] ? pending_in_place(node->src[3]) : NULL;
      st = gm_attention_backward(node, g, decay_into, &dq, &dk, &dv, &ddecay);
      gm_tensor *targets[4] = {node->src[0], node->src[1], node->src[2], node->src[3]};
      gm_tensor *contributions[4] = {dq, dk, dv, ddecay};
      for (int i = 0; i < 4; i++) {
        if (!contributions[i]) continue;
        if (st == GM_OK) st = accumulate(targets[i], contributions[i]);
        else gm_tensor_release(contributions[i]);
      }
      break;
    }
    /* H-GAT: derivation at the top of gm_hgat.c */
    case GM_OP_HGAT: {
      gm_tensor *d[4];
      st = gm_hgat_backward(node, g, &d[0], &d[1], &d[2], &d[3]);
      for (int i = 0; i < 4; i++) {
        if (!d[i]) continue;
        if (st == GM_OK) st = accumulate(node->src[i], d[i]);
        else gm_tensor_release(d[i]);
      }
      break;
    }
    /* y = base with rows idx += src: dbase = g, dsrc_k = g[idx_k] */
    case GM_OP_INDEX_ADD:
      if (need_a) gm_tensor_retain(g), st = accumulate(a, g);
      if (st == GM_OK && node->src[2] && node->src[2]->requires_grad)
        st = accumulate(node->src[2], gm_index_select(g, 0, node->saved, (int)node->iarg[0]));
      break;
    /* X = A⁻¹B: dB = A⁻ᵀ G, dA = −dB Xᵀ (derivation in gm_linalg.c) */
    case GM_OP_SOLVE: {
      gm_tensor *da, *db;
      st = gm_solve_backward(node, g, &da, &db);
      if (da && st == GM_OK) st = accumulate(node->src[0], da);
      else gm_tensor_release(da);
      if (db && st == GM_OK) st = accumulate(node->src[1], db);
      else gm_tensor_release(db);
      break;
    }
    /* y = softmax within a group: dx = y (g − Σ_group g y) */
    case GM_OP_SEGMENT_SOFTMAX:
      st = accumulate(a, gm_segment_softmax_backward(node, g));
      break;
    case GM_OP_NONE: case GM_OP_FREED: case GM_OP_COUNT:
      GM_ASSERT(!"leaves and freed nodes are handled by gm_backward");
  }
  return st;
}

/* ---- the pass ---------------------------------------------------------------------------- */

static _Thread_local int visit_epoch;

typedef struct {
  gm_tensor **items;
  int64_t count, capacity;
} node_list;

static gm_status list_push(node_list *l, gm_tensor *t) {
  if (l->count == l->capacity) {
    int64_t cap = l->capacity ? 2 * l->capacity : 64;
    gm_tensor **items = gm_malloc((size_t)cap * sizeof *items);
    if (!items) return gm_last_status();
    if (l->count) memcpy(items, l->items, (size_t)l->count * sizeof *items);
    gm_free(l->items);
    l->items = items;
    l->capacity = cap;
  }
  l->items[l->count++] = t;
  return GM_OK;
}

/* Post-order DFS without recursion: deep graphs must not overflow the C stack. A node is
 * pushed on `stack` twice: first to expand (mark > 0), then to emit (entry tagged with ~). */
static gm_status topo_sort(gm_tensor *root, node_list *order) {
  node_list stack = {0};
  int epoch = ++visit_epoch;
  gm_status st = list_push(&stack, root);
  while (st == GM_OK && stack.count) {
    gm_tensor *t = stack.items[--stack.count];
    uintptr_t tagged = (uintptr_t)t;
    if (tagged & 1) { /* second visit: all sources are emitted */
      st = list_push(order, (gm_tensor *)(tagged & ~(uintptr_t)1));
      continue;
    }
    if (t->visit_mark == epoch) continue;
    t->visit_mark = epoch;
    if (t->op == GM_OP_FREED) {
      st = gm_fail(GM_ERR_STATE, 1,
                   "backward through a graph that an earlier backward freed (pass "
                   "retain_graph = true to the first one)");
      break;
    }
    st = list_push(&stack, (gm_tensor *)(tagged | 1));
    for (int i = 0; i < t->nsrc && st == GM_OK; i++) {
      gm_tensor *s = t->src[i];
      if (s && s->requires_grad && s->visit_mark != epoch) st = list_push(&stack, s);
    }
  }
  gm_free(stack.items);
  return st;
}

/* The given root gradient itself, not a copy (the attention bench's dO: 16 MiB copied per
 * backward): the caller holds it too, so it is never exclusive and nothing adds into it or
 * adopts it — unless it is (a view of) the gradient of a leaf of this graph, which backward
 * adds into: then a copy. NULL without memory. */
static gm_tensor *shared_root_gradient(gm_tensor *grad_root, const node_list *order) {
  for (int64_t i = 0; i < order->count; i++) {
    const gm_tensor *t = order->items[i];
    if (t->op == GM_OP_NONE && t->grad && t->grad->storage == grad_root->storage)
      return gm_tensor_clone(grad_root);
  }
  gm_tensor_retain(grad_root);
  return grad_root;
}

/* Every value a node's backward will read is still the one its forward saw: none was changed in
 * place since (checked before any gradient is made, so a refused backward leaves no partial
 * gradients behind). */
static gm_status check_versions(const node_list *order) {
  for (int64_t k = 0; k < order->count; k++) {
    const gm_tensor *t = order->items[k];
    for (int i = 0; i < t->nsrc && i < GM_MAX_PINNED; i++) {
      const gm_tensor *s = t->src[i];
      if ((t->pinned_srcs >> i & 1) && s->storage && s->storage->version != t->src_versions[i])
        return gm_fail(GM_ERR_STATE, 1,
                       "backward of %s reads its argument %d, which was changed in place after "
                       "the forward used it: change a copy (t:clone()), or change it after backward",
                       gm_op_name(t->op), i + 1);
    }
    if (t->saved && t->saved->storage && t->saved->storage->version != t->saved_version)
      return gm_fail(GM_ERR_STATE, 1,
                     "backward of %s reads the index it was given, which was changed in place "
                     "after the forward: change a copy (t:clone()), or change it after backward",
                     gm_op_name(t->op));
    if (t->pinned_self && t->storage && t->storage->version != t->self_version)
      return gm_fail(GM_ERR_STATE, 1,
                     "backward of %s reads its output, which was changed in place (through a view "
                     "or detach()) after the forward: change a copy (t:clone()), or change it after backward",
                     gm_op_name(t->op));
  }
  return GM_OK;
}

gm_status gm_backward(gm_tensor *root, gm_tensor *grad_root, int retain_graph) {
  char x[GM_SHAPE_BUF], y[GM_SHAPE_BUF];
  if (!root->requires_grad)
    return gm_fail(GM_ERR_STATE, 1, "backward on a tensor that does not require grad");
  if (grad_root && !gm_tensor_same_shape(grad_root, root))
    return gm_fail(GM_ERR_SHAPE, 2, "gradient of size %s for a tensor of size %s",
                   GM_SHAPE(grad_root, x), GM_SHAPE(root, y));
  if (!grad_root && root->numel != 1)
    return gm_fail(GM_ERR_SHAPE, 1,
                   "backward needs a scalar (got size %s); pass a gradient for other shapes",
                   GM_SHAPE(root, x));
  node_list order = {0};
  gm_status st = topo_sort(root, &order);
  if (st == GM_OK) st = check_versions(&order);
  int was_enabled = gm_set_grad_enabled(0), was_running = gm_set_backward_running(1);
  if (st == GM_OK) {
    root->grad_pending = grad_root ? shared_root_gradient(grad_root, &order)
                                   : gm_tensor_full(root->ndim, root->shape, 1.0f);
    if (!root->grad_pending) st = gm_last_status();
  }
  for (int64_t i = order.count - 1; i >= 0 && st == GM_OK; i--) {
    gm_tensor *t = order.items[i];
    gm_tensor *g = t->grad_pending;
    if (!g) continue;
    t->grad_pending = NULL;
    if (t->op == GM_OP_NONE) { /* a leaf: keep the gradient */
      if (!t->grad) {
        t->grad = exclusive(g) ? g : gm_tensor_clone(g);
        if (t->grad == g) continue;
        if (!t->grad) st = gm_last_status();
      } else {
        gm_tensor_add_(t->grad, g, 1.0f);
      }
    } else {
      st = node_backward(t, g);
    }
    gm_tensor_release(g);
  }
  gm_set_grad_enabled(was_enabled);
  gm_set_backward_running(was_running);
  for (int64_t i = 0; i < order.count; i++) {
    gm_tensor *t = order.items[i];
    gm_tensor_release(t->grad_pending); /* only left over after a failure */
    t->grad_pending = NULL;
    if (!retain_graph && t->op != GM_OP_NONE) {
      gm_node_clear(t);
      t->op = GM_OP_FREED;
    }
  }
  gm_free(order.items);
  return st;
}
