/* lgm_core.c — luaopen_graphmert_core: the per-state settings, memory, threads, the random
 * generator, grad mode, and registration of the tensor type and ops. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lgm.h"

/* The core's out-of-memory hook: a full collection may free enough for a retry. */
static void collect_garbage(void *ud) {
  gm_bf16_release_kept_weights();
  lua_gc((lua_State *)ud, LUA_GCCOLLECT);
}

static int l_memory(lua_State *L) {
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)gm_memory_cached());
  lua_setfield(L, -2, "cached");
  lua_pushinteger(L, (lua_Integer)gm_memory_live());
  lua_setfield(L, -2, "live");
  lua_pushinteger(L, (lua_Integer)gm_memory_peak());
  lua_setfield(L, -2, "peak");
  lua_pushinteger(L, (lua_Integer)gm_memory_limit());
  lua_setfield(L, -2, "limit");
  return 1;
}

static int l_reset_peak_memory(lua_State *L) {
  (void)L;
  gm_memory_reset_peak();
  return 0;
}

static int l_set_memory_limit(lua_State *L) {
  lua_Integer bytes = luaL_checkinteger(L, 1);
  luaL_argcheck(L, bytes >= 0, 1, "limit must be >= 0 bytes (0 = none)");
  gm_memory_set_limit((size_t)bytes);
  return 0;
}

static int l_release_memory_cache(lua_State *L) {
  (void)L;
  gm_bf16_release_kept_weights();
  gm_memory_release_cache();
  return 0;
}

static int l_set_memory_cache_limit(lua_State *L) {
  lua_Integer bytes = luaL_checkinteger(L, 1);
  luaL_argcheck(L, bytes >= 0, 1, "limit must be >= 0 bytes");
  gm_memory_set_cache_limit((size_t)bytes);
  return 0;
}

static int l_set_num_threads(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 1024, 1, "thread count must be in [1, 1024]");
  gm_set_num_threads((int)n);
  return 0;
}

static int l_get_num_threads(lua_State *L) {
  lua_pushinteger(L, gm_get_num_threads());
  return 1;
}

static const char *const precision_names[] = {"highest", "high", "medium", NULL};

static int l_set_float32_matmul_precision(lua_State *L) {
  gm_set_matmul_precision((gm_matmul_precision)luaL_checkoption(L, 1, NULL, precision_names));
  return 0;
}

static int l_get_float32_matmul_precision(lua_State *L) {
  lua_pushstring(L, precision_names[gm_get_matmul_precision()]);
  return 1;
}

static int l_set_attention_keep_scores(lua_State *L) {
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  gm_set_attention_keep_scores(lua_toboolean(L, 1));
  return 0;
}

static int l_get_attention_keep_scores(lua_State *L) {
  lua_pushboolean(L, gm_get_attention_keep_scores());
  return 1;
}

/* gm.config(): what the process runs on — BLAS library and kernels (and why those), threads
 * and how they wait, the CPU's vector features, the matrix-product precision and what it
 * computes with here, and whether attention keeps its scores for backward. */
static int l_config(lua_State *L) {
  gm_blas_info blas = gm_blas_get_info();
  lua_createtable(L, 0, 14);
  lua_pushstring(L, "OpenBLAS");
  lua_setfield(L, -2, "blas");
  lua_pushstring(L, blas.library);
  lua_setfield(L, -2, "blas_library");
  lua_pushstring(L, blas.config);
  lua_setfield(L, -2, "blas_config");
  lua_pushstring(L, blas.core);
  lua_setfield(L, -2, "blas_core");
  lua_pushstring(L, blas.core_source);
  lua_setfield(L, -2, "blas_core_source");
  lua_pushinteger(L, gm_get_num_threads());
  lua_setfield(L, -2, "threads");
  /* how idle threads wait, as libgomp read it at load (the graphmert binary sets a short spin) */
  const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
  if (policy) lua_pushfstring(L, "OMP_WAIT_POLICY=%s", policy);
  else if (spin) lua_pushfstring(L, "GOMP_SPINCOUNT=%s", spin);
  else lua_pushliteral(L, "libgomp default (spin 300000 rounds, then sleep)");
  lua_setfield(L, -2, "thread_wait");
  lua_newtable(L);
  unsigned features = gm_cpu_features();
  for (int bit = 0, n = 0; bit < GM_CPU_FEATURE_COUNT; bit++)
    if (features & (1u << bit)) {
      lua_pushstring(L, gm_cpu_feature_name(bit));
      lua_rawseti(L, -2, ++n);
    }
  lua_setfield(L, -2, "cpu_features");
  lua_pushboolean(L, gm_bf16_available());
  lua_setfield(L, -2, "bf16_available");
  gm_matmul_precision p = gm_get_matmul_precision();
  lua_pushstring(L, precision_names[p]);
  lua_setfield(L, -2, "float32_matmul_precision");
  lua_pushstring(L, gm_matmul_uses_bf16() ? "bfloat16 inputs, float32 accumulation"
                    : p == GM_MATMUL_MEDIUM ? "float32 (no avx512_bf16 on this CPU)"
                                            : "float32");
  lua_setfield(L, -2, "matmul_compute");
  lua_pushstring(L, gm_bf16_available() ? gm_bf16_kernel() : "none (no avx512_bf16 on this CPU)");
  lua_setfield(L, -2, "bf16_kernel");
  lua_pushstring(L, gm_dnnl_status());
  lua_setfield(L, -2, "bf16_large_products");
  lua_pushboolean(L, gm_get_attention_keep_scores());
  lua_setfield(L, -2, "attention_keep_scores");
  return 1;
}

static int l_manual_seed(lua_State *L) {
  lua_Integer seed = luaL_checkinteger(L, 1);
  gm_rng_seed(&lgm_state_of(L)->rng, (uint64_t)seed);
  return 0;
}

static int l_get_rng_state(lua_State *L) {
  lua_pushlstring(L, (const char *)&lgm_state_of(L)->rng, sizeof(gm_rng));
  return 1;
}

static int l_set_rng_state(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  luaL_argcheck(L, len == sizeof(gm_rng), 1, "not a state from get_rng_state");
  memcpy(&lgm_state_of(L)->rng, s, sizeof(gm_rng));
  return 0;
}

static int l_is_grad_enabled(lua_State *L) {
  lua_pushboolean(L, gm_grad_enabled());
  return 1;
}

static int l_set_grad_enabled(lua_State *L) {
  luaL_checkany(L, 1);
  lua_pushboolean(L, gm_set_grad_enabled(lua_toboolean(L, 1)));
  return 1;
}

/* no_grad(fn, ...): runs fn with grad mode off, restores it even when fn raises. */
static int l_no_grad(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int base = 1, nargs = lua_gettop(L) - 1;
  int previous = gm_set_grad_enabled(0);
  int status = lua_pcall(L, nargs, LUA_MULTRET, 0);
  gm_set_grad_enabled(previous);
  if (status != LUA_OK) return lua_error(L);
  return lua_gettop(L) - base + 1;
}

/* gm.autograd_ops(): the names of the ops autograd records, in gm_op order (the op table of
 * gm_autograd.c without its leaf and freed entries), for specs that must cover every op */
static int l_autograd_ops(lua_State *L) {
  lua_createtable(L, GM_OP_COUNT, 0);
  int n = 0;
  for (int op = 0; op < GM_OP_COUNT; op++)
    if (op != GM_OP_NONE && op != GM_OP_FREED) {
      lua_pushstring(L, gm_op_name((gm_op)op));
      lua_rawseti(L, -2, ++n);
    }
  return 1;
}

/* gm.clock(): monotonic wall-clock seconds, for timing (os.clock counts CPU time of all threads) */
static int l_clock(lua_State *L) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
  return 1;
}

static const luaL_Reg core_functions[] = {
    {"clock", l_clock},
    {"memory", l_memory},
    {"reset_peak_memory", l_reset_peak_memory},
    {"set_memory_limit", l_set_memory_limit},
    {"release_memory_cache", l_release_memory_cache},
    {"set_memory_cache_limit", l_set_memory_cache_limit},
    {"set_num_threads", l_set_num_threads},
    {"get_num_threads", l_get_num_threads},
    {"set_float32_matmul_precision", l_set_float32_matmul_precision},
    {"get_float32_matmul_precision", l_get_float32_matmul_precision},
    {"set_attention_keep_scores", l_set_attention_keep_scores},
    {"get_attention_keep_scores", l_get_attention_keep_scores},
    {"config", l_config},
    {"manual_seed", l_manual_seed},
    {"get_rng_state", l_get_rng_state},
    {"set_rng_state", l_set_rng_state},
    {"is_grad_enabled", l_is_grad_enabled},
    {"set_grad_enabled", l_set_grad_enabled},
    {"no_grad", l_no_grad},
    {"autograd_ops", l_autograd_ops},
    {NULL, NULL}};

LGM_EXPORT int luaopen_graphmert_core(lua_State *L);

LGM_EXPORT int luaopen_graphmert_core(lua_State *L) {
  luaL_checkversion(L);
  if (gm_blas_load() != GM_OK) return luaL_error(L, "graphmert.core: %s", gm_last_error());
  lua_newtable(L);
  int module = lua_gettop(L);
  /* one settings block per Lua state, kept alive by the registry */
  lgm_state *state = lua_newuserdatauv(L, sizeof *state, 0);
  memset(state, 0, sizeof *state);
  state->gc_soft_max = LGM_GC_SOFT_MAX_START;
  gm_rng_seed(&state->rng, 0x6772617068ULL);
  lua_setfield(L, LUA_REGISTRYINDEX, LGM_STATE_KEY);

  lgm_set_functions(L, core_functions);
  lgm_open_tensor(L, module);
  lgm_open_ops(L, module);
  lgm_open_graph(L, module);
  lgm_open_attention(L, module);
  lgm_open_io(L, module);
  lgm_open_tables(L, module);
  lgm_open_optim(L, module);
  lgm_open_torchload(L, module);
  lgm_open_distributed(L, module);

  lua_pushstring(L, GM_VERSION);
  lua_setfield(L, module, "version");

  const char *threads = getenv("GRAPHMERT_NUM_THREADS");
  if (threads && atoi(threads) > 0) gm_set_num_threads(atoi(threads));
  /* GRAPHMERT_MATMUL_PRECISION=highest|high|medium: the precision from the start (benchmarks
   * run unchanged scripts both ways); a name it does not know is an error, not ignored */
  const char *precision = getenv("GRAPHMERT_MATMUL_PRECISION");
  if (precision) {
    int p = 0;
    while (precision_names[p] && strcmp(precision_names[p], precision) != 0) p++;
    if (!precision_names[p])
      return luaL_error(L, "GRAPHMERT_MATMUL_PRECISION must be highest, high or medium (got '%s')", precision);
    gm_set_matmul_precision((gm_matmul_precision)p);
  }
  /* GRAPHMERT_MEMORY_LIMIT=<MiB>: a cap on tensor memory from the start, so a runaway size is
   * an error instead of the kernel's out-of-memory kill */
  const char *limit = getenv("GRAPHMERT_MEMORY_LIMIT");
  if (limit && atoll(limit) > 0) gm_memory_set_limit((size_t)atoll(limit) << 20);
  lua_State *main_thread;
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  main_thread = lua_tothread(L, -1);
  lua_pop(L, 1);
  gm_memory_set_oom_hook(collect_garbage, main_thread);
  lua_settop(L, module);
  return 1;
}
