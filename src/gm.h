/*
 * gm.h — the graphmert C core: float32 tensors with define-by-run autograd.
 *
 * This header is the whole public C API. It never includes a Lua header; the Lua binding
 * (src/lgm_*.c) is a thin layer on top of it.
 *
 * A short tour
 * ------------
 *     gm_rng rng;
 *     gm_rng_seed(&rng, 1);
 *     int64_t shape[2] = {2, 3};
 *     gm_tensor *w = gm_tensor_randn(&rng, 2, shape);     // new reference, or NULL + message
 *     gm_tensor_set_requires_grad(w, 1);                    // w is a leaf that wants a gradient
 *     gm_tensor *y = gm_tanh(w);                            // records GM_OP_TANH with src[0] = w
 *     gm_tensor *l = gm_sum(y, -1, 0);                      // over everything: a 0-dim tensor
 *     if (gm_backward(l, NULL, 0) != GM_OK) puts(gm_last_error());
 *     // w->grad now holds 1 - tanh(w)^2; the graph behind l has been freed, and with it y's
 *     // values (an intermediate keeps them while a pin holds them: gm_tensor_pin(y) before
 *     // the backward, gm_tensor_unpin(y) after, to read y->data then)
 *     gm_tensor_release(l); gm_tensor_release(y); gm_tensor_release(w);
 *
 * Building against it: `make all` compiles the core into build/obj/gm_*.o (build/graphmert/
 * core.so exports only the Lua entry point); link those objects with -fopenmp -lm -ldl and
 * MPI's libraries (`pkg-config --libs ompi-c`). docs/internals.md has the command.
 *
 * Conventions
 * -----------
 * - Every tensor is contiguous and row-major. Views (reshape, narrow along the first dimension,
 *   detach) share the storage of their base; everything else makes a new storage.
 * - Objects are reference counted. A function that returns gm_tensor* returns a NEW reference
 *   that the caller must gm_tensor_release(). Arguments are BORROWED unless a comment says
 *   otherwise. Autograd nodes retain their sources, so releasing an intermediate never frees
 *   what backward needs.
 * - Errors: functions return NULL (constructors, ops) or a gm_status < 0. The message is in
 *   gm_last_error() (thread-local) and gm_last_error_arg() names the 1-based argument it blames
 *   (0 when it blames none). Nothing aborts on user input; GM_ASSERT is for broken invariants.
 * - Dimensions and indices are 0-based here; the Lua binding converts from 1-based.
 * - Autograd: an op records itself when grad mode is on (gm_grad_enabled(), thread-local) and one
 *   of its inputs requires grad. gm_backward() walks the recorded graph in reverse topological
 *   order through one switch over ops (gm_autograd.c), accumulates into leaves' ->grad and then
 *   frees the graph unless asked to keep it.
 */
#ifndef GM_H
#define GM_H

#include <stddef.h>
#include <stdint.h>

#define GM_VERSION "0.1.0"
#define GM_MAX_DIMS 8
#define GM_MAX_SRC 3
#define GM_MAX_PINNED 8 /* sources whose values a backward may read (the op table's reads_srcs bits) */

/* ---- status and errors ------------------------------------------------------------------ */

typedef enum gm_status {
  GM_OK = 0,
  GM_ERR_ARG = -1,    /* a bad value: negative size, dimension out of range, NaN where not allowed */
  GM_ERR_SHAPE = -2,  /* shapes that do not fit together */
  GM_ERR_NOMEM = -3,  /* allocation failed or the memory limit was reached */
  GM_ERR_IO = -4,     /* file or format problems */
  GM_ERR_STATE = -5   /* misuse of state: backward twice through a freed graph, in-place on a leaf */
} gm_status;

const char *gm_last_error(void);   /* message of the last failure on this thread */
int gm_last_error_arg(void);        /* 1-based argument blamed by the last failure, 0 if none */
gm_status gm_last_status(void);

/* ---- memory ------------------------------------------------------------------------------ */

/* Every tensor, storage, node list and buffer that outlives a call goes through gm_malloc and is
 * counted. The short-lived scratch of a kernel (attention backward tiles, decay-mask sums, LU
 * factors, BFS queues, segment ids) comes from malloc, freed before the call returns, and is
 * not counted: it is taken inside parallel regions, where the counted allocator's shared
 * limit, cache lock and thread-local error message do not fit. */
void *gm_malloc(size_t bytes);  /* 64-byte aligned; NULL + message on failure or over the limit */
void gm_free(void *p);
size_t gm_memory_live(void);
size_t gm_memory_peak(void);
void gm_memory_reset_peak(void);
/* Refuse allocations that would take live bytes above `bytes` (0 = no limit). */
void gm_memory_set_limit(size_t bytes);
size_t gm_memory_limit(void);
/* Freed blocks are kept for reuse: those of 1 MiB and more (no page faults on the next step)
 * and, in free lists by size class up to 64 MiB, the smaller ones (no search through malloc's
 * bins): the bytes kept, a cap on them (default 2 GiB; 0 keeps none), and a way to return them. */
size_t gm_memory_cached(void);
void gm_memory_set_cache_limit(size_t bytes);
void gm_memory_release_cache(void);
/* Called once when an allocation fails, before failing for good (the binding runs a full GC). */
typedef void (*gm_oom_hook)(void *ud);
void gm_memory_set_oom_hook(gm_oom_hook hook, void *ud);  /* per thread */

/* ---- threads ----------------------------------------------------------------------------- */

/* Sets the threads of the core's parallel loops and matrix products. n <= 0: all cores. */
void gm_set_num_threads(int n);
int gm_get_num_threads(void);

/* ---- CPU, BLAS and matrix-product precision (gm_cpu.c, gm_blas.c) --------------------------- */

/* Vector features of the running CPU (bit i = 1u << i; names from gm_cpu_feature_name(i)). */
enum {
  GM_CPU_SSE4_2 = 1u << 0, GM_CPU_AVX = 1u << 1, GM_CPU_AVX2 = 1u << 2, GM_CPU_FMA = 1u << 3,
  GM_CPU_AVX512F = 1u << 4, GM_CPU_AVX512BW = 1u << 5, GM_CPU_AVX512VL = 1u << 6,
  GM_CPU_AVX512DQ = 1u << 7, GM_CPU_AVX512CD = 1u << 8, GM_CPU_AVX512_BF16 = 1u << 9,
  GM_CPU_AMX_BF16 = 1u << 10 /* AMX tiles with bf16 products (amx_tile and amx_bf16) */
};
#define GM_CPU_FEATURE_COUNT 11
unsigned gm_cpu_features(void);
const char *gm_cpu_feature_name(int bit); /* NULL outside [0, GM_CPU_FEATURE_COUNT) */

/* Loads OpenBLAS (once; later calls return the first outcome). Must succeed before any other
 * core function runs a matrix product or sets threads (a product without it aborts: a program
 * error, not an input's): luaopen_graphmert_core calls it. */
gm_status gm_blas_load(void);
typedef struct gm_blas_info {
  const char *library;     /* the file loaded */
  const char *config;      /* openblas_get_config(): version and build options */
  const char *core;        /* openblas_get_corename(): the kernels in use */
  const char *core_source; /* why those kernels: see gm_blas.c */
} gm_blas_info;
gm_blas_info gm_blas_get_info(void);

/* torch.set_float32_matmul_precision: HIGHEST computes matrix products in float32; MEDIUM
 * rounds their inputs to bfloat16 and accumulates in float32 where the CPU has avx512_bf16
 * (float32 elsewhere); HIGH is float32 on CPU, as in PyTorch. Tensors stay float32. */
typedef enum gm_matmul_precision {
  GM_MATMUL_HIGHEST = 0,
  GM_MATMUL_HIGH = 1,
  GM_MATMUL_MEDIUM = 2
} gm_matmul_precision;
void gm_set_matmul_precision(gm_matmul_precision p);
gm_matmul_precision gm_get_matmul_precision(void);
int gm_matmul_uses_bf16(void); /* 1 when matrix products run in bf16 now */
int gm_bf16_available(void);   /* 1 when the CPU can (avx512_bf16) */
/* Frees the calling thread's kept bf16 roundings of parameters (MEDIUM with gradients off keeps
 * them from one product to the next: see gm_internal.h); gm.release_memory_cache and the
 * out-of-memory hook call it. */
void gm_bf16_release_kept_weights(void);
/* What runs the large bf16 products: "oneDNN x.y.z (libdnnl.so.2)", or why oneDNN is not used
 * (then every product runs on graphmert's own bf16 kernel). */
const char *gm_dnnl_status(void);
/* What graphmert's own bf16 kernel (the products below oneDNN's size, the attention tiles) runs
 * on: "AMX tiles" where the CPU has them and the OS grants them (unless GRAPHMERT_BF16_KERNEL=avx512
 * in the environment), else "AVX-512 BF16". */
const char *gm_bf16_kernel(void);

/* ---- random numbers ---------------------------------------------------------------------- */

/* xoshiro256** seeded through splitmix64: the same seed gives the same bits on every machine. */
typedef struct gm_rng {
  uint64_t s[4];
} gm_rng;
void gm_rng_seed(gm_rng *rng, uint64_t seed);
uint64_t gm_rng_next(gm_rng *rng);
double gm_rng_uniform(gm_rng *rng);  /* [0, 1) with 53 random bits */
double gm_rng_normal(gm_rng *rng);   /* standard normal (Box–Muller, one value per call) */

/* ---- tensors ----------------------------------------------------------------------------- */

/* Every op autograd records, in the one list that makes both gm_op and the op table of
 * gm_ops.c, so that neither can miss an op: X(ID, name, reads_srcs, reads_output), where bit
 * i of reads_srcs says that backward reads the values of src[i], and reads_output that it reads
 * the op's own output. Those are the values a recorded node pins (see data_pins below); values
 * kept in ->saved are not counted here. */
#define GM_OP_LIST(X) \
  X(NONE, "leaf", 0x0, 0)                       /* a leaf (or a tensor made without grad) */      \
  X(FREED, "freed", 0x0, 0)                     /* its graph was freed by a backward pass */      \
  X(ADD, "add", 0x0, 0)                                                                           \
  X(SUB, "sub", 0x0, 0)                                                                           \
  X(MUL, "mul", 0x3, 0)                                                                           \
  X(DIV, "div", 0x2, 1)                                                                           \
  X(ADD_SCALAR, "add_scalar", 0x0, 0)                                                             \
  X(MUL_SCALAR, "mul_scalar", 0x0, 0)                                                             \
  X(RDIV_SCALAR, "rdiv_scalar", 0x1, 1)                                                           \
  X(POW_SCALAR, "pow_scalar", 0x1, 0)                                                             \
  X(NEG, "neg", 0x0, 0)                                                                           \
  X(EXP, "exp", 0x0, 1)                                                                           \
  X(LOG, "log", 0x1, 0)                                                                           \
  X(SQRT, "sqrt", 0x0, 1)                                                                         \
  X(TANH, "tanh", 0x0, 1)                                                                         \
  X(GELU, "gelu", 0x1, 0)                                                                         \
  X(GELU_TANH, "gelu_tanh", 0x1, 0)                                                               \
  X(RELU, "relu", 0x1, 0)                                                                         \
  X(LEAKY_RELU, "leaky_relu", 0x1, 0)                                                             \
  X(SUM, "sum", 0x0, 0)                         /* over one dimension, or all when iarg[0] < 0 */ \
  X(MEAN, "mean", 0x0, 0)                                                                         \
  X(MAX, "max", 0x0, 0)                         /* the argmax is saved */                         \
  X(SOFTMAX, "softmax", 0x0, 1)                                                                   \
  X(LOG_SOFTMAX, "log_softmax", 0x0, 1)                                                           \
  X(MATMUL, "matmul", 0x3, 0)                   /* "medium" may keep A's bf16 rounding instead */ \
  X(RESHAPE, "reshape", 0x0, 0)                                                                   \
  X(PERMUTE, "permute", 0x0, 0)                                                                   \
  X(CONCAT, "concat", 0x0, 0)                                                                     \
  X(NARROW, "narrow", 0x0, 0)                                                                     \
  X(INDEX_SELECT, "index_select", 0x0, 0)       /* the index is saved */                          \
  X(GATHER, "gather", 0x0, 0)                                                                     \
  X(LAYER_NORM, "layer_norm", 0x3, 0)           /* x and the weight */                            \
  X(DROPOUT, "dropout", 0x0, 0)                 /* the mask is recomputed from its seed */        \
  X(CROSS_ENTROPY, "cross_entropy", 0x2, 0)     /* the target */                                  \
  X(DECAY_MASK, "decay_mask", 0x3, 0)           /* p and the distances */                         \
  X(ATTENTION, "attention", 0xff, 1)            /* q, k, v, decay and the masks */                \
  X(HGAT, "hgat", 0x7f, 0)                      /* all seven inputs */                            \
  X(INDEX_ADD, "index_add", 0x0, 0)                                                               \
  X(SOLVE, "solve", 0x1, 1)                     /* A (B's values are not needed) */               \
  X(SEGMENT_SOFTMAX, "segment_softmax", 0x0, 1)

#define GM_OP_ENUM_ENTRY(id, name, reads_srcs, reads_output) GM_OP_##id,
typedef enum gm_op { GM_OP_LIST(GM_OP_ENUM_ENTRY) GM_OP_COUNT } gm_op;
#undef GM_OP_ENUM_ENTRY

const char *gm_op_name(gm_op op);

typedef struct gm_storage {
  float *data;
  int64_t numel;
  int refcount;
  uint32_t version; /* in-place changes so far (gm_tensor_check_writable counts them): backward
                     * checks that the values it reads are those the forward recorded */
  uint64_t serial;  /* unique in the process (never reused, unlike the address): with version,
                     * names these values for caches of what is derived from them */
} gm_storage;

typedef struct gm_tensor gm_tensor;
struct gm_tensor {
  int refcount;
  int ndim;                      /* 0 for a scalar */
  int64_t shape[GM_MAX_DIMS];
  int64_t numel;
  gm_storage *storage;           /* owned reference; shared by views */
  float *data;                   /* storage->data + offset */

  /* autograd */
  int requires_grad;             /* a leaf marked by the user, or an op result that needs grad */
  gm_op op;                      /* how it was made (GM_OP_NONE for leaves) */
  int nsrc;                      /* number of sources of op */
  gm_tensor **src;               /* retained sources: src_inline, or a heap array for concat */
  gm_tensor *src_inline[GM_MAX_SRC];
  gm_tensor *saved;              /* retained op-specific buffer (mask, statistics, indices) */
  int64_t iarg[GM_MAX_DIMS + 2]; /* op-specific integer arguments */
  float farg[2];                 /* op-specific float arguments */
  gm_tensor *grad;               /* accumulated gradient of a leaf (owned), or NULL */

  /* scratch of one backward pass */
  gm_tensor *grad_pending;
  int visit_mark;

  /* Who still needs the values (not just the node): Lua boxes, and recorded ops whose backward
   * reads them (pinned_srcs / pinned_self say which pins this node holds). When the count of a
   * recorded intermediate drops to 0, its storage is dropped at once, as PyTorch frees
   * activations no backward needs: `a + b`, reshape, dropout keep the graph but not the data. */
  int data_pins;
  uint16_t pinned_srcs;
  uint8_t pinned_self;
  /* the storage versions of what backward reads, when the op was recorded: each pinned source
   * (one per bit of pinned_srcs), the output, and ->saved (an index the caller still holds) */
  uint32_t src_versions[GM_MAX_PINNED];
  uint32_t self_version, saved_version;
};

void gm_tensor_retain(gm_tensor *t);
void gm_tensor_release(gm_tensor *t);  /* NULL is fine */
/* Data pins (see data_pins): a holder that will read t's values pins it, and unpins when done. */
void gm_tensor_pin(gm_tensor *t);
void gm_tensor_unpin(gm_tensor *t);

/* Constructors: new references. shape may be NULL when ndim == 0. */
gm_tensor *gm_tensor_empty(int ndim, const int64_t *shape);  /* uninitialised values */
gm_tensor *gm_tensor_full(int ndim, const int64_t *shape, float value);
gm_tensor *gm_tensor_from_data(int ndim, const int64_t *shape, const float *data);
gm_tensor *gm_tensor_arange(double start, double stop, double step);
gm_tensor *gm_tensor_randn(gm_rng *rng, int ndim, const int64_t *shape);
gm_tensor *gm_tensor_rand(gm_rng *rng, int ndim, const int64_t *shape);
gm_tensor *gm_tensor_clone(const gm_tensor *t);   /* a copy with no autograd history */
gm_tensor *gm_tensor_detach(gm_tensor *t);        /* shares storage, no history */
/* GM_OK when a tensor of this shape may be made (dimensions, signs, total size). */
gm_status gm_check_shape(int ndim, const int64_t *shape, int arg);
int gm_tensor_same_shape(const gm_tensor *a, const gm_tensor *b);
/* "2x3x4" (or "scalar") into buf; returns buf. */
char *gm_shape_str(int ndim, const int64_t *shape, char *buf, size_t size);

/* ---- autograd ---------------------------------------------------------------------------- */

int gm_grad_enabled(void);
int gm_set_grad_enabled(int on);  /* returns the previous setting (thread-local) */
gm_status gm_tensor_set_requires_grad(gm_tensor *t, int on);  /* leaves only */
void gm_tensor_zero_grad(gm_tensor *t);
/* Accumulates d(root)/d(leaf) into every leaf's ->grad. root must be a scalar unless
 * grad_root (same shape as root) is given: borrowed, only read, left as it was. retain_graph
 * keeps the graph for another pass. */
gm_status gm_backward(gm_tensor *root, gm_tensor *grad_root, int retain_graph);

/* ---- ops: each returns a new reference, or NULL with the message set ----------------------- */

/* elementwise with NumPy broadcasting */
gm_tensor *gm_add(gm_tensor *a, gm_tensor *b);
gm_tensor *gm_sub(gm_tensor *a, gm_tensor *b);
gm_tensor *gm_mul(gm_tensor *a, gm_tensor *b);
gm_tensor *gm_div(gm_tensor *a, gm_tensor *b);
gm_tensor *gm_add_scalar(gm_tensor *a, float s);   /* a + s */
gm_tensor *gm_mul_scalar(gm_tensor *a, float s);   /* a * s */
gm_tensor *gm_rdiv_scalar(gm_tensor *a, float s);  /* s / a */
gm_tensor *gm_pow_scalar(gm_tensor *a, float p);   /* a ^ p */
gm_tensor *gm_neg(gm_tensor *a);
gm_tensor *gm_exp(gm_tensor *a);
gm_tensor *gm_log(gm_tensor *a);
gm_tensor *gm_sqrt(gm_tensor *a);
gm_tensor *gm_tanh(gm_tensor *a);
gm_tensor *gm_gelu(gm_tensor *a);        /* x Φ(x), exact erf form */
gm_tensor *gm_gelu_tanh(gm_tensor *a);   /* the tanh approximation */
gm_tensor *gm_relu(gm_tensor *a);
gm_tensor *gm_leaky_relu(gm_tensor *a, float slope);

/* reductions; dim < 0 means over all elements (a 0-dim result) */
gm_tensor *gm_sum(gm_tensor *a, int dim, int keepdim);
gm_tensor *gm_mean(gm_tensor *a, int dim, int keepdim);
/* max over dim; *indices (optional, new reference) receives 0-based argmax positions as floats */
gm_tensor *gm_max(gm_tensor *a, int dim, int keepdim, gm_tensor **indices);
gm_tensor *gm_softmax(gm_tensor *a, int dim);
gm_tensor *gm_log_softmax(gm_tensor *a, int dim);

/* a [..., n, k] @ b [..., k, m] with batch dimensions broadcast; 1-D operands are not promoted.
 * trans_a / trans_b read the last two dimensions transposed, without a copy. */
gm_tensor *gm_matmul(gm_tensor *a, gm_tensor *b, int trans_a, int trans_b);

/* shape */
gm_tensor *gm_reshape(gm_tensor *a, int ndim, const int64_t *shape);  /* one -1 allowed; a view */
gm_tensor *gm_permute(gm_tensor *a, const int *perm);                  /* perm has a->ndim entries */
gm_tensor *gm_transpose(gm_tensor *a, int d0, int d1);
gm_tensor *gm_concat(gm_tensor **ts, int n, int dim);
gm_tensor *gm_narrow(gm_tensor *a, int dim, int64_t start, int64_t length);
/* index holds integer values (as floats) counted from index_base (1 in Lua, 0 in C) */
gm_tensor *gm_index_select(gm_tensor *a, int dim, gm_tensor *index, int index_base);
gm_tensor *gm_gather(gm_tensor *a, int dim, gm_tensor *index, int index_base);
/* The k largest of n = numel(index) / width sums, sum c adding the elements of src (flattened) at
 * index[c·width .. c·width + width − 1]: their values [min(k, n)], best first, and in *candidates
 * (a new reference) their c, both counted from index_base; equal sums keep the lower c first.
 * Constrained decoding's scores of its known tails without gathering [n, width]. Not recorded
 * for autograd. */
gm_tensor *gm_top_sums(gm_tensor *src, gm_tensor *index, int64_t width, int64_t k, int index_base,
                       gm_tensor **candidates);
/* The same question asked of one set of candidates again and again (constrained decoding: a
 * relation's known tails against each query's slot log-probabilities). gm_sum_set_new groups the
 * candidates of `index` (as gm_top_sums takes it) by their first element, once; gm_sum_set_top
 * then gives gm_top_sums(src, index, width, k) exactly (values not NaN), reading only the groups
 * whose bound — the first element's value plus the largest value each later slot can read — can
 * still enter the top k. The set owns its arrays (it does not keep `index`); gm_sum_set_free
 * releases it (NULL is fine). */
typedef struct gm_sum_set gm_sum_set;
gm_sum_set *gm_sum_set_new(gm_tensor *index, int64_t width, int index_base);
gm_tensor *gm_sum_set_top(const gm_sum_set *s, gm_tensor *src, int64_t k, int index_base, gm_tensor **candidates);
int64_t gm_sum_set_size(const gm_sum_set *s);  /* candidates */
int64_t gm_sum_set_width(const gm_sum_set *s); /* elements per candidate */
void gm_sum_set_free(gm_sum_set *s);

/* neural-network ops */
/* over the last dimension; weight and bias [D] are optional (NULL) */
gm_tensor *gm_layer_norm(gm_tensor *x, gm_tensor *weight, gm_tensor *bias, float eps);
/* zeroes each element with probability p and scales the rest by 1/(1-p) */
gm_tensor *gm_dropout(gm_tensor *x, float p, gm_rng *rng);
/* mean over non-ignored rows of -log_softmax(logits)[target]; logits [N, C], target [N] */
gm_tensor *gm_cross_entropy(gm_tensor *logits, gm_tensor *target, int index_base,
                            int64_t ignore_index);

/* ---- in-place helpers for optimizers (refuse tensors that are part of a recorded graph) ------- */

/* GM_OK when t may be changed in place: no recorded graph needs it, and it is not a leaf that
 * requires grad while grad mode is on. Called right before the change, which it counts (the
 * storage's version): a backward that reads t's values (a leaf, a constant, a view of either)
 * refuses to run once they changed, as PyTorch's does. */
gm_status gm_tensor_check_writable(const gm_tensor *t);
gm_status gm_tensor_fill_(gm_tensor *t, float value);
gm_status gm_tensor_copy_(gm_tensor *dst, const gm_tensor *src);          /* same numel */
gm_status gm_tensor_add_(gm_tensor *dst, const gm_tensor *src, float alpha); /* dst += alpha*src */
gm_status gm_tensor_mul_(gm_tensor *t, float s);

/* ---- graphs and shortest paths (gm_graph.c, gm_graph_cache.c) ----------------------------- */

/* A graph on nodes 0..n-1, stored as its edge list and CSR adjacency. Made either from an
 * edge list, or as GraphMERT's leafy chain: R roots 0..R-1 in a chain, and L leaf slots per
 * root, leaf a of root r being node R + L*r + a, each joined to its root, the leaves of one
 * root joined along a path (the official code), as a clique, or not at all. */
typedef struct gm_graph gm_graph;
typedef enum { GM_LEAF_EDGES_PATH, GM_LEAF_EDGES_CLIQUE, GM_LEAF_EDGES_NONE } gm_leaf_edges;

/* edges holds m pairs (u0, v0, u1, v1, ...) of 0-based nodes; undirected edges go both ways */
gm_graph *gm_graph_from_edges(int64_t n, const int64_t *edges, int64_t m, int directed);
gm_graph *gm_graph_leafy_chain(int64_t roots, int64_t leaves, gm_leaf_edges leaf_edges);
void gm_graph_retain(gm_graph *g);
void gm_graph_release(gm_graph *g);
int64_t gm_graph_num_nodes(const gm_graph *g);
int gm_graph_is_directed(const gm_graph *g);
/* the edges as given (m pairs); borrowed, valid while g lives */
const int64_t *gm_graph_edges(const gm_graph *g, int64_t *m);
/* out-neighbours of node i in increasing order; borrowed */
const int64_t *gm_graph_neighbors(const gm_graph *g, int64_t i, int64_t *count);
/* 1 and fills roots/leaves/leaf_edges for a leafy chain, 0 for other graphs */
int gm_graph_leafy_config(const gm_graph *g, int64_t *roots, int64_t *leaves, gm_leaf_edges *e);
/* dense 0/1 adjacency [n, n] (row = source), with the diagonal set when self_loops */
gm_tensor *gm_graph_adjacency(const gm_graph *g, int self_loops);

/* All-pairs hop counts, 2 bytes a pair, shared: made once per configuration and process by
 * the cache and handed out by reference. hops[i*n + j] is the length of the shortest path
 * from i to j, GM_HOPS_UNREACHABLE when there is none. */
#define GM_HOPS_UNREACHABLE 0xFFFFu
typedef struct gm_paths {
  int refcount;
  int64_t n;
  uint16_t *hops;
  uint16_t max_hops; /* the largest reachable distance */
} gm_paths;
typedef enum { GM_PATHS_AUTO, GM_PATHS_BFS, GM_PATHS_CLOSED_FORM } gm_paths_method;

/* AUTO: the closed form for leafy chains, one BFS per source (over the threads) otherwise.
 * use_cache = 0 computes afresh without touching the cache (benchmarks, tests). */
gm_paths *gm_graph_paths(gm_graph *g, gm_paths_method method, int use_cache);
void gm_paths_retain(gm_paths *p);
void gm_paths_release(gm_paths *p);
/* the hop counts as a float [n, n] tensor, INFINITY where unreachable */
gm_tensor *gm_paths_tensor(const gm_paths *p);

typedef struct gm_graph_cache_stats {
  int64_t hits, misses, entries;
  size_t bytes; /* hop-count bytes held by the cache */
} gm_graph_cache_stats;
void gm_graph_cache_get_stats(gm_graph_cache_stats *stats);
void gm_graph_cache_clear(void); /* drops the cache's references; users keep theirs */

/* ---- the spatial decay mask (gm_decay.c) --------------------------------------------------- */

/* f = λ^GELU(√(sp + offset) − p), elementwise over the distances sp [N, M] (finite values
 * >= 0, or INFINITY for unreachable pairs, which give f = 0; [N, N] between tokens, a row for
 * the graph token's learned distances). p is a 0-dim tensor (one shared value: f is [N, M]) or
 * holds one value per head as [H] or [H, 1, 1] (f is [H, N, M]). Differentiable with respect to
 * p and sp. λ in (0, 1]; λ = 1 (no decay) gives ones. */
gm_tensor *gm_decay_mask(gm_tensor *sp, gm_tensor *p, float lambda, float offset, int gelu_tanh);
#define GM_DEFAULT_LAMBDA 0.6 /* the official code's λ: what a caller who names none gets */

/* ---- H-GAT relation fusion (gm_hgat.c) ------------------------------------------------------ */

/* For each tail row i of tails [n, H]: its relation rel[i] (a row of W [K, H, H] and a [K, 2H])
 * and its heads, rows start[i] .. start[i] + count[i] − 1 of heads [m, H]; rel and start count
 * from index_base (1 in Lua). Returns Σ_j α_ij W_r h_j [n, H] (add it to the tails); a is read
 * as [a1 ‖ a2] or, with interleaved, as the official code's [a1_0, a2_0, a1_1, ...].
 * Differentiable with respect to tails, heads, W and a. */
typedef struct gm_hgat_opts {
  int interleaved;
  int index_base;
  /* dropout in [0, 1): W_r and a_r get an independent mask for each occurrence — the tails that
   * share a relation and a start row — drawn from dropout_seed (0: no dropout) */
  float dropout;
  uint64_t dropout_seed;
} gm_hgat_opts;
gm_tensor *gm_hgat(gm_tensor *tails, gm_tensor *heads, gm_tensor *w, gm_tensor *a,
                   gm_tensor *rel, gm_tensor *start, gm_tensor *count, const gm_hgat_opts *o);

/* base with rows index[k] (along dim 0, counted from index_base) increased by src[k]:
 * repeated indices add up. Differentiable with respect to base and src. */
gm_tensor *gm_index_add(gm_tensor *base, gm_tensor *index, gm_tensor *src, int index_base);

/* Softmax of x [E, ...] within groups of rows: row e belongs to group index[e] (counted from
 * index_base, groups in total), and each column is normalised over the rows of its group —
 * graph attention over an edge list, grouped by target node. Differentiable w.r.t. x. */
gm_tensor *gm_segment_softmax(gm_tensor *x, gm_tensor *index, int64_t groups, int index_base);

/* ---- linear algebra (gm_linalg.c) ----------------------------------------------------------- */

/* X = A⁻¹ B for A [..., n, n] and B [..., n, k] with the same batch dimensions, or one A [n, n]
 * for every slice of B. LU with partial pivoting in double precision; a singular slice is an
 * error. Differentiable with respect to A and B. */
gm_tensor *gm_solve(gm_tensor *a, gm_tensor *b);

/* ---- files (gm_io.c) ------------------------------------------------------------------------ */

/* Writes the chunks to path.tmp.<pid>, fsyncs, renames over path, fsyncs the directory: the file
 * on disk is always either the old complete one or the new complete one. Ctrl-C, SIGTERM, SIGHUP
 * and SIGQUIT take effect once the write is done; temporary files of writers that were killed
 * (their pid gone) are removed on the next write to the same path. */
gm_status gm_file_write_atomic(const char *path, const void *const *chunks, const size_t *sizes,
                               int count);
/* Several files as one: every one written and synced before the first rename, the renames back
 * to back with signals deferred, so the files on disk are all old or all new (short of SIGKILL
 * or power loss in the microseconds between two renames). */
typedef struct gm_file_parts {
  const char *path;
  const void *const *chunks;
  const size_t *sizes;
  int count;
} gm_file_parts;
gm_status gm_file_write_atomic_all(const gm_file_parts *files, int n);
/* The same, for files too large to hold: written in steps. gm_staged_open creates path.tmp.<pid>
 * (removing temporaries of killed writers), gm_staged_write appends (buffered), and
 * gm_staged_commit_all syncs each and renames them back to back with signals deferred, as above.
 * A failed write is remembered: later writes and the commit refuse the file. gm_staged_discard
 * removes a file not committed; commit_all discards every file, renamed or not, so after it (or
 * a failed open) only discard is left to call, and discard is idempotent. The struct owns its
 * strings and buffer. */
#define GM_STAGED_BUFFER (1 << 16)
typedef struct gm_staged {
  char *path, *tmp, *buffer;
  size_t used;
  int fd;      /* -1 once committed or discarded */
  int created; /* tmp exists on disk (and is ours to remove) */
  int failed;  /* a write failed: the file has a gap */
} gm_staged;
gm_status gm_staged_open(gm_staged *f, const char *path);
gm_status gm_staged_write(gm_staged *f, const void *data, size_t size);
gm_status gm_staged_commit_all(gm_staged *files, int n);
void gm_staged_discard(gm_staged *f);
/* Ctrl-C, SIGTERM, SIGHUP and SIGQUIT held: recorded, not acted on, until the outermost release,
 * which puts the previous handlers back and raises a recorded signal again (holds nest). */
void gm_signals_hold(void);
void gm_signals_release(void);
/* Opens path for reading when it is a regular file (a symlink to one included) without ever
 * blocking: a FIFO, a device (/dev/zero), a socket or a directory is refused before a byte is
 * read. The caller closes *fd. */
gm_status gm_file_open(const char *path, int *fd, uint64_t *size);
/* Exactly n bytes at offset (a short file is an error naming `name`). */
gm_status gm_file_read(int fd, const char *name, uint64_t offset, void *buf, size_t n);
/* A 64-bit digest of a regular file's bytes (gm_file_open's checks), read in blocks: what tells
 * a file rewritten from one only touched (extract's --resume, a store's input). Not
 * cryptographic: it notices changes, it does not withstand an adversary. */
gm_status gm_file_digest(const char *path, uint64_t *digest, uint64_t *size);
/* An exclusive advisory lock (flock) on the regular file at path, created empty if missing: *fd
 * is the descriptor that holds it, or -1 (and GM_OK) when another open file holds it — another
 * process working on the same output. The lock lasts until gm_file_unlock(*fd) or the process
 * ends, however it ends: a killed process leaves no lock behind. On a file system that cannot
 * lock (some NFS and Lustre mounts), *fd is the open file and *held is 0: the caller goes on
 * without the guard rather than not at all. */
gm_status gm_file_lock(const char *path, int *fd, int *held);
void gm_file_unlock(int fd);
/* Floating-point element types of files (safetensors names); all become float32 tensors. */
typedef enum gm_dtype { GM_DTYPE_F32, GM_DTYPE_F64, GM_DTYPE_F16, GM_DTYPE_BF16 } gm_dtype;
const char *gm_dtype_name(gm_dtype dtype); /* "F32" */
size_t gm_dtype_size(gm_dtype dtype);      /* bytes per element */
/* n little-endian values of dtype at src as float32 (F64 rounds to nearest; F16 and BF16 exact) */
void gm_convert_to_f32(float *dst, const void *src, int64_t n, gm_dtype dtype);
/* A new tensor from little-endian bytes of dtype, converted; the byte count must match. */
gm_tensor *gm_tensor_from_bytes(const void *data, size_t bytes, int ndim, const int64_t *shape,
                                gm_dtype dtype);
/* The same from `bytes` at `offset` of a regular file (gm_file_open): float32 is read straight
 * into the tensor, other types through a 1 MiB buffer, so the peak is the tensor itself. */
gm_tensor *gm_tensor_from_file(const char *path, uint64_t offset, size_t bytes, int ndim,
                               const int64_t *shape, gm_dtype dtype);

/* ---- PyTorch checkpoints (gm_torch.c, gm_unpickle.c, gm_zip.c) ------------------------------- */

/* A PyTorch checkpoint as torch.save writes it since 1.6 (a zip archive holding data.pkl and one
 * entry per storage) read without running it: the pickle goes through a restricted machine that
 * knows only the opcodes and the globals of a state dict (gm_unpickle.c), and refuses any other
 * callable by name. Float32, float64, float16 and bfloat16 storages become float32 tensors
 * (contiguous copies of strided views; entries with the same view, a tied pair, share one
 * tensor); an integer or bool tensor is refused, or left out and listed in skipped when
 * skip_non_float is set. Storages are read from the file one at a time. The tensors together never
 * take more than twice the file's bytes (what 16-bit storages justify): a stride-0 or overlapping
 * view past that is refused, as are a FIFO or a device. Messages start with the path. */
typedef struct gm_state_dict {
  int count;
  char **names;         /* in the pickle's order */
  gm_tensor **tensors;  /* owned; a taker may steal one and set the slot to NULL */
  int skipped_count;
  char **skipped;       /* the names left out */
  char **skipped_dtype; /* their PyTorch dtypes ("int64") */
} gm_state_dict;
gm_state_dict *gm_torch_load(const char *path, int skip_non_float);
void gm_state_dict_free(gm_state_dict *sd); /* NULL is fine; releases the tensors still held */

/* ---- optimizers (gm_optim.c) ---------------------------------------------------------------- */

/* One torch.optim.AdamW step in place on p (m, v: its moment buffers); step counts from 1. */
gm_status gm_adamw_step(gm_tensor *p, const gm_tensor *g, gm_tensor *m, gm_tensor *v, float lr,
                        float beta1, float beta2, float eps, float weight_decay, int64_t step);

/* ---- fused attention (gm_attention.c) ----------------------------------------------------- */

/* out = softmax(mask(decay ⊙ (Q Kᵀ · scale))) V per batch element and head, computed in tiles
 * with an online softmax: no [L, S] score matrix is stored per head, only each row's
 * logsumexp; backward recomputes the tiles. q is [B, H, L, d], k and v are [B, H, S, d].
 *
 * Masks (all optional, never differentiated): key_mask [B, S] and attn_mask ([L, S], [B, L, S]
 * or [B, H, L, S]) hold 1 where attending is allowed and 0 where not; key_bias and attn_bias
 * (same shapes) are added to the scores (−inf forbids). decay ([L, S] or [H, L, S]) multiplies
 * the scaled scores before the softmax (GraphMERT's official form), or with decay_weights the
 * softmax weights after it (renormalize then divides each row by its new sum). Dropout (inverted,
 * drawn from a counter-based hash of dropout_seed and the position, so backward sees the same
 * mask) applies to the final weights. A query row with no allowed key gives 0 output and 0
 * gradients. Gradients flow to q, k, v and decay. */
typedef struct gm_attention_opts {
  gm_tensor *key_mask, *key_bias, *attn_mask, *attn_bias, *decay;
  int decay_weights;
  int renormalize;
  float scale;          /* 0: 1/sqrt(d) */
  float dropout;        /* probability in [0, 1) */
  uint64_t dropout_seed;
} gm_attention_opts;

/* Whether forward keeps the raw scores Q Kᵀ (float32, B·H·L rows of S floats rounded up to 16)
 * for backward instead of backward computing them again (FlashAttention's way, the default):
 * backward about 17% faster (B8 H8 N1024 d64) for that memory, held from forward to backward.
 * Kept only with the float32 tile kernel (AVX-512, "highest"; a backward in another precision
 * computes them again), for calls whose scores take at most 1 GiB and fit under the memory
 * limit; the gradients are the same bits either way. One setting per process. */
void gm_set_attention_keep_scores(int on);
int gm_get_attention_keep_scores(void);

/* weights (optional, new reference, no history): the final attention weights [B, H, L, S]. */
gm_tensor *gm_attention(gm_tensor *q, gm_tensor *k, gm_tensor *v, const gm_attention_opts *opts,
                        gm_tensor **weights);

/* ---- data parallelism over MPI (gm_distributed.c) --------------------------------------------
 * Ranks are 0-based (rank 0 is the root). Built without GM_WITH_MPI, or started without an MPI
 * launcher (no OMPI_COMM_WORLD_SIZE / PMIX_RANK / PMI_RANK in the environment), it is one
 * process of rank 0 in a world of size 1: every collective then leaves the values as they are.
 * Collectives treat a list of float32 tensors as one stream, copied into buffers of at most
 * bucket_bytes (0: GM_DIST_BUCKET_BYTES), one MPI call per buffer; every rank must pass the same
 * number of elements (checked, so a mismatch fails on every rank instead of hanging). */
/* 4 MiB: on one machine (shared memory) 1–4 MiB buckets all-reduced 48 MB 2–3x faster than
 * 32 MiB ones (they stay in cache); on a network 4 MiB is still far above the latency regime. */
#define GM_DIST_BUCKET_BYTES ((size_t)4 << 20)
typedef enum gm_dist_op { GM_DIST_SUM = 0, GM_DIST_MEAN = 1 } gm_dist_op;
int gm_dist_compiled(void);        /* 1 when built with MPI */
gm_status gm_dist_init(void);      /* idempotent; MPI_Init when launched by mpirun */
int gm_dist_rank(void);
int gm_dist_size(void);
gm_status gm_dist_allreduce(gm_tensor *const *ts, int n, gm_dist_op op, size_t bucket_bytes);
/* The gradients of params reduced (with the extra tensors) in one stream: a parameter without a
 * gradient contributes zeros, and gets the reduced gradient when any rank had one (none had:
 * it stays without, as a single process would leave it). */
gm_status gm_dist_allreduce_grads(gm_tensor *const *params, int n, gm_tensor *const *extra, int n_extra,
                                  gm_dist_op op, size_t bucket_bytes);
gm_status gm_dist_broadcast(gm_tensor *const *ts, int n, int root, size_t bucket_bytes);
gm_status gm_dist_barrier(void);
gm_status gm_dist_finalize(void);  /* idempotent; collectives fail afterwards */
void gm_dist_abort(int code);      /* ends every rank (MPI_Abort); exit(code) in one process */

#endif
