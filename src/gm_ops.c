/* gm_ops.c — the op table: each op's name and what its backward reads, indexed by gm_op.
 *
 * It sits below gm_tensor.c, which asks it when a node is recorded (which sources' values to
 * keep) and when a tensor is checked writable (the op's name for the message); gm_autograd.c,
 * above both, runs the backward. GM_OP_LIST (gm.h) makes this table and the enum from one list,
 * and a static assertion keeps them the same length — ggml's op-name table with the graph code,
 * the same idea. */
#include "gm_internal.h"

/* indexed by gm_op through designated initialisers, so every op has its entry */
typedef struct op_info {
  const char *name;
  unsigned reads_srcs; /* bit i: backward reads the values of src[i] */
  int reads_output;    /* backward reads the op's own output */
} op_info;
#define OP_INFO_ENTRY(id, op_name, srcs, output) [GM_OP_##id] = {op_name, srcs, output},
static const op_info op_table[] = {GM_OP_LIST(OP_INFO_ENTRY)};
#undef OP_INFO_ENTRY
_Static_assert(sizeof op_table / sizeof op_table[0] == GM_OP_COUNT, "an op table entry per gm_op");
/* a node notes the version of each source it reads in GM_MAX_PINNED slots */
#define OP_READS_FIT(id, op_name, srcs, output) \
  _Static_assert((srcs) >> GM_MAX_PINNED == 0, op_name " reads more sources than GM_MAX_PINNED");
GM_OP_LIST(OP_READS_FIT)
#undef OP_READS_FIT

unsigned gm_op_needs_src_data(gm_op op) { return op_table[op].reads_srcs; }
int gm_op_needs_output(gm_op op) { return op_table[op].reads_output; }
const char *gm_op_name(gm_op op) { return op >= 0 && op < GM_OP_COUNT ? op_table[op].name : "?"; }
