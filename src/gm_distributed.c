/* gm_distributed.c — data parallelism over MPI: a world of ranks, bucketed all-reduce and
 * broadcast of float32 tensors. The only file of the core that sees MPI; without GM_WITH_MPI
 * (make MPI=0) it is the one-process world every collective is a no-op in. */
#include <stdlib.h>
#include <string.h>

#include "gm_internal.h"

#ifdef GM_WITH_MPI
#include <dlfcn.h>
#include <mpi.h>
#endif

static int world_rank = 0, world_size = 1;
static int started = 0;  /* gm_dist_init ran */
#ifdef GM_WITH_MPI
static int mpi_on = 0;   /* MPI_Init done and MPI_Finalize not yet */
static int mpi_done = 0; /* MPI_Finalize done: MPI cannot be started again */
#endif

int gm_dist_compiled(void) {
#ifdef GM_WITH_MPI
  return 1;
#else
  return 0;
#endif
}

int gm_dist_rank(void) { return world_rank; }
int gm_dist_size(void) { return world_size; }

#ifdef GM_WITH_MPI
/* A script that started MPI and ended without gm.distributed.finalize() would leave mpirun
 * reporting an abnormal exit: MPI is finalized at exit, as mpi4py does. */
static void finalize_at_exit(void) { gm_dist_finalize(); }

/* A process started by mpirun (ORTE), a PMIx launcher (srun, prterun) or a PMI one (hydra).
 * A plain run does not initialise MPI: a singleton MPI_Init is slow and may print warnings. */
static int launched_by_mpi(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}
#endif

gm_status gm_dist_init(void) {
  if (started) return GM_OK;
#ifdef GM_WITH_MPI
  if (launched_by_mpi() && !mpi_done) {
    /* core.so is dlopen'ed by lua5.4 with local symbols; Open MPI's plugins, loaded by MPI_Init,
     * expect libmpi's symbols to be global. Promote the already-loaded library first. */
    if (!dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD))
      dlopen("libmpi.so", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    int provided;
    /* FUNNELED: OpenMP threads compute, only the main thread calls MPI */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return gm_fail(GM_ERR_IO, 0, "MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    mpi_on = 1;
    atexit(finalize_at_exit);
  }
#endif
  started = 1;
  return GM_OK;
}

static gm_status check_list(gm_tensor *const *ts, int n, int arg) {
  if (n < 0) return gm_fail(GM_ERR_ARG, arg, "negative tensor count %d", n);
  for (int i = 0; i < n; i++)
    if (!ts[i]) return gm_fail(GM_ERR_ARG, arg, "tensor %d is missing", i + 1);
  return GM_OK;
}

#ifdef GM_WITH_MPI
/* ---- the stream: a list of tensors read and written as one run of floats ------------------ */

typedef struct stream {
  gm_tensor *const *ts;
  int n;
  int i;       /* current tensor */
  int64_t off; /* elements of it already done */
} stream;

static int64_t stream_numel(gm_tensor *const *ts, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += ts[i]->numel;
  return total;
}

/* Moves count floats between the stream (from its cursor on) and buf: to_buf packs, else unpacks. */
static void stream_move(stream *s, float *buf, int64_t count, int to_buf) {
  while (count > 0) {
    gm_tensor *t = s->ts[s->i];
    int64_t k = t->numel - s->off < count ? t->numel - s->off : count;
    if (to_buf) memcpy(buf, t->data + s->off, (size_t)k * sizeof(float));
    else {
      memcpy(t->data + s->off, buf, (size_t)k * sizeof(float));
      if (t->storage) __atomic_add_fetch(&t->storage->version, 1, __ATOMIC_RELAXED); /* new values */
    }
    buf += k;
    count -= k;
    s->off += k;
    if (s->off == t->numel) {
      s->i++;
      s->off = 0;
    }
  }
}

static int64_t bucket_elems(size_t bucket_bytes) {
  size_t bytes = bucket_bytes ? bucket_bytes : GM_DIST_BUCKET_BYTES;
  int64_t n = (int64_t)(bytes / sizeof(float));
  if (n > (int64_t)1 << 30) n = (int64_t)1 << 30; /* MPI counts are int */
  return n > 0 ? n : 1;
}

static gm_status need_mpi(void) {
  if (!mpi_on) return gm_fail(GM_ERR_STATE, 0, "MPI was finalized");
  return GM_OK;
}

/* Every rank must move the same number of floats; a mismatch fails on all of them. */
static gm_status same_count(int64_t total) {
  long long mine[2] = {total, -total}, all[2];
  if (MPI_Allreduce(mine, all, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
    return gm_fail(GM_ERR_IO, 0, "MPI_Allreduce failed");
  if (all[0] != -all[1])
    return gm_fail(GM_ERR_SHAPE, 1, "the ranks pass different numbers of elements (%lld to %lld; this rank %lld)",
                   -all[1], all[0], (long long)total);
  return GM_OK;
}
#endif

/* ---- collectives ---------------------------------------------------------------------------- */

/* One bucketed pass: root < 0 all-reduces (sum), otherwise broadcasts from root. */
static gm_status run_buckets(gm_tensor *const *ts, int n, int root, size_t bucket_bytes) {
#ifdef GM_WITH_MPI
  if (!mpi_on) return need_mpi();
  int64_t total = stream_numel(ts, n);
  gm_status st = same_count(total);
  if (st != GM_OK || total == 0) return st;
  int64_t cap = bucket_elems(bucket_bytes);
  float *buf = malloc((size_t)(total < cap ? total : cap) * sizeof(float));
  if (!buf) return gm_fail(GM_ERR_NOMEM, 0, "no memory for a bucket of %lld floats", (long long)cap);
  stream in = {ts, n, 0, 0}, out = {ts, n, 0, 0};
  for (int64_t done = 0; done < total;) {
    int64_t k = total - done < cap ? total - done : cap;
    int ok;
    if (root < 0) {
      stream_move(&in, buf, k, 1);
      ok = MPI_Allreduce(MPI_IN_PLACE, buf, (int)k, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
    } else {
      if (world_rank == root) stream_move(&in, buf, k, 1);
      ok = MPI_Bcast(buf, (int)k, MPI_FLOAT, root, MPI_COMM_WORLD) == MPI_SUCCESS;
    }
    if (!ok) {
      free(buf);
      return gm_fail(GM_ERR_IO, 0, root < 0 ? "MPI_Allreduce failed" : "MPI_Bcast failed");
    }
    stream_move(&out, buf, k, 0);
    done += k;
  }
  free(buf);
  return GM_OK;
#else
  (void)ts, (void)n, (void)root, (void)bucket_bytes;
  return GM_OK;
#endif
}

static void scale_all(gm_tensor *const *ts, int n, float factor) {
  for (int i = 0; i < n; i++) {
    float *d = ts[i]->data;
    for (int64_t j = 0; j < ts[i]->numel; j++) d[j] *= factor;
  }
}

gm_status gm_dist_allreduce(gm_tensor *const *ts, int n, gm_dist_op op, size_t bucket_bytes) {
  gm_status st = check_list(ts, n, 1);
  if (st != GM_OK || world_size == 1) return st;
  st = run_buckets(ts, n, -1, bucket_bytes);
  if (st == GM_OK && op == GM_DIST_MEAN) scale_all(ts, n, 1.0f / (float)world_size);
  return st;
}

gm_status gm_dist_allreduce_grads(gm_tensor *const *params, int n, gm_tensor *const *extra, int n_extra,
                                  gm_dist_op op, size_t bucket_bytes) {
  gm_status st = check_list(params, n, 1);
  if (st == GM_OK) st = check_list(extra, n_extra, 2);
  if (st != GM_OK || world_size == 1) return st;
  /* the list: each parameter's gradient, the extra tensors, then one flag per parameter (1 when
   * this rank has a gradient for it), all reduced together */
  gm_tensor **list = malloc(((size_t)n + (size_t)n_extra + 1) * sizeof *list);
  int64_t flag_shape[1] = {n};
  gm_tensor *flags = gm_tensor_full(1, flag_shape, 0.0f);
  if (!list || !flags) {
    free(list);
    gm_tensor_release(flags);
    return gm_fail(GM_ERR_NOMEM, 0, "no memory for the list of %d parameters", n);
  }
  for (int i = 0; i < n; i++) flags->data[i] = params[i]->grad ? 1.0f : 0.0f;
  /* from here a gradient with flag 0 is a zero one made here */
  for (int i = 0; i < n && st == GM_OK; i++) {
    if (!params[i]->grad && !(params[i]->grad = gm_tensor_full(params[i]->ndim, params[i]->shape, 0.0f)))
      st = gm_last_status();
    list[i] = params[i]->grad;
  }
  if (st == GM_OK) {
    for (int i = 0; i < n_extra; i++) list[n + i] = extra[i];
    list[n + n_extra] = flags;
    st = run_buckets(list, n + n_extra + 1, -1, bucket_bytes);
    if (st == GM_OK && op == GM_DIST_MEAN) scale_all(list, n + n_extra, 1.0f / (float)world_size);
  }
  /* a flag still 0: no rank had a gradient (or the reduction failed), so none, as in one
   * process (the optimizer skips the parameter) */
  for (int i = 0; i < n; i++)
    if (flags->data[i] == 0.0f) {
      gm_tensor_release(params[i]->grad);
      params[i]->grad = NULL;
    }
  gm_tensor_release(flags);
  free(list);
  return st;
}

gm_status gm_dist_broadcast(gm_tensor *const *ts, int n, int root, size_t bucket_bytes) {
  gm_status st = check_list(ts, n, 1);
  if (st != GM_OK) return st;
  if (root < 0 || root >= world_size)
    return gm_fail(GM_ERR_ARG, 2, "root %d is not a rank (0 to %d)", root, world_size - 1);
  if (world_size == 1) return GM_OK;
  return run_buckets(ts, n, root, bucket_bytes);
}

gm_status gm_dist_barrier(void) {
#ifdef GM_WITH_MPI
  if (world_size > 1) {
    if (!mpi_on) return need_mpi();
    if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) return gm_fail(GM_ERR_IO, 0, "MPI_Barrier failed");
  }
#endif
  return GM_OK;
}

gm_status gm_dist_finalize(void) {
#ifdef GM_WITH_MPI
  if (mpi_on) {
    mpi_on = 0;
    mpi_done = 1;
    if (MPI_Finalize() != MPI_SUCCESS) return gm_fail(GM_ERR_IO, 0, "MPI_Finalize failed");
  }
#endif
  return GM_OK;
}

void gm_dist_abort(int code) {
#ifdef GM_WITH_MPI
  if (mpi_on) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  exit(code);
}
