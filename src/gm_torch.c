/* gm_torch.c — PyTorch checkpoints (torch.save since 1.6) as float32 tensors: the archive's
 * <prefix>/data.pkl goes through the restricted unpickler, and each tensor it describes is read
 * from its storage entry <prefix>/data/<key> with pread, straight into the new tensor when it is
 * a contiguous float32 run, else through a buffer of the span it covers; so the peak is the
 * weights plus the largest such span, never a copy of the archive. */
#include <stdlib.h>
#include <unistd.h>

#include "gm_internal.h"
#include "gm_checkpoint_reader.h"

#define MAX_PICKLE ((uint64_t)1 << 30)

typedef struct storage_type {
  const char *torch_dtype; /* as PyTorch prints it */
  size_t size;
  int is_float;
  gm_dtype dtype;
} storage_type;

static storage_type type_of(gm_pglobal g) {
  switch (g) {
    case GM_G_FLOAT_STORAGE: return (storage_type){"float32", 4, 1, GM_DTYPE_F32};
    case GM_G_DOUBLE_STORAGE: return (storage_type){"float64", 8, 1, GM_DTYPE_F64};
    case GM_G_HALF_STORAGE: return (storage_type){"float16", 2, 1, GM_DTYPE_F16};
    case GM_G_BFLOAT16_STORAGE: return (storage_type){"bfloat16", 2, 1, GM_DTYPE_BF16};
    case GM_G_LONG_STORAGE: return (storage_type){"int64", 8, 0, GM_DTYPE_F32};
    case GM_G_INT_STORAGE: return (storage_type){"int32", 4, 0, GM_DTYPE_F32};
    case GM_G_SHORT_STORAGE: return (storage_type){"int16", 2, 0, GM_DTYPE_F32};
    case GM_G_CHAR_STORAGE: return (storage_type){"int8", 1, 0, GM_DTYPE_F32};
    case GM_G_BYTE_STORAGE: return (storage_type){"uint8", 1, 0, GM_DTYPE_F32};
    default: return (storage_type){"bool", 1, 0, GM_DTYPE_F32};
  }
}

/* "[2, 3]" for messages */
static const char *dims_str(int n, const int64_t *d, char *buf, size_t size) {
  size_t k = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && k < size; i++)
    k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? ", " : "", (long long)d[i]);
  if (k < size) snprintf(buf + k, size - k, "]");
  return buf;
}

/* The last element a view reaches: offset + Σ (size_i − 1)·stride_i, or an error on a negative
 * value or an overflow. Only called with numel > 0. */
static gm_status view_end(const char *path, const char *name, const gm_pvalue *t, int64_t *last) {
  char a[GM_SHAPE_BUF * 2], b[GM_SHAPE_BUF * 2];
  int n = t->u.tensor.ndim;
  const int64_t *size = t->u.tensor.size, *stride = t->u.tensor.stride;
  int64_t end = t->u.tensor.offset;
  if (end < 0)
    return gm_fail(GM_ERR_IO, 1, "%s: %s: negative storage offset %lld", path, name,
                   (long long)end);
  for (int i = 0; i < n; i++) {
    int64_t reach;
    if (stride[i] < 0)
      return gm_fail(GM_ERR_IO, 1, "%s: %s: negative stride in %s", path, name,
                     dims_str(n, stride, a, sizeof a));
    if (__builtin_mul_overflow(size[i] - 1, stride[i], &reach) ||
        __builtin_add_overflow(end, reach, &end))
      return gm_fail(GM_ERR_IO, 1, "%s: %s: size %s with stride %s overflows", path, name,
                     dims_str(n, size, a, sizeof a), dims_str(n, stride, b, sizeof b));
  }
  *last = end;
  return GM_OK;
}

static int is_contiguous(const gm_pvalue *t) {
  int64_t expected = 1;
  for (int i = t->u.tensor.ndim - 1; i >= 0; i--) {
    if (t->u.tensor.size[i] != 1 && t->u.tensor.stride[i] != expected) return 0;
    expected *= t->u.tensor.size[i];
  }
  return 1;
}

/* Copies the strided view out of span (which starts at the view's first element), converting. */
static void gather(float *dst, const unsigned char *span, const gm_pvalue *t,
                   const storage_type *ty) {
  int n = t->u.tensor.ndim;
  const int64_t *size = t->u.tensor.size, *stride = t->u.tensor.stride;
  int64_t idx[GM_MAX_DIMS] = {0};
  int64_t inner = n ? size[n - 1] : 1, inner_stride = n ? stride[n - 1] : 1;
  int64_t rows = inner ? gm_numel_of(n, size) / inner : 0;
  for (int64_t r = 0; r < rows; r++) {
    int64_t at = 0;
    for (int i = 0; i < n - 1; i++) at += idx[i] * stride[i];
    if (inner_stride == 1) {
      gm_convert_to_f32(dst, span + (size_t)at * ty->size, inner, ty->dtype);
    } else {
      for (int64_t j = 0; j < inner; j++)
        gm_convert_to_f32(dst + j, span + (size_t)(at + j * inner_stride) * ty->size, 1, ty->dtype);
    }
    dst += inner;
    for (int i = n - 2; i >= 0 && ++idx[i] == size[i]; i--) idx[i] = 0; /* next row */
  }
}

static gm_tensor *read_tensor(const gm_source *src, const gm_zip *zip, const char *prefix,
                              const char *name, const gm_pvalue *t, uint64_t *budget) {
  char a[GM_SHAPE_BUF * 2], entry_name[512];
  const gm_pvalue *s = t->u.tensor.storage;
  storage_type ty = type_of(s->u.storage.type);
  int n = t->u.tensor.ndim;
  for (int i = 0; i < n; i++)
    if (t->u.tensor.size[i] < 0) {
      gm_fail(GM_ERR_IO, 1, "%s: %s: negative size in %s", src->name, name,
              dims_str(n, t->u.tensor.size, a, sizeof a));
      return NULL;
    }
  if (snprintf(entry_name, sizeof entry_name, "%s/data/%s", prefix, s->u.storage.key) >=
      (int)sizeof entry_name) {
    gm_fail(GM_ERR_IO, 1, "%s: %s: a storage key of %zu bytes", src->name, name,
            strlen(s->u.storage.key));
    return NULL;
  }
  const gm_zip_entry *e = gm_zip_find(zip, entry_name);
  if (!e) {
    gm_fail(GM_ERR_IO, 1, "%s: %s: its storage %s is missing from the archive", src->name, name,
            entry_name);
    return NULL;
  }
  uint64_t numel_storage = (uint64_t)s->u.storage.numel;
  if (numel_storage > e->size / ty.size) {
    gm_fail(GM_ERR_IO, 1, "%s: %s: storage %s holds %llu bytes, but its %llu %s elements need %llu",
            src->name, name, entry_name, (unsigned long long)e->size,
            (unsigned long long)numel_storage, ty.torch_dtype,
            (unsigned long long)(numel_storage * ty.size));
    return NULL;
  }
  int64_t numel = gm_numel_of(n, t->u.tensor.size), last = 0;
  if (numel < 0) {
    gm_fail(GM_ERR_IO, 1, "%s: %s: size %s overflows", src->name, name,
            dims_str(n, t->u.tensor.size, a, sizeof a));
    return NULL;
  }
  if (numel > 0 && view_end(src->name, name, t, &last) != GM_OK) return NULL;
  if (numel > 0 && (uint64_t)last >= numel_storage) {
    char b[GM_SHAPE_BUF * 2];
    gm_fail(GM_ERR_IO, 1,
            "%s: %s: size %s, stride %s from offset %lld reach element %lld of a storage "
            "of %llu (damaged or hostile file)",
            src->name, name, dims_str(n, t->u.tensor.size, a, sizeof a),
            dims_str(n, t->u.tensor.stride, b, sizeof b), (long long)t->u.tensor.offset,
            (long long)last, (unsigned long long)numel_storage);
    return NULL;
  }
  if ((uint64_t)numel > *budget / sizeof(float)) {
    gm_fail(GM_ERR_IO, 1,
            "%s: %s: size %s (%lld float32 elements) is more than a file of %llu bytes "
            "justifies (its tensors may take %llu bytes in all; a stride-0 or overlapping view?)",
            src->name, name, dims_str(n, t->u.tensor.size, a, sizeof a), (long long)numel,
            (unsigned long long)src->size,
            (unsigned long long)(src->size > UINT64_MAX / 2 ? UINT64_MAX : 2 * src->size));
    return NULL;
  }
  *budget -= (uint64_t)numel * sizeof(float);
  gm_tensor *out = gm_tensor_empty(n, t->u.tensor.size);
  if (!out) {
    char why[512];
    snprintf(why, sizeof why, "%s", gm_last_error());
    gm_fail(gm_last_status(), 1, "%s: %s: %s", src->name, name, why);
    return NULL;
  }
  if (numel == 0) return out;
  uint64_t first_byte = e->data_offset + (uint64_t)t->u.tensor.offset * ty.size;
  size_t span = (size_t)(last - t->u.tensor.offset + 1) * ty.size;
  if (ty.dtype == GM_DTYPE_F32 && is_contiguous(t)) { /* the common case: no buffer at all */
    if (gm_source_read(src, first_byte, out->data, span) != GM_OK) goto fail;
    return out;
  }
  unsigned char *buf = gm_malloc(span);
  if (!buf || gm_source_read(src, first_byte, buf, span) != GM_OK) {
    gm_free(buf);
    goto fail;
  }
  if (is_contiguous(t))
    gm_convert_to_f32(out->data, buf, out->numel, ty.dtype);
  else
    gather(out->data, buf, t, &ty);
  gm_free(buf);
  return out;
fail:
  gm_tensor_release(out);
  return NULL;
}

/* The one "<prefix>/data.pkl" of the archive (torch.save's prefix is the archive's name). */
static const gm_zip_entry *find_pickle(const gm_source *src, const gm_zip *zip, char *prefix,
                                       size_t size) {
  const gm_zip_entry *found = NULL;
  for (int i = 0; i < zip->count; i++) {
    const char *nm = zip->entries[i].name, *slash = strchr(nm, '/');
    if (!slash || strcmp(slash, "/data.pkl") != 0) continue;
    if (found) {
      gm_fail(GM_ERR_IO, 1, "%s: two pickles in one archive (%s and %s)", src->name, found->name,
              nm);
      return NULL;
    }
    found = &zip->entries[i];
  }
  if (!found) {
    gm_fail(GM_ERR_IO, 1,
            "%s: no <name>/data.pkl in the zip archive (not a torch.save checkpoint?)", src->name);
    return NULL;
  }
  size_t len = (size_t)(strchr(found->name, '/') - found->name);
  if (len >= size) {
    gm_fail(GM_ERR_IO, 1, "%s: the archive's name is too long", src->name);
    return NULL;
  }
  memcpy(prefix, found->name, len);
  prefix[len] = 0;
  return found;
}

/* Since PyTorch 1.10 an optional <prefix>/byteorder says "little" or "big"; only little is read. */
static gm_status check_byteorder(const gm_source *src, const gm_zip *zip, const char *prefix) {
  char name[512], order[16] = {0};
  snprintf(name, sizeof name, "%s/byteorder", prefix);
  const gm_zip_entry *e = gm_zip_find(zip, name);
  if (!e) return GM_OK;
  if (e->size >= sizeof order)
    return gm_fail(GM_ERR_IO, 1, "%s: a byteorder entry of %llu bytes", src->name,
                   (unsigned long long)e->size);
  gm_status st = gm_source_read(src, e->data_offset, order, (size_t)e->size);
  if (st != GM_OK) return st;
  if (strcmp(order, "little") != 0)
    return gm_fail(GM_ERR_IO, 1, "%s: byte order \"%s\": only little-endian checkpoints are read",
                   src->name, order);
  return GM_OK;
}

static char *copy_string(const char *s) {
  char *c = gm_malloc(strlen(s) + 1);
  if (c) strcpy(c, s);
  return c;
}

/* Tied weights (entries with one view of one storage) are found by sorting the entries by view:
 * O(n log n) whatever the file holds (a hash of the views could be steered into one probe chain
 * by a crafted pickle and made quadratic). Equal views end up side by side, the earliest entry
 * first. */
typedef struct view_entry {
  const gm_pvalue *view;
  int64_t index; /* into the root dict */
} view_entry;

static int compare_i64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static int compare_views(const void *pa, const void *pb) {
  const view_entry *a = pa, *b = pb;
  const gm_pvalue *x = a->view, *y = b->view;
  const gm_pvalue *sx = x->u.tensor.storage, *sy = y->u.tensor.storage;
  int c = strcmp(sx->u.storage.key, sy->u.storage.key);
  if (!c) c = compare_i64(sx->u.storage.type, sy->u.storage.type);
  if (!c) c = compare_i64(x->u.tensor.offset, y->u.tensor.offset);
  if (!c) c = compare_i64(x->u.tensor.ndim, y->u.tensor.ndim);
  for (int i = 0; !c && i < x->u.tensor.ndim; i++) {
    c = compare_i64(x->u.tensor.size[i], y->u.tensor.size[i]);
    if (!c) c = compare_i64(x->u.tensor.stride[i], y->u.tensor.stride[i]);
  }
  return c ? c : compare_i64(a->index, b->index);
}

/* first[i]: the earliest entry with entry i's view (i itself when none before it); entries that
 * are not tensors are their own. */
static int64_t *first_of_views(const gm_pvalue *root, int64_t n) {
  int64_t *first = gm_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  view_entry *sorted = gm_malloc(sizeof(view_entry) * (size_t)(n ? n : 1));
  if (!first || !sorted) {
    gm_free(first);
    gm_free(sorted);
    return NULL;
  }
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    first[i] = i;
    const gm_pvalue *val = root->u.seq.items[2 * i + 1];
    if (val->kind == GM_P_TENSOR) sorted[m++] = (view_entry){val, i};
  }
  qsort(sorted, (size_t)m, sizeof *sorted, compare_views);
  for (int64_t j = 1; j < m; j++) {
    view_entry probe = sorted[j];
    probe.index = sorted[j - 1].index; /* equal but for the index: the same view */
    if (compare_views(&probe, &sorted[j - 1]) == 0) first[sorted[j].index] = first[sorted[j - 1].index];
  }
  gm_free(sorted);
  return first;
}

static const char *kind_name(gm_pkind k) {
  static const char *const names[] = {"None", "bool", "int",    "float",   "string", "tuple",
                                      "list", "dict", "global", "storage", "tensor"};
  return names[k];
}

/* Each entry of the root dict as a tensor, or skipped, or an error naming it. */
static gm_status fill(const gm_source *src, const gm_zip *zip, const char *prefix,
                      const gm_pvalue *root, int skip_non_float, gm_state_dict *sd) {
  int64_t n = root->u.seq.n / 2;
  int64_t *first = first_of_views(root, n);
  int *slot_of = gm_malloc(sizeof(int) * (size_t)(n ? n : 1)); /* entry → state dict index */
  if (!first || !slot_of) {
    gm_free(first);
    gm_free(slot_of);
    return gm_last_status();
  }
  /* the budget: every element of a 16-bit storage becomes 4 bytes, so no honest file's tensors
   * take more than twice its size; stride-0 views past that are refused */
  uint64_t budget = src->size > UINT64_MAX / 2 ? UINT64_MAX : 2 * src->size;
  gm_status st = GM_OK;
  for (int64_t i = 0; i < n && st == GM_OK; i++) {
    const gm_pvalue *key = root->u.seq.items[2 * i], *val = root->u.seq.items[2 * i + 1];
    if (key->kind != GM_P_STRING || strlen(key->u.str.s) != key->u.str.len) {
      st = gm_fail(GM_ERR_IO, 1, "%s: a state dict key that is not a string (a %s)", src->name,
                   kind_name(key->kind));
      break;
    }
    const char *name = key->u.str.s;
    if (val->kind != GM_P_TENSOR) {
      st = gm_fail(GM_ERR_IO, 1,
                   "%s: %s is a %s, not a tensor (only state dicts of tensors are read)", src->name,
                   name, kind_name(val->kind));
      break;
    }
    storage_type ty = type_of(val->u.tensor.storage->u.storage.type);
    if (!ty.is_float) {
      if (!skip_non_float) {
        st = gm_fail(GM_ERR_IO, 1,
                     "%s: %s has dtype %s; only float32, float64, float16 and bfloat16 "
                     "tensors are read (skip_non_float leaves the others out)",
                     src->name, name, ty.torch_dtype);
        break;
      }
      int k = sd->skipped_count;
      sd->skipped[k] = copy_string(name);
      sd->skipped_dtype[k] = copy_string(ty.torch_dtype);
      if (!sd->skipped[k] || !sd->skipped_dtype[k]) {
        gm_free(sd->skipped[k]);
        gm_free(sd->skipped_dtype[k]);
        st = gm_last_status();
      } else {
        sd->skipped_count++;
      }
      continue;
    }
    int tied = first[i] != i; /* tied weights: one tensor under both names */
    gm_tensor *t = tied ? sd->tensors[slot_of[first[i]]] : read_tensor(src, zip, prefix, name, val, &budget);
    if (tied) gm_tensor_retain(t);
    char *copy = t ? copy_string(name) : NULL;
    if (!copy) {
      gm_tensor_release(t);
      st = gm_last_status();
      break;
    }
    slot_of[i] = sd->count;
    sd->names[sd->count] = copy;
    sd->tensors[sd->count++] = t;
  }
  gm_free(first);
  gm_free(slot_of);
  return st;
}

static gm_state_dict *new_state_dict(int64_t n) {
  gm_state_dict *sd = gm_malloc(sizeof *sd);
  if (!sd) return NULL;
  memset(sd, 0, sizeof *sd);
  size_t bytes = sizeof(char *) * (size_t)(n ? n : 1);
  sd->names = gm_malloc(bytes);
  sd->tensors = gm_malloc(sizeof(gm_tensor *) * (size_t)(n ? n : 1));
  sd->skipped = gm_malloc(bytes);
  sd->skipped_dtype = gm_malloc(bytes);
  if (!sd->names || !sd->tensors || !sd->skipped || !sd->skipped_dtype) {
    gm_state_dict_free(sd);
    return NULL;
  }
  return sd;
}

gm_state_dict *gm_torch_load_source(const gm_source *src, int skip_non_float) {
  char prefix[256], what[600];
  unsigned char magic[2] = {0, 0};
  if (src->size >= 2 && gm_source_read(src, 0, magic, 2) != GM_OK) return NULL;
  if (magic[0] == 0x80 && magic[1] <= 5) {
    gm_fail(GM_ERR_IO, 1,
            "%s: a bare pickle, the format torch.save wrote before PyTorch 1.6; save it "
            "again with a newer torch (it writes a zip archive)",
            src->name);
    return NULL;
  }
  gm_zip *zip = gm_zip_open(src);
  if (!zip) return NULL;
  gm_unpickled *u = NULL;
  gm_state_dict *sd = NULL;
  unsigned char *pickle = NULL;
  const gm_zip_entry *pe = find_pickle(src, zip, prefix, sizeof prefix);
  if (!pe || check_byteorder(src, zip, prefix) != GM_OK) goto done;
  if (pe->size > MAX_PICKLE) {
    gm_fail(GM_ERR_IO, 1, "%s: %s of %llu bytes is too large", src->name, pe->name,
            (unsigned long long)pe->size);
    goto done;
  }
  pickle = gm_malloc(pe->size ? (size_t)pe->size : 1);
  if (!pickle || gm_source_read(src, pe->data_offset, pickle, (size_t)pe->size) != GM_OK) goto done;
  snprintf(what, sizeof what, "%s: %s", src->name, pe->name);
  u = gm_unpickle(pickle, (size_t)pe->size, what);
  if (!u) goto done;
  const gm_pvalue *root = gm_unpickled_root(u);
  if (root->kind != GM_P_DICT) {
    gm_fail(GM_ERR_IO, 1, "%s: the pickle holds a %s, not a state dict", src->name,
            kind_name(root->kind));
    goto done;
  }
  sd = new_state_dict(root->u.seq.n / 2);
  if (sd && fill(src, zip, prefix, root, skip_non_float, sd) != GM_OK) {
    gm_state_dict_free(sd);
    sd = NULL;
  }
done:
  gm_unpickled_free(u);
  gm_free(pickle);
  gm_zip_free(zip);
  return sd;
}

gm_state_dict *gm_torch_load(const char *path, int skip_non_float) {
  int fd;
  uint64_t size;
  if (gm_file_open(path, &fd, &size) != GM_OK) return NULL;
  gm_state_dict *sd = gm_torch_load_source(&(gm_source){.name = path, .fd = fd, .size = size},
                                           skip_non_float);
  close(fd);
  return sd;
}

void gm_state_dict_free(gm_state_dict *sd) {
  if (!sd) return;
  for (int i = 0; i < sd->count; i++) {
    gm_free(sd->names[i]);
    gm_tensor_release(sd->tensors[i]);
  }
  for (int i = 0; i < sd->skipped_count; i++) {
    gm_free(sd->skipped[i]);
    gm_free(sd->skipped_dtype[i]);
  }
  gm_free(sd->names);
  gm_free(sd->tensors);
  gm_free(sd->skipped);
  gm_free(sd->skipped_dtype);
  gm_free(sd);
}
