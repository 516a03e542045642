/* gm_checkpoint_reader.h — the PyTorch checkpoint reader's pieces, one file each: bytes from a
 * file or a buffer, the zip archive (gm_zip.c), the restricted unpickler (gm_unpickle.c), and
 * the tensors read from their storages (gm_torch.c: gm_torch_load, the public entry in gm.h).
 * Shared by the three and the libFuzzer harnesses under scripts/fuzz/; not part of the public
 * API. */
#ifndef GM_CHECKPOINT_READER_H
#define GM_CHECKPOINT_READER_H

#include <stddef.h>
#include <stdint.h>

#include "gm.h"

/* ---- bytes to read: an open file (pread) or a buffer in memory (the fuzzers) ----------------- */

typedef struct gm_source {
  const char *name; /* for messages: the path */
  int fd;           /* read with pread when mem is NULL */
  const unsigned char *mem;
  uint64_t size;
} gm_source;

/* Reads exactly n bytes at offset (the caller has checked the range against src->size). */
gm_status gm_source_read(const gm_source *src, uint64_t offset, void *buf, size_t n);

/* ---- zip archives (gm_zip.c) ----------------------------------------------------------------- */

typedef struct gm_zip_entry {
  char *name;           /* NUL-terminated; names holding a NUL byte are refused */
  uint64_t data_offset; /* where the stored bytes start, from the local header */
  uint64_t size;
} gm_zip_entry;

typedef struct gm_zip {
  int count;
  gm_zip_entry *entries;
} gm_zip;

/* Reads the central directory (ZIP64 too) and each entry's local header. Only stored
 * (uncompressed) entries are accepted; every offset and size is checked against src->size. */
gm_zip *gm_zip_open(const gm_source *src);
void gm_zip_free(gm_zip *zip);
const gm_zip_entry *gm_zip_find(const gm_zip *zip, const char *name);

/* ---- the restricted unpickler (gm_unpickle.c) ------------------------------------------------ */

typedef enum gm_pkind {
  GM_P_NONE,
  GM_P_BOOL,
  GM_P_INT,
  GM_P_FLOAT,
  GM_P_STRING,
  GM_P_TUPLE,
  GM_P_LIST,
  GM_P_DICT,
  GM_P_GLOBAL,  /* an allowlisted callable or storage type (see gm_pglobal) */
  GM_P_STORAGE, /* a persistent id ('storage', type, key, location, numel) */
  GM_P_TENSOR   /* the result of _rebuild_tensor_v2 / _rebuild_parameter */
} gm_pkind;

typedef enum gm_pglobal {
  GM_G_ORDERED_DICT,
  GM_G_REBUILD_TENSOR_V2,
  GM_G_REBUILD_PARAMETER,
  GM_G_SIZE,
  GM_G_FLOAT_STORAGE,
  GM_G_DOUBLE_STORAGE,
  GM_G_HALF_STORAGE,
  GM_G_BFLOAT16_STORAGE,
  GM_G_LONG_STORAGE,
  GM_G_INT_STORAGE,
  GM_G_SHORT_STORAGE,
  GM_G_CHAR_STORAGE,
  GM_G_BYTE_STORAGE,
  GM_G_BOOL_STORAGE
} gm_pglobal;

typedef struct gm_pvalue gm_pvalue;
struct gm_pvalue {
  gm_pkind kind;
  union {
    int64_t i; /* BOOL, INT */
    double f;  /* FLOAT */
    struct {   /* STRING (not NUL-terminated inside; use len) */
      const char *s;
      size_t len;
    } str;
    struct { /* TUPLE, LIST; DICT keeps keys in items[2k] and values in items[2k+1] */
      gm_pvalue **items;
      int64_t n, cap;
    } seq;
    gm_pglobal global;
    struct { /* STORAGE */
      gm_pglobal type;
      const char *key; /* NUL-terminated */
      int64_t numel;
    } storage;
    struct { /* TENSOR */
      const gm_pvalue *storage;
      int64_t offset;
      int ndim;
      int64_t size[GM_MAX_DIMS], stride[GM_MAX_DIMS];
    } tensor;
  } u;
};

/* Every value lives in the unpickler's arena and is freed with it. */
typedef struct gm_unpickled gm_unpickled;
/* Runs the pickle in data; what names it in messages. The result's root is gm_unpickled_root. */
gm_unpickled *gm_unpickle(const unsigned char *data, size_t size, const char *what);
const gm_pvalue *gm_unpickled_root(const gm_unpickled *u);
void gm_unpickled_free(gm_unpickled *u);
const char *gm_pglobal_name(gm_pglobal g); /* "torch.FloatStorage" */

/* ---- the state dict (gm_torch.c) ------------------------------------------------------------- */

gm_state_dict *gm_torch_load_source(const gm_source *src, int skip_non_float);

#endif
