/* gm_io.c — crash-safe file writes and tensors from raw little-endian bytes of each float type
 * (the pieces the safetensors reader and writer in lua/graphmert/safetensors.lua and the
 * PyTorch checkpoint reader gm_torch.c stand on). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <unistd.h>

#include "gm_internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors and torch.save data are little-endian");

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

const char *gm_dtype_name(gm_dtype dtype) {
  static const char *const names[] = {"F32", "F64", "F16", "BF16"};
  return names[dtype];
}

size_t gm_dtype_size(gm_dtype dtype) {
  static const size_t sizes[] = {4, 8, 2, 2};
  return sizes[dtype];
}

/* IEEE binary16 → binary32, exactly (subnormals normalised, infinities and NaNs kept) */
static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    uint32_t shifts = 0;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      shifts++;
    }
    bits = sign | ((113 - shifts) << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

void gm_convert_to_f32(float *dst, const void *src, int64_t n, gm_dtype dtype) {
  const unsigned char *p = src;
  switch (dtype) {
  case GM_DTYPE_F32:
    memcpy(dst, p, (size_t)n * 4);
    break;
  case GM_DTYPE_F64:
    for (int64_t i = 0; i < n; i++) {
      double v;
      memcpy(&v, p + 8 * i, 8);
      dst[i] = (float)v;
    }
    break;
  case GM_DTYPE_F16:
    for (int64_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      dst[i] = half_to_float(h);
    }
    break;
  case GM_DTYPE_BF16: /* the upper half of a float32 */
    for (int64_t i = 0; i < n; i++) {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      uint32_t bits = (uint32_t)h << 16;
      memcpy(dst + i, &bits, 4);
    }
    break;
  }
}

gm_tensor *gm_tensor_from_bytes(const void *data, size_t bytes, int ndim, const int64_t *shape,
                                gm_dtype dtype) {
  char buf[GM_SHAPE_BUF];
  if (gm_check_shape(ndim, shape, 2) != GM_OK) return NULL;
  int64_t numel = gm_numel_of(ndim, shape);
  size_t need = (size_t)numel * gm_dtype_size(dtype);
  if (bytes != need) {
    gm_fail(GM_ERR_IO, 1, "%zu bytes for a %s tensor of size %s (needs %zu)", bytes,
            gm_dtype_name(dtype), gm_shape_str(ndim, shape, buf, sizeof buf), need);
    return NULL;
  }
  gm_tensor *t = gm_tensor_empty(ndim, shape);
  if (!t) return NULL;
  gm_convert_to_f32(t->data, data, numel, dtype);
  return t;
}
