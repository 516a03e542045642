/* gm_io.c — crash-safe file writes, files opened for reading that never block, and tensors from
 * raw little-endian bytes of each float type, in memory or in a file (the pieces the
 * safetensors reader and writer in lua/graphmert/safetensors.lua and the PyTorch checkpoint
 * reader gm_torch.c stand on). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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

/* Temporary files <name>.tmp.<pid> left beside path by a process that no longer runs (killed
 * with SIGKILL mid-write) are removed; a live writer's are left alone. */
static void remove_stale_temps(const char *path) {
  char dir[4096], base[4096], full[8192];
  snprintf(dir, sizeof dir, "%s", path);
  snprintf(base, sizeof base, "%s", path);
  const char *name = basename(base), *folder = dirname(dir);
  size_t len = strlen(name);
  DIR *d = opendir(folder);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    const char *rest = e->d_name + len;
    if (strncmp(e->d_name, name, len) != 0 || strncmp(rest, ".tmp.", 5) != 0) continue;
    char *end;
    long pid = strtol(rest + 5, &end, 10);
    if (*end || end == rest + 5 || pid <= 0 || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    snprintf(full, sizeof full, "%s/%s", folder, e->d_name);
    unlink(full);
  }
  closedir(d);
}

/* Signals held: a handler records the signal, and once the outermost hold is released the
 * previous handlers are back and the signal raised again (sigaction is process-wide, so this holds
 * whichever thread a signal reaches; the calls come from one thread, the Lua one). */
static const int held_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define HELD_COUNT ((int)(sizeof held_signals / sizeof held_signals[0]))
static volatile sig_atomic_t pending_signal;
static struct sigaction saved_actions[HELD_COUNT];
static int hold_depth;
static void record_signal(int sig) { pending_signal = sig; }

void gm_signals_hold(void) {
  if (hold_depth++ > 0) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = record_signal;
  sa.sa_flags = SA_RESTART; /* a write or fsync under way carries on */
  sigemptyset(&sa.sa_mask);
  pending_signal = 0;
  for (int i = 0; i < HELD_COUNT; i++) sigaction(held_signals[i], &sa, &saved_actions[i]);
}

void gm_signals_release(void) {
  if (hold_depth == 0 || --hold_depth > 0) return;
  for (int i = 0; i < HELD_COUNT; i++) sigaction(held_signals[i], &saved_actions[i], NULL);
  if (pending_signal) raise(pending_signal);
}

gm_status gm_staged_open(gm_staged *f, const char *path) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  size_t len = strlen(path);
  f->path = gm_malloc(len + 1);
  f->tmp = gm_malloc(len + 32);
  f->buffer = gm_malloc(GM_STAGED_BUFFER);
  if (!f->path || !f->tmp || !f->buffer) {
    gm_staged_discard(f); /* (nothing was created, so nothing is unlinked) */
    return gm_last_status();
  }
  memcpy(f->path, path, len + 1);
  snprintf(f->tmp, len + 32, "%s.tmp.%d", path, (int)getpid());
  remove_stale_temps(path);
  f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    gm_status st = gm_fail(GM_ERR_IO, 1, "%s: %s", f->tmp, strerror(errno));
    gm_staged_discard(f);
    return st;
  }
  f->created = 1;
  return GM_OK;
}

/* a failed write is remembered: the file has a gap, and commit refuses it */
static gm_status staged_failed(gm_staged *f, gm_status st) {
  if (st != GM_OK) f->failed = 1;
  return st;
}

static gm_status staged_flush(gm_staged *f) {
  gm_status st = write_all(f->fd, f->buffer, f->used, f->tmp);
  f->used = 0;
  return staged_failed(f, st);
}

gm_status gm_staged_write(gm_staged *f, const void *data, size_t size) {
  if (f->fd < 0) return gm_fail(GM_ERR_IO, 1, "%s: written after it was committed or discarded", f->path ? f->path : "a file");
  if (f->failed) return gm_fail(GM_ERR_IO, 1, "%s: an earlier write failed", f->tmp);
  if (f->used + size > GM_STAGED_BUFFER) {
    gm_status st = staged_flush(f);
    if (st != GM_OK) return st;
  }
  if (size >= GM_STAGED_BUFFER) return staged_failed(f, write_all(f->fd, data, size, f->tmp));
  memcpy(f->buffer + f->used, data, size);
  f->used += size;
  return GM_OK;
}

/* the temporary file complete on disk and closed (the rename still to come) */
static gm_status staged_finish(gm_staged *f) {
  gm_status st = staged_flush(f);
  if (st == GM_OK && fsync(f->fd) != 0) st = gm_fail(GM_ERR_IO, 1, "%s: fsync: %s", f->tmp, strerror(errno));
  if (close(f->fd) != 0 && st == GM_OK) st = gm_fail(GM_ERR_IO, 1, "%s: %s", f->tmp, strerror(errno));
  f->fd = -1;
  return st;
}

gm_status gm_staged_commit_all(gm_staged *files, int n) {
  char dir[4096];
  gm_signals_hold(); /* Ctrl-C and the like wait until the files are in place */
  gm_status st = GM_OK;
  for (int i = 0; i < n && st == GM_OK; i++)
    if (files[i].fd < 0) st = gm_fail(GM_ERR_IO, 1, "%s: committed twice or discarded", files[i].path ? files[i].path : "a file");
    else if (files[i].failed) st = gm_fail(GM_ERR_IO, 1, "%s: not committed: a write to it failed", files[i].path);
  for (int i = 0; i < n && st == GM_OK; i++) st = staged_finish(&files[i]);
  /* every old file stays whole until the renames replace them, back to back */
  int renamed = 0;
  for (; st == GM_OK && renamed < n; renamed++)
    if (rename(files[renamed].tmp, files[renamed].path) != 0)
      st = gm_fail(GM_ERR_IO, 1, "%s: rename: %s", files[renamed].path, strerror(errno));
  for (int i = 0; i < renamed; i++) { /* make the renames themselves durable */
    snprintf(dir, sizeof dir, "%s", files[i].path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      fsync(dfd);
      close(dfd);
    }
    gm_free(files[i].tmp); /* renamed: nothing left to remove */
    files[i].tmp = NULL;
  }
  for (int i = 0; i < n; i++) gm_staged_discard(&files[i]);
  gm_signals_release();
  return st;
}

void gm_staged_discard(gm_staged *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
  if (f->tmp && f->created) unlink(f->tmp);
  gm_free(f->tmp);
  gm_free(f->path);
  gm_free(f->buffer);
  f->tmp = f->path = f->buffer = NULL;
  f->used = 0;
  f->created = f->failed = 0;
}

gm_status gm_file_write_atomic_all(const gm_file_parts *files, int n) {
  gm_staged *staged = gm_malloc(sizeof *staged * (size_t)(n > 0 ? n : 1));
  if (!staged) return gm_last_status();
  gm_signals_hold(); /* Ctrl-C and the like wait until the files are complete */
  gm_status st = GM_OK;
  int opened = 0;
  while (opened < n && (st = gm_staged_open(&staged[opened], files[opened].path)) == GM_OK) {
    for (int i = 0; i < files[opened].count && st == GM_OK; i++)
      st = write_all(staged[opened].fd, files[opened].chunks[i], files[opened].sizes[i], staged[opened].tmp);
    opened++;
    if (st != GM_OK) break;
  }
  if (st == GM_OK) st = gm_staged_commit_all(staged, n);
  else
    for (int i = 0; i < opened; i++) gm_staged_discard(&staged[i]);
  gm_signals_release();
  gm_free(staged);
  return st;
}

gm_status gm_file_write_atomic(const char *path, const void *const *chunks, const size_t *sizes,
                               int count) {
  gm_file_parts f = {path, chunks, sizes, count};
  return gm_file_write_atomic_all(&f, 1);
}

gm_status gm_file_open(const char *path, int *fd, uint64_t *size) {
  *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not wait for a writer */
  if (*fd < 0) return gm_fail(GM_ERR_IO, 0, "%s: %s", path, strerror(errno));
  struct stat sb;
  const char *kind = NULL;
  if (fstat(*fd, &sb) != 0) {
    gm_status st = gm_fail(GM_ERR_IO, 0, "%s: %s", path, strerror(errno));
    close(*fd);
    return st;
  }
  if (S_ISDIR(sb.st_mode)) kind = "a directory";
  else if (S_ISFIFO(sb.st_mode)) kind = "a FIFO";
  else if (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)) kind = "a device";
  else if (!S_ISREG(sb.st_mode)) kind = "a socket";
  if (kind) {
    close(*fd);
    *fd = -1;
    return gm_fail(GM_ERR_IO, 0, "%s: %s, not a regular file", path, kind);
  }
  fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK);
  *size = (uint64_t)sb.st_size;
  return GM_OK;
}

gm_status gm_file_read(int fd, const char *name, uint64_t offset, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t got = pread(fd, p, n > (1u << 30) ? (1u << 30) : n, (off_t)offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return gm_fail(GM_ERR_IO, 0, "%s: %s", name, strerror(errno));
    if (got == 0) return gm_fail(GM_ERR_IO, 0, "%s: the file shrank while being read", name);
    p += got;
    n -= (size_t)got;
    offset += (uint64_t)got;
  }
  return GM_OK;
}

gm_status gm_file_digest(const char *path, uint64_t *digest, uint64_t *size) {
  int fd;
  gm_status st = gm_file_open(path, &fd, size);
  if (st != GM_OK) return st;
  enum { BLOCK = 1 << 20 };
  unsigned char *buf = gm_malloc(BLOCK);
  if (!buf) {
    close(fd);
    return gm_last_status();
  }
  /* eight bytes a step, each mixed in by a multiply and a shift (the length goes in last, so
   * a file and the same file with zero bytes appended differ) */
  uint64_t h = 0x9E3779B97F4A7C15ull, done = 0;
  for (;;) {
    ssize_t got = read(fd, buf, BLOCK);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      st = gm_fail(GM_ERR_IO, 0, "%s: %s", path, strerror(errno));
      break;
    }
    if (got == 0) break;
    size_t i = 0;
    for (; i + 8 <= (size_t)got; i += 8) {
      uint64_t w;
      memcpy(&w, buf + i, 8);
      h = (h ^ w) * 0xFF51AFD7ED558CCDull;
      h ^= h >> 32;
    }
    for (; i < (size_t)got; i++) h = (h ^ buf[i]) * 0x100000001B3ull;
    done += (uint64_t)got;
  }
  gm_free(buf);
  close(fd);
  h = (h ^ done) * 0xC4CEB9FE1A85EC53ull;
  *digest = h ^ (h >> 33);
  *size = done;
  return st;
}

gm_status gm_file_lock(const char *path, int *fd, int *held) {
  *fd = -1;
  *held = 0;
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644); /* (NONBLOCK: a FIFO never waits) */
  if (f < 0) return gm_fail(GM_ERR_IO, 0, "%s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(f, &sb) != 0) {
    int e = errno;
    close(f);
    return gm_fail(GM_ERR_IO, 0, "%s: %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(f);
    return gm_fail(GM_ERR_IO, 0, "%s: not a regular file", path);
  }
  while (flock(f, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    if (e == ENOSYS || e == EOPNOTSUPP || e == ENOLCK || e == EINVAL) { /* the file system cannot lock */
      *fd = f;
      return GM_OK;
    }
    close(f);
    if (e == EWOULDBLOCK) return GM_OK;
    return gm_fail(GM_ERR_IO, 0, "%s: cannot lock: %s", path, strerror(e));
  }
  *fd = f;
  *held = 1;
  return GM_OK;
}

void gm_file_unlock(int fd) {
  if (fd >= 0) close(fd); /* closing the descriptor releases its flock */
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

gm_tensor *gm_tensor_from_file(const char *path, uint64_t offset, size_t bytes, int ndim,
                               const int64_t *shape, gm_dtype dtype) {
  char buf[GM_SHAPE_BUF];
  if (gm_check_shape(ndim, shape, 2) != GM_OK) return NULL;
  int64_t numel = gm_numel_of(ndim, shape);
  size_t width = gm_dtype_size(dtype);
  if (numel < 0 || bytes / width != (uint64_t)numel || bytes % width) {
    gm_fail(GM_ERR_IO, 0, "%s: %zu bytes for a %s tensor of size %s", path, bytes,
            gm_dtype_name(dtype), gm_shape_str(ndim, shape, buf, sizeof buf));
    return NULL;
  }
  int fd;
  uint64_t size;
  if (gm_file_open(path, &fd, &size) != GM_OK) return NULL;
  gm_tensor *t = NULL;
  if (offset > size || bytes > size - offset) {
    gm_fail(GM_ERR_IO, 0, "%s: bytes %llu to %llu lie past the end of the file (%llu bytes)", path,
            (unsigned long long)offset, (unsigned long long)(offset + bytes),
            (unsigned long long)size);
  } else if ((t = gm_tensor_empty(ndim, shape)) != NULL) {
    /* float32 straight into the tensor; the other types through a bounded buffer */
    enum { CHUNK = 1 << 20 };
    unsigned char *chunk = dtype == GM_DTYPE_F32 ? NULL : gm_malloc(CHUNK);
    gm_status st = dtype == GM_DTYPE_F32 ? gm_file_read(fd, path, offset, t->data, bytes)
                   : chunk               ? GM_OK
                                         : gm_last_status();
    for (int64_t done = 0; chunk && st == GM_OK && done < numel;) {
      int64_t n = numel - done < (int64_t)(CHUNK / width) ? numel - done : (int64_t)(CHUNK / width);
      st = gm_file_read(fd, path, offset + (uint64_t)done * width, chunk, (size_t)n * width);
      if (st == GM_OK) gm_convert_to_f32(t->data + done, chunk, n, dtype);
      done += n;
    }
    gm_free(chunk);
    if (st != GM_OK) {
      gm_tensor_release(t);
      t = NULL;
    }
  }
  close(fd);
  return t;
}
