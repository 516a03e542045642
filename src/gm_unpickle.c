/* gm_unpickle.c — a pickle machine that can only build a state dict.
 *
 * Unpickling is running a program: GLOBAL names any importable callable and REDUCE calls it, so
 * Python's pickle runs os.system as readily as OrderedDict. This machine knows the opcodes
 * torch.save writes (protocol 2, and the few protocol 4 ones a newer pickler adds) and a short
 * allowlist of globals; REDUCE on an allowlisted name builds a value here in C (a dict, a tensor
 * description) and nothing is ever called. Any other global is refused by its name before
 * anything else happens. The stack, the memo, the mark depth and the bytes of values are bounded,
 * and nothing recurses, so a hostile pickle ends in an error, not in exhausted memory. */
#include <stdarg.h>

#include <stddef.h>

#include "gm_internal.h"
#include "gm_checkpoint_reader.h"

#define MAX_STACK ((int64_t)1 << 20)
#define MAX_MEMO ((int64_t)1 << 20)
#define MAX_MARKS 64
#define MAX_ARENA ((size_t)256 << 20)
#define CHUNK ((size_t)64 << 10)

typedef struct chunk {
  struct chunk *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} chunk;

struct gm_unpickled {
  chunk *chunks;
  size_t arena_bytes;
  const gm_pvalue *root;
};

typedef struct machine {
  gm_unpickled *u;
  const char *what;
  const unsigned char *data;
  size_t size, pos, op_pos;
  gm_pvalue **stack;
  int64_t sp, stack_cap;
  int64_t marks[MAX_MARKS];
  int nmarks;
  gm_pvalue **memo;
  int64_t memo_cap, memo_count;
} machine;

static const struct {
  const char *module, *name;
} globals[] = {
    [GM_G_ORDERED_DICT] = {"collections", "OrderedDict"},
    [GM_G_REBUILD_TENSOR_V2] = {"torch._utils", "_rebuild_tensor_v2"},
    [GM_G_REBUILD_PARAMETER] = {"torch._utils", "_rebuild_parameter"},
    [GM_G_SIZE] = {"torch", "Size"},
    [GM_G_FLOAT_STORAGE] = {"torch", "FloatStorage"},
    [GM_G_DOUBLE_STORAGE] = {"torch", "DoubleStorage"},
    [GM_G_HALF_STORAGE] = {"torch", "HalfStorage"},
    [GM_G_BFLOAT16_STORAGE] = {"torch", "BFloat16Storage"},
    [GM_G_LONG_STORAGE] = {"torch", "LongStorage"},
    [GM_G_INT_STORAGE] = {"torch", "IntStorage"},
    [GM_G_SHORT_STORAGE] = {"torch", "ShortStorage"},
    [GM_G_CHAR_STORAGE] = {"torch", "CharStorage"},
    [GM_G_BYTE_STORAGE] = {"torch", "ByteStorage"},
    [GM_G_BOOL_STORAGE] = {"torch", "BoolStorage"},
};
#define NGLOBALS ((int)(sizeof globals / sizeof globals[0]))

const char *gm_pglobal_name(gm_pglobal g) {
  static _Thread_local char buf[64];
  snprintf(buf, sizeof buf, "%s.%s", globals[g].module, globals[g].name);
  return buf;
}

static gm_status fail(machine *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static gm_status fail(machine *m, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return gm_fail(GM_ERR_IO, 1, "%s: %s (opcode at byte %zu)", m->what, msg, m->op_pos);
}

/* ---- the arena ------------------------------------------------------------------------------- */

static void *arena_alloc(machine *m, size_t bytes) {
  gm_unpickled *u = m->u;
  bytes = (bytes + 15) & ~(size_t)15;
  chunk *c = u->chunks;
  if (!c || c->size - c->used < bytes) {
    size_t size = bytes > CHUNK ? bytes : CHUNK;
    if (u->arena_bytes + size > MAX_ARENA) {
      fail(m, "the pickle's values need more than %zu MiB", MAX_ARENA >> 20);
      return NULL;
    }
    c = gm_malloc(sizeof(chunk) + size);
    if (!c) return NULL;
    c->next = u->chunks;
    c->used = 0;
    c->size = size;
    u->chunks = c;
    u->arena_bytes += size;
  }
  void *p = c->data + c->used;
  c->used += bytes;
  return p;
}

/* A value takes only its kind's member of the union: a tensor's sizes and strides (150 bytes)
 * would make every int and tuple of a crafted pickle cost as much. */
static size_t value_size(gm_pkind kind) {
  const gm_pvalue *v = NULL;
  size_t member;
  switch (kind) {
    case GM_P_TENSOR: member = sizeof v->u.tensor; break;
    case GM_P_STORAGE: member = sizeof v->u.storage; break;
    case GM_P_TUPLE:
    case GM_P_LIST:
    case GM_P_DICT: member = sizeof v->u.seq; break;
    case GM_P_STRING: member = sizeof v->u.str; break;
    default: member = sizeof v->u.i; break; /* None, bool, int, float, global */
  }
  return offsetof(gm_pvalue, u) + member;
}

static gm_pvalue *new_value(machine *m, gm_pkind kind) {
  size_t size = value_size(kind);
  gm_pvalue *v = arena_alloc(m, size);
  if (v) {
    memset(v, 0, size);
    v->kind = kind;
  }
  return v;
}

/* A tuple, list or dict of n items taken from items (which may be NULL when n == 0). */
static gm_pvalue *new_seq(machine *m, gm_pkind kind, gm_pvalue *const *items, int64_t n) {
  gm_pvalue *v = new_value(m, kind);
  if (!v) return NULL;
  v->u.seq.cap = n > 4 ? n : 4;
  v->u.seq.items = arena_alloc(m, sizeof(gm_pvalue *) * (size_t)v->u.seq.cap);
  if (!v->u.seq.items) return NULL;
  if (n) memcpy(v->u.seq.items, items, sizeof(gm_pvalue *) * (size_t)n);
  v->u.seq.n = n;
  return v;
}

static gm_status seq_extend(machine *m, gm_pvalue *v, gm_pvalue *const *items, int64_t n) {
  if (v->u.seq.n + n > v->u.seq.cap) {
    int64_t cap = v->u.seq.cap;
    while (cap < v->u.seq.n + n) cap *= 2;
    gm_pvalue **grown = arena_alloc(m, sizeof(gm_pvalue *) * (size_t)cap);
    if (!grown) return gm_last_status();
    memcpy(grown, v->u.seq.items, sizeof(gm_pvalue *) * (size_t)v->u.seq.n);
    v->u.seq.items = grown;
    v->u.seq.cap = cap;
  }
  memcpy(v->u.seq.items + v->u.seq.n, items, sizeof(gm_pvalue *) * (size_t)n);
  v->u.seq.n += n;
  return GM_OK;
}

/* ---- stack, marks, memo ---------------------------------------------------------------------- */

static gm_status grow(machine *m, gm_pvalue ***array, int64_t *cap, int64_t need, int64_t limit,
                      const char *what) {
  if (need <= *cap) return GM_OK;
  if (need > limit)
    return fail(m, "the %s would pass its limit of %lld entries", what, (long long)limit);
  int64_t n = *cap ? *cap : 64;
  while (n < need) n *= 2;
  if (n > limit) n = limit;
  gm_pvalue **grown = gm_malloc(sizeof(gm_pvalue *) * (size_t)n);
  if (!grown) return gm_last_status();
  if (*cap) memcpy(grown, *array, sizeof(gm_pvalue *) * (size_t)*cap);
  memset(grown + *cap, 0, sizeof(gm_pvalue *) * (size_t)(n - *cap));
  gm_free(*array);
  *array = grown;
  *cap = n;
  return GM_OK;
}

static gm_status push(machine *m, gm_pvalue *v) {
  if (!v) return gm_last_status();
  gm_status st = grow(m, &m->stack, &m->stack_cap, m->sp + 1, MAX_STACK, "stack");
  if (st == GM_OK) m->stack[m->sp++] = v;
  return st;
}

/* The bottom of the current mark's items: how far back TUPLE, APPENDS, SETITEMS reach. */
static int64_t floor_of(const machine *m) { return m->nmarks ? m->marks[m->nmarks - 1] : 0; }

static gm_pvalue *pop(machine *m) {
  if (m->sp <= floor_of(m)) {
    fail(m, "the stack is empty");
    return NULL;
  }
  return m->stack[--m->sp];
}

static gm_status pop_mark(machine *m, int64_t *base) {
  if (!m->nmarks) return fail(m, "no MARK before it");
  *base = m->marks[--m->nmarks];
  return GM_OK;
}

static gm_status memo_put(machine *m, int64_t index) {
  if (m->sp <= floor_of(m)) return fail(m, "nothing on the stack to remember");
  if (index < 0 || index >= MAX_MEMO)
    return fail(m, "memo index %lld past the limit of %lld", (long long)index, (long long)MAX_MEMO);
  gm_status st = grow(m, &m->memo, &m->memo_cap, index + 1, MAX_MEMO, "memo");
  if (st != GM_OK) return st;
  if (!m->memo[index]) m->memo_count++;
  m->memo[index] = m->stack[m->sp - 1];
  return GM_OK;
}

static gm_status memo_get(machine *m, int64_t index) {
  if (index < 0 || index >= m->memo_cap || !m->memo[index])
    return fail(m, "memo index %lld was never stored", (long long)index);
  return push(m, m->memo[index]);
}

/* ---- reading the opcode stream --------------------------------------------------------------- */

static gm_status need(machine *m, size_t n) {
  if (n > m->size - m->pos)
    return fail(m, "the pickle ends in the middle of an opcode (truncated?)");
  return GM_OK;
}

static uint64_t le(const unsigned char *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static gm_status arg_uint(machine *m, int n, uint64_t *v) {
  gm_status st = need(m, (size_t)n);
  if (st == GM_OK) {
    *v = le(m->data + m->pos, n);
    m->pos += (size_t)n;
  }
  return st;
}

static gm_status push_int(machine *m, int64_t i) {
  gm_pvalue *v = new_value(m, GM_P_INT);
  if (v) v->u.i = i;
  return push(m, v);
}

static gm_status push_string(machine *m, uint64_t len) {
  gm_status st = need(m, len);
  if (st != GM_OK) return st;
  gm_pvalue *v = new_value(m, GM_P_STRING);
  char *s = v ? arena_alloc(m, (size_t)len + 1) : NULL;
  if (!s) return gm_last_status();
  memcpy(s, m->data + m->pos, (size_t)len);
  s[len] = 0;
  m->pos += (size_t)len;
  v->u.str.s = s;
  v->u.str.len = (size_t)len;
  return push(m, v);
}

/* GLOBAL's "module\nname\n": a line ends at the newline, which must come within the pickle. */
static gm_status read_line(machine *m, const char **s, size_t *len) {
  const unsigned char *start = m->data + m->pos;
  const unsigned char *nl = memchr(start, '\n', m->size - m->pos);
  if (!nl) return fail(m, "GLOBAL without its newline (truncated?)");
  *s = (const char *)start;
  *len = (size_t)(nl - start);
  m->pos += *len + 1;
  return GM_OK;
}

static gm_status push_global(machine *m, const char *module, size_t mlen, const char *name,
                             size_t nlen) {
  for (int g = 0; g < NGLOBALS; g++)
    if (strlen(globals[g].module) == mlen && memcmp(globals[g].module, module, mlen) == 0 &&
        strlen(globals[g].name) == nlen && memcmp(globals[g].name, name, nlen) == 0) {
      gm_pvalue *v = new_value(m, GM_P_GLOBAL);
      if (v) v->u.global = (gm_pglobal)g;
      return push(m, v);
    }
  /* the name as printable text: a hostile one may hold anything */
  char shown[160];
  size_t k = 0;
  for (size_t i = 0; i < mlen + 1 + nlen && k < sizeof shown - 4; i++) {
    unsigned char c = i < mlen    ? (unsigned char)module[i]
                      : i == mlen ? '.'
                                  : (unsigned char)name[i - mlen - 1];
    shown[k++] = c >= 32 && c < 127 ? (char)c : '?';
  }
  shown[k] = 0;
  return fail(m,
              "refusing to load: pickle calls %s (a state dict needs only OrderedDict, "
              "torch._utils._rebuild_tensor_v2 / _rebuild_parameter and torch.*Storage)",
              shown);
}

/* ---- REDUCE: the allowlisted calls, evaluated here ------------------------------------------- */

static int is_int(const gm_pvalue *v) { return v->kind == GM_P_INT || v->kind == GM_P_BOOL; }

static gm_status int_tuple(machine *m, const gm_pvalue *v, const char *what, int64_t *out, int *n) {
  if (v->kind != GM_P_TUPLE) return fail(m, "_rebuild_tensor_v2: the %s is not a tuple", what);
  if (v->u.seq.n > GM_MAX_DIMS)
    return fail(m, "_rebuild_tensor_v2: a %s of %lld dimensions (at most %d)", what,
                (long long)v->u.seq.n, GM_MAX_DIMS);
  for (int64_t i = 0; i < v->u.seq.n; i++) {
    if (!is_int(v->u.seq.items[i]))
      return fail(m, "_rebuild_tensor_v2: the %s holds a non-integer", what);
    out[i] = v->u.seq.items[i]->u.i;
  }
  *n = (int)v->u.seq.n;
  return GM_OK;
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[,
 * metadata]) */
static gm_pvalue *rebuild_tensor(machine *m, const gm_pvalue *args) {
  int64_t n = args->u.seq.n;
  gm_pvalue *const *a = args->u.seq.items;
  if (n < 6 || n > 7) {
    fail(m, "_rebuild_tensor_v2 with %lld arguments (6 or 7 expected)", (long long)n);
    return NULL;
  }
  if (a[0]->kind != GM_P_STORAGE) {
    fail(m, "_rebuild_tensor_v2: the first argument is not a storage");
    return NULL;
  }
  if (!is_int(a[1])) {
    fail(m, "_rebuild_tensor_v2: the storage offset is not an integer");
    return NULL;
  }
  gm_pvalue *t = new_value(m, GM_P_TENSOR);
  if (!t) return NULL;
  int ndim_stride;
  t->u.tensor.storage = a[0];
  t->u.tensor.offset = a[1]->u.i;
  if (int_tuple(m, a[2], "size", t->u.tensor.size, &t->u.tensor.ndim) != GM_OK ||
      int_tuple(m, a[3], "stride", t->u.tensor.stride, &ndim_stride) != GM_OK)
    return NULL;
  if (ndim_stride != t->u.tensor.ndim) {
    fail(m, "_rebuild_tensor_v2: %d sizes but %d strides", t->u.tensor.ndim, ndim_stride);
    return NULL;
  }
  return t;
}

static gm_status reduce(machine *m) {
  gm_pvalue *args = pop(m), *callable = args ? pop(m) : NULL;
  if (!callable) return gm_last_status();
  if (callable->kind != GM_P_GLOBAL) return fail(m, "REDUCE on something that is not a global");
  if (args->kind != GM_P_TUPLE) return fail(m, "REDUCE with arguments that are not a tuple");
  gm_pvalue *const *a = args->u.seq.items;
  int64_t n = args->u.seq.n;
  switch (callable->u.global) {
    case GM_G_ORDERED_DICT: /* OrderedDict(): the items follow with SETITEMS */
      if (n != 0) return fail(m, "OrderedDict called with arguments");
      return push(m, new_seq(m, GM_P_DICT, NULL, 0));
    case GM_G_REBUILD_TENSOR_V2: return push(m, rebuild_tensor(m, args));
    case GM_G_REBUILD_PARAMETER: /* (tensor, requires_grad, backward_hooks): the tensor itself */
      if (n != 3 || a[0]->kind != GM_P_TENSOR)
        return fail(m, "_rebuild_parameter without a tensor and two flags");
      return push(m, a[0]);
    case GM_G_SIZE: /* torch.Size((d0, d1, ...)) is the tuple */
      if (n != 1 || a[0]->kind != GM_P_TUPLE) return fail(m, "torch.Size without a tuple");
      return push(m, a[0]);
    default:
      return fail(m, "refusing to load: pickle calls %s as a function",
                  gm_pglobal_name(callable->u.global));
  }
}

/* BINPERSID: torch.save's reference to a storage, ('storage', type, key, location, numel) */
static gm_status persistent_load(machine *m) {
  gm_pvalue *pid = pop(m);
  if (!pid) return gm_last_status();
  gm_pvalue *const *a = pid->u.seq.items;
  if (pid->kind != GM_P_TUPLE || pid->u.seq.n != 5 || a[0]->kind != GM_P_STRING ||
      strcmp(a[0]->u.str.s, "storage") != 0)
    return fail(m, "a persistent id that is not ('storage', type, key, location, numel)");
  if (a[1]->kind != GM_P_GLOBAL || a[1]->u.global < GM_G_FLOAT_STORAGE)
    return fail(m, "a storage whose type is not a torch.*Storage");
  if (a[2]->kind != GM_P_STRING || strlen(a[2]->u.str.s) != a[2]->u.str.len)
    return fail(m, "a storage whose key is not a string");
  if (!is_int(a[4]) || a[4]->u.i < 0) return fail(m, "a storage whose size is not a count");
  gm_pvalue *v = new_value(m, GM_P_STORAGE);
  if (v) {
    v->u.storage.type = a[1]->u.global;
    v->u.storage.key = a[2]->u.str.s;
    v->u.storage.numel = a[4]->u.i;
  }
  return push(m, v);
}

static gm_status setitems(machine *m, int64_t base) {
  if (base < 1 || (m->sp - base) % 2) return fail(m, "SETITEMS without a dict and key/value pairs");
  gm_pvalue *d = m->stack[base - 1];
  if (d->kind != GM_P_DICT) return fail(m, "SETITEMS on something that is not a dict");
  gm_status st = seq_extend(m, d, m->stack + base, m->sp - base);
  m->sp = base;
  return st;
}

static gm_status appends(machine *m, int64_t base) {
  if (base < 1 || m->stack[base - 1]->kind != GM_P_LIST)
    return fail(m, "APPENDS on something that is not a list");
  gm_status st = seq_extend(m, m->stack[base - 1], m->stack + base, m->sp - base);
  m->sp = base;
  return st;
}

/* The items from base to the top become one tuple, list or dict. */
static gm_status collect(machine *m, int64_t base, gm_pkind kind) {
  if (kind == GM_P_DICT && (m->sp - base) % 2) return fail(m, "DICT with an odd number of items");
  gm_pvalue *v = new_seq(m, kind, m->stack + base, m->sp - base);
  m->sp = base;
  return push(m, v);
}

static gm_status build(machine *m) {
  gm_pvalue *state = pop(m);
  if (!state) return gm_last_status();
  if (m->sp <= floor_of(m) || m->stack[m->sp - 1]->kind != GM_P_DICT)
    return fail(m, "BUILD on something other than an OrderedDict");
  return GM_OK; /* a state dict's attributes (_metadata: module versions) carry no weights */
}

static gm_status step(machine *m, int *stop) {
  uint64_t n;
  gm_status st;
  m->op_pos = m->pos;
  if ((st = need(m, 1)) != GM_OK) return st;
  unsigned char op = m->data[m->pos++];
  switch (op) {
    case 0x80: /* PROTO */
      if ((st = arg_uint(m, 1, &n)) != GM_OK) return st;
      return n >= 2 && n <= 5 ? GM_OK
                              : fail(m, "pickle protocol %u (2 to 5 are read)", (unsigned)n);
    case 0x95: /* FRAME: a length hint */ return arg_uint(m, 8, &n);
    case '.': /* STOP */
      if (m->sp != 1 || m->nmarks)
        return fail(m, "STOP with %lld values on the stack", (long long)m->sp);
      m->u->root = m->stack[0];
      *stop = 1;
      return GM_OK;
    case '(': /* MARK */
      if (m->nmarks == MAX_MARKS) return fail(m, "marks nested more than %d deep", MAX_MARKS);
      m->marks[m->nmarks++] = m->sp;
      return GM_OK;
    case 'N': return push(m, new_value(m, GM_P_NONE));
    case 0x88:   /* NEWTRUE */
    case 0x89: { /* NEWFALSE */
      gm_pvalue *v = new_value(m, GM_P_BOOL);
      if (v) v->u.i = op == 0x88;
      return push(m, v);
    }
    case 'K': /* BININT1 */
    case 'M': /* BININT2 */
      if ((st = arg_uint(m, op == 'K' ? 1 : 2, &n)) != GM_OK) return st;
      return push_int(m, (int64_t)n);
    case 'J': /* BININT: signed 32 bits */
      if ((st = arg_uint(m, 4, &n)) != GM_OK) return st;
      return push_int(m, (int64_t)(int32_t)(uint32_t)n);
    case 0x8a: { /* LONG1: n bytes of two's complement */
      uint64_t len;
      if ((st = arg_uint(m, 1, &len)) != GM_OK) return st;
      if (len > 8) return fail(m, "an integer of %u bytes (at most 8 are read)", (unsigned)len);
      if ((st = arg_uint(m, (int)len, &n)) != GM_OK) return st;
      if (len > 0 && len < 8 && (n >> (8 * len - 1)) & 1) n |= ~(uint64_t)0 << (8 * len);
      return push_int(m, (int64_t)n);
    }
    case 'G': { /* BINFLOAT: big-endian double */
      if ((st = need(m, 8)) != GM_OK) return st;
      uint64_t bits = 0;
      for (int i = 0; i < 8; i++) bits = bits << 8 | m->data[m->pos + (size_t)i];
      m->pos += 8;
      gm_pvalue *v = new_value(m, GM_P_FLOAT);
      if (v) memcpy(&v->u.f, &bits, 8);
      return push(m, v);
    }
    case 'X': /* BINUNICODE */
    case 'B': /* BINBYTES */
      if ((st = arg_uint(m, 4, &n)) != GM_OK) return st;
      return push_string(m, n);
    case 'T': /* BINSTRING: a signed length */
      if ((st = arg_uint(m, 4, &n)) != GM_OK) return st;
      if ((int32_t)(uint32_t)n < 0) return fail(m, "a string of negative length");
      return push_string(m, n);
    case 0x8c: /* SHORT_BINUNICODE */
    case 'U':  /* SHORT_BINSTRING */
    case 'C':  /* SHORT_BINBYTES */
      if ((st = arg_uint(m, 1, &n)) != GM_OK) return st;
      return push_string(m, n);
    case 'c': { /* GLOBAL */
      const char *mod = NULL, *name = NULL;
      size_t mlen = 0, nlen = 0;
      if ((st = read_line(m, &mod, &mlen)) != GM_OK || (st = read_line(m, &name, &nlen)) != GM_OK)
        return st;
      return push_global(m, mod, mlen, name, nlen);
    }
    case 0x93: { /* STACK_GLOBAL */
      gm_pvalue *name = pop(m), *mod = name ? pop(m) : NULL;
      if (!mod) return gm_last_status();
      if (mod->kind != GM_P_STRING || name->kind != GM_P_STRING)
        return fail(m, "STACK_GLOBAL without two strings");
      return push_global(m, mod->u.str.s, mod->u.str.len, name->u.str.s, name->u.str.len);
    }
    case ')': return push(m, new_seq(m, GM_P_TUPLE, NULL, 0));
    case ']': return push(m, new_seq(m, GM_P_LIST, NULL, 0));
    case '}': return push(m, new_seq(m, GM_P_DICT, NULL, 0));
    case 0x85:   /* TUPLE1 */
    case 0x86:   /* TUPLE2 */
    case 0x87: { /* TUPLE3 */
      int64_t k = op - 0x84;
      if (m->sp - floor_of(m) < k) return fail(m, "TUPLE%d with fewer items on the stack", (int)k);
      return collect(m, m->sp - k, GM_P_TUPLE);
    }
    case 't':   /* TUPLE */
    case 'l':   /* LIST */
    case 'd':   /* DICT */
    case 'e':   /* APPENDS */
    case 'u': { /* SETITEMS */
      int64_t base = 0;
      if ((st = pop_mark(m, &base)) != GM_OK) return st;
      if (op == 'e') return appends(m, base);
      if (op == 'u') return setitems(m, base);
      return collect(m, base, op == 't' ? GM_P_TUPLE : op == 'l' ? GM_P_LIST : GM_P_DICT);
    }
    case 'a': /* APPEND */
      if (m->sp - floor_of(m) < 2) return fail(m, "APPEND without a list and an item");
      return appends(m, m->sp - 1);
    case 's': /* SETITEM */
      if (m->sp - floor_of(m) < 3) return fail(m, "SETITEM without a dict, a key and a value");
      return setitems(m, m->sp - 2);
    case 'q': /* BINPUT */
    case 'r': /* LONG_BINPUT */
      if ((st = arg_uint(m, op == 'q' ? 1 : 4, &n)) != GM_OK) return st;
      return memo_put(m, (int64_t)n);
    case 0x94: /* MEMOIZE */ return memo_put(m, m->memo_count);
    case 'h': /* BINGET */
    case 'j': /* LONG_BINGET */
      if ((st = arg_uint(m, op == 'h' ? 1 : 4, &n)) != GM_OK) return st;
      return memo_get(m, (int64_t)n);
    case 'Q': return persistent_load(m); /* BINPERSID */
    case 'R': return reduce(m);
    case 'b': return build(m);
    default:
      return fail(m, "opcode 0x%02x%s%c%s is not one torch.save writes for a state dict", op,
                  op >= 32 && op < 127 ? " ('" : "", op >= 32 && op < 127 ? op : ' ',
                  op >= 32 && op < 127 ? "')" : "");
  }
}

gm_unpickled *gm_unpickle(const unsigned char *data, size_t size, const char *what) {
  gm_unpickled *u = gm_malloc(sizeof *u);
  if (!u) return NULL;
  memset(u, 0, sizeof *u);
  machine m = {.u = u, .what = what, .data = data, .size = size};
  int stop = 0; /* the stack exists from the start: collect() may take 0 items from it */
  gm_status st = grow(&m, &m.stack, &m.stack_cap, 1, MAX_STACK, "stack");
  while (st == GM_OK && !stop) st = step(&m, &stop);
  gm_free(m.stack);
  gm_free(m.memo);
  if (st != GM_OK) {
    gm_unpickled_free(u);
    return NULL;
  }
  return u;
}

const gm_pvalue *gm_unpickled_root(const gm_unpickled *u) { return u->root; }

void gm_unpickled_free(gm_unpickled *u) {
  if (!u) return;
  for (chunk *c = u->chunks, *next; c; c = next) {
    next = c->next;
    gm_free(c);
  }
  gm_free(u);
}
