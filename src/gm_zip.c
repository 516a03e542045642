/* gm_zip.c — the part of the zip format torch.save writes: a central directory (ZIP64 when the
 * archive is large) over stored, uncompressed entries whose data starts 64-byte aligned.
 *
 * Why not libzip: torch writes stored entries only, and the loader wants each storage's place in
 * the file so it can pread it straight into the tensor (no copy of the archive, no new runtime
 * dependency). That needs the directory and local headers only, about 200 lines; every offset
 * and size read from the file is checked against the file's size before it is used. A compressed
 * or encrypted entry is refused by name. */
#include "gm_internal.h"
#include "gm_checkpoint_reader.h"

#define EOCD_SIZE 22
#define EOCD_MAX_COMMENT 65535
#define ZIP64_LOCATOR_SIZE 20
#define ZIP64_EOCD_SIZE 56
#define CENTRAL_SIZE 46
#define LOCAL_SIZE 30
#define MAX_ENTRIES (1 << 20)
#define MAX_DIRECTORY ((uint64_t)256 << 20)

gm_status gm_source_read(const gm_source *src, uint64_t offset, void *buf, size_t n) {
  if (!src->mem) return gm_file_read(src->fd, src->name, offset, buf, n);
  memcpy(buf, src->mem + offset, n);
  return GM_OK;
}

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const unsigned char *p) {
  return (uint32_t)u16(p) | (uint32_t)u16(p + 2) << 16;
}
static uint64_t u64(const unsigned char *p) {
  return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32;
}

/* offset + n <= size without overflow */
static int fits(uint64_t offset, uint64_t n, uint64_t size) {
  return offset <= size && n <= size - offset;
}

typedef struct directory {
  uint64_t offset, size, count;
} directory;

/* The end record (and its ZIP64 twin when a field is saturated): where the directory is. */
static gm_status find_directory(const gm_source *src, directory *dir) {
  if (src->size < EOCD_SIZE)
    return gm_fail(GM_ERR_IO, 1, "%s: not a zip archive (%llu bytes, too short; truncated?)",
                   src->name, (unsigned long long)src->size);
  size_t tail =
      src->size < EOCD_SIZE + EOCD_MAX_COMMENT ? (size_t)src->size : EOCD_SIZE + EOCD_MAX_COMMENT;
  unsigned char *buf = gm_malloc(tail);
  if (!buf) return gm_last_status();
  uint64_t tail_start = src->size - tail;
  gm_status st = gm_source_read(src, tail_start, buf, tail);
  long at = -1;
  for (long i = (long)tail - EOCD_SIZE; st == GM_OK && i >= 0; i--)
    if (memcmp(buf + i, "PK\5\6", 4) == 0 && (size_t)i + EOCD_SIZE + u16(buf + i + 20) <= tail) {
      at = i;
      break;
    }
  if (st == GM_OK && at < 0)
    st = gm_fail(GM_ERR_IO, 1, "%s: not a zip archive (no end-of-directory record; truncated?)",
                 src->name);
  if (st == GM_OK) {
    const unsigned char *e = buf + at;
    dir->count = u16(e + 10);
    dir->size = u32(e + 12);
    dir->offset = u32(e + 16);
    uint64_t eocd = tail_start + (uint64_t)at;
    if (dir->count == 0xffff || dir->size == 0xffffffffu || dir->offset == 0xffffffffu) {
      unsigned char z[ZIP64_EOCD_SIZE];
      if (eocd < ZIP64_LOCATOR_SIZE)
        st = gm_fail(GM_ERR_IO, 1, "%s: zip: ZIP64 sizes without a ZIP64 locator", src->name);
      else if ((st = gm_source_read(src, eocd - ZIP64_LOCATOR_SIZE, z, ZIP64_LOCATOR_SIZE)) ==
               GM_OK) {
        uint64_t z64 = u64(z + 8);
        if (memcmp(z, "PK\6\7", 4) != 0)
          st = gm_fail(GM_ERR_IO, 1, "%s: zip: ZIP64 sizes without a ZIP64 locator", src->name);
        else if (!fits(z64, ZIP64_EOCD_SIZE, src->size))
          st = gm_fail(GM_ERR_IO, 1,
                       "%s: zip: the ZIP64 end record at %llu lies past the end of the "
                       "%llu-byte file (truncated?)",
                       src->name, (unsigned long long)z64, (unsigned long long)src->size);
        else if ((st = gm_source_read(src, z64, z, ZIP64_EOCD_SIZE)) == GM_OK) {
          if (memcmp(z, "PK\6\6", 4) != 0)
            st = gm_fail(GM_ERR_IO, 1, "%s: zip: no ZIP64 end record where the locator points",
                         src->name);
          dir->count = u64(z + 32);
          dir->size = u64(z + 40);
          dir->offset = u64(z + 48);
        }
      }
    }
  }
  gm_free(buf);
  if (st != GM_OK) return st;
  if (!fits(dir->offset, dir->size, src->size))
    return gm_fail(GM_ERR_IO, 1,
                   "%s: zip: the central directory (%llu bytes at offset %llu) runs past "
                   "the end of the %llu-byte file (truncated?)",
                   src->name, (unsigned long long)dir->size, (unsigned long long)dir->offset,
                   (unsigned long long)src->size);
  if (dir->size > MAX_DIRECTORY || dir->count > MAX_ENTRIES ||
      dir->count > dir->size / CENTRAL_SIZE)
    return gm_fail(GM_ERR_IO, 1, "%s: zip: %llu entries in a %llu-byte central directory",
                   src->name, (unsigned long long)dir->count, (unsigned long long)dir->size);
  return GM_OK;
}

/* The ZIP64 extra field replaces the saturated sizes and offset, in this order. */
static gm_status zip64_extra(const unsigned char *extra, size_t len, uint64_t *usize,
                             uint64_t *csize, uint64_t *offset) {
  uint64_t *fields[3] = {usize, csize, offset};
  const uint64_t saturated = 0xffffffffu;
  while (len >= 4) {
    uint16_t id = u16(extra), n = u16(extra + 2);
    if ((size_t)n > len - 4) break;
    if (id == 0x0001) {
      const unsigned char *p = extra + 4, *end = p + n;
      for (int i = 0; i < 3; i++)
        if (*fields[i] == saturated) {
          if (end - p < 8) return GM_ERR_IO;
          *fields[i] = u64(p);
          p += 8;
        }
      return GM_OK;
    }
    extra += 4 + n;
    len -= 4 + (size_t)n;
  }
  return (*usize == saturated || *csize == saturated || *offset == saturated) ? GM_ERR_IO : GM_OK;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const gm_zip_entry *)a)->name, ((const gm_zip_entry *)b)->name);
}

/* One central directory record at *p (at most `left` bytes): the entry, its local header checked.
 */
static gm_status read_entry(const gm_source *src, const unsigned char **p, size_t *left,
                            gm_zip_entry *e) {
  const unsigned char *c = *p;
  if (*left < CENTRAL_SIZE || memcmp(c, "PK\1\2", 4) != 0)
    return gm_fail(GM_ERR_IO, 1, "%s: zip: a damaged central directory record", src->name);
  uint16_t flags = u16(c + 8), method = u16(c + 10);
  uint64_t csize = u32(c + 20), usize = u32(c + 24), local = u32(c + 42);
  size_t name_len = u16(c + 28), extra_len = u16(c + 30), comment_len = u16(c + 32);
  size_t record = CENTRAL_SIZE + name_len + extra_len + comment_len;
  if (record > *left)
    return gm_fail(GM_ERR_IO, 1, "%s: zip: a central directory record runs past the directory",
                   src->name);
  if (memchr(c + CENTRAL_SIZE, 0, name_len))
    return gm_fail(GM_ERR_IO, 1, "%s: zip: an entry name holds a NUL byte", src->name);
  e->name = gm_malloc(name_len + 1);
  if (!e->name) return gm_last_status();
  memcpy(e->name, c + CENTRAL_SIZE, name_len);
  e->name[name_len] = 0;
  *p += record;
  *left -= record;
  if (zip64_extra(c + CENTRAL_SIZE + name_len, extra_len, &usize, &csize, &local) != GM_OK)
    return gm_fail(GM_ERR_IO, 1, "%s: zip: entry %s has a damaged ZIP64 field", src->name, e->name);
  if (flags & 1) return gm_fail(GM_ERR_IO, 1, "%s: zip: entry %s is encrypted", src->name, e->name);
  if (method != 0 || csize != usize)
    return gm_fail(GM_ERR_IO, 1,
                   "%s: zip: entry %s is compressed (method %u); torch.save writes "
                   "stored entries only: save the checkpoint again with torch.save",
                   src->name, e->name, (unsigned)method);
  unsigned char h[LOCAL_SIZE];
  if (!fits(local, LOCAL_SIZE, src->size))
    return gm_fail(GM_ERR_IO, 1,
                   "%s: zip: entry %s: local header at %llu past the end of the "
                   "%llu-byte file (truncated?)",
                   src->name, e->name, (unsigned long long)local, (unsigned long long)src->size);
  gm_status st = gm_source_read(src, local, h, LOCAL_SIZE);
  if (st != GM_OK) return st;
  if (memcmp(h, "PK\3\4", 4) != 0 || u16(h + 26) != name_len)
    return gm_fail(GM_ERR_IO, 1, "%s: zip: entry %s: no matching local header at %llu", src->name,
                   e->name, (unsigned long long)local);
  e->data_offset = local + LOCAL_SIZE + name_len + u16(h + 28);
  e->size = usize;
  if (!fits(e->data_offset, e->size, src->size))
    return gm_fail(GM_ERR_IO, 1,
                   "%s: zip: entry %s (%llu bytes at %llu) runs past the end of the "
                   "%llu-byte file (truncated?)",
                   src->name, e->name, (unsigned long long)e->size,
                   (unsigned long long)e->data_offset, (unsigned long long)src->size);
  return GM_OK;
}

gm_zip *gm_zip_open(const gm_source *src) {
  directory dir = {0, 0, 0};
  if (find_directory(src, &dir) != GM_OK) return NULL;
  gm_zip *zip = gm_malloc(sizeof *zip);
  unsigned char *cd = gm_malloc(dir.size ? (size_t)dir.size : 1);
  if (zip) {
    zip->count = 0;
    zip->entries = gm_malloc(sizeof(gm_zip_entry) * (dir.count ? (size_t)dir.count : 1));
  }
  gm_status st = (!zip || !cd || !zip->entries)
                     ? gm_last_status()
                     : gm_source_read(src, dir.offset, cd, (size_t)dir.size);
  const unsigned char *p = cd;
  size_t left = (size_t)dir.size;
  for (uint64_t i = 0; st == GM_OK && i < dir.count; i++) {
    gm_zip_entry *e = &zip->entries[zip->count++];
    e->name = NULL;
    st = read_entry(src, &p, &left, e);
  }
  gm_free(cd);
  if (st == GM_OK) {
    qsort(zip->entries, (size_t)zip->count, sizeof(gm_zip_entry), by_name);
    for (int i = 1; st == GM_OK && i < zip->count; i++)
      if (strcmp(zip->entries[i - 1].name, zip->entries[i].name) == 0)
        st = gm_fail(GM_ERR_IO, 1, "%s: zip: entry %s appears twice", src->name,
                     zip->entries[i].name);
  }
  if (st != GM_OK) {
    gm_zip_free(zip);
    return NULL;
  }
  return zip;
}

void gm_zip_free(gm_zip *zip) {
  if (!zip) return;
  for (int i = 0; zip->entries && i < zip->count; i++) gm_free(zip->entries[i].name);
  gm_free(zip->entries);
  gm_free(zip);
}

const gm_zip_entry *gm_zip_find(const gm_zip *zip, const char *name) {
  gm_zip_entry key = {.name = (char *)name};
  return zip->count ? bsearch(&key, zip->entries, (size_t)zip->count, sizeof key, by_name) : NULL;
}
