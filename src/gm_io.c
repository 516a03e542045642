/* gm_io.c — crash-safe file writes and tensors from raw little-endian bytes (the pieces the
 * safetensors reader and writer in lua/graphmert/safetensors.lua stand on). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#include "gm_internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian");

static gm_status write_all(int fd, const void *data, size_t size, const char *path) {
  const char *p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size > (1u << 30) ? (1u << 30) : size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return gm_fail(GM_ERR_IO, 1, "%s: %s", path, strerror(errno));
    }
    p += n;
    size -= (size_t)n;
  }
  return GM_OK;
}

gm_status gm_file_write_atomic(const char *path, const void *const *chunks, const size_t *sizes,
                               int count) {
  char tmp[4096], dir[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
    return gm_fail(GM_ERR_IO, 1, "path too long: %s", path);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return gm_fail(GM_ERR_IO, 1, "%s: %s", tmp, strerror(errno));
  gm_status st = GM_OK;
  for (int i = 0; i < count && st == GM_OK; i++) st = write_all(fd, chunks[i], sizes[i], tmp);
  if (st == GM_OK && fsync(fd) != 0) st = gm_fail(GM_ERR_IO, 1, "%s: fsync: %s", tmp, strerror(errno));
  if (close(fd) != 0 && st == GM_OK) st = gm_fail(GM_ERR_IO, 1, "%s: %s", tmp, strerror(errno));
  /* the old file stays whole until this rename replaces it in one step */
  if (st == GM_OK && rename(tmp, path) != 0)
    st = gm_fail(GM_ERR_IO, 1, "%s: rename: %s", path, strerror(errno));
  if (st != GM_OK) {
    unlink(tmp);
    return st;
  }
  snprintf(dir, sizeof dir, "%s", path); /* make the rename itself durable */
  int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return GM_OK;
}

gm_tensor *gm_tensor_from_bytes(const void *data, size_t bytes, int ndim, const int64_t *shape,
                                int float64) {
  char buf[GM_SHAPE_BUF];
  if (gm_check_shape(ndim, shape, 2) != GM_OK) return NULL;
  int64_t numel = gm_numel_of(ndim, shape);
  size_t need = (size_t)numel * (float64 ? 8 : 4);
  if (bytes != need) {
    gm_fail(GM_ERR_IO, 1, "%zu bytes for a %s tensor of size %s (needs %zu)", bytes,
            float64 ? "F64" : "F32", gm_shape_str(ndim, shape, buf, sizeof buf), need);
    return NULL;
  }
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (!t) return NULL;
  if (!float64) {
    memcpy(t->data, data, need);
  } else {
    const char *p = data;
    for (int64_t i = 0; i < numel; i++) {
      double v;
      memcpy(&v, p + 8 * i, 8);
      t->data[i] = (float)v;
    }
  }
  return t;
}
